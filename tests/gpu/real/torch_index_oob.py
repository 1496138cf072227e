"""A device-side assert (issue 23), for a real GPU: PyTorch indexing out of range. The
index kernel launches fine; .item() synchronises and fails with 710
(cudaErrorAssert); the next op fails at launch. Expect gpu.device-fault, error 710,
naming the index kernel and this file's line of the indexing (line 10)."""
import torch
x = torch.zeros(10, device="cuda")
idx = torch.tensor([100], device="cuda")
torch.cuda.synchronize()
try:
    y = x[idx]
    print("value", y.item())
except RuntimeError as e:
    print("error:", str(e).splitlines()[0])
try:
    z = torch.ones(4, device="cuda")
    print("after", z.sum().item())
except RuntimeError as e:
    print("after error:", str(e).splitlines()[0])
