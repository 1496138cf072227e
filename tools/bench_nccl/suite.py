"""The nccl suite of tools/bench: the added cost per NCCL call of the shim's NCCL hooks
(shim/nccl) against the simulated libnccl.so.2 (tests/simnccl), next to a bare run and a
no-op LD_PRELOAD library (issue 38; budget in shared/PRODUCT.md: <= 100 ns per call).

    tools/bench --suite nccl --build build      # about 30 s; --quick: about 10 s

tools/bench_nccl/nccl_bench.c all-reduces on a communicator of one rank (each completes as
it is entered), synchronising its stream after every 256 calls. Costs are the thread's CPU
time, the median over rounds, the lowest of several interleaved runs per mode."""
from __future__ import annotations

import json
import os
import subprocess
import sys

NAME = "nccl"
HERE = os.path.dirname(os.path.abspath(__file__))
BUDGET_NS = 100


def run(ctx):
    Section = sys.modules["__main__"].Section  # tools/bench's, which imported this file
    sim = os.path.join(ctx.build, "simcuda")
    if not os.path.exists(os.path.join(sim, "libnccl.so.2")):
        return [Section("NCCL calls", ["note"], [["skipped: no simulated NCCL in the build tree"]])]
    tests = os.path.join(HERE, "..", "..", "tests")
    prog = os.path.join(ctx.work, "nccl_bench")  # the libraries after the source: --as-needed
    subprocess.run(["cc", "-O2", "-I" + os.path.join(tests, "simnccl", "nccl_abi"),
                    "-I" + os.path.join(tests, "simcuda", "cuda_abi"), "-o", prog, os.path.join(HERE, "nccl_bench.c"),
                    "-L" + sim, "-l:libnccl.so.2", "-l:libcudart.so.13", "-Wl,-rpath," + sim], check=True)
    ctx.cc(os.path.join(HERE, "..", "bench_gpu", "noop.c"), "libnoop.so", "-shared", "-fPIC")
    n, rounds, repeats = (50000, 7, 2) if ctx.quick else (200000, 15, 5)
    modes = [("bare", "bare"), ("no-op preload", "noop"), ("colabtrace", "colabtrace")]
    best: dict[str, float] = {}
    for _ in range(repeats):
        for label, mode in modes:
            env = ctx.env(mode)
            env["LD_LIBRARY_PATH"] = sim
            env["SIMNCCL_DIR"] = ctx.work
            p = subprocess.run([prog, str(n), str(rounds)], env=env, capture_output=True, text=True, check=True)
            r = json.loads([l for l in p.stdout.splitlines() if l.startswith("{")][-1])
            best[label] = min(best.get(label, float("inf")), r["median_ns_per_call"])
    added = best["colabtrace"] - best["bare"]
    ctx.metric("dist.nccl.ns", added, f"{added:+.1f} ns")
    rows = [[label, f"{best[label]:.1f}", "" if label == "bare" else f"{best[label] - best['bare']:+.1f}",
             f"<= {BUDGET_NS}" if mode == "colabtrace" else ""] for label, mode in modes]
    return [Section(
        "Added cost per NCCL call (simulated libnccl.so.2)",
        ["mode", "ns per ncclAllReduce (CPU)", "added", "budget per call (ns)"], rows,
        f"{n} ncclAllReduce calls per round on a communicator of one rank, the stream synchronised after "
        f"every 256 (in every mode), median of {rounds} rounds, the lowest of {repeats} interleaved runs "
        "(tools/bench_nccl/nccl_bench.c). Each call under the shim: the real function (resolved once), an "
        "index probe for its communicator, its sequence number (an atomic add) and one 64-byte slot of the "
        "call ring in the trace's NCCL chunk (an atomic add and ten stores, a TSC read); no record. The "
        "synchronisations' own hook cost is spread over 256 calls.")]
