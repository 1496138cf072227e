"""A tiny DDP job for tests/dist: a linear model on random data, gloo on 127.0.0.1, 10
steps. argv[1] says how it goes:
- "healthy": its batches from a DataLoader with one worker process, which inherits RANK;
- "kill": rank 1 (or CT_FAIL_RANK) SIGKILLs itself at the top of step 6, as the OOM
  killer would;
- "raise": rank 1 raises ValueError there;
- "stall": rank 1 reads the file named by CT_STALL_FILE there (a file on a slow FUSE
  mount, whose read takes longer than the others wait in their all-reduce);
- "metric": after step 4, rank 0 alone all-reduces a metric (a one-element tensor),
  which gloo pairs with the others' gradient all-reduce of step 5;
- "straggle": rank 1 reads the file named by CT_STALL_FILE at the top of every step (a
  slow mount: every step of the job waits for it).
The gloo timeout is short (10 s, or CT_GLOO_TIMEOUT seconds) so that a rank waiting on a
dead peer gives up quickly."""
import os
import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 10
FAIL_RANK, FAIL_STEP = int(os.environ.get("CT_FAIL_RANK", "1")), 6
METRIC_RANK, METRIC_STEP = 0, 4


def main():
    mode = sys.argv[1]
    timeout = float(os.environ.get("CT_GLOO_TIMEOUT", "10"))
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
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
                raise ValueError("bad sample at step %d" % step)  # raise
            elif mode == "stall":
                fd = os.open(os.environ["CT_STALL_FILE"], os.O_RDONLY)
                os.read(fd, 4096)  # stall-read
                os.close(fd)
        if mode == "straggle" and rank == FAIL_RANK:
            fd = os.open(os.environ["CT_STALL_FILE"], os.O_RDONLY)
            os.read(fd, 4096)  # straggle-read
            os.close(fd)
        loss = model(next(batches)).sum()
        opt.zero_grad()
        loss.backward()  # backward
        opt.step()
        if mode == "metric" and rank == METRIC_RANK and step == METRIC_STEP:
            dist.all_reduce(torch.tensor([loss.item()]))  # metric
    dist.destroy_process_group()
    print("rank %d done" % rank)


if __name__ == "__main__":
    main()
