"""Calls before the shim's constructor: a library preloaded with the shim whose
constructor runs first and calls setenv, fork (child _exits) and a failing execve.
The program runs as without the shim, and the shim still traces it."""
import glob
import os
import subprocess
import unittest

import ctharness
from coretest import clean_env, env_values, prog, report
from ctharness import TempDirTest

PREINIT = ctharness.test_bin("core", "libct_preinit.so")


class PreinitTest(TempDirTest):
    def test_calls_before_the_shim_constructor(self):
        argv = [prog("ct_exit"), "exit", "6"]
        bare = subprocess.run(argv, env=clean_env({"LD_PRELOAD": PREINIT}), capture_output=True,
                              text=True, timeout=60)
        # The loader runs preloaded constructors last-first: listing the shim first makes
        # the other library initialise before it.
        env = clean_env({"LD_PRELOAD": f"{ctharness.SHIM}:{PREINIT}",
                         "COLABTRACE_OUT": self.tmp + "/"})
        traced = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        self.assertIn("preinit: shim initialised before us: no\n", traced.stderr,
                      "the other constructor really ran first")
        self.assertEqual(traced.returncode, 6)
        self.assertEqual(traced.returncode, bare.returncode)
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.stderr, bare.stderr)
        self.assertIn("preinit: child exit 7\n", traced.stderr)
        self.assertIn("preinit: execve -1 No such file or directory\n", traced.stderr)
        traces = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertEqual(len(traces), 1, "only the program itself ran under a started shim")
        (proc,) = report(traces[0])["processes"]
        self.assertEqual(proc["end"], {"kind": "exited", "code": 6, "signal": None, "reaped_by": None})
        self.assertEqual(proc["exe"], prog("ct_exit"))
        # The variable set before the shim started is in its view of the environment.
        self.assertEqual(env_values(traces[0], "CUDA_PREINIT"), ["early"])


if __name__ == "__main__":
    unittest.main()
