"""DataLoader-like epochs: a fork pool of WORKERS processes made anew every epoch (as
torch's DataLoader without persistent_workers), whose workers stat and read every file of
DIR once between them, then PAUSE seconds before the next epoch. With SPIKE_MB, each worker first holds that many
MiB written (resident) for 0.1 s, then frees them: a peak of its RSS that only its periodic
samples see. Prints {"bytes": total read, "workers": [worker pids]}."""
import json
import multiprocessing as mp
import os
import sys
import time


def read_files(paths):
    spike = int(os.environ.get("SPIKE_MB", "0"))
    if spike:
        held = b"x" * (spike << 20)
        time.sleep(0.1)
        del held
    n = 0
    for p in paths:
        os.stat(p)
        with open(p, "rb") as f:
            n += len(f.read())
    return os.getpid(), n


if __name__ == "__main__":
    root, epochs, workers, pause = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    files = sorted(os.path.join(root, n) for n in os.listdir(root))
    total, pids = 0, set()
    for _ in range(epochs):
        pool = mp.get_context("fork").Pool(workers)
        for pid, n in pool.map(read_files, [files[i::workers] for i in range(workers)], chunksize=1):
            total += n
            pids.add(pid)
        pool.close()
        pool.join()
        time.sleep(pause)
    print(json.dumps({"bytes": total, "workers": sorted(pids)}))
