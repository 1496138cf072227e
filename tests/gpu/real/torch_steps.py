"""Where a real GPU training step's time goes (issue 27), run under `colabtrace run`:

    torch_steps.py crawl|gpu|cpu [--steps N]

  crawl  a model on the GPU fed by a DataLoader with 4 workers; every sample is a small
         file read whole, then 5 ms more of waiting (storage that answers slowly): the
         loop waits for its batches (perf.input-bound, the workers' time mostly waiting).
  gpu    the same loop over batches already on the GPU, with four 4096-wide layers and
         loss.item() each step: the step's time is the GPU's (gpu_sync_fraction high),
         not the input's; no perf finding.
  cpu    the crawl loop's model on the CPU, in memory, run with CUDA_VISIBLE_DEVICES=""
         on a machine with a GPU: perf.gpu-unused.

The loop times itself as the analyzer defines its fractions: a step ends when opt.step()
returns (the boundary PyTorch 2's optimizer hook records), the first step is left out.
Last stdout line, JSON: pid, steps, input_wait_fraction (time in next(it)), sync_fraction
(time in loss.item()), worker_pids, step_s, median_step_s."""
import argparse
import json
import os
import tempfile
import time

import torch
from torch.utils.data import DataLoader, Dataset

WIDTH = 256


class SlowFiles(Dataset):
    def __init__(self, files, delay_s):
        self.files, self.delay_s = files, delay_s

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            data = f.read()
        time.sleep(self.delay_s)
        x = torch.frombuffer(bytearray(data[:WIDTH]), dtype=torch.uint8).float() / 255
        return x, os.getpid()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=("crawl", "gpu", "cpu"))
    ap.add_argument("--steps", type=int, default=60)
    a = ap.parse_args()
    torch.manual_seed(0)
    dev = "cpu" if a.mode == "cpu" else "cuda"
    batch = 16
    if a.mode == "gpu":
        width = 4096
        model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(4)]).to(dev)
        xs = torch.rand(a.steps, 4096, width, device=dev)
        batches = ((xs[i], [os.getpid()]) for i in range(a.steps))
    else:
        model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
                                    torch.nn.Linear(WIDTH, 1)).to(dev)
        if a.mode == "crawl":
            data = tempfile.mkdtemp(prefix="ct-samples-")
            files = []
            for i in range(a.steps * batch):
                files.append(os.path.join(data, f"{i:05d}.bin"))
                with open(files[-1], "wb") as f:
                    f.write(os.urandom(4096))
            loader = DataLoader(SlowFiles(files, 0.005), batch_size=batch, num_workers=4)
            batches = iter(loader)
        else:
            xs = torch.rand(a.steps, batch, WIDTH)
            batches = ((xs[i], [os.getpid()]) for i in range(a.steps))
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)

    waits, syncs, ends, pids = [], [], [], set()
    for i in range(a.steps):
        t0 = time.perf_counter()
        x, who = next(batches)
        waits.append(time.perf_counter() - t0)
        pids.update(int(p) for p in who)
        x = x.to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        ends.append(time.perf_counter())
        t1 = time.perf_counter()
        loss.item()
        syncs.append(time.perf_counter() - t1)
    step_s = ends[-1] - ends[0]
    steps = sorted(b - e for e, b in zip(ends, ends[1:]))
    print(json.dumps({
        "pid": os.getpid(), "steps": a.steps, "step_s": step_s,
        "median_step_s": steps[len(steps) // 2],
        "input_wait_fraction": sum(waits[1:]) / step_s,
        "sync_fraction": sum(syncs[:-1]) / step_s,
        "worker_pids": sorted(pids - {os.getpid()})}), flush=True)


if __name__ == "__main__":
    main()
