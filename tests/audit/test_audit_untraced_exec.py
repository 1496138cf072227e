"""An exec into a program the shim cannot follow: Debian's /usr/sbin/ldconfig is static,
so the shim is not loaded into it. A shell forks and execs it in a pipeline, and `sh -c
'exec ldconfig -p'` replaces the shell itself. Under strace with the shim, the processes,
their programs, arguments and exit codes equal strace's (the exec names the program).

libraries[]: the shell's rows are unloaded at that exec, and the last image is the exec'd
program's executable row alone, as strace shows (ld.so mapped nothing into ldconfig). A
child that CPython's subprocess vforks and that execs it writes no trace at all: its row
(and its executable's) come from its parent's records.""" 
import shutil
import subprocess
import unittest

from straceaudit import OnceAudit

LDCONFIG = "/usr/sbin/ldconfig"


def is_static(path):
    if shutil.which("ldd") is None or not shutil.os.path.exists(path):
        return False
    out = subprocess.run(["ldd", path], capture_output=True, text=True)
    return "not a dynamic executable" in out.stdout + out.stderr or "statically linked" in out.stdout


class UntracedExecAudit(OnceAudit, unittest.TestCase):
    PROGRAMS = (LDCONFIG,)
    MIN_FILES = 0
    # A shell's fork child execs it; sh execs it in place; CPython's subprocess vforks a
    # child that execs it (that child writes no trace: its parent records it).
    SCRIPT = (f"{LDCONFIG} -p | wc -l > /dev/null\nsh -c 'exec {LDCONFIG} -p' | wc -l > /dev/null\n"
              f"/usr/bin/python3 -c 'import subprocess; subprocess.run([\"{LDCONFIG}\", \"-p\"], "
              f"stdout=subprocess.DEVNULL)'")

    def setUp(self):
        if not is_static(LDCONFIG):
            self.skipTest(f"{LDCONFIG} is not a static executable here")
        super().setUp()

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        ldconfig = [p for p in self.run_.report["processes"] if p["exe"] == LDCONFIG]
        self.assertEqual([(p["argv"], p["end"]["kind"], p["end"]["code"]) for p in ldconfig],
                         [([LDCONFIG, "-p"], "exited", 0)] * 3)


if __name__ == "__main__":
    unittest.main()
