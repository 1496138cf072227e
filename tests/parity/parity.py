#!/usr/bin/env python3
"""Parity harness: real programs' own test suites, bare and under the shim.

The shim's first promise is that a traced program behaves exactly as without it. This
runs test suites nobody here wrote (CPython's regression tests, numpy's tests) with
LD_PRELOAD=<build>/lib/libcolabtrace.so and bare (the tests not ok traced; the whole
unit when one of them is ok bare), and fails when any test passes bare but not traced: a
failure, an error, a skip, a crash or hang of the process, or a test that never ran
because an earlier one took the process down.

  parity.py --build BUILD_DIR SUITE [SUITE...]     (suites: see SUITES; 'list' lists)

Each unit (one interpreter run of some test modules) runs through parity_driver.py,
which streams per-test outcomes, so a crash loses nothing: the harness records the test
that was running as 'crash' (or 'timeout') and restarts the unit with the remaining
tests. A test that fails bare is left out (it says nothing about the shim); so is one
that fails traced but whose bare re-run (the test alone) fails too: a bare flake.
The traced side must also leave traces behind: at least one .ctrace, `colabtrace report
--format json` exits 0, and every traced driver process appears in the report, so a
shim that silently does nothing cannot pass.

Exit status: 0 parity, 1 differences (or traces missing), 77 a needed package is missing.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "parity_driver.py")
PYTHON = "/usr/bin/python3"  # Debian's CPython: the one libpython3.11-testsuite belongs to
SKIP_RC = 77

# A unit: (name, driver kind, driver args, unit time limit in seconds[, extra environment
# of both sides]).
# CPython modules that touch processes, signals, fds, threads, mmap and ctypes. The
# multiprocessing modules take minutes each; their unit runs the test classes that
# exercise process start, signals, pipes and shared memory (-k patterns), see
# tests/parity/README.md for the timing.
MP_CLASSES = ["WithProcessesTestProcess", "WithProcessesTestPipe", "WithProcessesTestQueue",
              "WithProcessesTestLock", "WithProcessesTestEvent", "WithProcessesTestPool.",
              "WithProcessesTestSharedMemory", "WithProcessesTestConnection",
              "TestForkAwareThreadLock", "TestIgnoreEINTR", "TestStartMethod",
              "TestSemaphoreTracker", "TestResourceTracker", "TestSyncManagerTypes",
              "WithManagerTestQueue", "TestNoForkBomb", "MiscTestCase", "TestSimpleQueue"]


def mp_unit(method):
    args = ["test.test_multiprocessing_" + method]
    for c in MP_CLASSES:
        args += ["-k", c]
    return ("test_multiprocessing_" + method, "unittest", args, 240)


def cpython(*modules, limit=240, env=None):
    return [(m, "unittest", ["test." + m], limit, env or {}) for m in modules]


# numpy's tests for memory maps, file I/O (npy/npz/text), ctypes and linalg (BLAS
# threads). Left out for time: three tests that write GiB-sized files (30-45 s each).
NUMPY_TESTS = ["core.tests.test_memmap", "lib.tests.test_io", "lib.tests.test_format",
               "tests.test_ctypeslib", "linalg.tests.test_linalg"]
NUMPY_SLOW = "not test_large_zip and not test_big_arrays and not test_large_archive"

SUITES = {
    "cpython-proc": {"needs": ["test.test_posix"],
                     "units": cpython("test_posix", "test_subprocess", "test_pty", "test_fcntl",
                                      "test_select", "test_os", "test_wait4")},
    "cpython-signal": {"needs": ["test.test_signal"],
                       "units": cpython("test_signal", "test_faulthandler", "test_threading",
                                        "test_threadsignals")},
    "cpython-mem": {"needs": ["test.test_mmap"],
                    "units": cpython("test_mmap", "test_ctypes", "test_socket", "test_resource")},
    # File I/O, stat, directories, archives, imports; compileall and venv start many
    # interpreters (exec, symlinks, copies).
    "cpython-files": {"needs": ["test.test_io"],
                      "units": cpython("test_io", "test_shutil", "test_tarfile", "test_zipfile",
                                       "test_importlib", "test_compileall", "test_venv")},
    # As `colabtrace run` runs Python: with the shim's Python start-up hook
    # (COLABTRACE_PYTHON=1), which puts its folder on PYTHONPATH and takes it off again,
    # chains to the next sitecustomize and adds a finder to sys.meta_path.
    "cpython-pyhook": {"needs": ["test.test_site"],
                       "units": cpython("test_site", "test_sys", "test_cmd_line",
                                        "test_cmd_line_script", "test_runpy", "test_atexit",
                                        "test_importlib", "test_pkgutil", "test_zipimport",
                                        env={"COLABTRACE_PYTHON": "1"})},
    # From the whole-suite sweep (2026-11-24, fe6038c: 423 modules bare, traced and under
    # `colabtrace run`, no test id apart): the modules the groups above leave out that
    # touch the shim's hooks most, at about a minute a side: mkstemp and O_TMPFILE
    # (tempfile), open/read/close errno semantics (fileio, file), directories and stats
    # (pathlib, glob, posixpath), dbm and shelve files, mailbox locking, popen and pipes,
    # uuid and platform (ctypes, subprocess), epoll/poll, syslog, getpass (/dev/tty),
    # regrtest running nested interpreters (regrtest), asyncio's child watchers (pidfd,
    # SIGCHLD, threads) and subprocess pipes.
    "cpython-sweep": {"needs": ["test.test_tempfile"],
                      "units": cpython("test_tempfile", "test_fileio", "test_file", "test_pathlib",
                                       "test_glob", "test_posixpath", "test_dbm_dumb", "test_dbm_ndbm",
                                       "test_shelve", "test_mailbox", "test_fileinput", "test_uuid",
                                       "test_popen", "test_pipes", "test_platform", "test_epoll",
                                       "test_poll", "test_syslog", "test_getpass", "test_gzip",
                                       "test_regrtest", "test_asyncio.test_subprocess",
                                       "test_asyncio.test_unix_events")},
    "cpython-mp": {"needs": ["test._test_multiprocessing"],
                   "units": [mp_unit("fork"), mp_unit("spawn"), mp_unit("forkserver")]},
    "numpy": {"needs": ["numpy", "pytest", "hypothesis"],
              "units": [("numpy", "pytest", ["--rootdir-of", "numpy", "-k", NUMPY_SLOW, "--pyargs"] +
                         ["numpy." + t for t in NUMPY_TESTS], 240)]},
}


class Side:
    """One side (bare or traced) of one unit: outcomes per test id and what went wrong."""

    def __init__(self, traced):
        self.traced = traced
        self.outcomes = {}     # id -> (outcome, detail)
        self.order = []        # ids in the order they ran
        self.problems = []     # unit-level: exit by signal, hang at exit, ...
        self.pids = []         # driver process ids (must appear in the trace report)
        self.seconds = 0.0


def run_side(unit, traced, build, workdir, test_timeout, only=None, tag=None):
    name, kind, args, limit = unit[:4]
    side = Side(traced)
    tag = tag or ("traced" if traced else "bare") + ("-rerun" if only else "")
    base = os.path.join(workdir, name, tag)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    events_path = os.path.join(base, "events.jsonl")
    done_path = os.path.join(base, "done.txt")
    trace_dir = os.path.join(base, "traces")
    os.makedirs(trace_dir)
    # Each side starts from an empty HOME of its own: the bare and traced sides of a unit
    # run side by side, and CPython's test_site creates ~/.local/lib/python3.X/site-packages
    # in its setUpModule (and adds it to sys.path only if it was not there yet), so a
    # shared HOME let one side's folder change the other side's sys.path.
    home = os.path.join(base, "home")
    os.makedirs(home)
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "COLABTRACE_OUT", "PYTHONPATH", "PYTHONHOME"):
        env.pop(k, None)
    env.update(PARITY_EVENTS=events_path, PARITY_DONE=done_path, PYTHONDONTWRITEBYTECODE="1",
               PARITY_TEST_TIMEOUT=str(test_timeout), PYTHONFAULTHANDLER="1", HOME=home)
    env.update(unit[4] if len(unit) > 4 else {})
    if only is not None:
        only_path = os.path.join(base, "only.txt")
        with open(only_path, "w") as f:
            f.write("".join(i + "\n" for i in only))
        env["PARITY_ONLY"] = only_path
    if traced:
        env["LD_PRELOAD"] = os.path.join(build, "lib", "libcolabtrace.so")
        env["COLABTRACE_OUT"] = trace_dir
    cmd = [PYTHON, DRIVER, kind] + args
    deadline = time.monotonic() + limit
    start = time.monotonic()
    seen = 0
    with open(os.path.join(base, "output.txt"), "wb") as log:
        for attempt in range(20):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                side.problems.append("unit time limit %ds reached" % limit)
                break
            proc = subprocess.Popen(cmd, cwd=base, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            timed_out = False
            try:
                rc = proc.wait(timeout=remaining)
            except subprocess.TimeoutExpired:
                timed_out = True
                rc = None
            # Whatever the unit left behind (children, a process that ignores SIGTERM) goes.
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            if rc is None:
                rc = proc.wait()
            events = []
            if os.path.exists(events_path):
                with open(events_path) as f:
                    for line in f:
                        try:
                            events.append(json.loads(line))
                        except ValueError:
                            pass  # a line cut by a crash
            new = events[seen:]
            seen = len(events)
            running = None
            finished = False
            for ev in new:
                if "pid" in ev:
                    side.pids.append(ev["pid"])
                elif "start" in ev:
                    running = ev["start"]
                elif "end" in ev:
                    tid = ev["end"]
                    if tid not in side.outcomes:
                        side.order.append(tid)
                    # A test with several reports (subtests) keeps its first failure.
                    if side.outcomes.get(tid, ("ok",))[0] == "ok":
                        side.outcomes[tid] = (ev["outcome"], ev.get("detail", ""))
                    if running == tid:
                        running = None
                elif ev.get("finished"):
                    finished = True
            how = ("killed after the unit time limit" if timed_out
                   else "exit status %d" % rc if rc >= 0 else "killed by %s" % signal.Signals(-rc).name)
            if rc == 0 and finished:
                break
            if finished:
                side.problems.append("all tests ran, then the process ended badly (%s)" % how)
                break
            if running is not None:
                # rc 1 with faulthandler's watchdog message: the per-test timeout.
                outcome = "timeout" if timed_out or _watchdog_fired(log.name) else "crash"
                if running not in side.outcomes:
                    side.order.append(running)
                side.outcomes[running] = (outcome, "process %s while running this test" % how)
            elif not new or timed_out:
                side.problems.append("unit did not start or stopped between tests (%s)" % how)
                break
            with open(done_path, "w") as f:
                f.write("".join(i + "\n" for i in side.order))
            log.write(b"\n=== parity: restarting the unit after: %s ===\n" % how.encode())
            log.flush()
    side.seconds = time.monotonic() - start
    side.trace_dir = trace_dir
    side.base = base
    return side


def _watchdog_fired(log_path):
    with open(log_path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 200000))
        return b"Timeout (" in f.read()


def verify_unit(unit, build, workdir, test_timeout):
    """The unit traced, then bare as far as needed: (bare side, traced side, whether the
    bare side is the whole unit).

    Only a test that is not ok traced can be a difference, so the bare side first runs
    just those. When none of them is ok there, there is none (a test that needs earlier
    tests to pass would, alone, be left out as a bare flake anyway). Otherwise, or when
    the traced side had a unit-level problem (tests that never ran), or when a test it
    reported does not exist bare (an import that failed traced), the whole unit runs bare
    and compare() judges, exactly as when both sides always ran in full."""
    traced = run_side(unit, True, build, workdir, test_timeout)
    suspects = [tid for tid in traced.order if traced.outcomes[tid][0] not in GOOD]
    if not traced.problems:
        if not suspects:
            return Side(False), traced, False
        bare = run_side(unit, False, build, workdir, test_timeout, only=suspects, tag="bare-suspects")
        seen_all = all(tid in bare.outcomes for tid in suspects)
        if seen_all and not bare.problems and not any(bare.outcomes[t][0] in GOOD for t in suspects):
            return bare, traced, False
    return run_side(unit, False, build, workdir, test_timeout), traced, True


def check_traces(side, build):
    """The traced side must have produced readable traces of its own driver processes."""
    files = [f for f in os.listdir(side.trace_dir) if f.endswith(".ctrace")]
    if not files:
        return ["no .ctrace file in %s: the shim recorded nothing" % side.trace_dir], 0
    cli = os.path.join(build, "bin", "colabtrace")
    r = subprocess.run([cli, "report", "--format", "json", side.trace_dir],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0:
        return ["colabtrace report exited %d on %s: %s" % (r.returncode, side.trace_dir,
                                                          r.stderr.decode(errors="replace")[-500:])], len(files)
    report = json.loads(r.stdout)
    pids = {p.get("pid") for p in report.get("processes", [])}
    missing = [p for p in side.pids if p not in pids]
    if missing:
        return ["traced driver process(es) %s missing from the report of %d traces" % (missing, len(files))], len(files)
    return [], len(files)


GOOD = ("ok",)


def compare(unit, bare, traced):
    """Differences: (id, bare outcome, traced outcome, detail) for tests ok bare only."""
    diffs = []
    for tid in bare.order:
        b = bare.outcomes[tid][0]
        if b not in GOOD:
            continue
        t, detail = traced.outcomes.get(tid, ("not run", ""))
        if t not in GOOD:
            diffs.append([tid, b, t, detail])
    for p in traced.problems:
        if not bare.problems:
            diffs.append(["(unit)", "ok", "problem", p, "-"])
    return diffs


def first_line(text, width=110):
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    # The most telling line of a traceback is its last one.
    s = lines[-1] if lines else ""
    return s if len(s) <= width else s[:width - 3] + "..."


def have_modules(mods):
    code = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)"
    r = subprocess.run([PYTHON, "-c", code] + mods, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return r.returncode == 0, r.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("COLABTRACE_BUILD_DIR"), help="build directory")
    ap.add_argument("--jobs", type=int, default=2, help="unit sides run at the same time")
    ap.add_argument("--test-timeout", type=int, default=60, help="seconds one test may take")
    ap.add_argument("--workdir", help="keep results here (default: a temporary directory)")
    ap.add_argument("--unit", action="append", help="run only these units of the suites")
    ap.add_argument("suites", nargs="+")
    a = ap.parse_args()
    # The suites expect the signal dispositions of an interactive start: a background job
    # of a non-interactive shell inherits SIGINT/SIGQUIT ignored, and then CPython installs
    # no KeyboardInterrupt handler. A handled signal is reset to SIG_DFL by exec.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
    if a.suites == ["list"]:
        for s, d in SUITES.items():
            print(s, " ".join(u[0] for u in d["units"]))
        return 0
    a.build = os.path.abspath(a.build) if a.build else a.build  # the shim is preloaded from other directories
    shim = os.path.join(a.build or "", "lib", "libcolabtrace.so")
    if not a.build or not os.path.exists(shim):
        print("parity: no shim at %s (pass --build)" % shim)
        return 1
    if not os.path.exists(PYTHON):
        print("parity: SKIP: %s is missing" % PYTHON)
        return SKIP_RC
    units = []
    for s in a.suites:
        ok, why = have_modules(SUITES[s]["needs"])
        if not ok:
            print("parity: SKIP suite %s: %s (tools/lib/setup.sh installs the packages: "
                  "libpython3.11-testsuite, python3-numpy, python3-pytest, python3-hypothesis)" % (s, why[0]))
            continue
        units += [u for u in SUITES[s]["units"] if not a.unit or u[0] in a.unit]
    if not units:
        return SKIP_RC
    workdir = a.workdir or tempfile.mkdtemp(prefix="colabtrace-parity-")
    os.makedirs(workdir, exist_ok=True)
    print("parity: %d unit(s), work dir %s, shim %s" % (len(units), workdir, shim), flush=True)

    # Traced first, bare only where it tells something: a test ok traced is at parity
    # whatever it does bare. The bare side runs the tests that were not ok traced (a
    # handful: skips, known failures) and, only when one of those is ok bare there, the
    # whole unit as before, so every difference is judged against a full bare run in the
    # same order. That cuts a suite's CPU by about a third (issue 30); the verdict is the same.
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(verify_unit, u, a.build, workdir, a.test_timeout): u
                   for u in sorted(units, key=lambda u: -u[3])}  # longest first
        for f in concurrent.futures.as_completed(futures):
            u = futures[f]
            bare, traced, full_bare = f.result()
            results[u[0]] = (bare, traced)
            print("parity: %-28s traced %4d tests in %5.1fs%s; bare %s %4d tests in %5.1fs%s" % (
                u[0], len(traced.outcomes), traced.seconds,
                "; " + "; ".join(traced.problems) if traced.problems else "",
                "(whole unit)" if full_bare else "(not ok traced)", len(bare.outcomes), bare.seconds,
                "; " + "; ".join(bare.problems) if bare.problems else ""), flush=True)

    failed = False
    rows, summary, flakes, trace_problems = [], [], [], []
    for u in units:
        bare, traced = results[u[0]]
        diffs = compare(u, bare, traced)
        # Flaky-bare detection: each differing test runs alone, bare, once more.
        # For triage only, it is also run alone traced: "alone: ok" hints at an effect of
        # earlier tests (or of load); the difference counts either way.
        ids = [d[0] for d in diffs if d[0] != "(unit)"]
        if ids:
            rerun = run_side(u, False, a.build, workdir, a.test_timeout, only=ids)
            alone = run_side(u, True, a.build, workdir, a.test_timeout, only=ids)
            for d in list(diffs):
                if d[0] in rerun.outcomes and rerun.outcomes[d[0]][0] not in GOOD:
                    flakes.append((u[0], d[0], "fails bare when run alone: " + rerun.outcomes[d[0]][0]))
                    diffs.remove(d)
                else:
                    d.append(alone.outcomes.get(d[0], ("not run",))[0])
        problems, n_traces = check_traces(traced, a.build)
        trace_problems += ["%s: %s" % (u[0], p) for p in problems]
        ok_t = sum(1 for o, _ in traced.outcomes.values() if o in GOOD)
        excluded = sum(1 for tid, (o, _) in bare.outcomes.items()
                       if o not in GOOD and traced.outcomes.get(tid, ("",))[0] not in GOOD)
        summary.append((u[0], len(traced.outcomes), ok_t, len(bare.outcomes), excluded, len(diffs), n_traces,
                        traced.seconds, bare.seconds))
        for d in diffs:
            rows.append((u[0],) + tuple(d))
        if diffs or problems:
            failed = True

    print()
    print("%-28s %6s %9s %8s %8s %6s %7s %8s %7s" % ("unit", "tests", "ok traced", "ran bare",
                                                 "excluded", "diffs", "traces", "traced s", "bare s"))
    for s in summary:
        print("%-28s %6d %9d %8d %8d %6d %7d %8.1f %7.1f" % s)
    mods_ok = sum(1 for s in summary if s[5] == 0)
    print("%-28s %6d %9d %8d   units at parity: %d of %d" % (
        "TOTAL", sum(s[1] for s in summary), sum(s[2] for s in summary), sum(s[3] for s in summary),
        mods_ok, len(summary)))
    if flakes:
        print("\nLeft out as bare flakes (fail bare when re-run alone):")
        for f in flakes:
            print("  %s %s: %s" % f)
    if rows:
        print("\nDIFFERENCES: pass bare, not traced (%d)" % len(rows))
        print("%-24s %-70s %-6s %-8s %-8s %s" % ("unit", "test", "bare", "traced", "alone", "detail"))
        for unit, tid, b, t, detail, alone in rows:
            print("%-24s %-70s %-6s %-8s %-8s %s" % (unit, tid, b, t, alone, first_line(detail)))
    if trace_problems:
        print("\nTRACE CHECK FAILED:")
        for p in trace_problems:
            print("  " + p)
    print("\nparity: %s (logs, events and traces in %s)" % ("FAIL" if failed else "OK", workdir))
    if not failed and not a.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
