"""A small PyTorch training loop that measures itself (issue 27's end-to-end programs).

    train_loop.py --steps N (--data DIR | --in-memory) [options]

Each iteration draws one batch with next() on a DataLoader iterator, runs a tiny model
and steps its optimizer(s). The loop times itself with perf_counter:
  * t_end[i]: when iteration i's last optimizer step returned (the boundary the Python
    start-up hook records for an optimizer step);
  * wait[i]: the time inside next(iterator) of iteration i.
The warm-up (iteration 0: worker start-up, first batch) is left out, as the analyzer
leaves out its first step: input_wait_fraction = sum(wait[1:]) / (t_end[-1] - t_end[0]).

The last stdout line is JSON: {"pid", "steps", "samples", "wait_s", "step_s",
"input_wait_fraction", "warmup_s", "worker_pids", "step_times", "waits"}. Options:
  --data DIR        one sample per file of DIR (sorted), read whole with open().read();
                    the dataset is exactly N * batch files: every file read once
  --in-memory       random tensors (no file I/O)
  --batch B         batch size (4); --workers W: DataLoader workers (2)
  --compute K       K extra 128x128 matmuls per step (host compute, 0)
  --sleep-ms S      sleep S ms per step (0): the step's share that a GPU would take, which
                    leaves the CPUs to the workers and does not stretch on a busy machine
  --optimizers 0|1|2  none (forward passes only), one optimizer, or two stepping in each
                    iteration (a GAN: D then G)
  --markers M       colabtrace.step(i) at the top of every M-th iteration (i % M == 0;
                    the package from --colabtrace DIR, e.g. build/python)
  --at-step H --control FILE --control-json JSON
                    after iteration H, write JSON to FILE (atomically): a slowfs mount
                    changes its latency from then on
  --progress        print "step I" (flushed) after each iteration's optimizer step: a
                    test waiting for the loop to reach a step (the hang tests)
  --kill-at K       in iteration K, after the batch and the forward pass, sleep
                    --kill-sleep seconds (0), print "killing K" and SIGKILL this process:
                    an interrupted step, after K optimizer steps
"""
import argparse
import json
import os
import signal
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

WIDTH = 64


class Files(Dataset):
    """One sample per file: its first WIDTH bytes as floats, and the reading process."""

    def __init__(self, files):
        self.files = files

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            data = f.read()
        x = torch.frombuffer(bytearray(data[:WIDTH]), dtype=torch.uint8).float() / 255
        return x, os.getpid()


class Tensors(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.x = torch.rand(n, WIDTH, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], os.getpid()


def write_atomically(path, text):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--data")
    ap.add_argument("--in-memory", action="store_true")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--compute", type=int, default=0)
    ap.add_argument("--sleep-ms", type=float, default=0)
    ap.add_argument("--optimizers", type=int, default=1, choices=(0, 1, 2))
    ap.add_argument("--markers", type=int, default=0)
    ap.add_argument("--colabtrace")
    ap.add_argument("--at-step", type=int, default=-1)
    ap.add_argument("--control")
    ap.add_argument("--control-json")
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--kill-at", type=int, default=-1)
    ap.add_argument("--kill-sleep", type=float, default=0)
    a = ap.parse_args()

    step_marker = None
    if a.markers:
        if a.colabtrace:
            sys.path.insert(0, a.colabtrace)
        import colabtrace
        step_marker = colabtrace.step

    torch.manual_seed(0)
    torch.set_num_threads(1)  # the machine's cores are for the workers and the tests
    n = a.steps * a.batch
    if a.data:
        files = sorted(os.path.join(a.data, f) for f in os.listdir(a.data))[:n]
        if len(files) != n:
            sys.exit(f"{a.data} holds {len(files)} files, {n} needed")
        dataset = Files(files)
    else:
        dataset = Tensors(n)
    loader = DataLoader(dataset, batch_size=a.batch, num_workers=a.workers, shuffle=False)

    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU(),
                                torch.nn.Linear(WIDTH, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    critic = opt2 = None
    if a.optimizers == 2:
        critic = torch.nn.Linear(WIDTH, 1)
        opt2 = torch.optim.Adam(critic.parameters(), lr=0.001)
    heavy = torch.rand(128, 128)

    it = iter(loader)
    waits, ends, pids, samples = [], [], set(), 0
    for i in range(a.steps):
        if step_marker is not None and i % a.markers == 0:
            step_marker(i)
        t0 = time.perf_counter()
        x, who = next(it)
        waits.append(time.perf_counter() - t0)
        samples += len(x)
        pids.update(int(p) for p in who)

        y = heavy
        for _ in range(a.compute):
            y = torch.tanh(y @ heavy)
        if a.sleep_ms:
            time.sleep(a.sleep_ms / 1000)
        if opt2 is not None:  # the critic first, as a GAN steps D then G
            opt2.zero_grad()
            critic(x).pow(2).mean().backward()
            opt2.step()
        opt.zero_grad()
        loss = model(x).pow(2).mean() + y.mean() * 0
        if i == a.kill_at:
            time.sleep(a.kill_sleep)
            print(f"killing {i}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        if a.optimizers:
            loss.backward()
            opt.step()
        ends.append(time.perf_counter())
        if a.progress:
            print(f"step {i}", flush=True)
        if i == a.at_step:
            write_atomically(a.control, a.control_json)

    step_s = ends[-1] - ends[0]
    wait_s = sum(waits[1:])
    print(json.dumps({
        "pid": os.getpid(), "steps": a.steps, "samples": samples,
        "wait_s": wait_s, "step_s": step_s,
        "input_wait_fraction": wait_s / step_s if step_s > 0 else 0.0,
        "warmup_s": waits[0], "worker_pids": sorted(pids - {os.getpid()}),
        "step_times": [b - e for e, b in zip(ends, ends[1:])],
        "waits": waits}), flush=True)


if __name__ == "__main__":
    main()
