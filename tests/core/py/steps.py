"""steps.py COUNT DELAY_S: like ct_steps, in CPython. Each step assigns os.environ
(CPython calls setenv/putenv, which the shim records), then prints "step i"."""
import os
import sys
import time

count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
delay = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
for i in range(count):
    os.environ["CUDA_PY_STEP"] = str(i)
    print(f"step {i}", flush=True)
    if delay:
        time.sleep(delay)
print(f"done {count}", flush=True)
