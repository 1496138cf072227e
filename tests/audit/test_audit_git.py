"""git init, add, commit, status and log in a fresh repository: per process and per file
(objects, index, refs, lock files, the temporary files git makes with mkstemp), the
report's counts equal strace's system calls of the same run; every git process, its exit
status and libraries."""
import os
import unittest

from ctharness import TempDirTest
from straceaudit import AuditChecks


class GitAudit(AuditChecks, TempDirTest):
    PROGRAMS = ("git",)
    MIN_FILES = 30
    SCRIPT = r"""
export GIT_CONFIG_NOSYSTEM=1 HOME="$PWD" GIT_AUTHOR_DATE=2020-01-01T00:00:00 GIT_COMMITTER_DATE=2020-01-01T00:00:00
git init -q -b main repo
cp -r src README repo/
cd repo
git add .
git -c user.name=a -c user.email=a@b -c gc.auto=0 commit -q -m one
cat ../README >> README
git status --short
git log --oneline
git cat-file -e 0000000000000000000000000000000000000000
echo "cat-file: $?"
"""

    def prepare(self, root):
        os.makedirs(os.path.join(root, "src"))
        for i in range(1, 6):
            with open(os.path.join(root, "src", f"f{i}.txt"), "w") as f:
                f.write("".join(f"{k}\n" for k in range(i * 1000)))
        with open(os.path.join(root, "README"), "w") as f:
            f.write("hi\n")

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertIn(" M README", self.run_.stdout)
        self.assertIn("cat-file: 1", self.run_.stdout)

    def test_mkstemp_files_are_opens(self):
        # git init checks the filesystem with a file from mkstemp(".git/tXXXXXX"): libc
        # opens it inside itself, where only the mkstemp hook sees it.
        temp = [k for k, c in self.run_.strace.counts.items()
                if "/.git/" in k[1] and len(os.path.basename(k[1])) == 7 and os.path.basename(k[1])[0] == "t"
                and c.opens]
        self.assertTrue(temp, "git init made no mkstemp file")
        for pid, path in temp:
            self.assertEqual(self.run_.rows.get((pid, path), {}).get("opens"), 1, path)


if __name__ == "__main__":
    unittest.main()
