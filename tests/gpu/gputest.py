"""Helpers for the GPU memory end-to-end tests: run a scenario program against the
simulated CUDA libraries under the shim, and read back the trace and the report."""
from __future__ import annotations

import os
import subprocess
import tempfile

import ctharness as h

SIMCUDA_DIR = os.environ.get("SIMCUDA_DIR", os.path.join(h.BUILD, "simcuda"))
REAL_CUDART = os.environ.get("CUDA_REAL_CUDART", "/usr/local/cuda/lib64/libcudart.so.13")
MiB = 1 << 20
GiB = 1 << 30


def prog(name: str) -> str:
    return h.test_bin("gpu", name)


def sim_env(sim: dict | None = None, driver: bool = True) -> dict:
    """The environment of a scenario: the simulated libraries on the library path (or
    none at all: then only RUNPATH finds the runtime and no driver is found), plus
    SIMCUDA_* settings."""
    e = {"LD_LIBRARY_PATH": SIMCUDA_DIR if driver else ""}
    for k in list(os.environ):
        if k.startswith("SIMCUDA_") and k != "SIMCUDA_DIR":
            e[k] = ""
    e.update(sim or {})
    return e


class GpuTest(h.TempDirTest):
    def run_scenario(self, program: str, scenario: str, sim: dict | None = None,
                     env: dict | None = None, returncode: int = 0, driver: bool = True,
                     argv: list | None = None):
        """Runs `program scenario` traced; returns (run, report, trace path)."""
        e = sim_env(sim, driver)
        e.update(env or {})
        out = tempfile.mkdtemp(prefix=scenario + "-", dir=self.tmp)
        run = h.run_traced(argv or [prog(program), scenario], env=e, out_dir=out)
        self.assertEqual(run.returncode, returncode, run.stdout + run.stderr)
        self.assertEqual(len(run.traces), 1, run.traces)
        rep = h.report(*run.traces)
        return run, rep, run.traces[0]

    def gpu(self, rep: dict) -> dict:
        """The single process's gpu object, checked against the run's totals."""
        self.assertEqual(len(rep["processes"]), 1)
        p = rep["processes"][0]["gpu"]
        for k in ("allocations", "frees", "failed_allocations", "peak_bytes", "leaked_bytes"):
            self.assertEqual(rep["gpu"][k], p[k], k)
        return p

    def counts(self, g: dict, allocations, frees, failed, peak, leaked):
        self.assertEqual(
            {k: g[k] for k in ("allocations", "frees", "failed_allocations", "peak_bytes", "leaked_bytes")},
            {"allocations": allocations, "frees": frees, "failed_allocations": failed,
             "peak_bytes": peak, "leaked_bytes": leaked})

    def one(self, rep: dict, fid: str) -> dict:
        fs = h.findings(rep, fid)
        self.assertEqual(len(fs), 1, [f["id"] for f in rep["findings"]])
        return fs[0]

    def none(self, rep: dict, fid: str):
        self.assertEqual(h.findings(rep, fid), [], fid)


def bare(argv, env: dict) -> subprocess.CompletedProcess:
    """Runs argv without the shim."""
    e = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("COLABTRACE_")}
    e.update(env)
    return subprocess.run(argv, env=e, capture_output=True, text=True, timeout=120)
