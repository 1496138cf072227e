"""Kernel launches from Python: calls launch_bench_main of a launch_bench library (see
launch_bench.c) from a Python stack DEPTH frames deep, so every launch is made under that
many Python frames, as a launch from a PyTorch module's forward is.

    python3 py_launch.py LIBRARY DEPTH LAUNCHES ROUNDS

Prints launch_bench's JSON line."""
from __future__ import annotations

import ctypes
import sys


def down(lib, k: int, args: list[bytes]) -> int:
    if k <= 1:
        argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
        return lib.launch_bench_main(len(args), argv)
    return down(lib, k - 1, args)


def main() -> int:
    lib = ctypes.CDLL(sys.argv[1])
    depth = int(sys.argv[2])  # <module> and main are two of them
    return down(lib, depth - 2, [b"launch_bench", sys.argv[3].encode(), sys.argv[4].encode()])


if __name__ == "__main__":
    sys.exit(main())
