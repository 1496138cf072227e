"""The window suite of tools/bench (issue 39): the trace's size and the shim's RSS over
time while a small-file loop rolls the window; the file I/O hot-path costs (read,
pread, open, close, stat) bare, under the shim from before the window, and under this one with
the default window and with one rolling all the time; and a soak of a real program
(CPython, soak.py) that fills a small window many times: size and RSS over time, the
analyzer's time on the result, and the aggregates' counts against the program's own.

The shim from before: COLABTRACE_BENCH_BEFORE names its libcolabtrace.so (a build of the
commit before the window); without it that column says "n/a"."""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time

NAME = "window"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VISITS = os.path.join(ROOT, "tests", "core", "progs", "ct_visits.c")
SOAK = os.path.join(HERE, "soak.py")
PYTHON = "/usr/bin/python3"
MIB = 1 << 20


def _section(title, header, rows, notes):
    return sys.modules["__main__"].Section(title, header, rows, notes)


def _rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _size_over_time(ctx, prog, files, seconds, window_mb):
    """(t, file bytes, allocated bytes, RSS KiB) every second of one run of the loop."""
    trace_dir = os.path.join(ctx.work, "size-over-time")
    os.makedirs(trace_dir)
    env = ctx.env("colabtrace", trace_dir)
    env["COLABTRACE_WINDOW_MB"] = str(window_mb)
    p = subprocess.Popen([prog, files, "1000", "0", str(seconds), "1", os.path.join(ctx.work, "counter")],
                         env=env, stdout=subprocess.PIPE, text=True)
    rows, t0 = [], time.monotonic()
    next_at = 1.0
    while p.poll() is None:
        time.sleep(0.05)
        now = time.monotonic() - t0
        if now < next_at:
            continue
        next_at += 1.0
        traces = glob.glob(os.path.join(trace_dir, "*.ctrace"))
        if traces:
            st = os.stat(traces[0])
            rows.append((round(now), st.st_size, st.st_blocks * 512, _rss_kib(p.pid)))
    out = p.communicate()[0]
    return rows, int(out.split()[1])


def _calls(ctx, prog, target, env, n):
    p = subprocess.run([prog, target, str(n)], env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def run(ctx):
    quick = ctx.quick
    visits = ctx.cc(VISITS, "ct_visits", "-pthread")
    calls = ctx.cc(os.path.join(ROOT, "tools", "bench_io", "microbench.c"), "window_microbench")
    files = os.path.join(ctx.work, "window-files")
    os.makedirs(files, exist_ok=True)
    for i in range(1000):
        with open(os.path.join(files, f"f{i:05d}"), "wb") as f:
            f.write(os.urandom(4096))

    # (a) size and RSS over time, a 16 MiB window filled in a few seconds.
    seconds, window_mb = (6, 16) if quick else (20, 16)
    series, made = _size_over_time(ctx, visits, files, seconds, window_mb)
    rows = [[f"{t} s", f"{size / MIB:.1f}", f"{alloc / MIB:.1f}", f"{rss / 1024:.1f}"] for t, size, alloc, rss in series]
    size_sec = _section("Trace size over time (window rolling)", ["time", "file MiB", "allocated MiB", "RSS MiB"], rows,
                        f"tests/core/progs/ct_visits.c: one thread stats, opens, reads twice and closes cached 4 KiB "
                        f"files for {seconds} s ({made} visits, {5 * made} file I/O events) with "
                        f"COLABTRACE_WINDOW_MB={window_mb}; the trace file's size, its allocated blocks and the "
                        "process's VmRSS, once a second.")

    # (b) hot-path costs: bare, before the window, the default window, a rolling one.
    target = os.path.join(ctx.work, "window-calls.bin")
    with open(target, "wb") as f:
        f.write(os.urandom(64 * 1024))
    n, reps = (20000, 2) if quick else (200000, 5)
    before = os.environ.get("COLABTRACE_BENCH_BEFORE")
    modes = {"bare": ctx.env("bare")}
    if before:
        modes["before"] = dict(ctx.env("colabtrace"), LD_PRELOAD=before)
    modes["window 256 MiB"] = ctx.env("colabtrace")
    modes["window 1 MiB"] = dict(ctx.env("colabtrace"), COLABTRACE_WINDOW_MB="1")
    runs = {m: [] for m in modes}
    for _ in range(reps):
        for m, env in modes.items():  # interleaved, so drift hits every mode alike
            runs[m].append(_calls(ctx, calls, target, env, n))
    ops = ("read", "pread", "open", "close", "stat")
    med = {m: {op: min(r[op] for r in v) for op in ops} for m, v in runs.items()}
    rows = []
    for op in ops:
        bare = med["bare"][op]
        row = [op, f"{bare}"]
        for m in ("before", "window 256 MiB", "window 1 MiB"):
            row.append(f"+{med[m][op] - bare}" if m in med else "n/a")
        rows.append(row)
    cost_sec = _section("Added cost per call with the window (median ns)",
                        ["call", "bare ns", "before the window", "window 256 MiB (not full)", "window 1 MiB (rolling)"],
                        rows,
                        f"tools/bench_io/microbench.c: {n} calls per run, {reps} runs per mode, interleaved, the "
                        "lowest run median kept; each call timed alone (the timer's cost subtracted). "
                        "'before': COLABTRACE_BENCH_BEFORE=" + (before or "(unset)") + ".")
    return [size_sec, cost_sec, _soak(ctx, files, 15 if quick else 180, 4)]


def _soak(ctx, files, seconds, window_mb):
    """CPython visiting the 1,000 files again and again for SECONDS through a WINDOW_MB
    window: every 10 s (5 s in a quick run) the trace's size, allocated blocks and the
    process's RSS; then the analyzer's wall time on the trace, the report's window, and the
    opens the aggregates counted against the visits the program made."""
    trace_dir = os.path.join(ctx.work, "soak")
    os.makedirs(trace_dir)
    env = dict(ctx.env("colabtrace", trace_dir), COLABTRACE_WINDOW_MB=str(window_mb))
    p = subprocess.Popen([PYTHON, SOAK, files, str(seconds)], env=env, stdout=subprocess.PIPE, text=True)
    step = 5 if seconds <= 30 else 10
    rows, t0, next_at = [], time.monotonic(), float(step)
    while p.poll() is None:
        time.sleep(0.1)
        now = time.monotonic() - t0
        if now < next_at:
            continue
        next_at += step
        traces = glob.glob(os.path.join(trace_dir, "*.ctrace"))
        if traces:
            st = os.stat(traces[0])
            rows.append([f"{round(now)} s", f"{st.st_size / MIB:.1f}", f"{st.st_blocks * 512 / MIB:.1f}",
                         f"{_rss_kib(p.pid) / 1024:.1f}"])
    words = p.communicate()[0].split()
    visits = int(words[1])
    cli = os.path.join(ctx.build, "bin", "colabtrace")
    a0 = time.monotonic()
    rep = json.loads(subprocess.run([cli, "report", "--format", "json", trace_dir], capture_output=True, text=True,
                                    check=False).stdout)
    analyzer_s = time.monotonic() - a0
    proc = max(rep["processes"], key=lambda q: (q.get("window") or {}).get("events_total", 0))
    w = proc.get("window") or {}
    opens = sum(f.get("opens", 0) for f in rep["io"]["files"] if f["path"].startswith(files + "/"))
    size = sum(os.path.getsize(t) for t in glob.glob(os.path.join(trace_dir, "*.ctrace")))
    return _section(f"Soak: CPython visiting 1,000 files for {seconds} s, COLABTRACE_WINDOW_MB={window_mb}",
                    ["time", "file MiB", "allocated MiB", "RSS MiB"], rows,
                    f"tools/bench_window/soak.py under the shim: {visits} visits ({words[3]} passes); the report "
                    f"counts {opens} opens of those files (the aggregates; exact: {opens == visits}); its window: "
                    f"{w.get('events_in_full', 0)} of {w.get('events_total', 0)} events in full, capped "
                    f"{w.get('capped')}; the trace {size / MIB:.1f} MiB at the end; `colabtrace report --format json` "
                    f"took {analyzer_s:.2f} s on it.")
