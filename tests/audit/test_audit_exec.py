"""A wrapper that execs the job (CPython loading a library, then os.execv of another
program that loads a second copy of it): one process, two images. The libraries of the
wrapper image are gone after the exec, as strace shows (ld.so maps the job's afresh), so
they are not the job's: libraries[] marks them with their image and as unloaded, the
job's program is its image's executable, and no abi.* finding pairs a wrapper's library
with the job's (before: abi.duplicate-library, an error, on this healthy run)."""
import os
import unittest

from ctharness import BUILD, SYSTEM_PYTHON, TempDirTest, built_test_program, test_bin
from straceaudit import AuditChecks

LIBS = os.path.join(BUILD, "tests", "libs")
DUP_A = os.path.join(LIBS, "dupA", "libct_dup.so.1")
DUP_B = os.path.join(LIBS, "dupB", "libct_dup.so.1")

CTLOAD = test_bin("libs", "ctload")
WRAPPER = (f"import ctypes, os, sys; ctypes.CDLL({DUP_A!r}); sys.stdout.flush(); "
           f"os.execv({CTLOAD!r}, ['ctload', 'open:{DUP_B}'])")


class ExecAudit(AuditChecks, TempDirTest):
    MIN_FILES = 0
    SCRIPT = f"{SYSTEM_PYTHON} -c \"{WRAPPER}\""

    def prepare(self, root):
        self.ctload = built_test_program("libs", "ctload")

    def setUp(self):
        super().setUp()
        self.pid = next(p["pid"] for p in self.run_.report["processes"] if p["exe"] == self.ctload)

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertEqual(self.run_.stdout, f"open {DUP_B}: ok\n")

    def test_wrapper_libraries_end_at_the_exec(self):
        rows = [l for l in self.run_.report["libraries"] if l["pid"] == self.pid and l.get("ok") is not False]
        a = [l for l in rows if l["path"] == DUP_A]
        b = [l for l in rows if l["path"] == DUP_B]
        # One executable per image (bash -c execs its only command: bash, python, ctload).
        exe = {l["image"]: os.path.realpath(l["path"]) for l in rows if l["executable"]}
        self.assertEqual(len(exe), len([l for l in rows if l["executable"]]))
        self.assertEqual(sorted(exe), list(range(len(exe))))
        wrapper = next(i for i, p in exe.items() if p == os.path.realpath(SYSTEM_PYTHON))
        job = max(exe)
        self.assertEqual(exe[job], self.ctload)
        self.assertEqual([(l["image"], l["unloaded"]) for l in a], [(wrapper, True)])
        self.assertEqual([(l["image"], l["unloaded"]) for l in b], [(job, False)])
        # Nothing of an earlier image is live in the job's.
        self.assertEqual([l["path"] for l in rows if l["image"] != job and not l["unloaded"]], [])

    def test_no_abi_finding_across_the_exec(self):
        self.assertEqual([f["id"] for f in self.run_.report["findings"] if f["id"].startswith("abi.")], [])


if __name__ == "__main__":
    unittest.main()
