"""A multiprocessing fork pool whose workers read disjoint files of DIR. Prints
{pid: [files read]}."""
import json
import multiprocessing as mp
import os
import sys


def read_files(paths):
    out = []
    for p in paths:
        with open(p, "rb") as f:
            f.read()
        out.append(p)
    return os.getpid(), out


if __name__ == "__main__":
    root = sys.argv[1]
    files = sorted(os.path.join(root, n) for n in os.listdir(root))
    chunks = [files[i::6] for i in range(6)]
    by_pid = {}
    with mp.get_context("fork").Pool(3) as pool:
        for pid, paths in pool.map(read_files, chunks, chunksize=1):
            by_pid.setdefault(str(pid), []).extend(paths)
    print(json.dumps(by_pid))
