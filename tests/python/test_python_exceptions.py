"""Uncaught Python exceptions (issue 38), end to end: real programs (progs/raises.py,
progs/loader_raises.py) run by Debian's python3 under `colabtrace run` or plain LD_PRELOAD
with COLABTRACE_PYTHON=1. The start-up hook writes a py_exception record; the report
gives proc.python-exception and processes[].exception with the exact type, message and
innermost line; the program's stderr and exit status are those of a bare run."""
import json
import os
import re
import subprocess
import tempfile
import unittest

import ctharness as h

HERE = os.path.dirname(os.path.abspath(__file__))
PROGS = os.path.join(HERE, "progs")
RAISES = os.path.join(PROGS, "raises.py")
LOADER = os.path.join(PROGS, "loader_raises.py")
PACKAGE = os.path.join(h.BUILD, "python")  # the build tree's colabtrace package
# `colabtrace run`'s own summary lines on stderr (not the program's).
SUMMARY = re.compile(r"colabtrace: |  (error|warning|info) [a-z]+\.[a-z-]+: ")


def line_of(path, mark):
    with open(path, encoding="utf-8") as f:
        return next(i for i, l in enumerate(f, 1) if mark in l)


class Run:
    def __init__(self, returncode, stdout, stderr, out_dir):
        self.returncode, self.stdout, self.stderr, self.out_dir = returncode, stdout, stderr, out_dir
        self.pid = int(stdout.split()[0]) if stdout.split() else 0
        self.traces = sorted(os.path.join(out_dir, f) for f in os.listdir(out_dir) if f.endswith(".ctrace"))
        self.report = h.report(out_dir)

    def exception_findings(self):
        return h.findings(self.report, "proc.python-exception")

    def records(self, name):
        return [r for t in self.traces for r in h.records(t, name)]

    def text_report_first_line(self):
        # The verdict: the first line after the report's title line.
        lines = h.cli("report", self.out_dir).stdout.splitlines()
        return next(l for l in lines[1:] if l.strip())


def run_traced(test, argv, how, timeout=300):
    out = tempfile.mkdtemp(prefix=how + "-", dir=test.tmp)
    env = {"PYTHONPATH": PACKAGE, "OMP_NUM_THREADS": "1"}
    cmd = [h.SYSTEM_PYTHON, *argv]
    if how == "preload":
        env["COLABTRACE_PYTHON"] = "1"
        r = h.run_traced(cmd, env=env, out_dir=out, timeout=timeout)
        return Run(r.returncode, r.stdout, r.stderr, out)
    p = h.colabtrace_run(out, cmd, env=env, timeout=timeout)
    stderr = "".join(l for l in p.stderr.splitlines(True) if not SUMMARY.match(l))
    return Run(p.returncode, p.stdout, stderr, out)


def run_bare(argv, timeout=300):
    env = h.clean_env({"PYTHONPATH": PACKAGE, "OMP_NUM_THREADS": "1"})
    return subprocess.run([h.SYSTEM_PYTHON, *argv], env=env, capture_output=True, text=True, timeout=timeout)


class UncaughtExceptions(h.TempDirTest):
    def assert_like_bare(self, run, argv):
        bare = run_bare(argv)
        self.assertEqual(run.returncode, bare.returncode)
        # The pid on stdout differs; the traceback on stderr is byte for byte the same.
        self.assertEqual(run.stderr, bare.stderr)
        self.assertNotEqual(bare.stderr, "")

    def test_value_error_in_the_main_thread_under_run(self):
        run = run_traced(self, [RAISES, "value"], "run")
        self.assertEqual(run.returncode, 1, run.stderr)
        f = run.exception_findings()
        self.assertEqual(len(f), 1, run.report["findings"])
        self.assertEqual(f[0]["severity"], "error")
        self.assertEqual(f[0]["pid"], run.pid)
        ev = f[0]["evidence"]
        self.assertEqual(ev["type"], "ValueError")
        self.assertEqual(ev["message"], "bad value 42")
        self.assertEqual(ev["message_bytes"], 12)
        self.assertEqual(ev["python_stack"], [f"{RAISES}:{line_of(RAISES, '# RAISE LINE')} in inner",
                                              f"{RAISES}:{line_of(RAISES, '# CALL LINE')} in <module>"])
        self.assertEqual(ev["raised_in"], [])
        self.assertFalse(ev["thread"])
        main = h.by_pid(run.report)[run.pid]
        self.assertEqual(main["exception"]["type"], "ValueError")
        self.assertEqual(main["exception"]["message"], "bad value 42")
        self.assertEqual(main["exception"]["python_stack"], ev["python_stack"])
        self.assertEqual(main["end"]["kind"], "exited")
        self.assertEqual(main["end"]["code"], 1)
        self.assertFalse(run.text_report_first_line().startswith("Healthy"), run.text_report_first_line())
        recs = run.records("py_exception")
        self.assertEqual(len(recs), 1, recs)
        self.assertEqual(recs[0]["how"], "1")
        self.assert_like_bare(run, [RAISES, "value"])

    def test_message_longer_than_512_bytes_is_cut_at_a_character(self):
        run = run_traced(self, [RAISES, "long"], "preload")
        f = run.exception_findings()
        self.assertEqual(len(f), 1, run.report["findings"])
        ev = f[0]["evidence"]
        # "a" then 400 two-byte characters: 801 bytes, cut to 511 (the 512th byte would
        # split a character).
        self.assertEqual(ev["message_bytes"], 801)
        self.assertEqual(ev["message"], "a" + "\u00e9" * 255)
        self.assertEqual(len(ev["message"].encode()), 511)
        self.assertEqual(ev["python_stack"], [f"{RAISES}:{line_of(RAISES, '# LONG LINE')} in <module>"])
        self.assert_like_bare(run, [RAISES, "long"])

    def test_a_thread_that_ends_the_process(self):
        # The thread raises; the main thread joins it and exits 2 (SystemExit: not
        # recorded): the thread's exception is what the process ended on.
        run = run_traced(self, [RAISES, "thread"], "preload")
        self.assertEqual(run.returncode, 2)
        f = run.exception_findings()
        self.assertEqual(len(f), 1, run.report["findings"])
        ev = f[0]["evidence"]
        self.assertEqual(ev["type"], "RuntimeError")
        self.assertEqual(ev["message"], "worker thread failed")
        self.assertTrue(ev["thread"])
        self.assertEqual(ev["python_stack"][0], f"{RAISES}:{line_of(RAISES, '# THREAD LINE')} in thread_body")
        self.assertEqual([r["how"] for r in run.records("py_exception")], ["2"])
        self.assert_like_bare(run, [RAISES, "thread"])

    def test_a_thread_whose_process_went_on_to_exit_zero_ended_nothing(self):
        run = run_traced(self, [RAISES, "thread-ok"], "preload")
        self.assertEqual(run.returncode, 0)
        self.assertEqual([r["how"] for r in run.records("py_exception")], ["2"])  # recorded
        self.assertEqual(run.exception_findings(), [])                           # no finding
        self.assertNotIn("exception", h.by_pid(run.report)[run.pid])
        self.assert_like_bare(run, [RAISES, "thread-ok"])

    def test_keyboard_interrupt_is_info(self):
        run = run_traced(self, [RAISES, "interrupt"], "preload")
        f = run.exception_findings()
        self.assertEqual(len(f), 1, run.report["findings"])
        self.assertEqual(f[0]["severity"], "info")
        self.assertEqual(f[0]["evidence"]["type"], "KeyboardInterrupt")
        self.assertEqual(f[0]["evidence"]["python_stack"],
                         [f"{RAISES}:{line_of(RAISES, '# INTERRUPT LINE')} in <module>"])
        self.assert_like_bare(run, [RAISES, "interrupt"])

    def test_system_exit_is_no_exception_but_never_healthy(self):
        run = run_traced(self, [RAISES, "exit3"], "run")
        self.assertEqual(run.returncode, 3)
        self.assertEqual(run.records("py_exception"), [])
        self.assertEqual(run.exception_findings(), [])
        self.assertNotIn("exception", h.by_pid(run.report)[run.pid])
        self.assertEqual(run.text_report_first_line(),
                         f"Failed: the main process (pid {run.pid}) exited 3, and no finding says why")
        bare = run_bare([RAISES, "exit3"])
        self.assertEqual((run.returncode, run.stderr), (bare.returncode, bare.stderr))


class HookDefaultInRanks(h.TempDirTest):
    """Under plain LD_PRELOAD the start-up hook is on by default in a process that carries
    a launcher's rank variables (so a multi-rank job needs no change to be diagnosed), off
    in any other unless COLABTRACE_PYTHON=1, and COLABTRACE_PYTHON=0 turns it off in a rank
    too. The hook's py_exception record tells whether it ran."""

    def exceptions(self, env_extra):
        out = tempfile.mkdtemp(prefix="rank-", dir=self.tmp)
        env = {"PYTHONPATH": PACKAGE, "OMP_NUM_THREADS": "1", **env_extra}
        r = h.run_traced([h.SYSTEM_PYTHON, RAISES, "value"], env=env, out_dir=out)
        self.assertEqual(r.returncode, 1, r.stderr)
        return Run(r.returncode, r.stdout, r.stderr, out).records("py_exception")

    def test_on_in_a_torchrun_rank(self):
        self.assertEqual([e["type"] for e in self.exceptions({"RANK": "1", "WORLD_SIZE": "3"})], ["ValueError"])

    def test_on_in_slurm_and_mpi_ranks(self):
        for var in ("SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK"):
            with self.subTest(var=var):
                self.assertEqual(len(self.exceptions({var: "0"})), 1)

    def test_off_elsewhere_and_when_asked(self):
        self.assertEqual(self.exceptions({}), [])
        self.assertEqual(self.exceptions({"RANK": "1", "COLABTRACE_PYTHON": "0"}), [])


class DataLoaderWorkerException(h.TempDirTest):
    def setUp(self):
        super().setUp()
        why = h.torch_missing()
        if why:
            self.skipTest(why)

    def test_one_finding_on_the_main_process_with_the_workers_traceback(self):
        run = run_traced(self, [LOADER, "1"], "preload")
        self.assertEqual(run.returncode, 1, run.stderr[-2000:])
        passed_on = run.records("py_exception")
        # The worker's record (how 3, passed on) and the main process's (how 1).
        self.assertEqual(sorted(r["how"] for r in passed_on), ["1", "3"], passed_on)
        f = run.exception_findings()
        self.assertEqual(len(f), 1, run.report["findings"])
        self.assertEqual(f[0]["pid"], run.pid)
        ev = f[0]["evidence"]
        self.assertEqual(ev["type"], "ZeroDivisionError")
        self.assertTrue(ev["message"].startswith(
            "Caught ZeroDivisionError in DataLoader worker process "), ev["message"])
        self.assertIn("Original Traceback", ev["message"])
        self.assertEqual(ev["python_stack"][0], f"{LOADER}:{line_of(LOADER, '# MAIN LINE')} in main")
        self.assertTrue(all("dist-packages/torch" in fr for fr in ev["raised_in"]), ev["raised_in"])
        worker = ev["worker"]
        workers = {p["pid"] for p in run.report["processes"] if p["pid"] != run.pid}
        self.assertIn(worker["pid"], workers)
        self.assertEqual(worker["type"], "ZeroDivisionError")
        self.assertEqual(worker["message"], "integer division or modulo by zero")
        self.assertEqual(worker["python_stack"][0], f"{LOADER}:{line_of(LOADER, '# WORKER LINE')} in __getitem__")
        for p in run.report["processes"]:
            if p["pid"] != run.pid:
                self.assertNotIn("exception", p)
        # One worker: batches arrive in order, so torch raises from the same line of
        # _next_data as in the bare run (with two, which path it takes is a race).
        bare = run_bare([LOADER, "1"])
        self.assertEqual((run.returncode, run.stderr), (bare.returncode, bare.stderr))


if __name__ == "__main__":
    unittest.main()
