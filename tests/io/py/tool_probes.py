"""What a build tool or pip does before its real work: failed opens that are searches,
not missing data. argv: ROOT DEPTH N_DISTS N_MISSING.
- From ROOT/d1/.../dDEPTH (the working directory), look for rust-toolchain and
  rust-toolchain.toml in every directory up to / (what rustup's rustc proxy does).
- Read each of N_DISTS distributions' metadata with importlib.metadata, as pip does for
  the package it just built under /tmp/pip-*: each lacks the optional requires.txt and
  entry_points.txt, which the reader tries and skips.
- Try the compiled-in default config ROOT/ssl/openssl.cnf, absent.
- Then read a list of samples of which N_MISSING are missing: the only real errors.
Prints JSON: how many opens of each kind failed."""
import importlib.metadata
import json
import os
import sys

root, depth, n_dists, n_missing = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
cwd = os.path.join(root, *[f"d{i}" for i in range(1, depth + 1)])
os.makedirs(cwd, exist_ok=True)
os.chdir(cwd)

search_misses = 0
d = cwd
while True:
    for name in ("rust-toolchain", "rust-toolchain.toml"):
        try:
            open(os.path.join(d, name), "rb").close()
        except FileNotFoundError:
            search_misses += 1
    if d == "/":
        break
    d = os.path.dirname(d)

meta_root = os.path.join(root, "pip-modern-metadata")
for i in range(n_dists):
    info = os.path.join(meta_root, f"pkg{i}-0.{i}.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: pkg{i}\nVersion: 0.{i}\n")
metadata_misses = 0
for dist in importlib.metadata.distributions(path=[meta_root]):
    assert dist.requires is None and not dist.entry_points
    metadata_misses += 2  # requires.txt and entry_points.txt were tried

config_misses = 0
try:
    open(os.path.join(root, "ssl", "openssl.cnf")).close()
except FileNotFoundError:
    config_misses += 1

data = os.path.join(root, "data")
os.makedirs(data, exist_ok=True)
read = skipped = 0
for i in range(20 + n_missing):
    p = os.path.join(data, f"sample_{i:04d}.bin")
    if i < 20:
        with open(p, "wb") as f:
            f.write(b"s" * 100)
    try:
        with open(p, "rb") as f:
            f.read()
        read += 1
    except FileNotFoundError:
        skipped += 1

print(json.dumps({"search_misses": search_misses, "metadata_misses": metadata_misses,
                  "config_misses": config_misses, "read": read, "skipped": skipped}))
