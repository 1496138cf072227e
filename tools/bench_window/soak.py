"""The soak's program (tools/bench_window): CPython visiting every file of a folder, over
and over, for SECONDS: os.stat, then open and read the whole file (CPython's open: openat,
fstat, ioctl, lseek, read, read, close). Prints its visits and the passes it made."""
import os
import sys
import time

folder, seconds = sys.argv[1], float(sys.argv[2])
names = [os.path.join(folder, n) for n in sorted(os.listdir(folder))]
end = time.monotonic() + seconds
visits = passes = 0
while time.monotonic() < end:
    for p in names:
        os.stat(p)
        with open(p, "rb") as f:
            f.read()
    visits += len(names)
    passes += 1
print("visits", visits, "passes", passes)
