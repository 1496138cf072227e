"""Jobs that hang on a real GPU (issue 28), run under `colabtrace run --hang-timeout S` (tools/gpu_validate: 15):

    torch_hang.py kernel|loader DIR

Both train a small model on the GPU for 5 steps (optimizer steps: the job's progress),
print "blocked" and then never make progress again:
  kernel  torch.cuda._sleep launches a kernel that spins for about a minute (bounded, so
          that nothing outlives the check), after the two kernels of ones()*2; then
          torch.cuda.synchronize() (cudaDeviceSynchronize) waits for it. Expect proc.hang
          naming cudaDeviceSynchronize, the kernels in flight newest first (the spin
          kernel, the multiply, the fill), and this file's line of the synchronize.
  loader  a DataLoader with 2 workers reads one small file per sample; sample 96 (batch 6)
          is DIR/never.fifo, opened for reading and writing so that read() waits for ever
          (no writer ever writes, and no end of file comes): a worker stuck on storage that
          never answers. Expect proc.hang: the main process waits for its batch at the
          next(it) line, the worker is blocked in read() of DIR/never.fifo.
"""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

SPIN_CYCLES = 120_000_000_000  # about 60 s at the H200's 1.98 GHz (longer at lower clocks)


class Files(Dataset):
    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        path = self.files[i]
        if path.endswith(".fifo"):
            fd = os.open(path, os.O_RDWR)  # never blocks; the read below does, for ever
            data = os.read(fd, 4096)
        else:
            with open(path, "rb") as f:
                data = f.read()
        return torch.frombuffer(bytearray(data[:64]), dtype=torch.uint8).float() / 255


def main():
    mode, d = sys.argv[1], sys.argv[2]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    if mode == "loader":
        files = []
        for i in range(16 * 8):
            files.append(os.path.join(d, f"{i:04d}.bin"))
            with open(files[-1], "wb") as f:
                f.write(os.urandom(4096))
        files[96] = os.path.join(d, "never.fifo")
        os.mkfifo(files[96])
        batches = iter(DataLoader(Files(files), batch_size=16, num_workers=2))
    else:
        batches = (torch.rand(16, 64) for _ in range(5))
    for i in range(5):
        x = next(batches).cuda()
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        print(f"step {i}", flush=True)
    print("blocked", os.getpid(), flush=True)
    if mode == "kernel":
        torch.cuda.synchronize()  # the training's kernels are done: in flight from here on
        y = torch.ones(1 << 20, device="cuda") * 2
        torch.cuda._sleep(SPIN_CYCLES)
        torch.cuda.synchronize()  # waits for the spinning kernel
        print("synchronized", y.sum().item())
    else:
        x = next(batches)  # batch 5 arrives; batch 6 never does
        x = next(batches)  # waits for ever
        print("got", x.shape)


if __name__ == "__main__":
    main()
