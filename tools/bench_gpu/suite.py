"""The GPU memory suite of tools/bench: the added cost per cudaMalloc/cudaFree against the
simulated CUDA runtime (tests/simcuda), without stacks and with 16-frame stacks, next to
a bare run and a no-op LD_PRELOAD library; heaptrack's cost per malloc+free as the
reference; trace bytes per GPU event.

    tools/bench --suite gpu --build build      # about 2 minutes; --quick: about 20 s

Costs are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID: user and kernel time spent on
its behalf, page faults on the trace file included), the median over rounds of back-to-
back pairs, and the lowest of several interleaved runs per mode: on a shared machine
interference only ever adds time, and wall-clock figures there mostly measure the other
tenants."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

NAME = "gpu"
HERE = os.path.dirname(os.path.abspath(__file__))
BUDGET_NO_STACKS_NS = 100   # shared/PRODUCT.md, per cudaMalloc/cudaFree
BUDGET_STACKS_NS = 2000
BUDGET_LAUNCH_NS = 10       # issue 13: a successful launch's added cost
GPU_TYPES = range(64, 96)


def _cuda_include() -> str:
    """The toolkit's headers where present, else the project's checked subset of them
    (tests/simcuda/cuda_abi, the declarations the simulated libraries build with)."""
    for d in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        if d and os.path.exists(os.path.join(d, "include", "cuda_runtime_api.h")):
            return os.path.join(d, "include")
    own = os.path.join(HERE, "..", "..", "tests", "simcuda", "cuda_abi")
    return os.path.abspath(own) if os.path.exists(os.path.join(own, "cuda_runtime_api.h")) else ""


def _program(ctx) -> str | None:
    built = os.path.join(ctx.build, "tests", "gpu", "bench_gpu_malloc")
    if os.path.exists(built):
        return built
    inc, sim = _cuda_include(), os.path.join(ctx.build, "simcuda")
    if not inc or not os.path.exists(os.path.join(sim, "libcudart.so.13")):
        return None
    return ctx.cc(os.path.join(HERE, "malloc_bench.c"), "gpu_malloc_bench", "-I" + inc, "-L" + sim,
                  "-l:libcudart.so.13", "-Wl,-rpath," + sim)


def _run(ctx, argv, mode, extra=None, trace_dir=None) -> dict:
    env = ctx.env(mode, trace_dir)
    env["LD_LIBRARY_PATH"] = os.path.join(ctx.build, "simcuda")
    env.update(extra or {})
    p = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]  # heaptrack talks too
    return json.loads(line)


def _trace_bytes(trace_dir) -> dict:
    script = os.path.join(os.path.dirname(HERE), "bench_io", "trace_bytes.py")
    files = glob.glob(os.path.join(trace_dir, "*.ctrace"))
    if not os.path.exists(script) or not files:
        return {}
    p = subprocess.run([sys.executable, script, *files], capture_output=True, text=True, check=True)
    return {int(k): v for k, v in json.loads(p.stdout).items()}


def _python_launches(ctx, Section) -> list:
    """Launches from a Python stack 3 and 24 frames deep (py_launch.py calls launch_bench.c
    built as a library), bare and traced: the cost of the Python stack each launch carries
    in the launch ring, which grows with the depth (one walk of the frame chain)."""
    inc, sim = _cuda_include(), os.path.join(ctx.build, "simcuda")
    if not inc or not os.path.exists(os.path.join(sim, "libcudart.so.13")):
        return []
    lib = os.path.join(ctx.work, "liblaunch_bench.so")  # the libraries after the source: --as-needed
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-DLAUNCH_BENCH_LIBRARY", "-I" + inc, "-I" + HERE, "-o", lib,
                    os.path.join(HERE, "launch_bench.c"), "-L" + sim, "-l:libcudart.so.13", "-l:libcuda.so.1",
                    "-Wl,-rpath," + sim], check=True)
    n, rounds, repeats = (50000, 7, 2) if ctx.quick else (200000, 11, 5)
    depths, modes = (3, 24), (("bare", "bare", {}), ("colabtrace", "colabtrace", {}))
    best: dict[tuple, dict] = {}
    for _ in range(repeats):
        for depth in depths:
            for label, mode, extra in modes:
                r = _run(ctx, [sys.executable, os.path.join(HERE, "py_launch.py"), lib, str(depth), str(n),
                               str(rounds)], mode, extra)
                cur = best.setdefault((depth, label), {})
                for layer in ("runtime_median_ns", "driver_median_ns"):
                    cur[layer] = min(cur.get(layer, float("inf")), r[layer])
    rows = []
    for depth in depths:
        for label, _, _ in modes:
            row = [str(depth), label]
            for layer in ("runtime_median_ns", "driver_median_ns"):
                v, b = best[(depth, label)][layer], best[(depth, "bare")][layer]
                row += [f"{v:.1f}", "" if label == "bare" else f"{v - b:+.1f}"]
            rows.append(row)
    return [Section(
        "Added cost per successful kernel launch from Python (simulated runtime and driver)",
        ["Python frames", "mode", "cudaLaunchKernel ns", "added", "cuLaunchKernel ns", "added"], rows,
        f"{n} launches per round from a ctypes call made {depths[0]} and {depths[1]} Python frames deep "
        f"(tools/bench_gpu/py_launch.py, {os.path.basename(sys.executable)}), median of {rounds} rounds, the "
        f"lowest of {repeats} interleaved runs. Each launch notes its whole Python stack in the launch ring "
        "(one walk of the frame chain reading two words per frame, one hash, one cache probe); a launch from "
        "C pays none of it (the section above). A real PyTorch launch costs the host 5-10 us.")]


def run(ctx):
    Section = sys.modules["__main__"].Section  # tools/bench's, which imported this file
    prog = _program(ctx)
    if prog is None:
        return [Section("GPU memory", ["note"], [["skipped: no simulated CUDA runtime in the build tree"]])]
    ctx.cc(os.path.join(HERE, "noop.c"), "libnoop.so", "-shared", "-fPIC")
    pairs, rounds, repeats = (5000, 7, 2) if ctx.quick else (20000, 15, 5)
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else ctx.work
    modes = [
        ("bare", "bare", {}, None),
        ("no-op preload", "noop", {}, None),
        ("colabtrace, no stacks", "colabtrace", {"COLABTRACE_STACKS": "0"}, None),
        ("colabtrace, 16-frame stacks", "colabtrace", {"COLABTRACE_STACKS": "16"}, None),
        ("colabtrace, no stacks, trace on tmpfs", "colabtrace", {"COLABTRACE_STACKS": "0"}, shm),
        ("colabtrace, 16-frame stacks, trace on tmpfs", "colabtrace", {"COLABTRACE_STACKS": "16"}, shm),
    ]
    best: dict[str, float] = {}
    wall: dict[str, float] = {}
    for _ in range(repeats):
        for label, mode, extra, where in modes:
            trace_dir = None
            if where is not None:
                trace_dir = os.path.join(where, "ct-bench-gpu")
                shutil.rmtree(trace_dir, ignore_errors=True)
                os.makedirs(trace_dir)
            r = _run(ctx, [prog, str(pairs), str(rounds)], mode, extra, trace_dir)
            if trace_dir is not None:
                shutil.rmtree(trace_dir, ignore_errors=True)
            if label not in best or r["median_ns_per_pair"] < best[label]:
                best[label] = r["median_ns_per_pair"]
                wall[label] = r["median_wall_ns_per_pair"]
    bare = best["bare"]
    rows = []
    for label, mode, extra, where in modes:
        added_pair = best[label] - bare
        budget = "" if mode != "colabtrace" else (
            f"<= {BUDGET_STACKS_NS}" if extra.get("COLABTRACE_STACKS") == "16" else f"<= {BUDGET_NO_STACKS_NS}")
        rows.append([label, f"{best[label]:.0f}", f"{wall[label]:.0f}",
                     "" if label == "bare" else f"{added_pair:+.0f}",
                     "" if label == "bare" else f"{added_pair / 2:+.0f}", budget])
    sections = [Section(
        "Added cost per cudaMalloc/cudaFree (simulated runtime)",
        ["mode", "ns per pair (CPU)", "ns per pair (wall)", "added per pair", "added per call", "budget per call (ns)"],
        rows,
        f"{pairs} cudaMalloc(1 MiB)/cudaFree pairs per round, median of {rounds} rounds, the lowest of "
        f"{repeats} interleaved runs per mode. A pair is two traced calls; the simulated runtime "
        "reaches the simulated driver through the shim's cuGetProcAddress wrappers, so the "
        "driver wrapper's bookkeeping is included. Traces go to the bench's work directory (disk) "
        "unless marked tmpfs.")]
    # heaptrack's cost per malloc+free, the anchor shared/PRODUCT.md quotes.
    if ctx.have("heaptrack"):
        heap = ctx.cc(os.path.join(HERE, "heap_bench.c"), "gpu_heap_bench")
        hb, ht = [], []
        for _ in range(repeats):
            hb.append(_run(ctx, [heap, str(pairs * 5), str(rounds)], "bare")["median_ns_per_pair"])
            out = os.path.join(ctx.work, "heaptrack.out")
            ht.append(_run(ctx, ["heaptrack", "-o", out, heap, str(pairs * 5), str(rounds)], "bare")
                      ["median_ns_per_pair"])
        sections.append(Section(
            "Reference: heaptrack per malloc + free",
            ["tool", "ns per malloc+free pair (CPU)", "added per pair"],
            [["bare", f"{min(hb):.0f}", ""], ["heaptrack", f"{min(ht):.0f}", f"{min(ht) - min(hb):+.0f}"]],
            "malloc(64)/free pairs (tools/bench_gpu/heap_bench.c), thread CPU time of the traced "
            "program (heaptrack's interpreter runs in another process and is not counted)."))
    # A successful kernel launch: the hook's whole added cost (no record on success).
    launch = os.path.join(ctx.build, "tests", "gpu", "bench_gpu_launch")
    if os.path.exists(launch):
        n, lrounds, lrepeats = (50000, 7, 2) if ctx.quick else (200000, 15, 5)
        lmodes = [("bare", "bare", {}), ("no-op preload", "noop", {}),
                  ("colabtrace, no stacks", "colabtrace", {"COLABTRACE_STACKS": "0"})]
        lbest: dict[str, dict] = {}
        for _ in range(lrepeats):
            for label, mode, extra in lmodes:
                r = _run(ctx, [launch, str(n), str(lrounds)], mode, extra)
                for layer in ("runtime_median_ns", "driver_median_ns"):
                    cur = lbest.setdefault(label, {})
                    cur[layer] = min(cur.get(layer, float("inf")), r[layer])
        rows = []
        for label, mode, _ in lmodes:
            row = [label]
            for layer in ("runtime_median_ns", "driver_median_ns"):
                v, b = lbest[label][layer], lbest["bare"][layer]
                row += [f"{v:.1f}", "" if label == "bare" else f"{v - b:+.1f}"]
            row.append(f"<= {BUDGET_LAUNCH_NS}" if mode == "colabtrace" else "")
            rows.append(row)
        sections.append(Section(
            "Added cost per successful kernel launch (simulated runtime and driver)",
            ["mode", "cudaLaunchKernel ns", "added", "cuLaunchKernel ns", "added", "budget per launch (ns)"],
            rows,
            f"{n} launches per round, median of {lrounds} rounds, the lowest of {lrepeats} interleaved runs "
            "(tools/bench_gpu/launch_bench.c). A successful launch is never recorded: the hook resolves the "
            "real function (a per-call-site cache) and compares the result. The simulated runtime launches "
            "through the driver wrapper the shim handed it, so its row includes both layers' hooks; a real "
            "libcudart calls its driver internally."))
    # The same launches made from Python: the shim notes each launch's Python stack.
    sections += _python_launches(ctx, Section)
    # Trace bytes per GPU event.
    rows = []
    for label, stacks in (("no stacks", "0"), ("16-frame stacks", "16")):
        trace_dir = os.path.join(ctx.work, "gpu-bytes-" + stacks)
        os.makedirs(trace_dir, exist_ok=True)
        _run(ctx, [prog, str(pairs), "1"], "colabtrace", {"COLABTRACE_STACKS": stacks}, trace_dir)
        counts = _trace_bytes(trace_dir)
        for code, name in ((64, "gpu_alloc"), (65, "gpu_free")):
            count, size = counts.get(code, (0, 0))
            if count:
                rows.append([label, name, count, f"{size / count:.2f}"])
    if rows:
        sections.append(Section("Trace bytes per GPU event", ["stacks", "record", "count", "bytes each (avg)"], rows,
                                "Framed bytes as the reader counts them (tools/bench_io/trace_bytes.py); "
                                "stacks are interned, so a repeated allocation site adds no Stack record."))
    return sections
