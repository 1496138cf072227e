"""Programs built with a sanitizer (TSan, ASan) run under the shim as bare.

A sanitizer runtime resolves every function it intercepts with dlsym(RTLD_NEXT, ...)
while it initialises (from the executable's preinit, before the shim's constructor). That
dlsym is the shim's hook; on that path the shim called dl_iterate_phdr, strcmp, strstr
and memchr, which the runtime intercepts but cannot forward yet: a TSan program died of
SIGSEGV at start, and so did an ASan one preloaded the way ASan needs (its runtime
first). ct_sanitized.c is compiled here with the system compiler; without sanitizer
support the test skips.
"""
import glob
import os
import shutil
import subprocess
import unittest

from coretest import HERE, report, run_plain, shim_env
from ctharness import TempDirTest

SOURCE = os.path.join(HERE, "progs", "ct_sanitized.c")
EXPECTED = b"cos(0) 1.0\nread written\nchild 0\n"


class SanitizedProgramTest(TempDirTest):
    def build(self, sanitizer):
        cc = shutil.which("cc") or shutil.which("gcc")
        if cc is None:
            self.skipTest("no C compiler")
        exe = os.path.join(self.tmp, "ct_sanitized_" + sanitizer)
        r = subprocess.run([cc, "-fsanitize=" + sanitizer, "-g", "-O1", "-o", exe, SOURCE, "-ldl", "-lpthread"],
                           capture_output=True, timeout=120)
        if r.returncode != 0:
            self.skipTest(f"{cc} cannot build with -fsanitize={sanitizer}: {r.stderr[-300:]!r}")
        return exe

    def same_as_bare(self, exe, preload_first=()):
        work = os.path.join(self.tmp, "work")
        traces = os.path.join(self.tmp, "traces")
        os.makedirs(work)
        os.makedirs(traces)
        bare = run_plain([exe], cwd=work)
        if bare.returncode != 3 or bare.stdout != EXPECTED:
            self.skipTest(f"the sanitized program does not run here: {bare.returncode} {bare.stderr[-300:]!r}")
        env = shim_env(traces)
        env["LD_PRELOAD"] = ":".join(list(preload_first) + [env["LD_PRELOAD"]])
        traced = subprocess.run([exe], env=env, cwd=work, capture_output=True, timeout=120)
        self.assertEqual(traced.returncode, bare.returncode, traced.stderr[-2000:])
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.stderr, bare.stderr)
        rep = report(*glob.glob(os.path.join(traces, "*.ctrace")))
        procs = {os.path.basename(p["exe"]): p for p in rep["processes"]}
        self.assertEqual(sorted(procs), sorted([os.path.basename(exe), "true"]))
        main = procs[os.path.basename(exe)]
        self.assertEqual(main["end"]["kind"], "exited")
        self.assertEqual(main["end"]["code"], 3)
        self.assertIn("libm.so.6", [os.path.basename(l["path"]) for l in rep["libraries"]
                                    if l["pid"] == main["pid"]])

    def test_thread_sanitizer_program(self):
        self.same_as_bare(self.build("thread"))

    def test_address_sanitizer_program_with_its_runtime_preloaded_first(self):
        # ASan insists on coming first in the initial library list, so a preload tool
        # runs after it: LD_PRELOAD=libasan.so:libcolabtrace.so.
        exe = self.build("address")
        ldd = subprocess.run(["ldd", exe], capture_output=True, text=True).stdout
        runtime = [w for line in ldd.splitlines() if "libasan" in line for w in line.split() if w.startswith("/")]
        if not runtime:
            self.skipTest("no shared ASan runtime: " + ldd)
        self.same_as_bare(exe, preload_first=runtime[:1])


if __name__ == "__main__":
    unittest.main()
