"""Helpers for the `colabtrace run --hang-timeout` tests: the interpreters to run, and
a run of a program under `colabtrace run` with its wrapper trace's records."""
from __future__ import annotations

import glob
import os
import re
import subprocess

import ctharness as h

HERE = os.path.dirname(os.path.abspath(__file__))
PROGS = os.path.join(HERE, "progs")
PACKAGE = os.path.join(h.BUILD, "python")  # the build tree's colabtrace package
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv") + "/versions"


def interpreters() -> dict[str, str]:
    """CPython 3.11+ interpreters here, by version ("3.11"), newest patch of each: the
    pyenv ones the shim's stack layouts cover, and Debian's."""
    found: dict[str, str] = {}
    for minor in ("3.11", "3.12", "3.13"):
        for path in sorted(glob.glob(f"{PYENV}/{minor}.*/bin/python3")):
            found[minor] = path
    if "3.11" not in found and os.path.exists("/usr/bin/python3.11"):
        found["3.11"] = "/usr/bin/python3.11"
    return found


marked_line = h.marked_line  # the 1-based line of a program that carries `# <marker>`


class HangRun:
    """One `colabtrace run` of a program: its exit status, output, and the wrapper's own
    trace's records (ThreadState, HangStop, WaitStatus...)."""

    def __init__(self, proc: subprocess.CompletedProcess, out_dir: str):
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr
        self.out_dir = out_dir
        runs = glob.glob(os.path.join(out_dir, "colabtrace.run.*.ctrace"))
        assert len(runs) == 1, (runs, proc.stderr)
        self.run_trace = runs[0]
        self.records = [r for r in (h.parse_dump_line(l) for l in h.dump(self.run_trace)) if r]

    def by(self, name: str) -> list[dict]:
        return [f for n, f in self.records if n == name]

    def threads_of(self, pid: int) -> dict[int, dict]:
        """The ThreadState records of pid, by tid."""
        return {int(f["tid"]): f for f in self.by("thread_state") if int(f["pid"]) == pid}


def colabtrace_run(out_dir: str, run_args, argv, timeout: float) -> HangRun:
    """`colabtrace run -o out_dir RUN_ARGS -- argv`, with the build's colabtrace package on
    PYTHONPATH (colabtrace.step). Its output goes to files next to out_dir, not pipes: a
    process that run had to leave behind (blocked in the kernel) keeps the descriptors it
    inherited, and a pipe would not end before it does."""
    env = h.clean_env({"PYTHONPATH": PACKAGE, "PYTHONDONTWRITEBYTECODE": "1"})
    with open(out_dir + ".stdout", "w+") as out, open(out_dir + ".stderr", "w+") as err:
        p = subprocess.run([h.CLI, "run", "-o", out_dir, *run_args, "--", *argv], env=env,
                           stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=timeout)
        out.seek(0)
        err.seek(0)
        p.stdout, p.stderr = out.read(), err.read()
    return HangRun(p, out_dir)
