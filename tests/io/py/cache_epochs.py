"""A loader that caches decoded samples on local disk: each of EPOCHS epochs checks, for
every sample, its cache file (os.path.exists) and the source's mtime (os.stat, twice:
getmtime and a size check); the first epoch reads the source and writes the cache file,
later epochs read the cache file instead. Prints JSON: samples, source reads, cache reads,
bytes read."""
import json
import os
import sys

data, cache, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3])
os.makedirs(cache, exist_ok=True)
names = sorted(os.listdir(data))
source_reads = cache_reads = total = 0
for _ in range(epochs):
    for n in names:
        src, cached = os.path.join(data, n), os.path.join(cache, n + ".cache")
        os.path.getmtime(src)
        if os.stat(src).st_size == 0:
            continue
        if os.path.exists(cached):
            with open(cached, "rb") as f:
                total += len(f.read())
            cache_reads += 1
        else:
            with open(src, "rb") as f:
                blob = f.read()
            total += len(blob)
            source_reads += 1
            with open(cached, "wb") as f:
                f.write(blob[::-1])
print(json.dumps({"samples": len(names), "source_reads": source_reads, "cache_reads": cache_reads,
                  "bytes": total}))
