"""Reads every file under DIR: os.stat, then open().read() (builtin buffered I/O), for
PASSES passes; then os.open/os.read in CHUNK-byte reads. Prints one JSON line."""
import json
import os
import sys

root, passes, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
files = sorted(os.path.join(root, n) for n in os.listdir(root))
total = 0
for _ in range(passes):
    for p in files:
        os.stat(p)
        with open(p, "rb") as f:
            total += len(f.read())
raw_reads = 0
for p in files:
    fd = os.open(p, os.O_RDONLY)
    while True:
        b = os.read(fd, chunk)
        raw_reads += 1
        if not b:
            break
        total += len(b)
    os.close(fd)
print(json.dumps({"files": len(files), "bytes": total, "raw_reads": raw_reads}))
