"""The Python suite of tools/bench: the cost of a Python stack at a GPU allocation.

    tools/bench --suite python --build build

A CPython 3.11 program calls cudaMalloc/cudaFree through ctypes into the simulated
runtime (tests/simcuda) at a Python depth of 1 and of 16 frames, bare and under the shim
(COLABTRACE_STACKS=0: no stacks at all; default: 16 native frames plus the Python
stack). CPython 3.11 runs Python-to-Python calls inside one C frame, so the native stack
is the same at both depths and the depth-16 minus depth-1 difference is the cost of 15
more Python frames. "first sight" is a stack never seen before (1,000 distinct code
objects): the walk, the line numbers, the text and its interning. Costs are the thread's
CPU time per cudaMalloc+cudaFree pair, the median of rounds, the lowest of 3 runs.
Budget (shared/PRODUCT.md): a Python stack at a GPU allocation, 16 frames, <= 2 us."""
from __future__ import annotations

import json
import os
import subprocess

NAME = "python"
PYTHON = "/usr/bin/python3.11"
BUDGET_NS = 2000

PROGRAM = r'''
import ctypes, json, statistics, sys, time
rt = ctypes.CDLL(sys.argv[1])
malloc, free = rt.cudaMalloc, rt.cudaFree
p = ctypes.c_void_p()
ref, size = ctypes.byref(p), ctypes.c_size_t(256)

def pair():
    malloc(ref, size)
    free(p)

def rounds(fn, n=2000, reps=15):
    out = []
    for _ in range(reps):
        t0 = time.thread_time_ns()
        for _ in range(n):
            fn()
        out.append((time.thread_time_ns() - t0) / n)
    return statistics.median(out)

def deep(k, fn):
    return fn() if k <= 1 else deep(k - 1, fn)

res = {"depth1": rounds(lambda: deep(1, pair)), "depth16": rounds(lambda: deep(16, pair))}
# First sight: 1,000 distinct code objects, each seen once, 16 frames deep.
fns = []
for i in range(1000):
    ns = {"pair": pair}
    exec(compile("def f():\n    pair()\n", f"<gen{i}>", "exec"), ns)
    fns.append(ns["f"])
t0 = time.thread_time_ns()
for f in fns:
    deep(15, f)
res["first_sight16"] = (time.thread_time_ns() - t0) / len(fns)
print(json.dumps(res))
'''


def _measure(ctx, mode, extra=None):
    script = os.path.join(ctx.work, "py_gpu_bench.py")
    with open(script, "w") as f:
        f.write(PROGRAM)
    sim = os.path.join(ctx.build, "simcuda")
    best = None
    for _ in range(3):
        env = ctx.env(mode, os.path.join(ctx.work, "py-traces"))
        env["LD_LIBRARY_PATH"] = sim
        env.update(extra or {})
        p = subprocess.run([PYTHON, script, os.path.join(sim, "libcudart.so.13")], env=env,
                           capture_output=True, text=True, check=True)
        r = json.loads(p.stdout.strip().splitlines()[-1])
        best = r if best is None else {k: min(best[k], r[k]) for k in r}
    return best


def run(ctx):
    import sys
    bench = sys.modules["__main__"]  # tools/bench, which imported this file
    if not os.path.exists(PYTHON) or not os.path.exists(os.path.join(ctx.build, "simcuda", "libcudart.so.13")):
        return [bench.Section("Python stacks at GPU allocations", ["skipped"], [["needs CPython 3.11 and simcuda"]])]
    bare = _measure(ctx, "bare")
    nostacks = _measure(ctx, "colabtrace", {"COLABTRACE_STACKS": "0"})
    full = _measure(ctx, "colabtrace")
    rows = []
    for key, label in (("depth1", "Python depth 1"), ("depth16", "Python depth 16"),
                       ("first_sight16", "depth 16, stack never seen before")):
        rows.append([label, f"{bare[key]:.0f}", f"{nostacks[key] - bare[key]:.0f}",
                     f"{full[key] - bare[key]:.0f}"])
    py15 = full["depth16"] - full["depth1"] - (nostacks["depth16"] - nostacks["depth1"])
    notes = (f"15 more Python frames cost {py15:.0f} ns per pair (2 captures: the cudaMalloc "
             f"and the cudaFree), budget {BUDGET_NS} ns per allocation with 16 frames.")
    return [bench.Section("Python stacks at GPU allocations (ns per cudaMalloc+cudaFree pair)",
                          ["case", "bare", "added, COLABTRACE_STACKS=0", "added, default stacks"],
                          rows, notes)]
