"""make + gcc building a three-file C project (make, gcc drivers, cc1, as, collect2, ld:
many fork/exec/posix_spawn), then the program run, under `colabtrace run`: every process
with its program and exit status, the libraries ld.so mapped into each, and per process
and per file the report's counts equal strace's system calls of the same run."""
import os
import unittest

from ctharness import TempDirTest
from straceaudit import AuditChecks

MAKEFILE = "prog: a.o b.o c.o\n\tgcc -o prog a.o b.o c.o\n%.o: %.c\n\tgcc -O1 -c $< -o $@\n"


class BuildAudit(AuditChecks, TempDirTest):
    PROGRAMS = ("make", "gcc")
    MIN_FILES = 10
    VIA_RUN = True
    SCRIPT = "make -s && ./prog && ./prog fail"

    def prepare(self, root):
        files = {
            "a.c": '#include <stdio.h>\nint b(void); int c(void);\n'
                   'int main(int argc, char** argv) { printf("%d\\n", b() + c()); return argc > 1 ? 4 : 0; }\n',
            "b.c": "int b(void) { return 1; }\n",
            "c.c": "int c(void) { return 2; }\n",
            "Makefile": MAKEFILE,
        }
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as f:
                f.write(text)

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 4, self.run_.stderr)
        self.assertEqual(self.run_.stdout.split("\n")[:2], ["3", "3"])
        execs = [os.path.basename(t.execs[-1]) for t in self.run_.strace.processes().values() if t.execs]
        for tool in ("make", "cc1", "as", "collect2", "ld", "prog"):
            self.assertIn(tool, execs)


if __name__ == "__main__":
    unittest.main()
