"""`colabtrace run --hang-timeout SECONDS` (issue 28) end to end: real Python programs that
hang, run under `colabtrace run`, which must record every thread of the job (its kernel
state, system call and Python stack, read from outside) into its own trace, say so in one
line, end the job (SIGTERM, SIGKILL after the grace period) and exit 124; a program that
keeps stepping must be left alone; a reader blocked on a FUSE mount that never answers
must not make run wait for ever."""
from __future__ import annotations

import ctypes
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import ctharness as h
import hangtest
from slowfs import SlowMount

TIMEOUT_S = 3
# The longest run may take when it ends a job: the timeout, the 5 s grace period after
# SIGTERM, the 3 s it waits for the killed, and a wide margin for a loaded machine. Run
# taking longer means it waited for a process it should have left behind.
RUN_LIMIT_S = TIMEOUT_S + 5 + 3 + 40
HANG_LINE = re.compile(
    r"^colabtrace: no progress for (\d+\.\d) s \((.*); --hang-timeout ([0-9.]+)\): recorded the "
    r"state of (\d+) threads? in (\d+) process(?:es)?, ending the job$", re.M)
X86_64 = platform.machine() == "x86_64"
SYS_READ, SYS_OPENAT, SYS_FUTEX, SYS_CLOCK_NANOSLEEP = 0, 257, 202, 230  # x86-64 numbers


def alive(pid: int) -> bool:
    """Whether pid exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


class HangRunTest(h.TempDirTest):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(h.CLI) or not os.path.exists(h.SHIM):
            raise AssertionError(f"build {h.CLI} and {h.SHIM} first")
        cls.pythons = hangtest.interpreters()
        if "3.11" not in cls.pythons:
            raise unittest.SkipTest("no CPython 3.11 here")
        # Processes that outlive `colabtrace run` (a reader no signal ends) become ours, to
        # be reaped in cleanup: none is left behind.
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER

    def run_prog(self, python: str, prog: str, *args: str, run_args=("--hang-timeout", str(TIMEOUT_S))):
        out = tempfile.mkdtemp(prefix="out-", dir=self.tmp)
        return hangtest.colabtrace_run(out, list(run_args), [python, prog, *args], timeout=RUN_LIMIT_S)

    def hang_line(self, r) -> re.Match:
        found = list(HANG_LINE.finditer(r.stderr))
        self.assertEqual(len(found), 1, r.stderr)
        self.assertEqual(found[0].group(3), str(TIMEOUT_S))
        return found[0]

    def hang_stop(self, r) -> dict:
        stops = r.by("hang_stop")
        self.assertEqual(len(stops), 1, stops)
        self.assertEqual(stops[0]["timeout"], f"{TIMEOUT_S * 10**9}ns")
        self.assertGreaterEqual(int(stops[0]["idle"].removesuffix("ns")), TIMEOUT_S * 10**9)
        return stops[0]

    # ---- a hung program ----------------------------------------------------------------
    def test_hung_threads_are_recorded_and_the_job_ended(self):
        for version, python in self.pythons.items():
            with self.subTest(python=python):
                self.check_hung_threads(python)

    def check_hung_threads(self, python: str):
        # A file name with a character beyond Latin-1 (a two-byte-per-character str in
        # the process), and a function name with one beyond ASCII (one byte each).
        src = os.path.join(hangtest.PROGS, "hung_threads.py")
        prog = os.path.join(tempfile.mkdtemp(dir=self.tmp), "hängt_程序.py")
        shutil.copy(src, prog)
        fifo = os.path.join(self.tmp, f"fifo-{os.path.basename(python)}-{time.monotonic_ns()}")
        os.mkfifo(fifo)
        r = self.run_prog(python, prog, fifo)
        self.assertEqual(r.returncode, 124, r.stderr)
        ids = json.loads(r.stdout.splitlines()[0])
        m = self.hang_line(r)
        self.assertRegex(m.group(2), r"^5 steps, the last at \d\d:\d\d:\d\d$")
        self.assertEqual((m.group(4), m.group(5)), ("3", "1"))
        self.assertEqual(self.hang_stop(r)["steps"], "5")

        threads = r.threads_of(ids["pid"])
        self.assertEqual(set(threads), {ids["main"], ids["worker"], ids["waiter"]}, r.by("thread_state"))
        worker, waiter, main = threads[ids["worker"]], threads[ids["waiter"]], threads[ids["main"]]
        for t in (worker, waiter, main):
            self.assertEqual(chr(int(t["kernel_state"])), "S", t)
        if X86_64:
            self.assertEqual(int(worker["syscall"]), SYS_OPENAT, worker)
            self.assertEqual(int(worker["syscall_arg0"]), 2**32 - 100, worker)  # AT_FDCWD, an int
            self.assertEqual(int(waiter["syscall"]), SYS_FUTEX, waiter)
            self.assertEqual(int(main["syscall"]), SYS_FUTEX, main)

        line = lambda marker: f"{prog}:{hangtest.marked_line(src, marker)}"  # noqa: E731
        wstack = worker["python_stack"].split("\n")
        self.assertEqual(wstack[0], f"{line('OPEN_FIFO')} in öffne_fifo", wstack)
        self.assertRegex(wstack[-1], r"/threading\.py:\d+ in _bootstrap$")
        # The waiter made no call the shim notes: its thread state came from the
        # interpreter's list of threads.
        self.assertEqual(waiter["python_stack"].split("\n")[0], f"{line('ACQUIRE')} in waits_only")
        mstack = main["python_stack"].split("\n")
        self.assertRegex(mstack[0], r"/threading\.py:\d+ in wait$")
        self.assertEqual(mstack[-2:], [f"{line('WAIT_EVENT')} in main", f"{line('CALL_MAIN')} in <module>"],
                         mstack)

        # The command itself ended by the SIGTERM run sent (recorded in run's trace).
        ends = [w for w in r.by("wait_status") if int(w["pid"]) == ids["pid"]]
        self.assertEqual(len(ends), 1, r.by("wait_status"))
        st = int(ends[0]["status"])
        self.assertTrue(os.WIFSIGNALED(st) and os.WTERMSIG(st) == signal.SIGTERM, st)
        self.assertNotIn("did not end", r.stderr)

    def test_a_job_that_never_steps_is_ended_counted_from_its_start(self):
        # Into a folder that already holds the traces of an earlier run that stepped: they
        # are not this job's progress.
        out = tempfile.mkdtemp(prefix="out-", dir=self.tmp)
        earlier = hangtest.colabtrace_run(
            out, [], [self.pythons["3.11"], "-c", "import colabtrace\nfor n in range(3): colabtrace.step(n)"],
            timeout=RUN_LIMIT_S)
        self.assertEqual(earlier.returncode, 0, earlier.stderr)
        os.rename(earlier.run_trace, earlier.run_trace + ".earlier")  # one run trace per run here
        # It sleeps 101 calls deep: its stack is cut to the innermost 64 frames.
        prog = os.path.join(self.tmp, "sleeper.py")
        with open(prog, "w") as f:
            f.write("import time\n\n\ndef deep(n):\n    if n == 0:\n        time.sleep(3600)\n"
                    "    deep(n - 1)\n\n\ndeep(100)\n")
        r = hangtest.colabtrace_run(out, [f"--hang-timeout={TIMEOUT_S}"], [self.pythons["3.11"], prog],
                                    timeout=RUN_LIMIT_S)
        self.assertEqual(r.returncode, 124, r.stderr)
        self.assertEqual(self.hang_line(r).group(2), "no step since the job started")
        self.assertEqual(self.hang_stop(r)["steps"], "0")
        states = r.by("thread_state")
        self.assertEqual(len(states), 1, states)
        self.assertEqual(states[0]["python_stack"].split("\n"),
                         [f"{prog}:6 in deep"] + [f"{prog}:7 in deep"] * 63)
        if X86_64:
            self.assertEqual(int(states[0]["syscall"]), SYS_CLOCK_NANOSLEEP, states)

    # ---- a program that keeps stepping ---------------------------------------------------
    def test_a_program_that_keeps_stepping_is_left_alone(self):
        # python3 as PATH finds it (pyenv's shim is a script that execs the interpreter:
        # the steps come from the trace's second exec image).
        python = shutil.which("python3")
        self.assertIsNotNone(python)
        r = self.run_prog(python, os.path.join(hangtest.PROGS, "keeps_stepping.py"),
                          run_args=(f"--hang-timeout={TIMEOUT_S}",))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "done\n")
        self.assertNotIn("no progress", r.stderr)
        self.assertEqual(r.by("thread_state") + r.by("hang_stop"), [])

    # ---- ending the job ----------------------------------------------------------------
    def test_a_child_that_ignores_sigterm_is_killed(self):
        src = os.path.join(hangtest.PROGS, "term_ignoring_child.py")
        r = self.run_prog(self.pythons["3.11"], src)
        self.assertEqual(r.returncode, 124, r.stderr)
        ids = json.loads(r.stdout.splitlines()[0])
        self.addCleanup(self.reap, ids["child"])
        m = self.hang_line(r)
        self.assertEqual((m.group(4), m.group(5)), ("2", "2"))
        self.assertEqual(self.hang_stop(r)["steps"], "2")
        for pid, marker in ((ids["parent"], "PARENT_SLEEP"), (ids["child"], "CHILD_SLEEP")):
            threads = r.threads_of(pid)
            self.assertEqual(list(threads), [pid], r.by("thread_state"))
            self.assertEqual(threads[pid]["python_stack"],
                             f"{src}:{hangtest.marked_line(src, marker)} in <module>")
        # The parent died of the SIGTERM; its child, which ignored it, of the SIGKILL after
        # the grace period (run reaped it: an orphan of the tree is run's child).
        status = {int(w["pid"]): int(w["status"]) for w in r.by("wait_status")}
        for pid, sig in ((ids["parent"], signal.SIGTERM), (ids["child"], signal.SIGKILL)):
            self.assertIn(pid, status, r.by("wait_status"))
            self.assertTrue(os.WIFSIGNALED(status[pid]) and os.WTERMSIG(status[pid]) == sig,
                            (pid, status[pid]))
        self.assertFalse(alive(ids["child"]))
        self.assertNotIn("did not end", r.stderr)

    def test_a_reader_stuck_on_a_dead_fuse_mount_does_not_hold_run(self):
        # A read that never answers, and an open that never answers. A killed process
        # whose request the FUSE daemon already has waits for the answer in uninterruptible
        # sleep, where no signal ends it (the open: FUSE_OPEN is a synchronous request); a
        # page-cache read waits on the page lock, killably, and ends by the signals.
        for how, settings, marker, nr in (("read", {"open_ms": 0, "hang": ["*.bin"]}, "READ_STUCK", SYS_READ),
                                          ("open", {"open_ms": 10**9}, "OPEN_STUCK", SYS_OPENAT)):
            with self.subTest(stuck_in=how):
                self.check_fuse_reader(settings, marker, nr)

    def check_fuse_reader(self, settings: dict, marker: str, nr: int):
        src = tempfile.mkdtemp(prefix="src-", dir=self.tmp)
        with open(os.path.join(src, "data.bin"), "wb") as f:
            f.write(b"\0" * 65536)
        prog = os.path.join(hangtest.PROGS, "fuse_reader.py")
        pids = []
        self.addCleanup(lambda: [self.reap(p) for p in pids])  # runs after the mount is gone
        with SlowMount(self, src, **settings) as mnt:
            out = tempfile.mkdtemp(prefix="out-", dir=self.tmp)
            r = hangtest.colabtrace_run(out, ["--hang-timeout", str(TIMEOUT_S)],
                                        [self.pythons["3.11"], prog, os.path.join(mnt.path, "data.bin")],
                                        timeout=RUN_LIMIT_S)
            pid = json.loads(r.stdout.splitlines()[0])["pid"]
            pids.append(pid)
            self.assertEqual(r.returncode, 124, r.stderr)
            self.hang_line(r)
            self.assertEqual(self.hang_stop(r)["steps"], "2")
            t = r.threads_of(pid)[pid]
            # Before the signals: 'S' in the request's interruptible wait, 'D' in the page
            # lock's killable one.
            self.assertIn(chr(int(t["kernel_state"])), "SD", t)
            if X86_64:
                self.assertEqual(int(t["syscall"]), nr, t)
            self.assertEqual(t["python_stack"].split("\n"),
                             [f"{prog}:{hangtest.marked_line(prog, marker)} in read_stuck",
                              f"{prog}:{hangtest.marked_line(prog, 'CALL_READ')} in <module>"])
            if alive(pid):
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                self.assertEqual(state, "D")
                self.assertRegex(r.stderr, rf"(?m)^colabtrace: pid {pid} \([^)]*\) did not end: blocked in "
                                           r"uninterruptible state \(D\)")
                print(f"stuck in {marker}: pid {pid} stayed in D after SIGKILL; run named it and exited",
                      flush=True)
            else:
                self.assertNotIn("did not end", r.stderr)
                print(f"stuck in {marker}: pid {pid} ended by the signals", flush=True)

    def reap(self, pid: int) -> None:
        """Kills pid if it still runs and waits (at most 20 s) until it is gone; reaps it
        when it became our child."""
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    return
            except ChildProcessError:
                if not alive(pid):
                    return
            time.sleep(0.05)

    # ---- the command line --------------------------------------------------------------
    def test_bad_values_are_usage_errors(self):
        for args in (["--hang-timeout", "abc", "--", "true"], ["--hang-timeout", "0", "--", "true"],
                     ["--hang-timeout", "-1", "--", "true"], ["--hang-timeout=nan", "--", "true"],
                     ["--hang-timeout=inf", "--", "true"], ["--hang-timeout=1e999", "--", "true"],
                     ["--hang-timeout=5s", "--", "true"], ["--hang-timeout=", "--", "true"],
                     ["--hang-timeout"]):
            with self.subTest(args=args):
                p = subprocess.run([h.CLI, "run", "-o", self.tmp, *args],
                                   capture_output=True, text=True, timeout=30, env=h.clean_env())
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("--hang-timeout", p.stderr)
        p = subprocess.run([h.CLI, "run", "-o", os.path.join(self.tmp, "ok"), "--hang-timeout", "0.5", "--",
                            "true"], capture_output=True, text=True, timeout=30, env=h.clean_env())
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([h.CLI, "run", "--help"], capture_output=True, text=True, timeout=30)
        self.assertIn("--hang-timeout S", p.stdout + p.stderr)
        self.assertIn("124", p.stdout + p.stderr)


if __name__ == "__main__":
    unittest.main()
