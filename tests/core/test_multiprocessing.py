"""Python multiprocessing with the fork, spawn and forkserver start methods: exactly one
trace per process that really ran (main, workers, the forkserver and resource tracker
when started), each worker's exit code, and ppid links."""
import glob
import os
import subprocess
import unittest

from coretest import py_script, python, report, shim_env, trace_pid, wait_gone
from ctharness import TempDirTest, by_pid

WORKERS = 3


class MultiprocessingTest(TempDirTest):
    def check(self, method):
        p = subprocess.run([python(), py_script("mp.py"), method, str(WORKERS)],
                           env=shim_env(self.tmp), capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        main, workers, helpers = None, {}, {}
        for line in p.stdout.splitlines():
            w = line.split()
            if w[0] == "main":
                main = int(w[1])
            elif w[0] == "worker":
                workers[int(w[1])] = int(w[2])
            elif w[0] == "helper":
                helpers[int(w[1])] = w[2]
        self.assertEqual(sorted(workers.values()), [20 + i for i in range(WORKERS)])
        # Helpers outlive main by a moment: let them finish their traces.
        wait_gone(helpers)
        traces = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        pids = [trace_pid(t) for t in traces]
        self.assertEqual(sorted(pids), sorted({main} | set(workers) | set(helpers)),
                         f"stdout:\n{p.stdout}")
        procs = by_pid(report(self.tmp))
        self.assertEqual(procs[main]["end"], {"kind": "exited", "code": 0, "signal": None, "reaped_by": None})
        for pid, code in workers.items():
            self.assertEqual(procs[pid]["end"]["kind"], "exited")
            self.assertEqual(procs[pid]["end"]["code"], code)
        for pid in helpers:
            self.assertEqual(procs[pid]["end"]["kind"], "exited")
        return main, workers, helpers, procs

    def test_fork(self):
        main, workers, helpers, procs = self.check("fork")
        self.assertEqual(helpers, {})
        for pid in workers:
            self.assertEqual(procs[pid]["ppid"], main)
            self.assertEqual(procs[pid]["origin"], "fork")
        self.assertEqual(sorted(procs[main]["children"]), sorted(workers))

    def test_spawn(self):
        main, workers, helpers, procs = self.check("spawn")
        self.assertEqual(sorted(helpers.values()), ["resource_tracker"])
        for pid in list(workers) + list(helpers):
            self.assertEqual(procs[pid]["ppid"], main)
            self.assertTrue(os.path.basename(procs[pid]["exe"]).startswith("python"))
            self.assertIn("-c", procs[pid]["argv"])

    def test_forkserver(self):
        main, workers, helpers, procs = self.check("forkserver")
        self.assertEqual(sorted(helpers.values()), ["forkserver", "resource_tracker"])
        server = next(pid for pid, kind in helpers.items() if kind == "forkserver")
        self.assertEqual(procs[server]["ppid"], main)
        for pid in workers:
            self.assertEqual(procs[pid]["ppid"], server)
            self.assertEqual(procs[pid]["origin"], "fork")


if __name__ == "__main__":
    unittest.main()
