"""The host program behaves as without the shim: exit status, stdout and stderr are
identical byte for byte, and the trace records the same exit code."""
import glob
import os
import subprocess
import unittest

from coretest import prog, py_script, python, report, run_plain, shim_env
from ctharness import TempDirTest


class ExitCodesTest(TempDirTest):
    def compare(self, argv, expect_rc, expect_code=None):
        """Runs argv bare and under the shim; returns the traced run's report entry."""
        bare = run_plain(argv)
        out = os.path.join(self.tmp, str(len(os.listdir(self.tmp))))
        os.mkdir(out)
        traced = subprocess.run(argv, env=shim_env(out), capture_output=True, timeout=60)
        self.assertEqual(bare.returncode, expect_rc, bare.stderr)
        self.assertEqual(traced.returncode, bare.returncode)
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.stderr, bare.stderr)
        traces = glob.glob(os.path.join(out, "*.ctrace"))
        self.assertEqual(len(traces), 1)
        (proc,) = report(traces[0])["processes"]
        self.assertEqual(proc["end"]["kind"], "exited")
        self.assertEqual(proc["end"]["code"], expect_rc if expect_code is None else expect_code)
        return bare

    def test_c_exit_paths(self):
        for mode, code in [("exit", 3), ("exit", 0), ("return", 4), ("return", 255),
                           ("_exit", 5), ("Exit", 6), ("quick", 7)]:
            with self.subTest(mode=mode, code=code):
                bare = self.compare([prog("ct_exit"), mode, str(code)], code)
                self.assertEqual(bare.stderr, f"err: mode={mode} code={code}\n".encode())
                # stdout is a pipe: _exit-style ends lose the buffered line, with or
                # without the shim.
                lost = mode in ("_exit", "Exit", "quick")
                self.assertEqual(bare.stdout, b"" if lost else f"out: mode={mode} code={code}\n".encode())

    def test_c_program_output_many_lines(self):
        bare = self.compare([prog("ct_steps"), "500", "0"], 0)
        self.assertEqual(len(bare.stdout.splitlines()), 501)

    def test_python_exit_paths(self):
        for mode, code in [("sys.exit", 5), ("sys.exit", 0), ("os._exit", 9), ("raise", 1)]:
            with self.subTest(mode=mode):
                bare = self.compare([python(), py_script("exit.py"), mode, str(code)], code)
                if mode == "raise":
                    self.assertIn(b"RuntimeError: deliberate", bare.stderr)


if __name__ == "__main__":
    unittest.main()
