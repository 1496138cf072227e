"""torch.profiler started before CUDA is initialised (Kineto subscribes to CUPTI first):
how many CUDA kernel events it records. Under COLABTRACE_CUPTI=1 the shim must back off
and the count must equal the bare run's."""
import torch
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
    x = torch.randn(256, 256, device="cuda")
    for _ in range(10): x = x @ x; x = x / x.norm()
    torch.cuda.synchronize()
k = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
print("cuda_events", len(k))
