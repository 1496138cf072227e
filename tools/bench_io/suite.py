"""The file I/O suite of tools/bench: per-call cost (read, pread, close, open), the
CPython small-file loop (the budget workload) and trace bytes per I/O event, measured
side by side bare, under a no-op LD_PRELOAD, colabtrace, strace -f and ltrace."""
from __future__ import annotations

import glob
import json
import os
import statistics
import subprocess
import sys
import time

NAME = "io"
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
IO_TYPES = range(32, 64)
BUDGET_CALL = {"read": 25, "pread": 25, "close": 25, "open": 150}


def _micro(ctx, prog, target, mode, n):
    env = ctx.env(mode if mode in ("noop", "colabtrace", "baseline") else "bare")
    p = subprocess.run(ctx.wrap(mode, [prog, target, str(n)]), env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def _loop(ctx, files, passes, mode, trace_dir=None):
    """(loop seconds, process wall seconds) of smallfiles.py."""
    env = ctx.env(mode if mode in ("noop", "colabtrace", "baseline") else "bare", trace_dir)
    t0 = time.perf_counter()
    p = subprocess.run(ctx.wrap(mode, [PYTHON, os.path.join(HERE, "smallfiles.py"), files, str(passes)]),
                       env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    return float(p.stdout.split()[0]), wall


def _make_files(root, n, size):
    os.makedirs(root, exist_ok=True)
    for i in range(n):
        with open(os.path.join(root, f"s{i:05d}.bin"), "wb") as f:
            f.write(os.urandom(size))
    for name in os.listdir(root):  # into the page cache
        with open(os.path.join(root, name), "rb") as f:
            f.read()


def _trace_bytes(trace_dir):
    p = subprocess.run([sys.executable, os.path.join(HERE, "trace_bytes.py"),
                        *glob.glob(os.path.join(trace_dir, "*.ctrace"))],
                       capture_output=True, text=True, check=True)
    return {int(k): v for k, v in json.loads(p.stdout).items()}


def run(ctx):
    quick = ctx.quick
    prog = ctx.cc(os.path.join(HERE, "microbench.c"), "io_microbench")
    ctx.cc(os.path.join(HERE, "noop.c"), "libnoop.so", "-shared", "-fPIC")
    target = os.path.join(ctx.work, "micro.bin")
    with open(target, "wb") as f:
        f.write(os.urandom(64 * 1024))

    # (a) per-call cost: the median of each mode's per-call medians over several runs.
    n = 20000 if quick else 200000
    reps = 2 if quick else 5
    # With COLABTRACE_BENCH_BASELINE, an earlier build's shim runs side by side (interleaved).
    baseline = ctx.baseline_shim is not None
    modes = ["bare", "noop", "colabtrace"] + (["baseline"] if baseline else [])
    runs = {m: [] for m in modes}
    for _ in range(reps):
        for m in modes:  # interleaved, so drift hits every mode alike
            runs[m].append(_micro(ctx, prog, target, m, n))
    ext = {}
    if ctx.have("strace"):
        ext["strace"] = _micro(ctx, prog, target, "strace", 2000 if quick else 20000)
    if ctx.have("ltrace"):
        ext["ltrace"] = _micro(ctx, prog, target, "ltrace", 200 if quick else 2000)
    # The lowest of the runs' medians: on a shared 2-core machine interference only adds.
    med = {m: {op: min(r[op] for r in runs[m]) for op in BUDGET_CALL} for m in modes}
    med.update(ext)
    rows = []
    for op, budget in BUDGET_CALL.items():
        bare = med["bare"][op]
        row = [op, f"{bare:.0f}"]
        for m in ["noop", "colabtrace"] + (["baseline"] if baseline else []) + ["strace", "ltrace"]:
            row.append(f"+{med[m][op] - bare:.0f}" if m in med else "n/a")
        row.append(f"<= {budget}")
        rows.append(row)
    per_call = ctx_section("Added cost per call (median ns)",
                           ["call", "bare ns", "no-op preload", "colabtrace"] + (["baseline"] if baseline else [])
                           + ["strace -f", "ltrace", "budget (ns)"],
                           rows,
                           f"{n} calls per run, {reps} runs per mode, interleaved, the lowest run median kept; each call timed alone "
                           "with CLOCK_MONOTONIC (the timer's own cost subtracted). The cells are the added "
                           "median ns over the bare run. open includes path interning; the file is on "
                           f"{_fs_of(target)}.")

    # (b) the CPython small-file loop.
    nfiles, passes = (1000, 2) if quick else (5000, 4)
    files = os.path.join(ctx.work, "files")
    _make_files(files, nfiles, 4096)
    loop = {m: [] for m in modes}
    trace_dirs = []
    for i in range(3 if quick else 9):
        for m in modes:
            td = None
            if m == "colabtrace":
                td = os.path.join(ctx.work, f"traces-{i}")
                os.makedirs(td)
                trace_dirs.append(td)
            elif m == "baseline":
                td = os.path.join(ctx.work, f"traces-baseline-{i}")
                os.makedirs(td)
            loop[m].append(_loop(ctx, files, passes, m, td))
    small = {m: (min(x[0] for x in v), min(x[1] for x in v)) for m, v in loop.items()}
    # strace and ltrace are 100-300x slower: a smaller loop, compared with a bare run of it.
    ext_rows = {}
    sub_files, sub_passes = os.path.join(ctx.work, "files-sub"), 1
    _make_files(sub_files, 200 if quick else 1000, 4096)
    sub_bare = min(_loop(ctx, sub_files, sub_passes, "bare")[0] for _ in range(3))
    for m in ("strace", "ltrace"):
        if ctx.have(m):
            ext_rows[m] = _loop(ctx, sub_files, sub_passes, m)[0] / sub_bare
    b = small["bare"]
    base = (lambda i, ratio: [f"{small['baseline'][i] / (b[i] if ratio else 1):.3f}"]) if baseline else (lambda i, ratio: [])
    rows = [["loop time (s)", f"{b[0]:.3f}", f"{small['noop'][0]:.3f}", f"{small['colabtrace'][0]:.3f}",
             *base(0, False), "", "", ""],
            ["loop ratio to bare", "1.000", f"{small['noop'][0] / b[0]:.3f}", f"{small['colabtrace'][0] / b[0]:.3f}",
             *base(0, True),
             f"{ext_rows['strace']:.0f}" if "strace" in ext_rows else "n/a",
             f"{ext_rows['ltrace']:.0f}" if "ltrace" in ext_rows else "n/a", "<= 1.03"],
            ["process wall ratio", "1.000", f"{small['noop'][1] / b[1]:.3f}", f"{small['colabtrace'][1] / b[1]:.3f}",
             *base(1, True), "", "", ""]]
    loop_sec = ctx_section("CPython small-file loop (traced/bare)",
                           ["", "bare", "no-op preload", "colabtrace"] + (["baseline"] if baseline else [])
                           + ["strace -f", "ltrace", "budget"], rows,
                           f"{nfiles} cached 4 KiB files, each os.stat'ed, opened and read, {passes} passes, "
                           f"{PYTHON}; the fastest of {len(loop['bare'])} interleaved runs per mode (interference on a "
                           "shared machine only ever adds time). "
                           "Loop time excludes interpreter start-up; process wall includes it. strace -f and "
                           f"ltrace ran a {200 if quick else 1000}-file, 1-pass loop against a bare run of the same.")

    # (c) trace bytes per I/O event, from the colabtrace runs of (b).
    counts = _trace_bytes(trace_dirs[0])
    io_n = sum(counts.get(t, (0, 0))[0] for t in IO_TYPES)
    io_b = sum(counts.get(t, (0, 0))[1] for t in IO_TYPES)
    strings = counts.get(1, (0, 0))
    names = {32: "io_open", 33: "io_read", 36: "io_close", 38: "io_stat"}
    rows = []
    for t, nm in names.items():
        c, s = counts.get(t, (0, 0))
        if c:
            rows.append([nm, c, f"{s / c:.2f}", "<= 12" if t == 33 else ""])
    rows.append(["all I/O records", io_n, f"{io_b / io_n:.2f}", "<= 12"])
    rows.append(["I/O records + path strings", io_n, f"{(io_b + strings[1]) / io_n:.2f}", ""])
    bytes_sec = ctx_section("Trace bytes per I/O event", ["records", "count", "bytes each (avg)", "budget"], rows,
                            "Framed bytes ([type][length][ts delta][fields]) as the reader counts them "
                            "(ReadStats::record_bytes), from one traced run of the loop above. The last row "
                            "also charges every path's String record (written once per path) to the I/O events.")
    return [per_call, loop_sec, bytes_sec]


def _fs_of(path):
    best, fstype = "", "?"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            p = line.split()
            mp = p[4]
            if (path == mp or path.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best):
                best, fstype = mp, p[p.index("-") + 1]
    return fstype


def ctx_section(title, header, rows, notes):
    bench = sys.modules.get("__main__")
    return bench.Section(title, header, rows, notes)
