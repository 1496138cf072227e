"""The parity harness itself (parity.py): it runs a unit traced and then, bare, only the
tests that were not ok traced, so it must still find a test that passes bare and fails
traced. Here the "shim" is a library whose fsync() always fails with EIO
(selftest/fsync_eio.c): CPython's test_os must then differ in exactly one test,
TestInvalidFD.test_fsync, judged against a whole bare run of the unit; and the trace check
must fail, since that library writes no trace."""
import os
import subprocess
import sys
import tempfile
import unittest

import ctharness as h

HERE = os.path.dirname(os.path.abspath(__file__))
BAD_SHIM = os.path.join(h.BUILD, "tests", "parity", "libparity_fsync_eio.so")


class ParityHarness(unittest.TestCase):
    def setUp(self):
        probe = subprocess.run([h.SYSTEM_PYTHON, "-c", "import test.test_os"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("CPython's test suite is not installed (libpython3.11-testsuite)")

    def test_a_test_that_fails_only_traced_is_a_difference(self):
        with tempfile.TemporaryDirectory(prefix="ct-parity-self-") as tmp:
            build = os.path.join(tmp, "build")
            os.makedirs(os.path.join(build, "lib"))
            os.makedirs(os.path.join(build, "bin"))
            os.symlink(BAD_SHIM, os.path.join(build, "lib", "libcolabtrace.so"))
            os.symlink(h.CLI, os.path.join(build, "bin", "colabtrace"))
            r = subprocess.run([sys.executable, os.path.join(HERE, "parity.py"), "--build", build,
                                "--workdir", os.path.join(tmp, "work"), "--unit", "test_os", "cpython-proc"],
                               capture_output=True, text=True, timeout=300)
        out = r.stdout
        self.assertEqual(r.returncode, 1, out[-3000:])
        self.assertIn("bare (whole unit)", out)
        diffs = out[out.index("DIFFERENCES: pass bare, not traced"):].splitlines()
        self.assertEqual(diffs[0], "DIFFERENCES: pass bare, not traced (1)", out[-3000:])
        (row,) = [l for l in diffs[2:] if l.startswith("test_os ")]
        self.assertEqual(row.split()[1:4], ["test.test_os.TestInvalidFD.test_fsync", "ok", "fail"], row)
        self.assertIn("TRACE CHECK FAILED", out)
        self.assertIn("no .ctrace file", out)


if __name__ == "__main__":
    unittest.main()
