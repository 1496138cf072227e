"""`colabtrace run` checks that the shim loads before it starts the command (issue 29).

A shim the dynamic loader cannot load would leave every process of the job untraced (or,
for a symbol version this glibc lacks, unable to start at all). run says so and does not
start the command:
- a copy of the real shim whose references to GLIBC_2.2.5 are renamed GLIBC_9.9.9, as a
  shim built against a newer glibc than the machine's looks to the loader: the loader's
  words, the version the shim needs and the glibc found (exit 2, no trace, the command
  never ran);
- a library whose dependency is missing: the loader's words;
- the real shim: the command runs.
"""
import os
import platform
import shutil
import subprocess
import unittest

import ctharness as h


class ShimCheck(h.TempDirTest):
    def run_with_shim(self, shim):
        out = os.path.join(self.tmp, "out")
        marker = os.path.join(self.tmp, "ran")
        env = h.clean_env({"COLABTRACE_SHIM": shim})
        p = subprocess.run([h.CLI, "run", "-o", out, "--", "/usr/bin/touch", marker],
                           capture_output=True, text=True, env=env, timeout=60)
        traces = [n for n in os.listdir(out) if n.endswith(".ctrace")] if os.path.isdir(out) else []
        return p, os.path.exists(marker), traces

    def test_a_shim_that_needs_a_newer_glibc(self):
        shim = os.path.join(self.tmp, "libcolabtrace.so")
        with open(h.SHIM, "rb") as f:
            data = f.read()
        self.assertGreater(data.count(b"GLIBC_2.2.5\0"), 0)
        with open(shim, "wb") as f:
            f.write(data.replace(b"GLIBC_2.2.5\0", b"GLIBC_9.9.9\0"))
        p, ran, traces = self.run_with_shim(shim)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertFalse(ran)
        self.assertEqual(traces, [])
        self.assertIn(f"colabtrace run: {shim} does not load here, so no process of the command "
                      "would be traced; the command was not started.", p.stderr)
        self.assertIn(f"version `GLIBC_9.9.9' not found (required by {shim})", p.stderr)
        self.assertIn(f"the shim needs GLIBC_9.9.9; this machine's glibc is {platform.libc_ver()[1]}\n",
                      p.stderr)

    @unittest.skipUnless(shutil.which("cc"), "no C compiler")
    def test_a_shim_whose_dependency_is_missing(self):
        src = os.path.join(self.tmp, "f.c")
        with open(src, "w") as f:
            f.write("int f(void) { return 0; }\n")
        dep = os.path.join(self.tmp, "libctgone.so")
        shim = os.path.join(self.tmp, "libshim.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", dep, src], check=True)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", shim, src, "-Wl,--no-as-needed",
                        "-L" + self.tmp, "-lctgone"], check=True)
        os.unlink(dep)
        p, ran, traces = self.run_with_shim(shim)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertFalse(ran)
        self.assertEqual(traces, [])
        self.assertIn("libctgone.so: cannot open shared object file: No such file or directory", p.stderr)
        self.assertIn(f"(this machine's glibc is {platform.libc_ver()[1]})\n", p.stderr)

    def test_the_real_shim_runs_the_command(self):
        p, ran, traces = self.run_with_shim(h.SHIM)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(ran)
        self.assertEqual(len([t for t in traces if ".run." not in t]), 1, traces)  # and run's own
        self.assertNotIn("does not load here", p.stderr)


if __name__ == "__main__":
    unittest.main()
