"""Wait statuses: the shim records every reap (wait, waitpid, wait3, wait4, waitid) and
the analyzer takes the parent's record as the exact end of the child."""
import os
import subprocess
import unittest

import lifecycletest as lt
from ctharness import TempDirTest


class WaitHooks(TempDirTest):
    def test_every_api_records_exact_statuses_and_keeps_returns(self):
        bare = subprocess.run([lt.prog("ct_wait")], capture_output=True, text=True, env=lt.clean_env())
        traced = lt.run_traced([lt.prog("ct_wait")], out_dir=self.tmp)
        self.assertEqual(bare.returncode, 0, bare.stderr)
        # Returns, statuses and errno exactly as bare (WNOHANG, WNOWAIT, ECHILD included).
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.returncode, 0)
        parent = [t for t in traced.traces
                  if lt.records(t, "wait_status") or os.path.basename(t).startswith("colabtrace.ct_wait.")]
        rep = lt.report(self.tmp)
        procs = lt.by_pid(rep)
        main_pid = [p["pid"] for p in rep["processes"] if p["ppid"] not in procs][0]
        main_trace = [t for t in parent if f".{main_pid}.ctrace" in t][0]
        waits = lt.records(main_trace, "wait_status")
        # Six reaps; the WNOHANG poll, the WNOWAIT peek and the ECHILD calls record nothing.
        self.assertEqual([(int(w["status"]), int(w["api"])) for w in waits],
                         [(3 << 8, 0), (15, 1), (5 << 8, 2), (9, 3), (7 << 8, 4), (9 << 8, 1)])
        children = [p for p in rep["processes"] if p["ppid"] == main_pid]
        self.assertEqual(len(children), 6)
        ends = sorted((p["end"]["kind"], p["end"]["code"], p["end"]["signal"]) for p in children)
        self.assertEqual(ends, sorted([("exited", 3, None), ("signaled", None, 15), ("exited", 5, None),
                                       ("killed", None, 9), ("exited", 7, None), ("exited", 9, None)]))
        for p in children:
            self.assertEqual(p["end"]["reaped_by"], main_pid)

    def test_parent_sigkills_and_reaps_its_child(self):
        code = ("import os, signal, time\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    time.sleep(60)\n"
                "    os._exit(0)\n"
                "time.sleep(0.2)\n"
                "os.kill(pid, signal.SIGKILL)\n"
                "_, st = os.waitpid(pid, 0)\n"
                "print(pid, os.waitstatus_to_exitcode(st))\n")
        r = lt.run_traced([lt.PYTHON, "-c", code], out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        child_pid, exitcode = map(int, r.stdout.split())
        self.assertEqual(exitcode, -9)
        rep = lt.report(self.tmp)
        child = lt.by_pid(rep)[child_pid]
        parent_pid = child["ppid"]
        self.assertEqual(child["end"]["kind"], "killed")
        self.assertEqual(child["end"]["signal"], 9)
        self.assertEqual(child["end"]["reaped_by"], parent_pid)
        killed = [f for f in lt.findings(rep, "proc.killed") if f["pid"] == child_pid]
        self.assertEqual(len(killed), 1)
        self.assertEqual(killed[0]["evidence"]["reaped_by"], parent_pid)
        self.assertEqual(killed[0]["evidence"]["signal"], 9)
        self.assertIn(f"reaped by its parent, pid {parent_pid}", killed[0]["summary"])
        # The parent itself exited normally.
        self.assertEqual(lt.by_pid(rep)[parent_pid]["end"]["kind"], "exited")


if __name__ == "__main__":
    unittest.main()
