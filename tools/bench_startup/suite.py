"""The start-up suite of tools/bench: what the shim adds to starting a process.

    tools/bench --suite startup --build build      # about 2 minutes; --quick: about 20 s

Two programs, `python3 -c pass` (Debian's /usr/bin/python3) and tiny.c (a dynamically
linked `int main(void) { return 0; }`), each started bare, under a no-op LD_PRELOAD
library, under colabtrace, under Darshan (when tools/bench_darshan/build.sh can build
it) and under strace -f / ltrace -f (where installed). The modes run interleaved, one
process each per round, in an order that rotates every round, and every traced run is
paired with the bare run of its round: the ratio and the added time are medians over
those pairs, so drift on a shared machine hits both sides of a pair alike. A process is
timed from posix_spawn to its reaping (wall) and by its rusage (user + system CPU).

Budgets: traced/bare wall of `python3 -c pass` <= 1.05 (shared/PRODUCT.md) and <= 0.5 ms
added per process (issue 12)."""
from __future__ import annotations

import os
import shutil
import statistics
import sys
import time

NAME = "startup"
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
BUDGET_RATIO, BUDGET_MS = 1.05, 0.5
LABELS = {"bare": "bare", "noop": "no-op preload", "colabtrace": "colabtrace",
          "disabled": "colabtrace, COLABTRACE_DISABLE=1", "tmpfs": "colabtrace, trace on tmpfs", "darshan": "Darshan",
          "strace": "strace -f", "ltrace": "ltrace -f"}


def _spawn(argv, env) -> tuple[float, float]:
    """(wall ms, CPU ms) of one process, from posix_spawn to its reaping."""
    t0 = time.perf_counter_ns()
    pid = os.posix_spawn(argv[0], argv, env)
    _, status, ru = os.wait4(pid, 0)
    wall = (time.perf_counter_ns() - t0) / 1e6
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv} exited with status {status}")
    return wall, (ru.ru_utime + ru.ru_stime) * 1e3


def _modes(ctx, slow_every: int) -> tuple[list[str], dict]:
    """(modes run every round, {slow peer: run every so many rounds}). ltrace -f takes
    seconds per Python start-up, so it runs a quarter as often as strace -f."""
    every = ["bare", "noop", "colabtrace", "disabled", "tmpfs"] + (["darshan"] if ctx.darshan else [])
    slow = {m: slow_every * k for m, k in (("strace", 1), ("ltrace", 4)) if ctx.have(m)}
    return every, slow


def _env(ctx, mode: str, out_dir: str) -> dict:
    """The environment of MODE; traces and logs go to OUT_DIR (tmpfs: to /dev/shm)."""
    if mode == "disabled":  # the shim loaded, its constructor told to record nothing
        return dict(ctx.env("colabtrace", out_dir), COLABTRACE_DISABLE="1")
    if mode == "tmpfs":
        return ctx.env("colabtrace", out_dir)
    return ctx.env(mode if mode in ("noop", "colabtrace", "darshan") else "bare", out_dir)


def _measure(ctx, argv, rounds: int, slow_every: int):
    every, slow = _modes(ctx, slow_every)
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else ctx.work
    dirs = {m: os.path.join(shm if m == "tmpfs" else ctx.work, f"ct-bench-startup-{os.getpid()}", m)
            for m in every + list(slow)}
    envs = {}
    for m, d in dirs.items():
        os.makedirs(d, exist_ok=True)
        envs[m] = _env(ctx, m, d)
    runs = {m: [] for m in every + list(slow)}  # mode -> [(round, wall, cpu)]
    wrapped = {m: ctx.wrap(m, argv) for m in every + list(slow)}
    wrapped = {m: [shutil.which(a[0]) or a[0]] + a[1:] for m, a in wrapped.items()}
    evidence = {}  # mode -> files its first run left (a trace, a log)
    try:
        for r in range(rounds):
            modes = every + [m for m, period in slow.items() if r % period == 0]
            k = r % len(modes)
            for m in modes[k:] + modes[:k]:  # rotate: no mode always runs first or after another
                wall, cpu = _spawn(wrapped[m], envs[m])
                runs[m].append((r, wall, cpu))
                left = os.listdir(dirs[m])
                evidence.setdefault(m, len(left))
                for f in left:  # traces and logs would pile up
                    path = os.path.join(dirs[m], f)
                    shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
    finally:
        shutil.rmtree(os.path.dirname(dirs["tmpfs"]), ignore_errors=True)
    for m in ("colabtrace", "tmpfs", "darshan"):
        if m in evidence and evidence[m] == 0:
            raise RuntimeError(f"startup: a run under {m} left no trace/log: the tool did not record")
    if evidence.get("disabled"):
        raise RuntimeError("startup: COLABTRACE_DISABLE=1 still wrote a trace")
    bare = {r: (w, c) for r, w, c in runs["bare"]}
    res = {}
    for m, rs in runs.items():
        ratios = [w / bare[r][0] for r, w, _ in rs]
        added = [w - bare[r][0] for r, w, _ in rs]
        q = statistics.quantiles(added, n=4) if len(added) >= 4 else [min(added), 0, max(added)]
        res[m] = {"n": len(rs), "wall": statistics.median(w for _, w, _ in rs),
                  "cpu": statistics.median(c for _, _, c in rs), "ratio": statistics.median(ratios),
                  "added": statistics.median(added), "q1": q[0], "q3": q[-1],
                  "cpu_added": statistics.median(c - bare[r][1] for r, _, c in rs)}
    return res


def run(ctx):
    bench = sys.modules["__main__"]  # tools/bench, which imported this file
    ctx.cc(os.path.join(os.path.dirname(HERE), "bench_io", "noop.c"), "libnoop.so", "-shared", "-fPIC")
    tiny = ctx.cc(os.path.join(HERE, "tiny.c"), "startup_tiny")
    rounds, slow_every = (30, 10) if ctx.quick else (300, 15)  # ltrace: 1 or 5 runs
    sections = []
    for key, label, argv in (("python", f"`{PYTHON} -c pass`", [PYTHON, "-c", "pass"]),
                             ("c", "a tiny C program (`int main(void) { return 0; }`)", [tiny])):
        res = _measure(ctx, argv, rounds, slow_every)
        rows = []
        for m, r in res.items():
            is_bare = m == "bare"
            rows.append([LABELS[m], r["n"], f"{r['wall']:.2f}", f"{r['cpu']:.2f}",
                         "1.000" if is_bare else f"{r['ratio']:.3f}",
                         "" if is_bare else f"{r['added']:+.2f} [{r['q1']:+.2f}, {r['q3']:+.2f}]",
                         "" if is_bare else f"{r['cpu_added']:+.2f}",
                         f"<= {BUDGET_RATIO}, <= {BUDGET_MS} ms" if m == "colabtrace" else ""])
            if not is_bare and m not in ("disabled", "tmpfs"):
                suffix = "" if m == "colabtrace" else "." + m
                ctx.metric(f"startup.{key}.ratio{suffix}", r["ratio"], f"{r['ratio']:.3f}")
                ctx.metric(f"startup.{key}.added_ms{suffix}", r["added"],
                           f"{r['added']:+.2f} ms wall, {r['cpu_added']:+.2f} ms CPU")
        sections.append(bench.Section(
            f"Process start-up: {label}",
            ["mode", "runs", "wall ms (median)", "CPU ms (median)", "ratio to bare (median of pairs)",
             "added wall ms per process [quartiles]", "added CPU ms", "budget"],
            rows,
            f"{rounds} rounds; each round starts one process per mode, interleaved in a rotating order "
            f"(strace -f every {slow_every}th round, ltrace -f every {4 * slow_every}th), each paired with the bare run of its round. "
            "Wall: posix_spawn to reaping; CPU: the child's user + system time. colabtrace writes its "
            "trace and Darshan its log into the bench's work directory "
            f"({ctx.fs_of(ctx.work)}; 'trace on tmpfs': /dev/shm), deleted after every run. "
            "COLABTRACE_DISABLE=1 is the cost of loading the shim with its constructor told to "
            "record nothing; the rest of colabtrace's figure is its start-up work. "
            "colabtrace runs as LD_PRELOAD alone (no COLABTRACE_PYTHON start-up hook: that is "
            "`colabtrace run`'s)."))
    return sections

