"""Real runs for the CLI tests: tests/cli's workload programs under the shim, and
parsers for what `colabtrace check` prints.

Assertions about file I/O and GPU numbers need the shim's I/O and GPU hooks. Those
tests are skipped, naming what they wait on, only while the shim does not export the
hooked functions at all; once it does, they hold it to the exact numbers.
"""
from __future__ import annotations

import json
import os
import re
import subprocess

import ctharness as h

WORKLOAD = h.test_bin("cli", "cli_workload")
GPU_WORKLOAD = h.test_bin("cli", "cli_gpu_workload")
SIMCUDA_DIR = os.path.join(h.BUILD, "simcuda")
CHUNK = 4096
MIB = 1 << 20


def _shim_exports() -> set[str] | None:
    """The shim's exported symbols (exactly its hooks); None when nm cannot tell."""
    try:
        p = subprocess.run(["nm", "-D", "--defined-only", h.SHIM], capture_output=True, text=True)
    except OSError:
        return None
    if p.returncode != 0:
        return None
    return {line.split()[-1].split("@")[0] for line in p.stdout.splitlines() if line.strip()}


_EXPORTS = _shim_exports()
HAVE_IO_HOOKS = _EXPORTS is None or "read" in _EXPORTS
HAVE_GPU_HOOKS = _EXPORTS is None or bool({"cudaMalloc", "cuMemAlloc_v2", "cuGetProcAddress_v2"} & _EXPORTS)
HAVE_SIMCUDA = os.path.exists(GPU_WORKLOAD)
WAITS_ON_IO = "waits on the I/O hooks: the shim does not export read() yet"
WAITS_ON_GPU = "waits on the GPU hooks: the shim does not export cudaMalloc yet"
WAITS_ON_GPU_ANALYSIS = "waits on the GPU analysis: the report has no top-level gpu object yet"
NO_SIMCUDA = "the simulated CUDA runtime was not built (no CUDA headers)"


def data_file(tmp: str, size: int = 64 * CHUNK) -> str:
    path = os.path.join(tmp, "data.bin")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(bytes(range(256)) * (size // 256))
    return path


def workload(tmp: str, name: str, *, reads=0, setenv=0, alloc_mib=0, fork=0, child_reads=0,
             sleep_ms=0, kill=False) -> h.TracedRun:
    """Runs cli_workload under the shim with its traces in tmp/name; checks it did its
    work (exit 0, or SIGKILL when kill=True)."""
    out = os.path.join(tmp, name)
    os.makedirs(out)
    argv = [WORKLOAD, "--file", data_file(tmp), "--reads", str(reads), "--chunk", str(CHUNK),
            "--setenv", str(setenv), "--alloc-mib", str(alloc_mib), "--fork", str(fork),
            "--child-reads", str(child_reads), "--sleep-ms", str(sleep_ms)]
    if kill:
        argv.append("--kill")
    run = h.run_traced(argv, out_dir=out)
    expected = -9 if kill else 0
    if run.returncode != expected:
        raise AssertionError(f"cli_workload exited {run.returncode}, expected {expected}:\n{run.stderr}")
    if len(run.traces) != 1 + fork:
        raise AssertionError(f"expected {1 + fork} traces in {out}, found {run.traces}")
    return run


def gpu_workload(tmp: str, name: str, *, allocs=0, size=4 * MIB, leak=0, fail=0) -> h.TracedRun:
    """Runs cli_gpu_workload (simulated CUDA, 1 GiB device) under the shim."""
    out = os.path.join(tmp, name)
    os.makedirs(out)
    env = {"LD_LIBRARY_PATH": SIMCUDA_DIR + ":" + os.environ.get("LD_LIBRARY_PATH", ""),
           "SIMCUDA_MEM_BYTES": "1G", "SIMCUDA_CONTEXT_BYTES": "64M"}
    run = h.run_traced([GPU_WORKLOAD, "--allocs", str(allocs), "--size", str(size), "--leak",
                        str(leak), "--fail", str(fail)], env=env, out_dir=out)
    if run.returncode != 0 or len(run.traces) != 1:
        raise AssertionError(f"cli_gpu_workload exited {run.returncode} with {run.traces}:\n{run.stderr}")
    return run


_ROW = re.compile(r"^(?P<scope>\S.*?)\s{2,}(?P<metric>\S+)\s+(?P<base>\S+)\s+(?P<limit>\S+)\s+"
                  r"(?P<now>\S+)\s+(?P<verdict>\S.*)$")
_FINDING_ROW = re.compile(r"^finding\s{2,}(?P<id>\S+)\s+(?P<allowed>\S+)\s+(?P<now>\S+(?: x\d+)?)\s+"
                          r"(?P<verdict>\S.*)$")


def num(text: str):
    return None if text == "-" else int(text)


def check_table(stdout: str) -> tuple[dict, dict]:
    """Parses `colabtrace check` output: ({(scope, metric): row}, {finding id: row})."""
    metrics, findings = {}, {}
    section = None
    for line in stdout.splitlines():
        if line.startswith("scope "):
            section = "metrics"
            continue
        if line.startswith("findings "):
            section = "findings"
            continue
        if not line.strip():
            section = None if section == "findings" else section
            continue
        if section == "metrics":
            m = _ROW.match(line)
            if m:
                metrics[(m["scope"], m["metric"])] = {
                    "baseline": num(m["base"]), "limit": num(m["limit"]), "now": num(m["now"]),
                    "verdict": m["verdict"]}
        elif section == "findings":
            m = _FINDING_ROW.match(line)
            if m:
                findings[m["id"]] = {"allowed": m["allowed"], "now": m["now"], "verdict": m["verdict"]}
    return metrics, findings


def report_findings(*paths) -> dict[str, str]:
    """{finding id: highest severity} of `colabtrace report` over paths."""
    rank = {"info": 0, "warning": 1, "error": 2}
    out: dict[str, str] = {}
    for f in h.report(*paths)["findings"]:
        if f["id"] not in out or rank[f["severity"]] > rank[out[f["id"]]]:
            out[f["id"]] = f["severity"]
    return out


def has_gpu_analysis(*paths) -> bool:
    """The GPU analysis writes the top-level "gpu" totals; without it the per-process
    gpu figures are the process analysis's zero defaults."""
    return "gpu" in h.report(*paths)


def load_json(path: str):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save_json(path: str, doc) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
