"""More programs nobody here wrote, each under strace -f with the shim preloaded: tar,
gzip and zstd; sqlite3; perl; node; java. Per process and per file the report's counts
equal strace's system calls of the same run; processes, exit codes, libraries. Each
class skips when its program is missing (CI's machine need not have node or java)."""
import os
import unittest

from ctharness import TempDirTest
from straceaudit import AuditChecks


def write(root, name, text):
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


# Data files f0..fN-1 of the given sizes, and the program that reads them `passes` times:
# what the program prints is their total size times passes.
SIZES_NODE = [i * 5000 + 3 for i in range(10)]
SIZES_JAVA = [i * 3000 + 7 for i in range(5)]


def write_data(root, sizes):
    for i, n in enumerate(sizes):
        write(root, f"f{i}", "d" * n)


class ArchiveAudit(AuditChecks, TempDirTest):
    PROGRAMS = ("tar", "gzip", "zstd", "find")
    MIN_FILES = 30
    SCRIPT = r"""
tar cf a.tar big.txt d
gzip -k a.tar
zstd -q a.tar -o a.tar.zst
gzip -dc a.tar.gz > b.tar
zstd -dq a.tar.zst -o c.tar
cmp a.tar b.tar && cmp a.tar c.tar && echo same
find . -name 's1*' -type f | sort | head -3
cp -r d e
gzip -t missing.gz
echo "gzip: $?"
"""

    def prepare(self, root):
        write(root, "big.txt", "".join(f"{i}\n" for i in range(200000)))
        for i in range(1, 21):
            write(root, f"d/s{i}", "".join(f"{k}\n" for k in range(i)))

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertIn("same\n", self.run_.stdout)
        self.assertIn("gzip: 1", self.run_.stdout)


class SqliteAudit(AuditChecks, TempDirTest):
    PROGRAMS = ("sqlite3",)
    MIN_FILES = 2
    SCRIPT = r"""
sqlite3 t.db 'create table t(a, b); insert into t values (1, 2), (3, 4);'
for i in 1 2 3 4; do sqlite3 t.db 'insert into t select a + 1, b from t; select count(*) from t;'; done
sqlite3 t.db 'select nothing from nowhere'
echo "sqlite3: $?"
"""

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.stdout.split(), ["4", "8", "16", "32", "sqlite3:", "1"])


class PerlAudit(AuditChecks, TempDirTest):
    PROGRAMS = ("perl",)
    MIN_FILES = 3
    SCRIPT = r"""
perl -ne '$n++; END { print "$n\n" }' a.txt
perl -e 'for (1..3) { open(my $f, "<", "b.txt") or die; my @l = <$f>; close $f; print scalar(@l), "\n" if -e "a.txt" } exit 9'
echo "perl: $?"
"""

    def prepare(self, root):
        write(root, "a.txt", "".join(f"{i}\n" for i in range(5000)))
        write(root, "b.txt", "".join(f"{i}\n" for i in range(300)))

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.stdout.split(), ["5000", "300", "300", "300", "perl:", "9"])


class NodeAudit(AuditChecks, TempDirTest):
    PROGRAMS = ("node",)
    MIN_FILES = 10
    # libuv makes statx (fs.stat*, fs.fstat*) and close with syscall(2): the shim's
    # syscall stub records both, so every field is compared.
    SCRIPT = "node read.js . && node -e 'process.exit(6)'; echo \"node: $?\""

    def prepare(self, root):
        write_data(root, SIZES_NODE)
        write(root, "read.js", "const fs = require('fs'); let n = 0;\n"
              "for (let k = 0; k < 3; k++) for (let i = 0; i < 10; i++) {\n"
              "  const p = process.argv[2] + '/f' + i; fs.statSync(p); n += fs.readFileSync(p).length; }\n"
              "console.log(n);\n")

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.stdout.split(), [str(3 * sum(SIZES_NODE)), "node:", "6"])


class JavaAudit(AuditChecks, TempDirTest):
    PROGRAMS = ("javac", "java")
    MIN_FILES = 5
    SCRIPT = "javac -d . R.java && java -cp . R ."

    def prepare(self, root):
        write_data(root, SIZES_JAVA)
        write(root, "R.java", "import java.nio.file.*;\npublic class R { public static void main(String[] a)"
              " throws Exception { long n = 0;\n  for (int k = 0; k < 2; k++) for (int i = 0; i < 5; i++) {"
              " Path p = Paths.get(a[0], \"f\" + i); Files.size(p); n += Files.readAllBytes(p).length; }\n"
              "  System.out.println(n); } }\n")

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertEqual(self.run_.stdout.split(), [str(2 * sum(SIZES_JAVA))])


if __name__ == "__main__":
    unittest.main()
