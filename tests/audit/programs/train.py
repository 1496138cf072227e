"""A small CPU training run as an ML engineer writes one: 200 samples in .npy and .pt
files, a shuffling DataLoader with 2 persistent workers (start method from argv[2]:
default fork, spawn or forkserver), a torch.save checkpoint every 5 steps, torch.load of
the last one and an evaluation pass in the main process. Prints steps, checkpoint, count."""
import os, sys
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

d = sys.argv[1]
ctx = sys.argv[2] if len(sys.argv) > 2 else None


def write_samples(n=200):
    os.makedirs(os.path.join(d, "data"), exist_ok=True)
    for i in range(n):
        x = np.full(16, i % 7, dtype=np.float32)
        if i % 2:
            np.save(os.path.join(d, "data", f"s{i}.npy"), x)
        else:
            torch.save({"x": torch.from_numpy(x), "y": i % 3}, os.path.join(d, "data", f"s{i}.pt"))


class Files(Dataset):
    def __init__(self, root):
        self.files = sorted(os.listdir(root)); self.root = root
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        p = os.path.join(self.root, self.files[i])
        if p.endswith(".npy"):
            return torch.from_numpy(np.load(p)), i % 3
        s = torch.load(p)
        return s["x"], s["y"]

if __name__ == "__main__":  # spawn and forkserver workers import this file again
    write_samples()
    torch.manual_seed(0)
    ds = Files(os.path.join(d, "data"))
    dl = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2, persistent_workers=True,
                    pin_memory=False, multiprocessing_context=ctx)
    model = nn.Sequential(nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = 0
    for epoch in range(2):
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            step += 1
            if step % 5 == 0:
                torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                           os.path.join(d, "ckpt.pt"))
    ck = torch.load(os.path.join(d, "ckpt.pt"))
    model.load_state_dict(ck["model"])
    model.eval()
    with torch.no_grad():
        n = sum(len(y) for x, y in DataLoader(ds, batch_size=32, num_workers=0))
    print("steps", step, "ckpt", ck["step"], "eval", n)
