"""Three dataset formats through DataLoaders with 2 workers each: a memory-mapped .npy
(np.load mmap_mode='r'), a zip of .npy members opened once per worker, and webdataset-like
tar shards streamed sequentially, split between the workers. Prints the three sums."""
import io, os, sys, tarfile, zipfile
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, IterableDataset, get_worker_info

d = sys.argv[1]
def make_data():
    # A memory-mapped array, a zip of .npy members, and webdataset-like tar shards.
    arr = np.lib.format.open_memmap(os.path.join(d, "big.npy"), mode="w+", dtype=np.float32, shape=(4096, 64))
    arr[:] = np.arange(64, dtype=np.float32)
    arr.flush(); del arr
    with zipfile.ZipFile(os.path.join(d, "members.zip"), "w") as z:
        for i in range(50):
            buf = io.BytesIO(); np.save(buf, np.full(8, i, dtype=np.int64)); z.writestr(f"m{i}.npy", buf.getvalue())
    for s in range(4):
        with tarfile.open(os.path.join(d, f"shard-{s}.tar"), "w") as t:
            for i in range(25):
                data = bytes([s]) * (1000 + i)
                ti = tarfile.TarInfo(f"{s:02d}{i:03d}.bin"); ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))


class Mapped(Dataset):
    def __init__(self, p):
        self.a = np.load(p, mmap_mode="r")
    def __len__(self):
        return len(self.a)
    def __getitem__(self, i):
        return torch.from_numpy(np.array(self.a[i]))

class Zipped(Dataset):
    def __init__(self, p):
        self.p = p; self.z = None
    def __len__(self):
        return 50
    def __getitem__(self, i):
        if self.z is None:
            self.z = zipfile.ZipFile(self.p)
        return torch.from_numpy(np.load(io.BytesIO(self.z.read(f"m{i}.npy"))))

class Shards(IterableDataset):
    def __init__(self, paths):
        self.paths = paths
    def __iter__(self):
        w = get_worker_info()
        mine = self.paths if w is None else self.paths[w.id::w.num_workers]
        for p in mine:
            with tarfile.open(p, "r|") as t:  # streamed, sequential, as webdataset reads
                for m in t:
                    yield len(t.extractfile(m).read())

if __name__ == "__main__":
    make_data()
    a = sum(float(b.sum()) for b in DataLoader(Mapped(os.path.join(d, "big.npy")), batch_size=256, num_workers=2))
    z = sum(int(b.sum()) for b in DataLoader(Zipped(os.path.join(d, "members.zip")), batch_size=10, num_workers=2))
    s = sum(int(b.sum()) for b in DataLoader(Shards([os.path.join(d, f"shard-{i}.tar") for i in range(4)]),
                                              batch_size=5, num_workers=2))
    print(int(a), z, s)
