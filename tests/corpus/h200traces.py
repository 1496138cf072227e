"""The runs an H200 recorded under this shim (`tools/gpu_validate`), kept in data/ as one
tarball per validation run, named by its date: traces/NAME/ and NAME.out (the program's
output and exit status).
H200Traces unpacks one (DATA) once per test class and reports each run once."""
import os
import tarfile
import tempfile
import unittest

import ctharness as h

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def serious(rep):
    return sorted((f["id"], f["severity"]) for f in rep["findings"] if f["severity"] in ("error", "warning"))


class H200Traces(unittest.TestCase):
    DATA = ""  # the tarball's name in data/

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="ct-h200-")
        with tarfile.open(os.path.join(DATA_DIR, cls.DATA)) as t:
            t.extractall(cls.tmp.name)
        cls.reports = {}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def report(self, run):
        if run not in self.reports:
            self.reports[run] = h.report(os.path.join(self.tmp.name, "traces", run))
        return self.reports[run]

    def out(self, run):
        with open(os.path.join(self.tmp.name, run + ".out"), encoding="utf-8") as f:
            return f.read()
