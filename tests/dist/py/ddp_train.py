"""A tiny DDP job for tests/dist: a linear model on random data, gloo on 127.0.0.1, 10
steps. argv[1] says how it goes: "healthy" (its batches from a DataLoader with one worker
process, which inherits RANK); "kill" (rank 1 SIGKILLs itself at the top of
step 6, as the OOM killer would); "raise" (rank 1 raises ValueError there). The gloo
timeout is short (10 s) so that a rank waiting on a dead peer gives up quickly."""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 10
FAIL_RANK, FAIL_STEP = 1, 6


def main():
    mode = sys.argv[1]
    dist.init_process_group("gloo", timeout=timedelta(seconds=10))
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(STEPS * 4, 8)
    if mode == "healthy":
        batches = iter(torch.utils.data.DataLoader(data, batch_size=4, num_workers=1))
    else:
        batches = iter(data.split(4))
    for step in range(1, STEPS + 1):
        if rank == FAIL_RANK and step == FAIL_STEP:
            if mode == "kill":
                os.kill(os.getpid(), 9)
            elif mode == "raise":
                raise ValueError("bad sample at step %d" % step)
        loss = model(next(batches)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    dist.destroy_process_group()
    print("rank %d done" % rank)


if __name__ == "__main__":
    main()
