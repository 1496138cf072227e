"""What ML engineers run, under strace with the shim: a CPU torch training loop over many
small .npy/.pt files (DataLoader workers started by fork, spawn and forkserver,
persistent, checkpoints), dataset formats (a memory-mapped array, a zip, tar shards
streamed by the workers) and `python -m pytest` on a project of 30 test files with
tmp_path, then `python -m compileall`. Per process and per file the report equals strace;
processes, exit codes and libraries too; the runs are healthy, so no warning or error.

pytest captures output in O_TMPFILE files: the open names the directory, the file has no
name. Those files' opens, reads and writes were charged to the directory's own row, a
"directory" with 422 reads; they are one row per directory, "<dir>/<O_TMPFILE>" (strace
shows "<dir>/#<inode>"), and the directory keeps none of their I/O."""
import os
import shutil
import tempfile
import unittest

from ctharness import SYSTEM_PYTHON
from straceaudit import AuditChecks, audit_run, require_program, require_strace

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "programs", "train.py")
SHARDS = os.path.join(HERE, "programs", "shards.py")


def has_torch():
    return os.path.exists(SYSTEM_PYTHON) and os.system(f"{SYSTEM_PYTHON} -c 'import torch, numpy' 2>/dev/null") == 0


class OnceAudit(AuditChecks):
    """AuditChecks with one traced run per class, shared by its checks (a torch run takes
    10-20 s under strace), as a mixin of a unittest.TestCase."""
    NEEDS_TORCH = False

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ct-audit-")
        cls.shared = None

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        require_strace(self)
        require_program(self, *self.PROGRAMS)
        if self.NEEDS_TORCH and not has_torch():
            self.skipTest(f"{SYSTEM_PYTHON} lacks torch or numpy (python3-torch, python3-numpy)")
        self.root = os.path.join(self.tmp, "w")
        if type(self).shared is None:
            os.makedirs(self.root)
            self.prepare(self.root)
            type(self).shared = audit_run(self, self.SCRIPT, self.root, env=self.ENV, via_run=self.VIA_RUN,
                                          timeout=240)
        self.run_ = type(self).shared


class TrainingAudit(OnceAudit, unittest.TestCase):
    NEEDS_TORCH = True
    PROGRAMS = (SYSTEM_PYTHON,)
    MIN_FILES = 201  # the samples and the checkpoint
    START = ""  # the DataLoader's start method (multiprocessing_context); "" is fork

    @property
    def SCRIPT(self):
        return f"cp {TRAIN} train.py\n{SYSTEM_PYTHON} train.py . {self.START}"

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        self.assertEqual(self.run_.stdout, "steps 26 ckpt 25 eval 200\n")

    def test_each_sample_opened_once_an_epoch_and_once_in_eval(self):
        data = os.path.join(self.root, "data")
        opens = {}
        for (pid, path), row in self.run_.rows.items():
            if path.startswith(data + "/"):
                opens[path] = opens.get(path, 0) + row["opens"]
        self.assertEqual(len(opens), 200)
        # Written once (np.save, torch.save), read in 2 epochs by the workers and once by
        # the evaluation in the main process.
        self.assertEqual(set(opens.values()), {4}, opens)
        workers = [p for p in self.run_.report["processes"] if p["pid"] != self.main_pid()
                   and any(pid == p["pid"] and path.startswith(data + "/") for pid, path in self.run_.rows)]
        self.assertEqual(len(workers), 2, [p["argv"] for p in self.run_.report["processes"]])

    def main_pid(self):
        return next(p["pid"] for p in self.run_.report["processes"] if p["argv"][1:] == ["train.py", "."] +
                    ([self.START] if self.START else []))


class TrainingSpawnUnderRunAudit(TrainingAudit):
    START = "spawn"
    VIA_RUN = True


class TrainingForkserverAudit(TrainingAudit):
    START = "forkserver"


class DatasetFormatsAudit(OnceAudit, unittest.TestCase):
    NEEDS_TORCH = True
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
    PROGRAMS = (SYSTEM_PYTHON,)
    MIN_FILES = 60
    # TMPDIR in the tree: pytest's tmp_path folders and its capture files are compared too.
    SCRIPT = (f"export TMPDIR=$PWD/tmp && mkdir tmp && cd proj && {SYSTEM_PYTHON} -m pytest -q -p no:cacheprovider "
              f"tests; echo \"pytest $?\"; {SYSTEM_PYTHON} -m compileall -q pkg tests")

    def setUp(self):
        if os.system(f"{SYSTEM_PYTHON} -c 'import pytest' 2>/dev/null") != 0:
            self.skipTest(f"{SYSTEM_PYTHON} lacks pytest (python3-pytest)")
        super().setUp()

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
