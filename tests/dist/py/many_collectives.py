"""Many small collectives, for tests/dist/test_collective_window.py: a long job's
collectives in a trace whose window rolls (COLABTRACE_WINDOW_S). gloo on one tensor of
one element; between collectives, stat calls of a file (file I/O events that fill the
window faster). argv: mode, N (all_reduces), counter (a file of 8 bytes the program
maps and keeps the count of all_reduces that returned in, for a test that SIGKILLs it;
"-": none).
- "single": a group of one (a FileStore next to the counter, or in /tmp), N all_reduces,
  then 3 barriers on a second group;
- "healthy": under torchrun, every rank N all_reduces, then 3 barriers on a second group;
- "stall": under torchrun, N all_reduces; then rank 1 sleeps 30 s (in no collective) while
  the others wait in all_reduce #N+1 until gloo's 3 s timeout ends them.
Prints "done N" at its end."""
import mmap
import os
import struct
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

STATS = 12


def main():
    mode, n, counter = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if mode == "single":
        store = (counter if counter != "-" else "/tmp/ct-many-%d" % os.getpid()) + ".store"
        dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=3))
    rank = dist.get_rank()
    count = None
    if counter != "-":
        fd = os.open(counter, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.ftruncate(fd, 8)
        count = mmap.mmap(fd, 8)
        os.close(fd)
    t = torch.zeros(1)
    here = os.path.abspath(__file__)
    for i in range(1, n + 1):
        for _ in range(STATS):
            os.stat(here)
        dist.all_reduce(t)  # M_ALL_REDUCE
        if count is not None:
            count[0:8] = struct.pack("<Q", i)
    if mode == "stall":
        if rank == 1:
            time.sleep(30)  # M_SLEEP
        else:
            dist.all_reduce(t)  # M_WAITS
    group = dist.new_group(list(range(dist.get_world_size())))
    for _ in range(3):
        dist.barrier(group=group)  # M_BARRIER
    print("done %d" % n, flush=True)


if __name__ == "__main__":
    main()
