"""What ML engineers run besides the training loop (test_audit_ml.py), under strace with
the shim: DataLoader workers started by forkserver; dataset formats (a memory-mapped
array, a zip of .npy members, webdataset-like tar shards streamed by the workers); and
`python -m pytest` on a project of 30 test files with tmp_path, then `python -m
compileall`. Per process and per file the report equals strace; processes, exit codes and
libraries too; the runs are healthy, so no warning or error.

pytest captures output in O_TMPFILE files: the open names the directory, the file has no
name. Those files' opens, reads and writes were charged to the directory's own row, a
"directory" with 422 reads; they are one row per directory, "<dir>/<O_TMPFILE>" (strace
shows "<dir>/#<inode>"), and the directory keeps none of their I/O."""
import os
import unittest

import test_audit_ml as ml  # the module, so its test classes do not run here again
from ctharness import SYSTEM_PYTHON
from straceaudit import OnceAudit

SHARDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs", "shards.py")


class TrainingForkserverAudit(ml.TrainingAudit):
    START = "forkserver"


class DatasetFormatsAudit(OnceAudit, unittest.TestCase):
    MODULES = ("torch", "numpy")
    PROGRAMS = (SYSTEM_PYTHON,)
    MIN_FILES = 6
    SCRIPT = f"cp {SHARDS} shards.py\n{SYSTEM_PYTHON} shards.py ."

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertEqual(self.run_.stdout, f"{4096 * sum(range(64))} {8 * sum(range(50))} "
                                           f"{4 * sum(1000 + i for i in range(25))}\n")

    def test_each_worker_maps_the_array_and_streams_its_shards(self):
        big = [r for (pid, p), r in self.run_.rows.items() if p == os.path.join(self.root, "big.npy")]
        # Mapped to be written, then by np.load(mmap_mode='r') in the main process, which
        # reads little more than the header; the forked workers read the 1 MiB through the
        # mapping.
        self.assertEqual(sum(r["mmaps"] for r in big), 2)
        self.assertLess(sum(r["bytes_read"] for r in big), 65536)
        for s in range(4):
            path = os.path.join(self.root, f"shard-{s}.tar")
            readers = [r for (pid, p), r in self.run_.rows.items() if p == path and r["reads"] > 0]
            self.assertEqual(len(readers), 1, path)  # one worker streams each shard, once
            self.assertEqual(readers[0]["bytes_read"], os.path.getsize(path))


PROJECT_TEST = '''
import json, pkg
def test_add_{i}(tmp_path):
    p = tmp_path / "d.json"
    p.write_text(json.dumps({{"v": pkg.add({i}, 1)}}))
    assert json.loads(p.read_text())["v"] == {i} + 1
def test_zero_{i}():
    assert pkg.add({i}, -{i}) == 0
'''


class PytestAudit(OnceAudit, unittest.TestCase):
    MODULES = ("pytest",)
    PROGRAMS = (SYSTEM_PYTHON,)
    MIN_FILES = 60
    # TMPDIR in the tree: pytest's tmp_path folders and its capture files are compared too.
    SCRIPT = (f"export TMPDIR=$PWD/tmp && mkdir tmp && cd proj && {SYSTEM_PYTHON} -m pytest -q -p no:cacheprovider "
              f"tests; echo \"pytest $?\"; {SYSTEM_PYTHON} -m compileall -q pkg tests")

    def prepare(self, root):
        proj = os.path.join(root, "proj")
        os.makedirs(os.path.join(proj, "pkg"))
        os.makedirs(os.path.join(proj, "tests"))
        with open(os.path.join(proj, "pkg", "__init__.py"), "w") as f:
            f.write("def add(a, b):\n    return a + b\n")
        for i in range(30):
            with open(os.path.join(proj, "tests", f"test_m{i}.py"), "w") as f:
                f.write(PROJECT_TEST.format(i=i))

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertIn("60 passed", self.run_.stdout)
        self.assertTrue(self.run_.stdout.endswith("pytest 0\n"), self.run_.stdout)
        self.assertEqual(len([n for n in os.listdir(os.path.join(self.root, "proj", "tests", "__pycache__"))]), 30)

    def test_capture_files_are_not_the_directory(self):
        tmp = os.path.join(self.root, "tmp")
        rows = {p: r for p, r in ((p, r) for (pid, p), r in self.run_.rows.items()) if os.path.dirname(p) == tmp
                or p == tmp}
        made = rows.get(os.path.join(tmp, "<O_TMPFILE>"))
        self.assertIsNotNone(made, sorted(rows))
        self.assertEqual(made["kind"], "file")
        self.assertGreater(made["opens"], 0)
        self.assertGreater(made["reads"], 0)
        d = rows.get(tmp, {"opens": 0, "reads": 0, "writes": 0})
        self.assertEqual((d["opens"], d["reads"], d["writes"]), (0, 0, 0))


if __name__ == "__main__":
    unittest.main()
