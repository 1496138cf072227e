"""Calls in flight survive SIGKILL (issue 28): a real C program blocks in one hooked call
(open of a FIFO nobody writes, waitpid for a child that never ends, a second thread's
open) under plain LD_PRELOAD, and is SIGKILLed. Its trace's state chunk still says what
each thread was in: processes[].in_flight names the call, its entry point, the path or
the child, and the thread. A call that returned leaves nothing, and a clean exit's
in_flight is empty."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

from ctharness import SHIM, built_test_program, by_pid, clean_env, findings, kill_process_group, records, report

BLOCKER = built_test_program("hang", "blocker")


class InFlightTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ct-inflight-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.fifo = os.path.join(self.tmp, "never.fifo")
        os.mkfifo(self.fifo)
        self.out = os.path.join(self.tmp, "traces")

    def start(self, *args) -> tuple[subprocess.Popen, list[str]]:
        """Starts the blocker under the shim; returns it and its stdout lines up to "ready"."""
        env = clean_env({"LD_PRELOAD": SHIM, "COLABTRACE_OUT": self.out + "/"})
        p = subprocess.Popen([BLOCKER, *args], env=env, stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
        self.addCleanup(self.kill_group, p)
        lines = []
        for line in p.stdout:
            lines.append(line.strip())
            if line.startswith("ready"):
                break
        self.assertTrue(lines and lines[-1].startswith("ready"), lines)
        time.sleep(0.5)  # from "ready" to inside the call
        return p, lines

    @staticmethod
    def kill_group(p: subprocess.Popen):
        kill_process_group(p)

    def killed_report(self, p: subprocess.Popen) -> dict:
        self.kill_group(p)
        self.assertEqual(p.returncode, -signal.SIGKILL)
        return report(self.out)

    def test_open_of_a_fifo_names_the_call_the_path_and_the_thread(self):
        p, lines = self.start("open", self.fifo)
        _, pid, tid = lines[-1].split()
        rep = self.killed_report(p)
        (call,) = by_pid(rep)[int(pid)]["in_flight"]
        self.assertEqual(call["call"], "open")
        self.assertEqual(call["api"], "open")
        self.assertEqual(call["tid"], int(tid))
        self.assertEqual(call["level"], 0)
        self.assertEqual(call["path"], self.fifo)
        self.assertIsNone(call["fd"])
        # Killed within a second: no hang (below 10 s), a kill.
        self.assertEqual(findings(rep, "proc.hang"), [])
        self.assertEqual(len(findings(rep, "proc.killed")), 1)

    def test_fopen_is_an_open_too(self):
        p, lines = self.start("fopen", self.fifo)
        _, pid, _ = lines[-1].split()
        rep = self.killed_report(p)
        (call,) = by_pid(rep)[int(pid)]["in_flight"]
        self.assertEqual((call["call"], call["api"], call["path"]), ("open", "fopen", self.fifo))

    def test_waitpid_for_a_child_that_never_ends(self):
        p, lines = self.start("wait")
        child = int(lines[0].split()[1])
        _, pid, tid = lines[-1].split()
        rep = self.killed_report(p)
        rows = by_pid(rep)
        (call,) = rows[int(pid)]["in_flight"]
        self.assertEqual((call["call"], call["api"], call["pid"], call["tid"]),
                         ("wait", "waitpid", child, int(tid)))
        # The child sleeps in pause(): no hooked call, no note.
        self.assertEqual(rows[child]["in_flight"], [])

    def test_a_second_thread_blocked_while_the_main_thread_joins(self):
        p, lines = self.start("thread", self.fifo)
        _, pid, tid = lines[-1].split()
        self.assertNotEqual(int(pid), int(tid))
        rep = self.killed_report(p)
        (call,) = by_pid(rep)[int(pid)]["in_flight"]
        self.assertEqual((call["call"], call["tid"], call["path"]), ("open", int(tid), self.fifo))

    def test_a_call_that_returned_leaves_no_note(self):
        p, lines = self.start("open", self.fifo)
        _, pid, _ = lines[-1].split()
        with open(self.fifo, "w"):  # a writer: the open returns
            pass
        rest = p.stdout.read()
        p.wait(timeout=30)
        self.assertEqual(p.returncode, 0)
        self.assertIn("returned", rest)
        rep = report(self.out)
        self.assertEqual(by_pid(rep)[int(pid)]["in_flight"], [])
        self.assertEqual(findings(rep, "proc.killed"), [])
        # The open itself is an ordinary record, with its path.
        trace = [os.path.join(self.out, f) for f in os.listdir(self.out) if f.endswith(f".{pid}.ctrace")]
        self.assertEqual(len(trace), 1)
        opens = [r for r in records(trace[0], "io_open") if r.get("path") == self.fifo]
        self.assertEqual(len(opens), 1)


if __name__ == "__main__":
    unittest.main(verbosity=2)
