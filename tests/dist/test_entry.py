"""The Python start-up hook's calls into the shim (issue 38, the cost of a collective):
the module of built-in functions the shim makes with CPython's C API
(shim/python/entry_module.cpp) on CPython 3.8 and later, with the wrappers of the
collectives that issue one collective and Work.wait made in C there (its wrap and
wrap_wait: they hand what they do not know to the hook's Python wrapper), and ctypes with
the Python wrappers where it makes none, record the same collectives. One program
(tests/dist/py/collectives.py) per interpreter:

- Debian's python3 with its torch (gloo, a group of one): each kind of call (blocking,
  async and its Work.wait(), barrier, all_gather_object and the collectives it issues, a
  second group, a call that raises before torch's call and one that raises in it) is one
  Collective record with exact fields (its line read by the shim from the frame), and the
  Work.wait() that a blocking one calls itself makes none (the shim's "inside" flag).
- pyenv's CPython 3.8 to 3.13 (each one installed), with the stand-in torch of
  tests/dist/py/fake_torch: the same records, a count past 2^31 whole, and a fork child's
  two collectives in the child's own trace. The module's functions refuse wrong arguments
  (TypeError, OverflowError) and record nothing for them. A run that makes the module has
  resolved every C API symbol the shim uses on that build.
- pyenv's CPython 3.7: the shim makes no module (older than 3.8), so the hook calls it
  through ctypes: the same records, the child's included.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
import unittest

import ctharness as h
from test_torchrun import torch_missing

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "py", "collectives.py")
FAKE_TORCH = os.path.join(HERE, "py", "fake_torch")
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv") + "/versions"
MODULE_VERSIONS = ("3.8", "3.9", "3.10", "3.11", "3.12", "3.13")
CTYPES_VERSION = "3.7"
MODULE_ERRORS = ["TypeError", "TypeError", "TypeError", "OverflowError", "TypeError", "TypeError", "TypeError",
                 "TypeError", "TypeError", "TypeError"]
F32 = "torch.float32"


def pyenv_python(minor: str) -> str | None:
    found = sorted(glob.glob(f"{PYENV}/{minor}.*/bin/python{minor}"))
    return found[-1] if found else None


def where(marker: str) -> str:
    return f"collectives.py:{h.marked_line(PROGRAM, marker)} in <module>"


def collective(op, group, seq, seqs, count, dtype, marker, status=0):
    return {"op": str(op), "group": str(group), "seq": str(seq), "seqs": str(seqs), "count": str(count),
            "dtype": dtype, "where": where(marker), "status": str(status)}


# What every interpreter records, in order: op (CollectiveOp: 1 all_reduce, 2 broadcast,
# 9 barrier, 12 all_gather_object, 17 Work.wait), group, seq, seqs, count, dtype, line,
# status (0 returned, 1 raised, 2 issued: an async_op call).
COMMON = [
    collective(1, 1, 1, 1, 3, F32, "M_ALL_REDUCE"),
    collective(2, 1, 2, 1, 3, F32, "M_BROADCAST"),
    collective(1, 1, 3, 1, 3, F32, "M_ASYNC", status=2),
    collective(17, 0, 0, 0, 0, "-", "M_WAIT"),
    collective(9, 1, 4, 1, 0, "-", "M_BARRIER"),
    collective(12, 1, 5, 2, 0, "-", "M_OBJECT"),  # its two all_gathers: seqs 2, no records
    collective(1, 2, 1, 1, 3, F32, "M_GROUP"),
    collective(1, 1, 7, 1, 0, "-", "M_RAISES", status=1),
    collective(2, 1, 7, 1, 3, F32, "M_BAD_ROOT", status=1),
]
FAKE_ONLY = [collective(1, 1, 7, 1, 2 ** 33 + 5, F32, "M_BIG")]
CHILD = [collective(1, 1, 8, 1, 3, F32, "M_CHILD"), collective(9, 1, 9, 1, 0, "-", "M_CHILD_BARRIER")]
FIELDS = ("op", "group", "seq", "seqs", "count", "dtype", "where", "status")


class Run:
    """One run of the program under the shim with the start-up hook: its output and the
    collective and dist_group records of each process's trace (parent first)."""

    def __init__(self, python: str, tmp: str, fake: bool):
        out = tempfile.mkdtemp(dir=tmp)
        env = {"COLABTRACE_PYTHON": "1", "OMP_NUM_THREADS": "1"}
        if fake:
            env["PYTHONPATH"] = FAKE_TORCH
        p = h.run_traced([python, PROGRAM, os.path.join(out, "store")], env=env, out_dir=out, timeout=120)
        self.stderr = p.stderr
        lines = p.stdout.strip().splitlines()
        self.output = json.loads(lines[-1]) if p.returncode == 0 and lines else None
        self.traces = []  # (collectives, groups) per trace, the parent's first
        for trace in p.traces:
            records = [r for r in (h.parse_dump_line(l) for l in h.dump(trace)) if r is not None]
            self.traces.append(([{k: f[k] for k in FIELDS} for name, f in records if name == "collective"],
                                [(f["group"], f["how"]) for name, f in records if name == "dist_group"]))
        self.traces.sort(key=lambda t: -len(t[1]))  # the parent made the groups


class EntryPathTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ct-dist-entry-")
        cls.torch_why = torch_missing()
        cls.torch_run = None if cls.torch_why else Run(h.SYSTEM_PYTHON, cls.tmp, fake=False)
        cls.fake_runs = {v: Run(p, cls.tmp, fake=True) for v in (*MODULE_VERSIONS, CTYPES_VERSION)
                         if (p := pyenv_python(v)) is not None}

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def check_fake_run(self, version: str, path: str, errors: list):
        run = self.fake_runs.get(version)
        if run is None:
            self.skipTest(f"pyenv has no CPython {version} in {PYENV}")
        made_in_c = path == "module"  # the wrappers and Work.wait in C (wrap, wrap_wait)
        self.assertEqual(run.output, {"path": path, "errors": errors, "inside": False, "c": [made_in_c] * 2},
                         run.stderr[-3000:])
        self.assertEqual(len(run.traces), 2, run.stderr[-3000:])
        (parent, groups), (child, child_groups) = run.traces
        self.assertEqual(groups, [("1", "1"), ("2", "2")])
        self.assertEqual(parent, COMMON + FAKE_ONLY)
        self.assertEqual((child, child_groups), (CHILD, []))

    def test_debian_torch_through_the_module(self):
        if self.torch_run is None:
            self.skipTest(self.torch_why)
        run = self.torch_run
        self.assertEqual(run.output, {"path": "module", "errors": MODULE_ERRORS, "inside": False, "c": [True, True]},
                         run.stderr[-3000:])
        self.assertEqual(len(run.traces), 1)
        collectives, groups = run.traces[0]
        self.assertEqual(groups, [("1", "1"), ("2", "2")])
        self.assertEqual(collectives, COMMON)

    def test_python_3_8_through_the_module(self):
        self.check_fake_run("3.8", "module", MODULE_ERRORS)

    def test_python_3_13_through_the_module(self):
        self.check_fake_run("3.13", "module", MODULE_ERRORS)

    def test_every_other_pyenv_python_through_the_module(self):
        found = [v for v in MODULE_VERSIONS[1:-1] if v in self.fake_runs]
        if not found:
            self.skipTest(f"pyenv has none of CPython {', '.join(MODULE_VERSIONS[1:-1])}")
        for version in found:
            with self.subTest(version=version):
                self.check_fake_run(version, "module", MODULE_ERRORS)

    def test_python_3_7_through_ctypes(self):
        self.check_fake_run(CTYPES_VERSION, "ctypes", [])


if __name__ == "__main__":
    unittest.main()
