"""Steps every 0.2 s for 5 s: longer in all than the tests' --hang-timeout (3 s), but never
that long without a step."""
import time

import colabtrace

for n in range(25):
    colabtrace.step(n)
    time.sleep(0.2)
print("done", flush=True)
