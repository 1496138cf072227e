"""Debian's CPython (and numpy) reading files every way a Python program does: open()
and read, os.open/os.read, os.stat, pathlib, json.tool, compileall, np.save/np.load;
under LD_PRELOAD and under `colabtrace run`. Per process and per file the report's
counts equal strace's system calls of the same run; processes, exit codes, libraries."""
import os
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest
from straceaudit import AuditChecks

PROGRAM = r"""
import os, pathlib, json, sys
d = sys.argv[1]
for i in range(20):
    p = os.path.join(d, f"f{i}.bin")
    os.stat(p)
    with open(p, "rb") as f:
        f.read()
    fd = os.open(p, os.O_RDONLY)
    while os.read(fd, 1000):
        pass
    os.close(fd)
    pathlib.Path(p).exists()
    pathlib.Path(p).read_bytes()
    try:
        os.listdir(p)  # opendir on a file: ENOTDIR
    except NotADirectoryError:
        pass
# Relative paths: after chdir, and against a directory descriptor (openat, fstatat).
here = os.getcwd()
os.chdir(d)
os.stat("f1.bin")
with open("f1.bin", "rb") as f:
    f.read()
dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
os.stat("f2.bin", dir_fd=dfd)
fd = os.open("f2.bin", os.O_RDONLY, dir_fd=dfd)
os.pread(fd, 100, 10)
os.close(fd)
os.close(dfd)
os.chdir(here)
with open(os.path.join(d, "out.txt"), "w") as f:
    f.write("x" * 5000)
print(json.dumps(json.load(open(os.path.join(d, "c.json")))))
try:
    import numpy as np
except ImportError:
    sys.exit(5)
np.save(os.path.join(d, "a.npy"), np.arange(1000))
print(int(np.load(os.path.join(d, "a.npy")).sum()))
sys.exit(7)
"""


class PythonAudit(AuditChecks, TempDirTest):
    PROGRAMS = (SYSTEM_PYTHON,)
    MIN_FILES = 24
    SCRIPT = f"""
{SYSTEM_PYTHON} prog.py data
echo "prog: $?"
{SYSTEM_PYTHON} -m json.tool data/c.json > data/pretty.json
{SYSTEM_PYTHON} -m compileall -q prog.py
"""

    def prepare(self, root):
        os.makedirs(os.path.join(root, "data"))
        for i in range(20):
            with open(os.path.join(root, "data", f"f{i}.bin"), "wb") as f:
                f.write(b"\0" * (i * 700 + 1))
        with open(os.path.join(root, "data", "c.json"), "w") as f:
            f.write('{"a": [1, 2, 3]}\n')
        with open(os.path.join(root, "prog.py"), "w") as f:
            f.write(PROGRAM)

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        if "prog: 5" in self.run_.stdout:
            self.skipTest("numpy is not installed for " + SYSTEM_PYTHON)
        self.assertIn("499500\nprog: 7", self.run_.stdout)

    def test_every_data_file_is_counted_exactly(self):
        # The rows the rules leave no doubt about: 20 files, each opened three times and
        # read to the end each time; f1 once more after chdir, f2 with a 100-byte pread
        # through a directory descriptor.
        extra = {1: (1, 701), 2: (1, 100)}
        for i in range(20):
            path = os.path.join(self.root, "data", f"f{i}.bin")
            rows = [r for (pid, p), r in self.run_.rows.items() if p == path]
            self.assertEqual(len(rows), 1, path)
            more = extra.get(i, (0, 0))
            self.assertEqual((rows[0]["opens"], rows[0]["bytes_read"]),
                             (3 + more[0], 3 * (i * 700 + 1) + more[1]), path)


class PythonAuditUnderRun(PythonAudit):
    VIA_RUN = True


WORKERS = r"""
import concurrent.futures, multiprocessing as mp, os, sys
d = sys.argv[1]

def read_file(i):
    with open(os.path.join(d, f"f{i}.bin"), "rb") as f:
        return len(f.read())

if __name__ == "__main__":
    with concurrent.futures.ThreadPoolExecutor(4) as ex:  # reads on threads: the process's
        print(sum(ex.map(read_file, range(20))))
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(2) as pool:  # leaving `with` terminates: SIGTERM
            print(method, sum(pool.map(read_file, range(20))))
"""


class PythonWorkersAudit(AuditChecks, TempDirTest):
    # Threads, and multiprocessing pools started by fork, spawn and forkserver: each
    # worker's reads are its own, each worker ends as strace saw (SIGTERM at terminate).
    PROGRAMS = (SYSTEM_PYTHON,)
    MIN_FILES = 20
    SCRIPT = f"{SYSTEM_PYTHON} workers.py data"

    def prepare(self, root):
        PythonAudit.prepare(self, root)
        with open(os.path.join(root, "workers.py"), "w") as f:
            f.write(WORKERS)

    def test_the_run_behaved_as_bare(self):
        self.assertEqual(self.run_.returncode, 0, self.run_.stderr)
        total = str(sum(i * 700 + 1 for i in range(20)))
        self.assertEqual(self.run_.stdout.split(), [total, "fork", total, "spawn", total, "forkserver", total])
        self.assertGreaterEqual(len(self.run_.strace.processes()), 8)
        # Pool workers die of the pool's SIGTERM, unless they saw the end first and exited
        # (a race): each as strace saw, test_processes_and_exit_codes_equal_strace checks.
        self.assertLessEqual({t.killed_by for t in self.run_.strace.processes().values() if t.killed_by}, {"SIGTERM"})


if __name__ == "__main__":
    unittest.main()
