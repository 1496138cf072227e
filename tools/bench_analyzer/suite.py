"""The analyzer suite of tools/bench: `colabtrace report --format json` throughput and peak
memory, on one big trace and on a directory of many small ones.

    tools/bench --suite analyzer --build build     # about 1 minute; --quick: about 10 s

- One big trace: 3,000,000 one-byte preads (tools/bench_core/reads.c) under the shim;
  300,000 with --quick.
- A fleet directory: 2,000 processes (tools/bench_analyzer/fleet.c forks them one after
  another), each doing 1,000 preads; 200 with --quick.
For each: records per second of wall time and per CPU second (user + system: the figure
per core; best of 3; the records counted by `colabtrace dump`), and the peak RSS of the report process (ru_maxrss of the child, from the small launcher
peak_rss.c: measured from Python it would include Python's own memory) against
the budget of shared/PRODUCT.md: >= 20 M records/s per core, peak <= trace size + 64 MiB.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

NAME = "analyzer"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIB = 1 << 20


def _records(cli: str, traces: list[str]) -> int:
    """Records in the traces, as `colabtrace dump`'s header line counts them."""
    total = 0
    for t in traces:
        p = subprocess.run([cli, "dump", t], capture_output=True, text=True, check=True)
        total += int(p.stdout.split("records=", 1)[1].split()[0])
    return total


def _timed_report(launcher: str, cli: str, inputs: list[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (user + system) and peak RSS (bytes) of one `report
    --format json` run, started by the peak_rss.c launcher."""
    t0 = time.perf_counter()
    p = subprocess.run([launcher, cli, "report", "--format", "json", "-o", os.devnull, *inputs],
                       stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t0
    if p.returncode not in (0, 1):
        raise RuntimeError(f"colabtrace report exited {p.returncode}: {p.stderr}")
    got = json.loads([l for l in p.stderr.splitlines() if l.startswith("{")][-1])
    return dt, got["cpu_s"], got["maxrss_kib"] * 1024


def _measure(launcher: str, cli: str, inputs: list[str], traces: list[str]) -> dict:
    records = _records(cli, traces)
    size = sum(os.path.getsize(t) for t in traces)
    runs = [_timed_report(launcher, cli, inputs) for _ in range(3)]
    wall = min(r[0] for r in runs)
    cpu = min(r[1] for r in runs)
    peak = max(r[2] for r in runs)
    # Per core: records per CPU second (user + system). The reader decodes a directory's
    # traces on several threads, so wall time flatters it on a many-core machine, and on a
    # loaded one it counts the time others ran.
    return {"records": records, "size": size, "wall": wall, "cpu": cpu, "peak": peak,
            "rate": records / cpu if cpu > 0 else 0.0, "wall_rate": records / wall,
            "over": (peak - size) / MIB}


def run(ctx):
    Section = sys.modules["__main__"].Section  # tools/bench's, which imported this file
    cli = os.path.join(ctx.build, "bin", "colabtrace")
    launcher = ctx.cc(os.path.join(HERE, "peak_rss.c"), "analyzer_peak_rss")
    data = os.path.join(ctx.work, "analyzer-one-byte")
    with open(data, "wb") as f:
        f.write(b"x")

    # One big trace.
    reads = ctx.cc(os.path.join(ROOT, "tools", "bench_core", "reads.c"), "analyzer_reads")
    n = 300_000 if ctx.quick else 3_000_000
    big_dir = os.path.join(ctx.work, "analyzer-big")
    os.makedirs(big_dir, exist_ok=True)
    subprocess.run([reads, data, str(n)], env=ctx.env("colabtrace", big_dir), check=True,
                   stdout=subprocess.DEVNULL)
    big_traces = glob.glob(os.path.join(big_dir, "*.ctrace"))
    big = _measure(launcher, cli, big_traces, big_traces)

    # A fleet directory.
    fleet = ctx.cc(os.path.join(HERE, "fleet.c"), "analyzer_fleet")
    procs, per = (200, 1000) if ctx.quick else (2000, 1000)
    fleet_dir = os.path.join(ctx.work, "analyzer-fleet")
    os.makedirs(fleet_dir, exist_ok=True)
    subprocess.run([fleet, data, str(procs), str(per)], env=ctx.env("colabtrace", fleet_dir), check=True)
    fleet_traces = glob.glob(os.path.join(fleet_dir, "*.ctrace"))
    # The parent's own trace too: procs + 1 traces.
    many = _measure(launcher, cli, [fleet_dir], fleet_traces)

    rows = []
    for what, m in ((f"one trace, {n:,} preads", big),
                    (f"directory of {len(fleet_traces):,} traces, {per:,} preads each", many)):
        rows.append([what, f"{m['records']:,}", f"{m['size'] / MIB:.1f} MiB", f"{m['wall']:.2f} s",
                     f"{m['cpu']:.2f} s", f"{m['wall_rate'] / 1e6:.1f} M",
                     f"{m['rate'] / 1e6:.1f} M", f"{m['peak'] / MIB:.0f} MiB", f"{m['over']:+.0f} MiB"])
    ctx.metric("analyzer.mrecords_per_s", big["rate"] / 1e6, f"{big['rate'] / 1e6:.1f} M/s per CPU second")
    ctx.metric("analyzer.peak_over_trace_mib", max(big["over"], many["over"]),
               f"{max(big['over'], many['over']):+.0f} MiB")
    return [Section(
        "Analyzer throughput and memory (report --format json)",
        ["input", "records", "trace size", "wall (best of 3)", "CPU (best of 3)", "records/s (wall)",
         "records per CPU second", "peak RSS", "peak - trace size"],
        rows,
        "colabtrace report --format json -o /dev/null: read, decode, every analysis, render; "
        "per core = records per CPU second (user + system). "
        "Budgets: >= 20 M records/s per core; peak RSS <= trace size + 64 MiB.")]
