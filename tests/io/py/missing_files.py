"""A loader that meets missing files, and probes that are not missing files.

argv: DATA_DIR N_PRESENT N_MISSING. Writes N_PRESENT files, then reads a file list of
N_PRESENT + N_MISSING names (the missing ones raise FileNotFoundError and are skipped),
then does what healthy programs do all the time and must not be called an error:
- a cache lookup before the entry exists: open fails, the entry is written, then read;
- a per-directory dotfile looked for and absent (.loaderrc).
Prints JSON: files read, missing ones skipped, failed opens of each kind."""
import json
import os
import sys

data, n_present, n_missing = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(data, exist_ok=True)
names = [f"sample_{i:04d}.bin" for i in range(n_present + n_missing)]
for name in names[:n_present]:
    with open(os.path.join(data, name), "wb") as f:
        f.write(b"x" * 1000)

read = skipped = 0
for name in names:
    try:
        with open(os.path.join(data, name), "rb") as f:
            f.read()
        read += 1
    except FileNotFoundError:
        skipped += 1

cache_misses = 0
cache = os.path.join(data, "cache")
os.makedirs(cache, exist_ok=True)
for i in range(15):
    entry = os.path.join(cache, f"entry_{i}.idx")
    try:
        open(entry, "rb").close()
    except FileNotFoundError:
        cache_misses += 1
        with open(entry, "wb") as f:
            f.write(b"i")
    with open(entry, "rb") as f:
        f.read()

dotfile_misses = 0
for sub in range(12):
    d = os.path.join(data, f"part{sub}")
    os.makedirs(d, exist_ok=True)
    try:
        open(os.path.join(d, ".loaderrc")).close()
    except FileNotFoundError:
        dotfile_misses += 1

print(json.dumps({"read": read, "skipped": skipped, "cache_misses": cache_misses,
                  "dotfile_misses": dotfile_misses}))
