"""A DataLoader loop (argv: START_METHOD NUM_WORKERS EPOCHS) over 24 items in batches of 4,
for the batch-wait and worker tests. Prints (JSON) its pid, the batches it got, their sum
and the line of the `for` that asks for them."""
import json
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset


class Squares(Dataset):
    def __len__(self):
        return 24

    def __getitem__(self, i):
        return torch.tensor([float(i * i)])


def main():
    method, workers, epochs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    kw = {"multiprocessing_context": method} if workers else {}
    loader = DataLoader(Squares(), batch_size=4, num_workers=workers, **kw)
    total, batches = 0.0, 0
    for _ in range(epochs):
        for batch in loader:  # BATCH LINE
            total += float(batch.sum())
            batches += 1
    print(json.dumps({"pid": os.getpid(), "batches": batches, "total": total}))


if __name__ == "__main__":
    main()
