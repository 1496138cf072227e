"""Helpers shared by the lifecycle end-to-end tests (tests/lifecycle/test_*.py).

Everything runs the real shim and the real `colabtrace` CLI through ctharness.
"""
from __future__ import annotations

import os

import ctharness
from ctharness import by_pid, clean_env, cli, findings, records, report, run_traced  # noqa: F401

HERE = os.path.dirname(os.path.abspath(__file__))
colabtrace_run = ctharness.colabtrace_run
PYTHON = ctharness.SYSTEM_PYTHON  # Debian's CPython (numpy lives there), never pyenv's script


def prog(name: str) -> str:
    """A C test program built by tests/lifecycle/CMakeLists.txt."""
    return ctharness.built_test_program("lifecycle", name)


def py_script(name: str) -> str:
    return os.path.join(HERE, "py", name)


def run_trace(out_dir: str) -> str:
    """The wrapper's own trace in out_dir."""
    names = [n for n in os.listdir(out_dir) if n.startswith("colabtrace.run.") and n.endswith(".ctrace")]
    if len(names) != 1:
        raise AssertionError(f"expected one colabtrace.run.*.ctrace in {out_dir}, found {names}")
    return os.path.join(out_dir, names[0])


def job(rep: dict, exe_basename: str) -> list[dict]:
    return [p for p in rep["processes"] if os.path.basename(p["exe"]) == exe_basename]
