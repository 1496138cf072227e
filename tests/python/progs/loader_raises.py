"""A torch DataLoader whose dataset raises in a worker process (item 5), which the main
process raises again (torch's "Original Traceback"). Prints its pid on stdout first.
argv[1]: the number of workers."""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

print(os.getpid(), flush=True)


class Items(Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        if i == 5:
            return i // 0  # WORKER LINE
        return torch.tensor([i])


def main():
    for batch in DataLoader(Items(), batch_size=2, num_workers=int(sys.argv[1])):  # MAIN LINE
        pass


main()
