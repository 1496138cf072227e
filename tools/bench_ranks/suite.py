"""The ranks suite of tools/bench: the whole `colabtrace report --format json` of a
generated multi-rank job (issue 38, "Scale").

    tools/bench --suite ranks --build build     # 1,024 ranks, about 1 GiB: about 1 minute
    tools/bench --suite ranks --quick           # 256 ranks

The job comes from ct_gen_job (tests/harness/ct_gen_job.cpp, the target of the same name,
built here when missing): N ranks of one torchrun job, 8 per host, each about 1 MiB of
steps, GPU allocations, file I/O and calls in flight, plus each host's torchrun agent;
rank 517 (N / 2 + 5) is SIGKILLed after 5 steps and the others exit 1, as in the real
3-rank job of tests/dist/test_torchrun.py. The traces are written just before, so they are
read from the page cache. For each of 3 runs (best wall, highest peak): wall seconds, CPU
seconds (user + system) and the peak RSS of the report process (ru_maxrss, taken by
tools/bench_analyzer/peak_rss.c, as the analyzer suite times it), against the budgets of
shared/PRODUCT.md: the whole report of a 1,024-rank job in <= 10 s on one 2-core machine,
peak RSS <= the traces' size + 64 MiB. One more run, untimed, checks the verdict:
dist.first-failure must name the killed rank."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

NAME = "ranks"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MIB = 1 << 20


def _gen_job(build: str) -> str:
    path = os.path.join(build, "tests", "dist", "ct_gen_job")
    if not os.path.exists(path):
        subprocess.run(["cmake", "--build", build, "--target", "ct_gen_job"], check=True)
    return path


def run(ctx):
    Section = sys.modules["__main__"].Section  # tools/bench's, which imported this file
    cli = os.path.join(ctx.build, "bin", "colabtrace")
    launcher = ctx.cc(os.path.join(ROOT, "tools", "bench_analyzer", "peak_rss.c"), "ranks_peak_rss")
    ranks = 256 if ctx.quick else 1024
    culprit = ranks // 2 + 5
    job = os.path.join(ctx.work, f"ranks-{ranks}")
    shutil.rmtree(job, ignore_errors=True)
    t0 = time.perf_counter()
    manifest = json.loads(subprocess.run(
        [_gen_job(ctx.build), "--ranks", str(ranks), "--out", job, "--shape", "kill", "--culprit", str(culprit),
         "--after-step", "5"], capture_output=True, text=True, check=True).stdout)
    gen_s = time.perf_counter() - t0
    files = [os.path.join(job, t["file"]) for t in manifest["traces"]]
    size = sum(os.path.getsize(f) for f in files)
    # The verdict, once: dist.first-failure must name the killed rank.
    rep = json.loads(subprocess.run([cli, "report", "--format", "json", job], capture_output=True, text=True).stdout)
    named = [x["evidence"]["rank"] for x in rep["findings"] if x["id"] == "dist.first-failure"]
    if named != [culprit]:
        raise RuntimeError(f"dist.first-failure named {named}, not rank {culprit}")
    # The analyzer suite's timed run: report --format json -o /dev/null under peak_rss.c.
    timed = sys.modules["__main__"]._load("bench_analyzer_suite", os.path.join(ROOT, "tools", "bench_analyzer",
                                                                                 "suite.py"))._timed_report
    runs = [timed(launcher, cli, [job]) for _ in range(3)]
    wall = min(r[0] for r in runs)
    cpu = min(r[1] for r in runs)
    peak = max(r[2] for r in runs)
    over = (peak - size) / MIB
    shutil.rmtree(job, ignore_errors=True)
    if ranks == 1024:
        ctx.metric("ranks.report_s", wall, f"{wall:.1f} s wall ({cpu:.1f} CPU s)")
        ctx.metric("ranks.peak_over_trace_mib", over, f"{over:+.0f} MiB on {size / MIB:,.0f} MiB")
    return [Section(
        "The whole report of a generated multi-rank job (report --format json)",
        ["ranks (hosts)", "traces", "trace size", "generated in", "wall (best of 3)", "CPU (best of 3)",
         "peak RSS", "peak - trace size"],
        [[f"{ranks:,} ({ranks // 8})", f"{len(files):,}", f"{size / MIB:,.0f} MiB", f"{gen_s:.1f} s",
          f"{wall:.2f} s", f"{cpu:.2f} s", f"{peak / MIB:,.0f} MiB", f"{over:+.0f} MiB"]],
        "ct_gen_job's kill shape (rank N / 2 + 5 SIGKILLed after 5 steps), whose dist.first-failure "
        "named it. Output to /dev/null. Traces read from the page cache. Budgets: <= 10 s on one 2-core "
        "machine for 1,024 ranks; peak RSS <= trace size + 64 MiB.")]
