"""A torch DataLoader with 2 worker processes over the files of DIR. Each sample is one
file read with open().read(). Prints {"pids": [worker pids], "samples": n}."""
import json
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, root):
        self.files = sorted(os.path.join(root, n) for n in os.listdir(root))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            data = f.read()
        return torch.tensor([len(data), os.getpid()])


if __name__ == "__main__":
    loader = DataLoader(Files(sys.argv[1]), batch_size=4, num_workers=2)
    pids, n = set(), 0
    for batch in loader:
        n += batch.shape[0]
        pids.update(int(p) for p in batch[:, 1])
    print(json.dumps({"pids": sorted(pids), "samples": n}))
