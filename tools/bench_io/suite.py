"""The file I/O suite of tools/bench: per-call cost (read, pread, close, open), the
CPython small-file loop (the budget workload) and trace bytes per I/O event, measured
side by side bare, under a no-op LD_PRELOAD, colabtrace, strace -f and ltrace; and the
shim's peak RSS against the number of distinct files (the I/O aggregates)."""
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
ROOT_DIR = os.path.dirname(os.path.dirname(HERE))
MIB = 1 << 20
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


def _peak_rss(ctx, mode, argv, trace_dir):
    """(peak RSS KiB, trace bytes) of one run of argv in mode. /usr/bin/time's %M: the
    child's own high-water mark (wait4 from this process would count this interpreter's
    pages, which the child holds between fork and exec); the preload is set by env(1), so
    that time itself runs without it."""
    e = ctx.env(mode, trace_dir)
    preload = e.pop("LD_PRELOAD", None)
    cmd = ["/usr/bin/time", "-f", "%M", "env"] + ([f"LD_PRELOAD={preload}"] if preload else []) + argv
    p = subprocess.run(cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    traces = glob.glob(os.path.join(trace_dir, "*.ctrace")) if trace_dir else []
    return int(p.stderr.strip().splitlines()[-1]), sum(os.path.getsize(t) for t in traces)


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
    return [per_call, loop_sec, bytes_sec, _rss_by_files(ctx, baseline), _late_reads(ctx, baseline)]


def _fs_of(path):
    best, fstype = "", "?"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            p = line.split()
            mp = p[4]
            if (path == mp or path.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best):
                best, fstype = mp, p[p.index("-") + 1]
    return fstype


def _rss_by_files(ctx, baseline):
    """The shim's peak RSS against the number of distinct files: the I/O aggregates keep a
    slot per file (65,536, then per directory). tests/io/progs/io_agg_visit.c's
    "overflow": stats of N missing files (each a new path, a new slot), then 12 files read."""
    visit = ctx.cc(os.path.join(ROOT_DIR, "tests", "io", "progs", "io_agg_visit.c"), "io_agg_visit", "-pthread")
    missing, real = os.path.join(ctx.work, "missing"), os.path.join(ctx.work, "visit")
    os.makedirs(missing, exist_ok=True)
    os.makedirs(real, exist_ok=True)
    for i in range(12):
        with open(os.path.join(real, f"f{i:05d}.bin"), "wb") as f:
            f.write(b"x" * (1000 + 37 * i))
    rows = []
    for nfiles in ((5000,) if ctx.quick else (5000, 66000)):
        argv = [visit, "overflow", missing, str(nfiles), real, "12"]
        row = [f"{nfiles:,} files"]
        for m in ["bare", "colabtrace"] + (["baseline"] if baseline else []):
            runs = []
            for k in range(2):
                td = None if m == "bare" else os.path.join(ctx.work, f"rss-{m}-{nfiles}-{k}")
                if td:
                    os.makedirs(td)
                runs.append(_peak_rss(ctx, m, argv, td))
            rss, size = min(runs)
            row.append(f"{rss:,}" + (f" ({size / MIB:.1f} MiB trace)" if m != "bare" else ""))
        rows.append(row)
    return ctx_section("Shim RSS by distinct files (peak KiB)",
                       ["run", "bare", "colabtrace"] + (["baseline"] if baseline else []), rows,
                       "tests/io/progs/io_agg_visit.c overflow: stats of N missing files, then 12 files "
                       "visited; the lower peak RSS (/usr/bin/time %M) of 2 runs per mode, and the "
                       "trace's size. The shim memory budget is 16 MiB added.")


def _late_reads(ctx, baseline):
    """The cost of a read of a file that came after the file slots were full: a pread of
    100 bytes through a descriptor, after 66,000 stats of missing files (io_agg_visit
    lateread). Such a file's reads go to its heavy-hitter entry (format 1.6), or, before
    1.6 (the baseline of COLABTRACE_BENCH_BASELINE), to its directory's slot."""
    visit = ctx.cc(os.path.join(ROOT_DIR, "tests", "io", "progs", "io_agg_visit.c"), "io_agg_visit", "-pthread")
    missing = os.path.join(ctx.work, "late-missing")
    os.makedirs(missing, exist_ok=True)
    target = os.path.join(ctx.work, "late.bin")
    with open(target, "wb") as f:
        f.write(b"x" * 4096)
    modes = ["bare", "colabtrace"] + (["baseline"] if baseline else [])
    best = {m: float("inf") for m in modes}
    for k in range(2 if ctx.quick else 4):
        for m in modes:  # interleaved
            td = None if m == "bare" else os.path.join(ctx.work, f"late-{m}-{k}")
            if td:
                os.makedirs(td)
            p = subprocess.run([visit, "lateread", missing, "66000", target, "200000"], env=ctx.env(m, td),
                               capture_output=True, text=True, check=True)
            best[m] = min(best[m], json.loads(p.stdout.strip().splitlines()[-1])["ns_per_pread"])
    row = ["pread past 65,536 files", f"{best['bare']:.0f}"] + [f"+{best[m] - best['bare']:.0f}" for m in modes[1:]]
    return ctx_section("Read of a file past the file slots (ns per pread)",
                       ["call", "bare ns", "colabtrace"] + (["baseline"] if baseline else []), [row],
                       "tests/io/progs/io_agg_visit.c lateread: 66,000 stats of missing files, then 200,000 "
                       "preads of 100 bytes of one file in blocks of 1,000; the least block's mean, the least "
                       "of the runs per mode (interleaved).")


def ctx_section(title, header, rows, notes):
    bench = sys.modules.get("__main__")
    return bench.Section(title, header, rows, notes)
