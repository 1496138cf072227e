"""Helpers shared by the training-step end-to-end tests (issue 27): run
py/train_loop.py under the shim, read back what it measured itself and the report."""
from __future__ import annotations

import json
import os
import unittest
from dataclasses import dataclass

from ctharness import BUILD, SYSTEM_PYTHON, by_pid, colabtrace_run, report, run_traced, torch_missing  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "py", "train_loop.py")
NO_LOOP = os.path.join(HERE, "py", "no_loop.py")
COLABTRACE_PY = os.path.join(BUILD, "python")  # the package in the build tree
SAMPLE_BYTES = 4096


def _line_of(path: str, text: str) -> int:
    with open(path, encoding="utf-8") as f:
        (n,) = [i for i, line in enumerate(f, 1) if text in line]
    return n


# The line of train_loop.py that asks the DataLoader for its next batch.
NEXT_BATCH_LINE = _line_of(TRAIN, "x, who = next(it)")

# perf.input-bound's thresholds (PRODUCT.md): a warning from 20% of step time waiting
# for input, an info from 5%.
INPUT_BOUND_WARNING, INPUT_BOUND_INFO = 0.20, 0.05


def make_samples(directory: str, n: int) -> list[str]:
    """n files of SAMPLE_BYTES each in directory (s00000.bin, ...), sorted."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i in range(n):
        p = os.path.join(directory, f"s{i:05d}.bin")
        with open(p, "wb") as f:
            f.write(bytes([i % 251]) * SAMPLE_BYTES)
        paths.append(p)
    return paths


@dataclass
class Training:
    """One traced run of train_loop.py: what it measured itself and its report."""
    measured: dict      # the program's last stdout line
    rep: dict           # colabtrace report --format json
    out_dir: str
    returncode: int
    stdout: str
    stderr: str

    @property
    def pid(self) -> int:
        return self.measured["pid"]

    def process(self, pid: int | None = None) -> dict:
        return by_pid(self.rep)[self.pid if pid is None else pid]

    def steps(self, pid: int | None = None) -> dict:
        """processes[pid].steps of the main process (fails the caller's test if absent)."""
        proc = self.process(pid)
        if "steps" not in proc:
            raise AssertionError(f"process {proc['pid']} has no steps in the report; its keys: "
                                 f"{sorted(proc)}")
        return proc["steps"]


def train(out_dir: str, args, how: str = "run", timeout: int = 240, expect_rc: int = 0,
          argv=None) -> Training:
    """Runs train_loop.py args (or argv) under `colabtrace run` (how="run") or plain
    LD_PRELOAD with COLABTRACE_PYTHON=1 (how="preload"), then reports its traces."""
    argv = argv or [SYSTEM_PYTHON, TRAIN, *args]
    if how == "run":
        p = colabtrace_run(out_dir, argv, timeout=timeout)
        rc, stdout, stderr = p.returncode, p.stdout, p.stderr
    elif how == "preload":
        r = run_traced(argv, env={"COLABTRACE_PYTHON": "1"}, out_dir=out_dir, timeout=timeout)
        rc, stdout, stderr = r.returncode, r.stdout, r.stderr
    else:
        raise ValueError(how)
    if rc != expect_rc:
        raise AssertionError(f"{argv} exited {rc} (wanted {expect_rc}):\n{stderr[-3000:]}")
    measured = {}
    if expect_rc == 0:
        measured = json.loads(stdout.strip().splitlines()[-1])
    return Training(measured, report(out_dir), out_dir, rc, stdout, stderr)


def perf_findings(rep: dict) -> list[dict]:
    return [f for f in rep["findings"] if f["id"].startswith("perf.")]


def findings_of(rep: dict, fid: str, pid: int) -> list[dict]:
    return [f for f in rep["findings"] if f["id"] == fid and f.get("pid") == pid]


def strings_in(obj) -> set[str]:
    """Every string anywhere in a JSON value (keys not included)."""
    out = set()
    if isinstance(obj, str):
        out.add(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            out |= strings_in(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= strings_in(v)
    return out


def expected_input_bound_severity(fraction: float) -> str | None:
    """perf.input-bound's severity for an input-wait fraction (None: no finding)."""
    if fraction >= INPUT_BOUND_WARNING:
        return "warning"
    if fraction >= INPUT_BOUND_INFO:
        return "info"
    return None


class PerfTest(unittest.TestCase):
    def assertFractionClose(self, reported: float, measured: float, what: str):
        self.assertLessEqual(abs(reported - measured), 0.1,
                             f"{what}: input_wait_fraction {reported:.3f} in the report, "
                             f"{measured:.3f} measured by the program itself")

    def assertInputBoundSeverityFollows(self, t: Training):
        """perf.input-bound for the main process agrees with its reported fraction, unless
        the fraction sits within 0.02 of a threshold (either verdict is right there)."""
        frac = t.steps()["input_wait_fraction"]
        got = [f["severity"] for f in findings_of(t.rep, "perf.input-bound", t.pid)]
        if any(abs(frac - th) < 0.02 for th in (INPUT_BOUND_WARNING, INPUT_BOUND_INFO)):
            return
        want = expected_input_bound_severity(frac)
        self.assertEqual(got, [want] if want else [],
                         f"input_wait_fraction {frac:.3f} gives {want or 'no finding'}")
