"""SIGKILL mid-run: every step the program reported as done is in its trace, and the
report says the process was killed (end.kind == "killed", finding proc.killed)."""
import glob
import os
import signal
import subprocess
import unittest

import coretest
from coretest import env_values, prog, py_script, python, records, report, shim_env
from ctharness import TempDirTest, by_pid, findings


class SigkillTest(TempDirTest):
    def kill_after(self, argv, steps_before_kill, var):
        p = subprocess.Popen(argv, env=shim_env(self.tmp), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        printed = []
        try:
            for line in p.stdout:
                if line.startswith("step "):
                    printed.append(int(line.split()[1]))
                if len(printed) >= steps_before_kill:
                    break
            os.kill(p.pid, signal.SIGKILL)
            rest, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        printed += [int(l.split()[1]) for l in rest.splitlines() if l.startswith("step ")]
        self.assertEqual(p.returncode, -signal.SIGKILL, err)
        self.assertGreaterEqual(len(printed), steps_before_kill)
        self.assertEqual(printed, list(range(len(printed))))
        traces = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertEqual(len(traces), 1, traces)
        trace = traces[0]
        self.assertEqual(coretest.trace_pid(trace), p.pid)
        values = env_values(trace, var)
        # Every printed step was recorded, in order. The kill may land after a step's
        # setenv and before its print: at most one more.
        self.assertEqual(values, [str(i) for i in range(len(values))])
        self.assertIn(len(values), (len(printed), len(printed) + 1))
        self.assertEqual(records(trace, "exit"), [])
        rep = report(trace)
        proc = by_pid(rep)[p.pid]
        self.assertEqual(proc["end"]["kind"], "killed")
        self.assertIsNone(proc["end"]["code"])
        self.assertFalse(proc["trace_truncated"])
        killed = findings(rep, "proc.killed")
        self.assertEqual(len(killed), 1)
        self.assertEqual(killed[0]["pid"], p.pid)
        self.assertEqual(killed[0]["severity"], "error")
        return proc

    def test_c_program_killed_mid_run(self):
        proc = self.kill_after([prog("ct_steps"), "1000000", "2000"], 25, "CUDA_STEP")
        self.assertEqual(os.path.basename(proc["exe"]), "ct_steps")

    def test_cpython_killed_mid_run(self):
        proc = self.kill_after([python(), py_script("steps.py"), "1000000", "0.002"], 25,
                               "CUDA_PY_STEP")
        self.assertTrue(os.path.basename(proc["exe"]).startswith("python"), proc["exe"])
        self.assertEqual(proc["argv"][1:], [py_script("steps.py"), "1000000", "0.002"])


if __name__ == "__main__":
    unittest.main()
