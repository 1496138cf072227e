"""Helpers for the step tests: run a program under the shim (plain LD_PRELOAD with
COLABTRACE_PYTHON=1, or `colabtrace run`) and read back every trace's records."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

import ctharness as h

HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.path.join(HERE, "py")
PACKAGE = os.path.join(h.BUILD, "python")  # the build tree's colabtrace package
SUMMARY = re.compile(r"colabtrace: |  (error|warning|info) [a-z]+\.[a-z-]+: ")


torch_missing = h.torch_missing


class Trace:
    """One trace file's records, parsed once: by(name) lists a record type's fields."""

    def __init__(self, path: str):
        self.path = path
        self.records = []
        for line in h.dump(path):
            parsed = h.parse_dump_line(line)
            if parsed is not None:
                parsed[1]["_t"] = float(line.split(" ", 1)[0])  # seconds since the trace began
                self.records.append(parsed)
        starts = self.by("process_start")
        self.pid = int(starts[-1]["pid"]) if starts else 0
        self.is_run_wrapper = bool(self.by("run_info"))

    def by(self, name: str) -> list[dict]:
        return [f for n, f in self.records if n == name]


class Run:
    def __init__(self, returncode, stdout, stderr, traces):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        self.traces = [Trace(t) for t in traces]

    def process(self, pid: int) -> Trace:
        found = [t for t in self.traces if t.pid == pid and not t.is_run_wrapper]
        assert len(found) == 1, (pid, [(t.path, t.pid) for t in self.traces])
        return found[0]

    def all(self, name: str) -> list[tuple[Trace, dict]]:
        return [(t, f) for t in self.traces for f in t.by(name)]


def run_python(test, argv, how: str, env=None, timeout=300) -> Run:
    """Runs Debian's python3 with argv under the shim, how = "preload" (LD_PRELOAD and
    COLABTRACE_PYTHON=1) or "run" (`colabtrace run`), traces into a fresh folder of
    test.tmp."""
    out = tempfile.mkdtemp(prefix=how + "-", dir=test.tmp)
    e = {"PYTHONPATH": PACKAGE, "OMP_NUM_THREADS": "1"}
    e.update(env or {})
    cmd = [h.SYSTEM_PYTHON, *argv]
    if how == "preload":
        e["COLABTRACE_PYTHON"] = "1"
        r = h.run_traced(cmd, env=e, out_dir=out, timeout=timeout)
        return Run(r.returncode, r.stdout, r.stderr, r.traces)
    assert how == "run", how
    p = h.colabtrace_run(out, cmd, env=e, timeout=timeout)
    traces = sorted(os.path.join(out, f) for f in os.listdir(out) if f.endswith(".ctrace"))
    # The program's own stderr, without `colabtrace run`'s summary (its "colabtrace: " lines
    # and the findings listed under them).
    stderr = "".join(l for l in p.stderr.splitlines(True) if not SUMMARY.match(l))
    return Run(p.returncode, p.stdout, stderr, traces)


_SHARED: dict = {}


def shared_run(test, argv, how: str, env=None) -> Run:
    """run_python's Run for these arguments, made once per test process: two tests that
    check the same traced run (its records, and its output against a bare run) share it
    rather than each starting torch again (issue 30). Run parses every trace when it is
    made, so the traces' folder may go with the first test's temporary files."""
    key = (tuple(argv), how, tuple(sorted((env or {}).items())))
    if key not in _SHARED:
        _SHARED[key] = run_python(test, argv, how, env)
    return _SHARED[key]


def run_bare(argv, env=None, timeout=300) -> subprocess.CompletedProcess:
    e = h.clean_env({"PYTHONPATH": PACKAGE, "OMP_NUM_THREADS": "1", **(env or {})})
    return subprocess.run([h.SYSTEM_PYTHON, *argv], env=e, capture_output=True, text=True,
                          timeout=timeout)
