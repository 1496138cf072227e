"""The dist suite of tools/bench: what the Python start-up hook's record of each
torch.distributed collective costs (issue 38, "Collectives").

    tools/bench --suite dist --build build

One process of a gloo group of one (Debian's python3-torch, /usr/bin/python3, a FileStore
in the work directory) all-reduces a one-element tensor 20,000 times a round: gloo then
does almost nothing, so the loop is nearly all per-call overhead. Three runs side by side:
bare; under the shim without the start-up hook (COLABTRACE_PYTHON=0); under the shim with
it (COLABTRACE_PYTHON=1: two calls into the shim and torch's sequence counter per
collective, one `collective` record each). The figure is the thread's CPU time per
all_reduce, the median of 9 rounds, the lowest of 3 runs; "added by the hook" is the third
minus the second. Budget (shared/PRODUCT.md): <= 2 us per collective."""
from __future__ import annotations

import json
import os
import subprocess

NAME = "dist"
PYTHON = "/usr/bin/python3"
BUDGET_NS = 2000

PROGRAM = r'''
import json, os, statistics, sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="file://" + sys.argv[1], rank=0, world_size=1)
t = torch.zeros(1)
for _ in range(2000):
    dist.all_reduce(t)
out = []
for _ in range(9):
    t0 = time.thread_time_ns()
    for _ in range(20000):
        dist.all_reduce(t)
    out.append((time.thread_time_ns() - t0) / 20000)
dist.destroy_process_group()
print(json.dumps(statistics.median(out)))
'''


def run(ctx):
    Section = __import__("__main__").Section
    if subprocess.run([PYTHON, "-c", "import torch.distributed"], capture_output=True).returncode != 0:
        return [Section("torch.distributed collectives", ["skipped"], [["Debian's python3-torch is missing"]])]
    prog = os.path.join(ctx.work, "dist_allreduce.py")
    with open(prog, "w") as f:
        f.write(PROGRAM)
    modes = [("bare", "bare", None), ("shim, no hook", "colabtrace", "0"), ("shim and hook", "colabtrace", "1")]
    best = {}
    for _ in range(3):
        for label, mode, hook in modes:
            env = ctx.env(mode)
            env["OMP_NUM_THREADS"] = "1"
            if hook is not None:
                env["COLABTRACE_PYTHON"] = hook
            store = os.path.join(ctx.work, "dist_store")
            if os.path.exists(store):
                os.unlink(store)
            p = subprocess.run([PYTHON, prog, store], env=env, capture_output=True, text=True, check=True)
            ns = float(p.stdout.strip().splitlines()[-1])
            best[label] = min(best.get(label, ns), ns)
    added = best["shim and hook"] - best["shim, no hook"]
    ctx.metric("dist.collective.ns", added, f"{added:.0f}")
    rows = [[label, f"{best[label]:.0f}"] for label, _, _ in modes]
    rows.append(["added by the hook", f"{added:.0f}"])
    return [Section("torch.distributed collectives: CPU ns per all_reduce (gloo, group of one)",
                    ["run", "ns per all_reduce"], rows,
                    f"Budget: <= {BUDGET_NS} ns added per collective by the Python hook.")]
