"""Helpers shared by the lifecycle end-to-end tests (tests/lifecycle/test_*.py).

Everything runs the real shim and the real `colabtrace` CLI through ctharness.
"""
from __future__ import annotations

import os
import subprocess
import sys

import ctharness
from ctharness import by_pid, cli, findings, records, report, run_traced  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "core"))
from coretest import clean_env  # noqa: E402  (the environment without the shim)
PYTHON = ctharness.SYSTEM_PYTHON  # Debian's CPython (numpy lives there), never pyenv's script


def prog(name: str) -> str:
    """A C test program built by tests/lifecycle/CMakeLists.txt."""
    return ctharness.built_test_program("lifecycle", name)


def py_script(name: str) -> str:
    return os.path.join(HERE, "py", name)


def colabtrace_run(out_dir: str, argv, env=None, timeout=180, wrap=()) -> subprocess.CompletedProcess:
    """`colabtrace run -o out_dir -- argv`, optionally behind a wrapper command (wrap)."""
    return subprocess.run([*wrap, ctharness.CLI, "run", "-o", out_dir, "--", *argv],
                          env=clean_env(env), capture_output=True, text=True, timeout=timeout)


def run_trace(out_dir: str) -> str:
    """The wrapper's own trace in out_dir."""
    names = [n for n in os.listdir(out_dir) if n.startswith("colabtrace.run.") and n.endswith(".ctrace")]
    if len(names) != 1:
        raise AssertionError(f"expected one colabtrace.run.*.ctrace in {out_dir}, found {names}")
    return os.path.join(out_dir, names[0])


def job(rep: dict, exe_basename: str) -> list[dict]:
    return [p for p in rep["processes"] if os.path.basename(p["exe"]) == exe_basename]
