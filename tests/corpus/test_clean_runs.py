"""The clean-run corpus: healthy real workloads, run under the shim, must give reports a
maintainer would call true. Each workload asserts what the program really did, then that
`colabtrace report --format json` over its traces has no `error` finding and exactly the
allowed set of warnings (each allowed one says why it is legitimately expected).

Workloads: a torch DataLoader with 2 workers, numpy file I/O of many arrays, many
subprocesses plus a shell pipeline, `import torch`, pyenv's `python3 -c pass` (a bash
script), and `yes | head`. Debian's CPython (/usr/bin/python3) runs the Python ones; those
that need torch or numpy skip where they are not installed."""
import os
import shutil
import subprocess
import unittest

import ctharness as h

PY = h.SYSTEM_PYTHON


def has_module(name):
    return subprocess.run([PY, "-c", f"import {name}"], capture_output=True).returncode == 0


HAVE_TORCH = os.path.exists(PY) and has_module("torch")
HAVE_NUMPY = os.path.exists(PY) and has_module("numpy")


def pyenv_shim():
    p = shutil.which("python3")
    if not p:
        return None
    with open(p, "rb") as f:
        head = f.read(4096)
    return p if head.startswith(b"#!") and b"pyenv" in head else None


DATALOADER = """
import torch
from torch.utils.data import DataLoader, Dataset

class Squares(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.full((4,), float(i))

if __name__ == "__main__":
    total = sum(int(b.sum().item()) for b in DataLoader(Squares(), batch_size=8, num_workers=2))
    print(total)
"""

NUMPY_IO = """
import os, sys
import numpy as np
d = sys.argv[1]
for i in range(40):
    np.save(os.path.join(d, f"a{i}.npy"), np.full(32768, i, dtype=np.float64))  # 256 KiB each
total = sum(float(np.load(os.path.join(d, f"a{i}.npy")).sum()) for i in range(40))
print(int(total))
"""

SUBPROCESSES = """
import subprocess
for _ in range(30):
    subprocess.run(["true"], check=True)
out = subprocess.run("seq 1 1000 | sort -rn | head -n 1", shell=True, check=True,
                     capture_output=True, text=True).stdout
print(out.strip())
"""


class CleanRunsTest(h.TempDirTest):
    def check_clean(self, r, allowed_warnings=()):
        """No error finding; warnings exactly the allowed ids (a set)."""
        rep = h.report(*r.traces)
        errors = [(f["id"], f["pid"], f["summary"]) for f in rep["findings"] if f["severity"] == "error"]
        self.assertEqual(errors, [])
        warnings = {f["id"] for f in rep["findings"] if f["severity"] == "warning"}
        self.assertEqual(warnings, set(allowed_warnings),
                         [(f["id"], f["summary"]) for f in rep["findings"] if f["severity"] == "warning"])
        self.assertEqual(rep["warnings"], [])  # every trace read whole
        return rep

    @unittest.skipUnless(HAVE_TORCH, "needs Debian's python3-torch")
    def test_torch_dataloader_with_two_workers(self):
        script = os.path.join(self.tmp, "loader.py")
        with open(script, "w") as f:
            f.write(DATALOADER)
        r = h.run_traced([PY, script], timeout=180)
        self.assertEqual((r.returncode, r.stdout), (0, f"{4 * sum(range(64))}\n"), r.stderr)
        rep = self.check_clean(r)
        # The parent and its two workers, each exited 0.
        ends = sorted((p["end"]["kind"], p["end"]["code"]) for p in rep["processes"])
        self.assertGreaterEqual(len(ends), 3)
        self.assertTrue(all(e == ("exited", 0) for e in ends), ends)

    @unittest.skipUnless(HAVE_NUMPY, "needs Debian's python3-numpy")
    def test_numpy_file_io(self):
        data = os.path.join(self.tmp, "arrays")
        os.makedirs(data)
        r = h.run_traced([PY, "-c", NUMPY_IO, data])
        self.assertEqual((r.returncode, r.stdout), (0, f"{32768 * sum(range(40))}\n"), r.stderr)
        rep = self.check_clean(r)
        files = {f["path"]: f for f in rep["io"]["files"] if f["path"].startswith(data + "/")}
        self.assertEqual(len(files), 40)
        self.assertTrue(all(f["bytes_read"] >= 32768 * 8 for f in files.values()))

    def test_many_subprocesses_and_a_pipeline(self):
        r = h.run_traced([PY, "-c", SUBPROCESSES])
        self.assertEqual((r.returncode, r.stdout), (0, "1000\n"), r.stderr)
        rep = self.check_clean(r)
        exes = [os.path.basename(p["exe"] or "") for p in rep["processes"]]
        self.assertEqual(exes.count("true"), 30)
        for prog in ("seq", "sort", "head"):
            self.assertEqual(exes.count(prog), 1, exes)

    @unittest.skipUnless(HAVE_TORCH, "needs Debian's python3-torch")
    def test_import_torch(self):
        r = h.run_traced([PY, "-c", "import torch; print(torch.tensor([2, 3]).prod().item())"], timeout=180)
        self.assertEqual((r.returncode, r.stdout), (0, "6\n"), r.stderr)
        self.check_clean(r)

    @unittest.skipUnless(pyenv_shim(), "needs pyenv's python3 shim on PATH")
    def test_pyenv_python3_c_pass(self):
        r = h.run_traced(["python3", "-c", "pass"])
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        self.check_clean(r)

    def test_yes_into_head(self):
        # yes dies of SIGPIPE once head has its lines: the shell pipeline's normal end.
        r = h.run_traced(["sh", "-c", "yes | head -n 3"])
        self.assertEqual((r.returncode, r.stdout), (0, "y\ny\ny\n"), r.stderr)
        rep = self.check_clean(r)
        yes = [p for p in rep["processes"] if os.path.basename(p["exe"] or "") == "yes"]
        self.assertEqual([(p["end"]["kind"], p["end"]["signal"]) for p in yes], [("signaled", 13)])


if __name__ == "__main__":
    unittest.main()
