"""The Darshan suite of tools/bench: Darshan 3.5 as a peer, side by side with colabtrace
in one run, on the budget workloads of the I/O rows.

    tools/bench --suite darshan --build build     # about 3 minutes; --quick: about 30 s

Needs a Darshan build (tools/bench_darshan/build.sh, from a local source tree; the suite
says "skipped" without one). Two rows:
- the CPython small-file loop (tools/bench_io/smallfiles.py: N cached 4 KiB files, each
  os.stat'ed, opened and read, P passes): bare, colabtrace, Darshan as installed and
  Darshan with a complete log (record limits raised, darshan.py FULL_CONFIG), the fastest
  of interleaved runs per mode; and what each Darshan log kept of the N files
  (darshan-parser: files, opens, stats, reads);
- added ns per read, pread, close and open (tools/bench_io/microbench.c, each call timed
  alone, the lowest of the runs' medians), bare, colabtrace and Darshan.
The start-up row's Darshan column is in the start-up suite."""
from __future__ import annotations

import json
import os
import subprocess
import sys

NAME = "darshan"
HERE = os.path.dirname(os.path.abspath(__file__))
IO = os.path.join(os.path.dirname(HERE), "bench_io")
PYTHON = "/usr/bin/python3"
LABELS = {"bare": "bare", "colabtrace": "colabtrace", "darshan": "Darshan (default log)",
          "darshan-full": "Darshan (complete log)"}
CALLS = ("read", "pread", "close", "open")


def _make_files(root: str, n: int) -> None:
    os.makedirs(root, exist_ok=True)
    for i in range(n):
        with open(os.path.join(root, f"s{i:05d}.bin"), "wb") as f:
            f.write(os.urandom(4096))
    for name in os.listdir(root):  # into the page cache
        with open(os.path.join(root, name), "rb") as f:
            f.read()


def _colabtrace_log(ctx, trace_dir: str, under: str) -> dict:
    """What colabtrace's trace kept of the files below UNDER, as `colabtrace dump` lists it:
    distinct files, and the open and stat records naming them (reads name a descriptor)."""
    cli = os.path.join(ctx.build, "bin", "colabtrace")
    traces = [os.path.join(trace_dir, f) for f in os.listdir(trace_dir) if f.endswith(".ctrace")]
    if not traces:
        raise RuntimeError("darshan suite: the colabtrace run left no trace")
    root = f'path="{under.rstrip("/")}/'
    files, got = set(), {"opens": 0, "stats": 0}
    for trace in traces:
        dump = subprocess.run([cli, "dump", trace], capture_output=True, text=True, check=True).stdout
        for line in dump.splitlines():
            f = line.split()
            if len(f) < 4 or root not in line:
                continue
            kind = "opens" if f[2].startswith("io_open") else "stats" if f[2].startswith("io_stat") else None
            if kind:
                got[kind] += 1
                files.add(line.split(root, 1)[1].split('"', 1)[0])
    return {"files": len(files), "opens": got["opens"], "stats": got["stats"], "reads": None, "complete": True}


def _run(ctx, mode: str, argv: list[str], out_dir: str) -> str:
    os.makedirs(out_dir, exist_ok=True)
    env = ctx.env(mode, out_dir) if mode != "bare" else ctx.env("bare")
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout


def run(ctx):
    Section = sys.modules["__main__"].Section  # tools/bench's, which imported this file
    if ctx.darshan is None:
        return [Section("Darshan peer", ["note"], [["skipped: no Darshan build (see the line on stderr and "
                                                    "docs/benchmarks.md, Reproduce)"]])]
    modes = ["bare", "colabtrace", "darshan", "darshan-full"]
    # Quick keeps the 5,000 files: Darshan's default log truncates past 1,024 records.
    nfiles, passes, reps = (5000, 2, 5) if ctx.quick else (5000, 4, 9)
    files = os.path.join(ctx.work, "darshan-files")
    _make_files(files, nfiles)
    loop = {m: [] for m in modes}
    kept = {}
    for i in range(reps):
        for m in modes:  # interleaved, so drift hits every mode alike
            out = os.path.join(ctx.work, f"darshan-loop-{m}-{i}")
            stdout = _run(ctx, m, [PYTHON, os.path.join(IO, "smallfiles.py"), files, str(passes)], out)
            loop[m].append(float(stdout.split()[0]))
            if m.startswith("darshan") and m not in kept:
                kept[m] = ctx.darshan_log(os.path.join(out, "darshan.log"), files)
            elif m == "colabtrace" and m not in kept:
                kept[m] = _colabtrace_log(ctx, out, files)
            subprocess.run(["rm", "-rf", out], check=True)
    best = {m: min(v) for m, v in loop.items()}
    rows = []
    for m in modes:
        ratio = best[m] / best["bare"]
        log = kept.get(m)
        rows.append([LABELS[m], f"{best[m]:.3f}", f"{ratio:.3f}"] + (["", "", "", "", ""] if log is None else [
            f"{log['files']:,} of {nfiles:,}", f"{log['opens']:,}", f"{log['stats']:,}",
            "-" if log["reads"] is None else f"{log['reads']:,}", "yes" if log["complete"] else "no"]))
        if m.startswith("darshan"):
            what = (f"{ratio:.2f} (log kept {log['files']:,} of {nfiles:,} files, "
                    f"{log['stats']:,} of {nfiles * passes:,} stats; colabtrace "
                    f"{best['colabtrace'] / best['bare']:.2f} alongside)")
            ctx.metric("darshan.smallfiles.ratio" + (".full" if m == "darshan-full" else ""), ratio, what)
    loop_sec = Section(
        "Darshan peer: CPython small-file loop", ["mode", "loop time (s)", "ratio to bare", "files in the log",
                                                  "opens", "stats", "reads", "log complete"], rows,
        f"{nfiles:,} cached 4 KiB files, each os.stat'ed, opened and read, {passes} pass{'es' if passes > 1 else ''}, {PYTHON}; "
        f"the fastest of {reps} interleaved runs per mode. The file, open, stat and read counts are "
        f"darshan-parser's POSIX counters for the {nfiles:,} files (colabtrace: its io_open*/io_stat* "
        "records naming them in `colabtrace dump`; its reads name a descriptor), from one run each "
        f"(the workload makes {nfiles * passes:,} opens, stats and at least {2 * nfiles * passes:,} reads: "
        "a read of the data and the read at EOF). Darshan (default log) is Darshan as installed: it "
        "keeps 1,024 records per module; Darshan (complete log) raises that with a config file "
        "(MAX_RECORDS, MODMEM, NAMEMEM).")

    # Added cost per call, with the I/O suite's microbenchmark.
    prog = ctx.cc(os.path.join(IO, "microbench.c"), "darshan_microbench")
    target = os.path.join(ctx.work, "darshan-micro.bin")
    with open(target, "wb") as f:
        f.write(os.urandom(64 * 1024))
    n, reps = (20000, 2) if ctx.quick else (200000, 5)
    call_modes = ["bare", "colabtrace", "darshan"]
    med = {m: {} for m in call_modes}
    for i in range(reps):
        for m in call_modes:
            got = json.loads(_run(ctx, m, [prog, target, str(n)],
                                  os.path.join(ctx.work, f"darshan-micro-{m}-{i}")).strip().splitlines()[-1])
            for op in CALLS:
                med[m][op] = min(med[m].get(op, float("inf")), got[op])
    rows = []
    for op in CALLS:
        bare = med["bare"][op]
        rows.append([op, f"{bare:.0f}", f"{med['colabtrace'][op] - bare:+.0f}", f"{med['darshan'][op] - bare:+.0f}"])
        ctx.metric(f"darshan.{op}.ns", med["darshan"][op] - bare, f"{med['darshan'][op] - bare:+.0f}")
    call_sec = Section(
        "Darshan peer: added cost per call (median ns)", ["call", "bare ns", "colabtrace", "Darshan"], rows,
        f"tools/bench_io/microbench.c, {n:,} calls per run, {reps} interleaved runs per mode, the lowest run "
        "median kept; each call timed alone with CLOCK_MONOTONIC. The cells are the added median ns over the "
        "bare run; the read is 64 bytes.")
    return [loop_sec, call_sec]
