"""The core suite of tools/bench: the writer's cost per record, the RSS the shim adds, and
the analyzer's throughput.

    tools/bench --suite core --build build      # about 1 minute; --quick: about 15 s

- Recording one small record: the real writer (shim/trace_file.cpp, writer.cpp,
  clock.cpp) compiled into tools/bench_core/emit_bench.cpp: Emit of an IoRead inside a
  ShimScope, median over batches (budget: <= 25 ns); and what a read hook adds around the
  call (two TSC reads + scope + Emit).
- Shim memory: peak RSS (getrusage of the child) of a program doing N one-byte preads,
  bare / no-op preload / colabtrace (budget: <= 16 MiB added).
- Analyzer throughput: `colabtrace report --format json` over the trace of that program,
  records per second of wall time on one core (budget: >= 20 M events/s).
- Reserving trace space: per 4 KiB page, fallocate against zeros written with pwritev
  (the shim writes zeros for a trace's first chunk and fallocates after), the reservation
  and the first store through the mapping, on the work directory's file system and on
  /dev/shm (reserve_pages.c).
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

NAME = "core"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _emit_bench(ctx) -> str:
    out = os.path.join(ctx.work, "emit_bench")
    srcs = [os.path.join(HERE, "emit_bench.cpp")] + [
        os.path.join(ROOT, "shim", f) for f in ("trace_file.cpp", "writer.cpp", "clock.cpp")]
    subprocess.run(["g++", "-std=c++20", "-O2", "-D_GNU_SOURCE", "-I" + os.path.join(ROOT, "shim"),
                    "-I" + os.path.join(ROOT, "include"), "-o", out, *srcs], check=True)
    return out


def _peak_rss(argv, env) -> int:
    """Peak RSS in bytes of one run, as the program itself reports it (VmHWM)."""
    p = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    line = [l for l in p.stdout.splitlines() if l.startswith("{")][-1]
    return json.loads(line)["hwm_kib"] * 1024


def run(ctx):
    Section = sys.modules["__main__"].Section  # tools/bench's, which imported this file
    sections = []

    # 1. Recording one small record.
    prog = _emit_bench(ctx)
    per_batch, batches = (20000, 21) if ctx.quick else (100000, 51)
    p = subprocess.run([prog, os.path.join(ctx.work, "emit.ctrace"), str(per_batch), str(batches)],
                       capture_output=True, text=True, check=True)
    r = json.loads(p.stdout)
    sections.append(Section(
        "Recording one small record (median ns)",
        ["what", "ns", "budget"],
        [["Emit of an IoRead inside a ShimScope", f"{r['emit_ns']:.1f}", "<= 25"],
         ["two TSC reads + ShimScope + Emit (a read hook's own work)", f"{r['hook_overhead_ns']:.1f}", "-"]],
        f"{batches} batches of {per_batch:,} records into a trace file; TSC ticks: {r['tsc']}."))

    # 2. Shim memory, and 3. analyzer throughput over the same trace.
    reads = ctx.cc(os.path.join(HERE, "reads.c"), "core_reads")
    ctx.cc(os.path.join(ROOT, "tools", "bench_io", "noop.c"), "libnoop.so", "-shared", "-fPIC")
    data = os.path.join(ctx.work, "one-byte")
    with open(data, "wb") as f:
        f.write(b"x")
    n = 300_000 if ctx.quick else 3_000_000
    rows = []
    rss = {}
    trace_dir = os.path.join(ctx.work, "core-trace")
    os.makedirs(trace_dir, exist_ok=True)
    for mode in ("bare", "noop", "colabtrace"):
        best = min(_peak_rss([reads, data, str(n)], ctx.env(mode, trace_dir if mode == "colabtrace" else None))
                   for _ in range(3 if mode != "colabtrace" else 1))
        rss[mode] = best
    added = rss["colabtrace"] - rss["bare"]
    for mode in ("bare", "noop", "colabtrace"):
        rows.append([mode, f"{rss[mode] / 2**20:.1f} MiB",
                     f"{(rss[mode] - rss['bare']) / 2**20:+.1f} MiB" if mode != "bare" else "-"])
    sections.append(Section("Shim memory (peak RSS)", ["run", "peak RSS", "added"], rows,
                            f"{n:,} one-byte preads, each recorded; budget: <= 16 MiB added "
                            f"(measured {added / 2**20:.1f} MiB)."))

    cli = os.path.join(ctx.build, "bin", "colabtrace")
    traces = glob.glob(os.path.join(trace_dir, "*.ctrace"))
    header = subprocess.run([cli, "dump", traces[0]], capture_output=True, text=True).stdout.splitlines()[0]
    records = int(header.split("records=")[1].split()[0])
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run([cli, "report", "--format", "json", "-o", os.devnull, *traces], check=True)
        dt = time.perf_counter() - t0
        best = dt if best is None or dt < best else best
    sections.append(Section(
        "Analyzer throughput", ["records", "report wall time", "records/s", "budget"],
        [[f"{records:,}", f"{best:.2f} s", f"{records / best / 1e6:.1f} M", ">= 20 M/s per core"]],
        "colabtrace report --format json (read, decode, every analysis, render) on one core, "
        "best of 3; the trace's size on disk is "
        f"{sum(os.path.getsize(t) for t in traces) / 2**20:.1f} MiB."))

    # 4. Reserving trace space: the way the shim reserves against fallocate.
    reserve = ctx.cc(os.path.join(HERE, "reserve_pages.c"), "reserve_pages")
    rows = []
    rounds = "5" if ctx.quick else "21"
    for fs, where in (("work directory", ctx.work), ("/dev/shm", "/dev/shm")):
        for step in (32 << 10, 2 << 20):
            p = subprocess.run([reserve, where, str(step), str(8 << 20), rounds],
                               capture_output=True, text=True, check=True)
            r = json.loads(p.stdout)
            for way, label in (("fallocate", "fallocate (the shim's later steps)"),
                               ("zeros", "zeros, pwritev (the shim's first chunk)")):
                res, st = r[way]["reserve_us_per_page"], r[way]["store_us_per_page"]
                rows.append([fs, f"{step >> 10} KiB", label, f"{res:.2f}", f"{st:.2f}", f"{res + st:.2f}"])
    sections.append(Section(
        "Reserving trace space (us per 4 KiB page)",
        ["file system", "step", "way", "reserve", "first store", "total"], rows,
        f"8 MiB reserved in steps, one byte stored into each page of a step through a MAP_SHARED "
        f"mapping right after; medians over {rounds} files, the two ways interleaved. The shim "
        f"writes zeros for a new trace's header page and first 32 KiB chunk (every process fills "
        f"it at once), then fallocates in steps that double up to 2 MiB: zeros written that far "
        f"ahead are written back and written again, and stores wait on pages under writeback "
        f"(cudaMalloc +146 ns per call on disk against +60 ns with fallocate, tools/bench --suite gpu)."))
    return sections
