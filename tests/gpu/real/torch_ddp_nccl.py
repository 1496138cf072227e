"""A 1-rank NCCL job (one H200 holds one NCCL rank), started by torchrun --standalone
--nproc_per_node 1: STEPS steps (argv[1], default 5), each a DDP forward and backward (the
reducer's bucket all-reduce goes through NCCL) and one dist.all_reduce of 1024 float32 that
the program calls itself. DDP_BACKEND=gloo runs the same on the CPU (how it is tried where
there is no GPU). Prints what it did, for docs/gpu-validation.md."""
import os
import sys

import torch
import torch.distributed as dist

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
backend = os.environ.get("DDP_BACKEND", "nccl")
dist.init_process_group(backend)
if backend == "nccl":
    dev = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
else:
    dev = torch.device("cpu")
layer = torch.nn.Linear(256, 256).to(dev)
model = torch.nn.parallel.DistributedDataParallel(layer, device_ids=[dev.index] if dev.type == "cuda" else None)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256, device=dev)
t = torch.ones(1024, device=dev)
for _ in range(steps):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    dist.all_reduce(t)
if dev.type == "cuda":
    torch.cuda.synchronize()
    print("nccl", ".".join(map(str, torch.cuda.nccl.version())))
print("backend", backend, "world", dist.get_world_size(), "steps", steps, "all_reduce", steps, "t0", float(t[0]))
dist.destroy_process_group()
