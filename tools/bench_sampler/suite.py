"""The sampler suite of tools/bench: what `colabtrace run`'s outside sampler costs the
program it watches, and itself.

    tools/bench --suite sampler --build build [--quick]

Programs side by side, each run bare, under plain LD_PRELOAD (the shim alone), under
`colabtrace run` (the shim and the sampler, its PSS reads as their cost budget allows),
and under `colabtrace run` with COLABTRACE_PSS_MS=100 (PSS read at every round, as the
sampler did before its budget: the cost it removed):
  - churn N GiB: a Python process that holds N GiB and makes 64 MiB buffers (each an
    mmap, a memset and a munmap, as numpy or CPU tensors do) for 6 s; buffers made;
  - torch loop: a PyTorch CPU loop over a 3 GiB dataset tensor with 2 DataLoader
    workers (Debian's python3-torch); steps in 8 s;
  - torchrun: a 3-rank DDP job (gloo, 300 steps of a small model); the CPU time of the
    whole job (getrusage of its children) against bare;
  - the sampler's own CPU: a job of 16 processes of 256 MiB each that sleep 10 s; the
    share of one core `colabtrace run` used (its own /proc/PID/stat, read by the job).
Budgets (shared/PRODUCT.md): the sampler <= 1% of a core for up to 16 processes, smaps
reads holding a process's mmap lock <= 2% of the time (by construction: tested in
tests/lifecycle/unit/pss_schedule_test.cpp), and the program keeps >= 0.97 of its
plain-LD_PRELOAD throughput."""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time

NAME = "sampler"
TORCH_PYTHON = "/usr/bin/python3"

CHURN = r'''
import mmap, sys, time
gib, seconds = float(sys.argv[1]), float(sys.argv[2])
held = mmap.mmap(-1, int(gib * (1 << 30)))
chunk = b"\1" * (64 << 20)
for off in range(0, len(held), len(chunk)):
    held[off:off + len(chunk)] = chunk[:len(held) - off]
n, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    b = b"\1" * (64 << 20)  # a fresh mmap, every page written (as numpy or a CPU tensor)
    del b                    # munmap
    n += 1
print(n)
'''

TORCH_LOOP = r'''
import sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
torch.set_num_threads(1)
data = torch.ones(3 * (1 << 30) // 4 // 1024, 1024)  # 3 GiB
loader = DataLoader(TensorDataset(data), batch_size=256, shuffle=True, num_workers=2,
                    persistent_workers=True)
model = torch.nn.Linear(1024, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def steps(seconds):
    n, end = 0, time.monotonic() + seconds
    while True:
        for (x,) in loader:
            opt.zero_grad(); model(x).sum().backward(); opt.step(); n += 1
            if time.monotonic() >= end:
                return n
steps(2)
print(steps(float(sys.argv[1])))
'''

DDP = r'''
import os, datetime, torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
torch.set_num_threads(1)
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
model = DDP(torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(64, 256)
for _ in range(300):
    opt.zero_grad(); model(x).sum().backward(); opt.step()
dist.destroy_process_group()
'''

SIXTEEN = r'''
import os, sys, time
t0 = time.monotonic()
run = os.getppid()
def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
start = cpu(run)
kids = []
for _ in range(15):
    pid = os.fork()
    if pid == 0:
        held = bytearray(b"\1") * (256 << 20)
        time.sleep(10)
        os._exit(0)
    kids.append(pid)
held = bytearray(b"\1") * (256 << 20)
time.sleep(10)
for k in kids:
    os.waitpid(k, 0)
print(cpu(run) - start, time.monotonic() - t0)
'''

MODES = ["bare", "LD_PRELOAD", "colabtrace run", "colabtrace run, PSS every round"]


def _script(ctx, name, text):
    path = os.path.join(ctx.work, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def _argv_env(ctx, mode, argv):
    """argv and environment of one run in MODE (traces into a fresh folder)."""
    out = os.path.join(ctx.work, f"sampler-{time.monotonic_ns()}")
    os.makedirs(out)
    cli = os.path.join(ctx.build, "bin", "colabtrace")
    if mode == "bare":
        return argv, ctx.env("bare")
    if mode == "LD_PRELOAD":
        return argv, ctx.env("colabtrace", out)
    env = ctx.env("bare")
    env["COLABTRACE_SHIM"] = ctx.shim
    if mode.endswith("every round"):
        env["COLABTRACE_PSS_MS"] = "100"
    return [cli, "run", "-o", out, "--", *argv], env


def _last_line(ctx, mode, argv):
    a, env = _argv_env(ctx, mode, argv)
    p = subprocess.run(a, env=env, capture_output=True, text=True, check=True)
    return p.stdout.strip().splitlines()[-1]


def _throughput(ctx, argv, reps):
    """Per mode, the median count of REPS runs, the modes interleaved run by run."""
    got = {m: [] for m in MODES}
    for _ in range(reps):
        for m in MODES:
            got[m].append(float(_last_line(ctx, m, argv)))
    return {m: statistics.median(v) for m, v in got.items()}


def _children_cpu(ctx, mode, argv):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    a, env = _argv_env(ctx, mode, argv)
    t0 = time.monotonic()
    subprocess.run(a, env=env, capture_output=True, check=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def run(ctx):
    bench = sys.modules["__main__"]
    sections = []
    reps = 2 if ctx.quick else 3
    rows, worst = [], None
    churn = _script(ctx, "churn.py", CHURN)
    for gib in ([1, 4] if ctx.quick else [1, 4, 8]):
        t = _throughput(ctx, [sys.executable, churn, str(gib), "6"], reps)
        ratio = t["colabtrace run"] / t["LD_PRELOAD"]
        worst = ratio if worst is None else min(worst, ratio)
        rows.append([f"churn, {gib} GiB held (buffers in 6 s)"] + [f"{t[m]:.0f}" for m in MODES] +
                    [f"{ratio:.3f}", f"{t[MODES[3]] / t['LD_PRELOAD']:.3f}"])
    if subprocess.run([TORCH_PYTHON, "-c", "import torch"], capture_output=True).returncode == 0:
        loop = _script(ctx, "torch_loop.py", TORCH_LOOP)
        t = _throughput(ctx, [TORCH_PYTHON, loop, "8"], reps)
        ratio = t["colabtrace run"] / t["LD_PRELOAD"]
        worst = min(worst, ratio)
        rows.append(["torch loop, 3 GiB tensor, 2 workers (steps in 8 s)"] + [f"{t[m]:.0f}" for m in MODES] +
                    [f"{ratio:.3f}", f"{t[MODES[3]] / t['LD_PRELOAD']:.3f}"])
        ddp = _script(ctx, "ddp.py", DDP)
        torchrun = ["/usr/bin/torchrun", "--nproc_per_node", "3", "--redirects", "2", "--tee", "2",
                    "--master_port", "29533", ddp]  # --redirects/--tee: torch 1.13's torchrun on 3.11
        cpu = {m: statistics.median(_children_cpu(ctx, m, torchrun)[0] for _ in range(reps)) for m in MODES}
        rows.append(["torchrun, 3 ranks (CPU s of the whole job; lower is better)"] +
                     [f"{cpu[m]:.1f}" for m in MODES] +
                     [f"{cpu['LD_PRELOAD'] / cpu['colabtrace run']:.3f}",
                      f"{cpu['LD_PRELOAD'] / cpu[MODES[3]]:.3f}"])
    ctx.metric("sampler.throughput_ratio", worst, f"{worst:.3f}")
    sections.append(bench.Section(
        "colabtrace run's sampler: the program's throughput",
        ["program"] + MODES + ["run / LD_PRELOAD", "every round / LD_PRELOAD"], rows,
        f"Medians of {reps} runs, the modes interleaved. Budget: colabtrace run keeps >= 0.97 of the "
        f"plain-LD_PRELOAD throughput (CPU: LD_PRELOAD's CPU over run's); lowest here {worst:.3f}. "
        "'PSS every round' is COLABTRACE_PSS_MS=100: smaps_rollup at every 100 ms round, as before "
        "the budget."))
    sixteen = _script(ctx, "sixteen.py", SIXTEEN)
    own = []
    for mode in ("colabtrace run", MODES[3]):
        shares = []
        for _ in range(reps):
            cpu_s, wall = (float(x) for x in _last_line(ctx, mode, [sys.executable, sixteen]).split())
            shares.append(100.0 * cpu_s / wall)
        own.append([mode, f"{statistics.median(shares):.2f}%"])
    ctx.metric("sampler.cpu_percent", float(own[0][1].rstrip("%")), own[0][1])
    sections.append(bench.Section(
        "colabtrace run's sampler: its own CPU, 16 processes of 256 MiB for 10 s",
        ["mode", "share of one core"], own,
        "Budget: <= 1% of one core for up to 16 processes (the 100 ms rounds: /proc/PID/stat and status "
        "of each, the cgroup's files, and the PSS reads the budget allows)."))
    return sections
