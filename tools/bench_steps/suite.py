"""The steps suite of tools/bench: what finding the training steps without markers costs.

    tools/bench --suite steps --build build

A real PyTorch loop (Debian's python3-torch, /usr/bin/python3) of 3,000 iterations, each
one DataLoader batch (a TensorDataset in memory, num_workers=0, batch_size=1) and one
SGD step on a parameter without a gradient (the step itself does almost nothing), so
that the loop is nearly all per-step overhead. Three runs side by side: bare; under the
shim without the Python start-up hook (COLABTRACE_PYTHON unset: no step hooks); under
the shim with it (COLABTRACE_PYTHON=1: an optimizer step hook and a batch wait per
iteration, one Step and one BatchWait record each). The figure is the thread's CPU time
per iteration, the median of 15 rounds, the lowest of 3 runs; "added by the step hooks"
is the third minus the second. Budget (shared/PRODUCT.md): steps found without markers,
<= 2 us per step. The small-file loop and the launch path have suites of their own (io,
gpu); the step hooks add nothing to them (no per-read or per-launch work)."""
from __future__ import annotations

import json
import os
import subprocess

NAME = "steps"
PYTHON = "/usr/bin/python3"
BUDGET_NS = 2000

PROGRAM = r'''
import json, statistics, time
import torch
from torch.utils.data import DataLoader, TensorDataset
param = torch.zeros(1, requires_grad=True)
opt = torch.optim.SGD([param], lr=0.1)
loader = DataLoader(TensorDataset(torch.zeros(200, 1)), batch_size=1, num_workers=0)

def rounds(reps=15):
    out = []
    for _ in range(reps):
        n, t0 = 0, time.thread_time_ns()
        for (batch,) in loader:
            opt.step()
            n += 1
        out.append((time.thread_time_ns() - t0) / n)
    return statistics.median(out)

rounds(2)  # warm-up
print(json.dumps({"per_step": rounds()}))
'''


def _measure(ctx, mode, extra=None):
    script = os.path.join(ctx.work, "steps_bench.py")
    with open(script, "w") as f:
        f.write(PROGRAM)
    best = None
    for _ in range(3):
        env = ctx.env(mode, os.path.join(ctx.work, "steps-traces"))
        env.update(extra or {})
        p = subprocess.run([PYTHON, script], env=env, capture_output=True, text=True, check=True)
        r = json.loads(p.stdout.strip().splitlines()[-1])["per_step"]
        best = r if best is None else min(best, r)
    return best


def run(ctx):
    import sys
    bench = sys.modules["__main__"]  # tools/bench, which imported this file
    probe = subprocess.run([PYTHON, "-c", "import torch"], capture_output=True)
    if probe.returncode != 0:
        return [bench.Section("Steps found without markers", ["skipped"], [["needs python3-torch"]])]
    bare = _measure(ctx, "bare")
    shim = _measure(ctx, "colabtrace")
    hooks = _measure(ctx, "colabtrace", {"COLABTRACE_PYTHON": "1"})
    added = hooks - shim
    ctx.metric("steps.auto.ns", added, f"{added:.0f}")
    rows = [["bare", f"{bare:.0f}", "-"],
            ["shim, no Python hook", f"{shim:.0f}", f"{shim - bare:+.0f}"],
            ["shim + step hooks (COLABTRACE_PYTHON=1)", f"{hooks:.0f}", f"{hooks - bare:+.0f}"]]
    notes = (f"The step hooks (an optimizer step and a batch wait per iteration) add {added:.0f} ns "
             f"per step; budget {BUDGET_NS} ns.")
    return [bench.Section("Steps found without markers (CPU ns per DataLoader batch + optimizer step)",
                          ["run", "per step", "vs bare"], rows, notes)]
