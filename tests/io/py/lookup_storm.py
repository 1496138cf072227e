"""A loader that looks its samples up far more than it reads them: each of EPOCHS epochs
globs DATA/*.bin, calls os.path.exists and os.stat on every sample, and reads only the
first READ of them. Prints JSON: samples, files read, bytes read."""
import glob
import json
import os
import sys

data, epochs, n_read = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
read = total = 0
for _ in range(epochs):
    files = sorted(glob.glob(os.path.join(data, "*.bin")))
    for p in files:
        if os.path.exists(p) and os.stat(p).st_size > 0:
            pass
    for p in files[:n_read]:
        with open(p, "rb") as f:
            total += len(f.read())
        read += 1
print(json.dumps({"samples": len(files), "read": read, "bytes": total}))
