"""End-to-end test harness: run real programs under libcolabtrace.so and read back
what the shim recorded, through the real `colabtrace` CLI.

ctest passes COLABTRACE_BUILD_DIR (the CMake build tree). Every helper here runs the
actual shim and the actual analyzer: nothing is mocked.
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest
from dataclasses import dataclass, field

BUILD = os.environ.get("COLABTRACE_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
SHIM = os.path.join(BUILD, "lib", "libcolabtrace.so")
CLI = os.path.join(BUILD, "bin", "colabtrace")
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's CPython, where python3-torch installs


def test_bin(area: str, name: str) -> str:
    """Path of a test program built by tests/<area>/CMakeLists.txt."""
    return os.path.join(BUILD, "tests", area, name)


def torch_missing() -> str:
    """Why Debian's torch cannot be imported by SYSTEM_PYTHON ("" when it can)."""
    p = subprocess.run([SYSTEM_PYTHON, "-c", "import torch"], capture_output=True, text=True)
    return "" if p.returncode == 0 else ("import torch failed in " + SYSTEM_PYTHON + ": "
                                         + p.stderr.strip()[-200:])


def clean_env(extra=None) -> dict:
    """The environment for a run without the shim: no LD_PRELOAD, no COLABTRACE_*."""
    e = {k: v for k, v in os.environ.items()
         if k != "LD_PRELOAD" and not (k.startswith("COLABTRACE_") and k != "COLABTRACE_BUILD_DIR")}
    if extra:
        e.update(extra)
    return e


def colabtrace_run(out_dir: str, argv, env=None, timeout=180, wrap=()) -> subprocess.CompletedProcess:
    """`colabtrace run -o out_dir -- argv` from a clean environment plus `env`, optionally
    behind a wrapper command (wrap); text output captured."""
    return subprocess.run([*wrap, CLI, "run", "-o", out_dir, "--", *argv],
                          env=clean_env(env), capture_output=True, text=True, timeout=timeout)


def built_test_program(area: str, name: str) -> str:
    """test_bin(area, name), which must exist: a missing one names the target to build."""
    path = test_bin(area, name)
    if not os.path.exists(path):
        raise AssertionError(f"test program {path} is not built (ninja {area}_test_programs)")
    return path


@dataclass
class TracedRun:
    returncode: int
    stdout: str
    stderr: str
    out_dir: str
    traces: list[str] = field(default_factory=list)


def run_traced(argv, env=None, out_dir=None, timeout=120, cwd=None, input=None,
               preload=True, check_traces=True) -> TracedRun:
    """Runs argv with the shim preloaded, traces into out_dir (a fresh temp dir by
    default), and returns the outcome plus the trace files written."""
    out_dir = out_dir or tempfile.mkdtemp(prefix="ct-e2e-")
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("COLABTRACE_") and k != "COLABTRACE_BUILD_DIR":
            del e[k]
    if preload:
        e["LD_PRELOAD"] = SHIM
        e["COLABTRACE_OUT"] = out_dir + "/"
    if env:
        e.update(env)
    p = subprocess.run(argv, env=e, cwd=cwd, input=input, capture_output=True, text=True,
                       timeout=timeout)
    traces = sorted(glob.glob(os.path.join(out_dir, "*.ctrace")))
    return TracedRun(p.returncode, p.stdout, p.stderr, out_dir, traces)


@contextlib.contextmanager
def mounted_tmpfs(test: unittest.TestCase, size: str, prefix: str = "ct-tmpfs-"):
    """A fresh tmpfs of `size` (mount -o size=...) for the with-block, unmounted and
    removed after; skips `test` where mounting is not permitted."""
    mnt = tempfile.mkdtemp(prefix=prefix)
    try:
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mnt],
                           capture_output=True)
        if r.returncode != 0:
            test.skipTest(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
        try:
            yield mnt
        finally:
            subprocess.run(["umount", mnt], check=True)
    finally:
        shutil.rmtree(mnt, ignore_errors=True)


def can_fake_machine() -> bool:
    """Whether run_on_other_machine can work here (root, unshare -m, /etc/machine-id)."""
    if not shutil.which("unshare") or os.geteuid() != 0 or not os.path.exists("/etc/machine-id"):
        return False
    return subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode == 0


def run_on_other_machine(shell_cmd: str, out_dir: str, machine_id: str,
                         scratch: str) -> subprocess.CompletedProcess:
    """Runs shell_cmd under the shim (traces into out_dir) as if on another machine: in a
    mount namespace whose /etc/machine-id says machine_id (written under scratch)."""
    ids = os.path.join(scratch, "other-machine-id")
    with open(ids, "w") as f:
        f.write(machine_id + "\n")
    script = (f"mount --bind {ids} /etc/machine-id && "
              f"LD_PRELOAD={SHIM} COLABTRACE_OUT={out_dir}/ {shell_cmd}")
    return subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)


def _keep_report_inputs(args) -> None:
    """With COLABTRACE_TEST_KEEP_REPORTS=DIR, copies the traces of a `report` call into
    DIR/NNNNNN/ and appends its arguments (paths replaced by the copies) to
    DIR/manifest.jsonl, so that tools/compare_reports can render the same inputs with two
    builds of the analyzer."""
    keep = os.environ.get("COLABTRACE_TEST_KEEP_REPORTS")
    if not keep or not args or args[0] != "report":
        return
    os.makedirs(keep, exist_ok=True)
    case = os.path.join(keep, f"{os.getpid()}-{len(os.listdir(keep)):06d}")
    os.makedirs(case)
    valued = ("--format", "-o", "--output", "--gpu-arch", "--sysroot", "--fail-on")
    kept = []
    for i, a in enumerate(args[1:]):
        is_value = args[i] in valued  # args[i] is the argument before a
        if not is_value and not a.startswith("-") and os.path.exists(a):
            dest = os.path.join(case, str(len(kept)) + "-" + os.path.basename(a.rstrip("/")))
            (shutil.copytree if os.path.isdir(a) else shutil.copy2)(a, dest)
            kept.append(dest)
        else:
            kept.append(os.path.abspath(a) if args[i] == "--sysroot" else a)
    with open(os.path.join(keep, "manifest.jsonl"), "a") as f:
        f.write(json.dumps({"args": kept}) + "\n")


def cli(*args, check=True, timeout=300) -> subprocess.CompletedProcess:
    """Runs the colabtrace CLI (never under the shim)."""
    _keep_report_inputs(args)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    p = subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=timeout)
    if check and p.returncode not in (0, 1):
        raise AssertionError(f"colabtrace {' '.join(args)} exited {p.returncode}:\n{p.stderr}")
    return p


def report(*paths, extra=()) -> dict:
    """`colabtrace report --format json` over paths, parsed."""
    p = cli("report", "--format", "json", *extra, *paths)
    return json.loads(p.stdout)


def dump(trace: str) -> list[str]:
    """`colabtrace dump` lines of one trace (header line dropped)."""
    p = cli("dump", trace)
    return [l for l in p.stdout.splitlines() if not l.startswith("#")]


def parse_dump_line(line: str) -> tuple[str, dict] | None:
    """One `colabtrace dump` record line as (record name, fields). Fields map to raw text
    values (quoted strings decoded); `tid` is an int. None for lines that are not records."""
    parts = line.split(" ", 3)
    if len(parts) < 3 or not parts[1].startswith("tid="):
        return None
    fields = {"tid": int(parts[1][4:])}
    rest = parts[3] if len(parts) > 3 else ""
    i = 0
    while i < len(rest):
        eq = rest.index("=", i)
        key = rest[i:eq]
        j = eq + 1
        if j < len(rest) and rest[j] == '"':
            val, end = json.JSONDecoder().raw_decode(rest[j:])
            j += end
        else:
            end = rest.find(" ", j)
            end = len(rest) if end < 0 else end
            val = rest[j:end]
            j = end
        fields[key] = val
        i = j + 1
    return parts[2], fields


def marked_line(path: str, marker: str) -> int:
    """The 1-based line of the file at path that carries the comment `# <marker>`."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if re.search(r"#\s*" + re.escape(marker) + r"\b", line):
                return n
    raise AssertionError(f"no line marked {marker} in {path}")


def records(trace: str, name: str) -> list[dict]:
    """Records of one type from `colabtrace dump`, as dicts of field -> raw text value
    (strings keep their JSON quotes removed)."""
    out = []
    for line in dump(trace):
        parsed = parse_dump_line(line)
        if parsed is not None and parsed[0] == name:
            out.append(parsed[1])
    return out


def read_until(p: subprocess.Popen, pattern: re.Pattern[bytes], timeout: float) -> tuple[bytes, re.Match | None]:
    """Reads p's stdout pipe until pattern matches what was read, p closes it, or timeout
    seconds pass. Returns the bytes read and the match (None if it never matched).

    It reads the pipe's descriptor, not p.stdout's buffered file: after a readline,
    lines already in that buffer are invisible to select(), so a program that printed
    two lines at once and then blocked would look silent."""
    fd = p.stdout.fileno()
    got = b""
    deadline = time.monotonic() + timeout
    while (m := pattern.search(got)) is None:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        got += chunk
    return got, m


def kill_process_group(p: subprocess.Popen, wait_s: float = 60) -> None:
    """SIGKILLs the process group p leads (started with start_new_session=True), then
    collects p and its pipes for up to wait_s seconds. For cleanups: never raises."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        p.communicate(timeout=wait_s)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def read_counter(path: str) -> int:
    """The u64 a test program keeps in a mapped file of 8 bytes (0 while it is not there)."""
    try:
        with open(path, "rb") as f:
            return struct.unpack("<Q", f.read(8).ljust(8, b"\0"))[0]
    except FileNotFoundError:
        return 0


def sigkill_when(p: subprocess.Popen, ready, poll_s: float, after_s: float = 0.0, timeout: float = 60.0):
    """SIGKILLs p once ready() is true (or after timeout seconds), after_s seconds later,
    and reaps it; p is killed and reaped whatever happens."""
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not ready():
            time.sleep(poll_s)
        time.sleep(after_s)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def sigkill_at_count(argv, env: dict, counter: str, threshold: int, timeout: float = 60) -> tuple[int, int]:
    """Starts argv (env as given), SIGKILLs it once the count in `counter` (read_counter)
    reaches threshold or timeout seconds have passed, and returns its exit status and the
    count it had reached."""
    if os.path.exists(counter):
        os.unlink(counter)  # an earlier run's count is not this one's
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sigkill_when(p, lambda: read_counter(counter) >= threshold, 0.005, timeout=timeout)
    return p.returncode, read_counter(counter)


def by_pid(rep: dict) -> dict[int, dict]:
    return {p["pid"]: p for p in rep["processes"]}


def findings(rep: dict, fid: str) -> list[dict]:
    return [f for f in rep["findings"] if f["id"] == fid]


class TempDirTest(unittest.TestCase):
    """A TestCase with self.tmp, removed afterwards unless KEEP_TEST_DIRS is set."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ct-test-")

    def tearDown(self):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(self.tmp, ignore_errors=True)
