"""Programs nobody here wrote, at the scale and in the modes the smaller audits leave out,
each run once under strace -f with the shim preloaded (the sweep of 2026-11-24, a11660b):
git over 2,000 files with gc (pack-objects' threads, repack's children) and clone --local
(hard links); sqlite3 in WAL mode (the -wal and -shm files, a shared-memory map,
checkpoints) and with a rollback journal; perl's prove running a directory of Test::More
tests (a perl per test, TAP over pipes); node reading 600 files with
readFileSync/statSync, fs.promises and four worker_threads, and node's own test runner (a
node child per test file); numpy's own tests that start processes. Per process and per
file the report's counts equal strace's system calls; processes, exit codes, libraries;
no warning or error finding; stdout and exit status equal a bare run's. Each class skips
when its program or strace is missing (CI's machine need not have node or sqlite3)."""
import copy
import os
import subprocess
import unittest

from ctharness import clean_env
from straceaudit import OnceAudit, compare_libraries, compare_processes

GIT_FILES = 2000


def write(root, name, text):
    path = os.path.join(root, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class ScaleAudit(OnceAudit):
    """OnceAudit plus the same script run bare once in a sibling directory: the traced
    run's exit status and stdout must be the bare run's."""

    @classmethod
    def bare(cls):
        if "_bare" not in cls.__dict__:
            root = os.path.join(cls.tmp, "bare")
            os.makedirs(root)
            cls.prepare(cls, root)
            cls._bare = subprocess.run(["bash", "-c", cls.SCRIPT], cwd=root, env=clean_env(cls.ENV),
                                       capture_output=True, text=True, timeout=240)
        return cls._bare

    def test_stdout_and_exit_status_equal_bare(self):
        b = self.bare()
        self.assertEqual((self.run_.returncode, self.run_.stdout), (b.returncode, b.stdout), b.stderr)


class GitScaleAudit(ScaleAudit, unittest.TestCase):
    PROGRAMS = ("git",)
    MIN_FILES = GIT_FILES
    SCRIPT = r"""
export GIT_CONFIG_NOSYSTEM=1 HOME="$PWD" GIT_AUTHOR_DATE=2020-01-01T00:00:00 GIT_COMMITTER_DATE=2020-01-01T00:00:00
git init -q -b main repo
cp -r src repo/
cd repo
git add .
git -c user.name=a -c user.email=a@b -c gc.auto=0 commit -q -m one
echo more >> src/d7/f7.txt
git -c user.name=a -c user.email=a@b -c gc.auto=0 commit -q -a -m two
git gc -q
git count-objects -v | grep -E '^(count|in-pack|packs):'
git log --oneline | wc -l
git status --short | wc -l
cd ..
git clone -q --local repo copy
git -C copy ls-files | wc -l
git -C copy fsck --no-progress 2>&1 | wc -l
"""

    # git add reads 2,000 files of 7 to 70 bytes: io.small-files is the rule's own verdict
    # (1,000 or more small data files, on any filesystem), checked exactly below.
    FINDINGS = ("io.small-files",)

    def prepare(self, root):
        for i in range(GIT_FILES):
            write(root, f"src/d{i % 20}/f{i}.txt", f"file {i}\n" * (1 + i % 7))

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        # gc packed every loose object: 2,001 blobs, 2 commits, 22 trees and the 3 the second commit changed.
        self.assertEqual(self.run_.stdout.split(),
                         ["count:", "0", "in-pack:", str(GIT_FILES + 1 + 2 + 22 + 3), "packs:", "1",
                          "2", "0", str(GIT_FILES), "0"])

    def test_small_files_are_the_sources_git_add_read(self):
        (f,) = [f for f in self.run_.report["findings"] if f["id"] == "io.small-files"]
        ev = f["evidence"]
        # What strace saw read from the sources (f7.txt, changed, is read again by commit -a).
        src = os.path.join(self.root, "repo", "src") + "/"
        read = sum(c.bytes_read for (_, p), c in self.run_.strace.counts.items() if p.startswith(src))
        self.assertGreater(read, sum(len(f"file {i}\n") * (1 + i % 7) for i in range(GIT_FILES)))
        self.assertEqual((ev["count"], ev["directory_count"], ev["bytes_read"]), (GIT_FILES, 20, read))
        self.assertEqual({d["path"] for d in ev["directories"]} <= {os.path.join(self.root, "repo", "src", f"d{k}")
                                                                  for k in range(20)}, True, ev["directories"])


class SqliteWalAudit(ScaleAudit, unittest.TestCase):
    PROGRAMS = ("sqlite3",)
    MIN_FILES = 4
    SCRIPT = r"""
sqlite3 w.db 'pragma journal_mode=wal; create table t(a integer primary key, b text);' >/dev/null
for i in 1 2 3 4 5; do
  sqlite3 w.db "begin; with recursive c(x) as (select 1 union all select x+1 from c where x<500) insert into t(b) select printf('%0100d', x) from c; commit;"
done
sqlite3 w.db 'select count(*), sum(length(b)) from t;'
sqlite3 w.db 'pragma wal_checkpoint(truncate);' >/dev/null
sqlite3 r.db 'pragma journal_mode=delete; create table u(x); insert into u values (1),(2),(3); update u set x = x * 10;' >/dev/null
sqlite3 r.db 'select sum(x) from u; pragma integrity_check;'
sqlite3 w.db 'select count(*) from t where b like "%7";'
sqlite3 w.db 'insert into t values (1, 1);'
echo "sqlite3: $?"
"""

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.stdout.split(), ["2500|250000", "60", "ok", "250", "sqlite3:", "19"])


class PerlProveAudit(ScaleAudit, unittest.TestCase):
    PROGRAMS = ("perl", "prove")
    MIN_FILES = 8
    SCRIPT = "prove -j2 t 2>&1 | grep -oE '^(Files=[0-9]+, Tests=[0-9]+|Result: .*)'; prove t/ok1.t >/dev/null; prove t/bad.t >/dev/null 2>&1; echo \"prove: $?\""

    def prepare(self, root):
        write(root, "data.txt", "".join(f"{i}\n" for i in range(1000)))
        for i in range(1, 6):
            write(root, f"t/ok{i}.t", "use strict; use warnings; use Test::More tests => 3;\n"
                  "open(my $f, '<', 'data.txt') or die; my @l = <$f>; close $f;\n"
                  f"is(scalar(@l), 1000, 'lines'); ok(-e 'data.txt', 'exists'); is({i} * 2, {2 * i}, 'sum');\n")
        write(root, "t/bad.t", "use Test::More tests => 1; is(1, 2, 'fails');\n")

    def test_the_run_behaved_as_bare(self):
        out = self.run_.stdout
        self.assertIn("Files=6, Tests=16", out)
        self.assertIn("Result: FAIL", out)
        self.assertTrue(out.rstrip().endswith("prove: 1"), out)


class NumpySuiteAudit(ScaleAudit, unittest.TestCase):
    """numpy's own tests that start processes and touch files: exec_command (shells, one
    with an empty environment, so untraced), system_info (compiler probes), the f2py and
    entry-point scripts, memory maps and .npy/.npz files, with pytest's tmp_path here."""
    PROGRAMS = ("/usr/bin/python3",)
    MODULES = ("numpy", "pytest")
    MIN_FILES = 20
    SCRIPT = ("export TMPDIR=$PWD/tmp HOME=$PWD; mkdir tmp; /usr/bin/python3 -m pytest -q -p no:cacheprovider "
              "-o addopts= -p no:randomly --pyargs numpy.distutils.tests.test_exec_command "
              "numpy.distutils.tests.test_system_info numpy.tests.test_scripts numpy.core.tests.test_memmap "
              "numpy.lib.tests.test_format 2>&1 | grep -oE '^[0-9]+ passed.*skipped' ; echo \"pytest: $?\"")

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertTrue(self.run_.stdout.endswith("pytest: 0\n"), self.run_.stdout)

    def never_execd(self):
        """Children that never ran a program: exec_command's vfork children whose every
        execve along PATH failed ('cd' is a shell builtin), which then _exit(255)."""
        prefix = os.path.join(os.path.dirname(self.run_.root), "strace", "s.")
        out = set()
        for pid, t in self.run_.strace.processes().items():
            if t.execs:
                continue
            with open(prefix + str(pid), errors="replace") as f:
                if "execve(" in f.read():
                    out.add(pid)
        return out

    def without(self, pids):
        run = copy.copy(self.run_)
        run.strace = copy.copy(run.strace)
        run.strace.tasks = {tid: t for tid, t in run.strace.tasks.items() if run.strace.tgid[tid] not in pids}
        return run

    def test_processes_and_exit_codes_equal_strace(self):
        # Every process, exactly: exec_command's two vfork children whose every exec
        # failed included (next test).
        self.assertEqual(len(self.never_execd()), 2)
        self.assertEqual(compare_processes(self.run_), [])

    def test_a_vfork_child_whose_execs_all_failed_has_a_row(self):
        # It writes no trace by design (it runs on its parent's memory until it execs); its
        # parent writes its row's record (exec_untraced, why exec-failed) from the note the
        # child left, and its end from the parent's reap (exited 255).
        rows = {p["pid"]: p for p in self.run_.report["processes"]}
        self.assertEqual(self.never_execd() - set(rows), set())
        for pid in self.never_execd():
            self.assertEqual(rows[pid]["images"][0]["untraced_why"], "exec-failed")
            self.assertEqual((rows[pid]["end"]["kind"], rows[pid]["end"]["code"]), ("exited", 255))

    def test_libraries_equal_what_ld_so_mapped(self):
        # exec_command runs four shells with an empty environment: no LD_PRELOAD, no shim,
        # so nothing can say which libraries they mapped (their rows: "traced": false, the
        # executable only). Every other process, exactly.
        untraced = {p["pid"] for p in self.run_.report["processes"] if p.get("traced") is False}
        self.assertEqual(len(untraced - self.never_execd()), 4)
        self.maxDiff = None
        self.assertEqual(compare_libraries(self.without(untraced | self.never_execd())), [])


NODE_FILES = 600
NODE_JS = r"""
const fs = require('fs');
const { Worker, isMainThread, parentPort, workerData } = require('worker_threads');
const N = %d;
const name = i => 'data/f' + i;
if (!isMainThread) {
  let n = 0;
  for (let i = workerData; i < N; i += 4) n += fs.readFileSync(name(i)).length;
  parentPort.postMessage(n);
} else {
  let sync = 0;
  for (let i = 0; i < N; i++) { fs.statSync(name(i)); sync += fs.readFileSync(name(i)).length; }
  (async () => {
    let prom = 0;
    const bufs = await Promise.all([...Array(N).keys()].map(i => fs.promises.readFile(name(i))));
    for (const b of bufs) prom += b.length;
    const st = await Promise.all([...Array(N).keys()].map(i => fs.promises.stat(name(i))));
    let statted = st.reduce((a, s) => a + s.size, 0);
    const parts = await Promise.all([0, 1, 2, 3].map(k => new Promise((res, rej) => {
      const w = new Worker(__filename, { workerData: k }); w.on('message', res); w.on('error', rej); })));
    console.log(sync, prom, statted, parts.reduce((a, b) => a + b, 0));
    try { fs.readFileSync('data/missing'); } catch (e) { console.log(e.code); }
  })();
}
"""


class NodeFsAudit(ScaleAudit, unittest.TestCase):
    PROGRAMS = ("node",)
    MIN_FILES = NODE_FILES
    SCRIPT = "node fs.js; echo \"node: $?\""

    def prepare(self, root):
        for i in range(NODE_FILES):
            write(root, f"data/f{i}", "x" * (10 + i))
        write(root, "fs.js", NODE_JS % NODE_FILES)

    def test_the_run_behaved_as_bare(self):
        total = sum(10 + i for i in range(NODE_FILES))
        self.assertEqual(self.run_.stdout.split(), [str(total)] * 4 + ["ENOENT", "node:", "0"])


class NodeTestRunnerAudit(ScaleAudit, unittest.TestCase):
    """node's own test runner: `node --test` runs each test file in a node child of its
    own (4 files; one test fails, so node exits 1)."""
    PROGRAMS = ("node",)
    MIN_FILES = 10
    SCRIPT = "node --test --test-reporter=tap test/ 2>&1 | grep -E '^# (tests|pass|fail) '; echo \"node: ${PIPESTATUS[0]}\""

    def prepare(self, root):
        for i in range(10):
            write(root, f"data/f{i}", "y" * (100 * i + 1))
        for k in range(4):
            write(root, f"test/t{k}.test.js", "const test = require('node:test'); const assert = require('node:assert');\n"
                  "const fs = require('fs');\n"
                  "test('sizes', () => { for (let i = 0; i < 10; i++) "
                  "assert.strictEqual(fs.readFileSync('data/f' + i).length, 100 * i + 1); });\n"
                  f"test('arith', () => {{ assert.strictEqual({k} + 1, {k + 1 if k != 3 else 0}); }});\n")

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.stdout.split(), ["#", "tests", "8", "#", "pass", "7", "#", "fail", "1",
                                                    "node:", "1"])


# The same runs under `colabtrace run` (which sets LD_PRELOAD itself; its own process is
# left out of the comparisons).
class GitScaleRunAudit(GitScaleAudit):
    VIA_RUN = True


class SqliteWalRunAudit(SqliteWalAudit):
    VIA_RUN = True


class PerlProveRunAudit(PerlProveAudit):
    VIA_RUN = True


class NodeFsRunAudit(NodeFsAudit):
    VIA_RUN = True


class NodeTestRunnerRunAudit(NodeTestRunnerAudit):
    VIA_RUN = True


if __name__ == "__main__":
    unittest.main()
