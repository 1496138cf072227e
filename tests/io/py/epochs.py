"""A minimal training-data pipeline: EPOCHS passes over every file under DIR (a list
built once), os.stat + open().read() per sample. With MOUNT=src:dst it first mounts
bindfs itself (a mount that appears after the process started)."""
import os
import subprocess
import sys

root, epochs = sys.argv[1], int(sys.argv[2])
if len(sys.argv) > 3:
    src, dst = sys.argv[3].split(":")
    subprocess.run(["bindfs", "-o", "subtype=drive", src, dst], check=True)
files = sorted(os.path.join(root, n) for n in os.listdir(root))
n = 0
for _ in range(epochs):
    for p in files:
        os.stat(p)
        with open(p, "rb") as f:
            n += len(f.read())
print(n)
