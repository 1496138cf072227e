"""Coreutils, grep and bash on files nobody here wrote the readers of: per process and
per file, the report's opens, reads, bytes read and stats equal strace's system calls of
the same run; every process, its program and exit status; every library ld.so mapped."""
import os
import unittest

from ctharness import TempDirTest
from straceaudit import AuditChecks


class CoreutilsAudit(AuditChecks, TempDirTest):
    PROGRAMS = ("sort", "md5sum", "grep", "wc")
    MIN_FILES = 15
    FINDINGS = ("proc.fatal-signal", "proc.killed")  # the SIGSEGV and the SIGKILL below
    SCRIPT = r"""
cat a.txt b.txt > out.txt
head -c 100 b.txt > /dev/null
wc -l b.txt
tail -5 b.txt > /dev/null
cp b.txt c.txt
grep -c 9 b.txt
sort b.txt | md5sum
grep -q nothing-like-this a.txt
echo "grep: $?"
[ -r a.txt ] && test -f b.txt && echo readable
while read -r line; do :; done < a.txt
ls -l > /dev/null
bash -c 'kill -TERM $$'
bash -c 'kill -KILL $$'
bash -c 'kill -SEGV $$'
yes | head -c 10 > /dev/null
echo "pipe: ${PIPESTATUS[0]}"
(exit 3)
"""

    def prepare(self, root):
        with open(os.path.join(root, "a.txt"), "w") as f:
            f.write("hello\nworld\n")
        with open(os.path.join(root, "b.txt"), "w") as f:
            f.write("".join(f"{i}\n" for i in range(1, 100001)))

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 3, self.run_.stderr)
        self.assertIn("grep: 1", self.run_.stdout)
        self.assertIn("readable", self.run_.stdout)
        self.assertIn("pipe: 141", self.run_.stdout)  # yes died of SIGPIPE
        killed = {t.killed_by: pid for pid, t in self.run_.strace.processes().items() if t.killed_by}
        self.assertEqual(sorted(killed), ["SIGKILL", "SIGPIPE", "SIGSEGV", "SIGTERM"])
        pids = {f["id"]: f["pid"] for f in self.run_.report["findings"] if f["severity"] != "info"}
        self.assertEqual(pids, {"proc.fatal-signal": killed["SIGSEGV"], "proc.killed": killed["SIGKILL"]})
        self.assertGreaterEqual(len(self.run_.strace.processes()), 12)


class CoreutilsAuditUnderRun(CoreutilsAudit):
    # Under `colabtrace run`, with an orphan the run must wait for and reap (its end
    # comes from the run's wait status).
    VIA_RUN = True
    SCRIPT = CoreutilsAudit.SCRIPT.replace("(exit 3)", "(sleep 0.3; wc -c b.txt > wc.out) &\n(exit 3)")

    def test_the_orphan_was_traced(self):
        self.assertTrue(os.path.exists(os.path.join(self.root, "wc.out")))
        wc = [p for p in self.run_.report["processes"] if p["argv"] == ["wc", "-c", "b.txt"]]
        self.assertEqual([p["end"]["kind"] for p in wc], ["exited"])


if __name__ == "__main__":
    unittest.main()
