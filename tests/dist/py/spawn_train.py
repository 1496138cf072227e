"""A DDP job started with torch.multiprocessing.spawn and init_process_group(rank=...),
with no launcher and no RANK variable (tests/dist/test_spawn.py): 2 ranks, gloo on
127.0.0.1 (argv[1] its port), 8 steps; rank 1 raises ValueError at the top of step 4."""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS, FAIL_RANK, FAIL_STEP = 8, 1, 4


def worker(rank, port):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank, world_size=2,
                            timeout=timedelta(seconds=10))
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(1, STEPS + 1):
        if rank == FAIL_RANK and step == FAIL_STEP:
            raise ValueError("bad sample at step %d" % step)  # raise
        loss = model(torch.randn(4, 8)).sum()
        opt.zero_grad()
        loss.backward()  # backward
        opt.step()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(int(sys.argv[1]),), nprocs=2)
