"""tools/demo builds only what it runs: the targets it names must produce the shim, the
CLI and the simulated CUDA libraries. (Under Ninja the target name "colabtrace" is the
CLI's output file, not the shim: a demo that named it ran with no shim at all.)"""
import os
import shutil
import subprocess
import unittest

import ctharness as h

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class DemoTargetsTest(unittest.TestCase):
    def test_the_demo_targets_build_what_the_demo_runs(self):
        if not shutil.which("ninja") or not os.path.exists(os.path.join(h.BUILD, "build.ninja")):
            self.skipTest("not a Ninja build tree")
        with open(os.path.join(ROOT, "tools", "demo")) as f:
            line = next(l for l in f if l.startswith("colabtrace_build build "))
        targets = line.split()[2:]
        outputs = set()
        for t in targets:
            q = subprocess.run(["ninja", "-C", h.BUILD, "-t", "query", t], capture_output=True, text=True)
            self.assertEqual(q.returncode, 0, f"tools/demo names {t}, which the build does not know")
            # "  input: phony\n    OUTPUT" lines: what the target builds.
            section = q.stdout.split("outputs:")[0]
            outputs |= {l.strip() for l in section.splitlines()[2:] if l.startswith("    ")}
        for want in ("lib/libcolabtrace.so", "bin/colabtrace", "simcuda/libcuda.so",
                     "simcuda/libcudart.so"):
            self.assertIn(want, outputs, f"tools/demo's targets {targets} do not build {want}")


if __name__ == "__main__":
    unittest.main()
