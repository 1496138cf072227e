"""Helpers shared by the core end-to-end tests (tests/core/test_*.py).

Everything runs the real shim and the real `colabtrace` CLI through ctharness; these
helpers only locate the test programs and read traces in the ways several tests need.
"""
from __future__ import annotations

import os
import struct
import subprocess
import sys
import time

import ctharness
from ctharness import clean_env, cli, dump, records, report, run_traced  # noqa: F401 (re-exported)

HERE = os.path.dirname(os.path.abspath(__file__))


def prog(name: str) -> str:
    """A C test program built by tests/core/CMakeLists.txt."""
    return ctharness.built_test_program("core", name)


def py_script(name: str) -> str:
    return os.path.join(HERE, "py", name)


def python() -> str:
    """A real CPython binary (never pyenv's shell-script shim)."""
    for p in (ctharness.SYSTEM_PYTHON, os.path.realpath(sys.executable)):
        if p and os.path.exists(p):
            return p
    raise AssertionError("no CPython found")


def run_plain(argv, env=None, timeout=60, **kw) -> subprocess.CompletedProcess:
    """Runs argv without the shim, capturing bytes."""
    return subprocess.run(argv, env=clean_env(env), capture_output=True, timeout=timeout, **kw)


def shim_env(out_dir: str, extra=None) -> dict:
    e = clean_env()
    e["LD_PRELOAD"] = ctharness.SHIM
    e["COLABTRACE_OUT"] = out_dir + "/"
    if extra:
        e.update(extra)
    return e


def trace_pid(path: str) -> int:
    """The pid recorded in a trace's header (FileHeader::pid, offset 28)."""
    with open(path, "rb") as f:
        head = f.read(32)
    if len(head) < 32 or head[:8] != b"CTRACE\r\n":
        raise AssertionError(f"{path} is not a trace")
    return struct.unpack_from("<I", head, 28)[0]


def wait_gone(pids, timeout=30.0):
    """Waits until none of pids is running (exited, or a zombie nobody reaped)."""
    deadline = time.monotonic() + timeout
    pending = set(pids)
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:
                with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
                if state in ("Z", "X"):
                    pending.discard(pid)
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pending.discard(pid)
        if pending:
            time.sleep(0.02)
    if pending:
        raise AssertionError(f"processes still running after {timeout}s: {sorted(pending)}")


def env_values(trace: str, name: str) -> list[str]:
    """Values of env records for variable `name`, in trace order."""
    return [r["value"] for r in records(trace, "env") if r.get("name") == name]


def run_steps_until_truncated(test, out_dir: str, steps: int, preexec, want_errno: int):
    """Runs ct_steps (one CUDA_STEP env record per step) bare and traced into `out_dir`,
    where the trace cannot hold every step. Checks what every such run must show: the
    program's output unchanged and nothing on stderr, one trace marked truncated with a
    warning naming `want_errno`, and the recorded steps a gap-free prefix. Returns
    (the bare run, trace path, report, its one process, recorded step values)."""
    import glob
    argv = [prog("ct_steps"), str(steps), "0"]
    bare = run_plain(argv)
    traced = subprocess.run(argv, env=shim_env(out_dir), capture_output=True, timeout=120,
                            preexec_fn=preexec)
    test.assertEqual(traced.returncode, 0, traced.stderr)
    test.assertEqual(traced.stdout, bare.stdout)
    test.assertEqual(traced.stderr, b"")
    (trace,) = glob.glob(os.path.join(out_dir, "*.ctrace"))
    rep = report(trace)
    (proc,) = rep["processes"]
    test.assertTrue(proc["trace_truncated"])
    test.assertTrue(any("tracing stopped early" in w and os.strerror(want_errno) in w
                        for w in rep["warnings"]), rep["warnings"])
    values = env_values(trace, "CUDA_STEP")
    test.assertEqual(values, [str(i) for i in range(len(values))])
    return bare, trace, rep, proc, values


# The chunk kinds of a trace by their magic (docs/trace-format.md), as the tests that count
# a trace's chunks name them; any other is "unused".
CHUNK_MAGICS = {b"CTCK": "record", b"CTEV": "event", b"CTST": "state", b"CTRG": "ring", b"CTIS": "aggregate",
                b"CTIA": "aggregate", b"CTNC": "nccl", b"CTTS": "thinned", b"CTSA": "steps"}
