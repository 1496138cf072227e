"""The budget workload: N cached small files, each os.stat'ed, opened and read, for
PASSES passes. Prints the wall time of the loop in seconds (start-up excluded)."""
import os
import sys
import time

root, passes = sys.argv[1], int(sys.argv[2])
files = sorted(os.path.join(root, n) for n in os.listdir(root))
t0 = time.perf_counter()
total = 0
for _ in range(passes):
    for p in files:
        os.stat(p)
        with open(p, "rb") as f:
            total += len(f.read())
print(f"{time.perf_counter() - t0:.6f} {total}")
