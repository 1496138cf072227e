#!/usr/bin/env python3
"""The bundled example workload for ./tools/demo: a training-like job that goes wrong
the ways real ones do, without needing a GPU.

- Data loading: 2,000 small files read by a pool of forked worker processes, twice
  (two "epochs"): the I/O report shows the small-file pattern.
- GPU memory: it drives the CUDA runtime found on the library path (the test suite's
  simulated libcudart.so.13 when there is no GPU) with a caching-allocator-like pattern
  that ends in an out-of-memory error although enough memory is free in total.
- It exits 1, as a crashed training script would.
"""
import ctypes
import multiprocessing as mp
import os
import sys
import tempfile

GiB = 1 << 30


def make_dataset(root: str, n: int = 2000, size: int = 4096) -> list[str]:
    paths = []
    for i in range(n):
        d = os.path.join(root, f"shard{i // 500:02d}")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, f"sample{i:05d}.bin")
        with open(p, "wb") as f:
            f.write(os.urandom(size))
        paths.append(p)
    return paths


def load(path: str) -> int:
    os.stat(path)
    with open(path, "rb") as f:
        return len(f.read())


def train_step_allocations() -> int:
    """Allocates like a caching allocator that fragments device memory, then OOMs."""
    try:
        cudart = ctypes.CDLL("libcudart.so.13")
    except OSError as e:
        print(f"no CUDA runtime on the library path ({e}); skipping the GPU part")
        return 0
    cudart.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
    cudart.cudaFree.argtypes = [ctypes.c_void_p]
    blocks = []
    for _ in range(8):  # fill the 8 GiB device with 1 GiB "activations"
        p = ctypes.c_void_p()
        rc = cudart.cudaMalloc(ctypes.byref(p), GiB)
        if rc != 0:
            break
        blocks.append(p)
    for p in blocks[::2]:  # free every other block: 4 GiB free, but only in 1 GiB holes
        cudart.cudaFree(p)
    p = ctypes.c_void_p()
    rc = cudart.cudaMalloc(ctypes.byref(p), 2 * GiB)
    if rc != 0:
        print(f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB "
              f"(cudaMalloc returned {rc})", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="colabtrace-demo-") as root:
        paths = make_dataset(root)
        ctx = mp.get_context("fork")
        with ctx.Pool(2) as pool:
            for epoch in range(2):
                total = sum(pool.map(load, paths, chunksize=50))
                print(f"epoch {epoch}: read {total} bytes from {len(paths)} files")
    return train_step_allocations()


if __name__ == "__main__":
    sys.exit(main())
