"""Ground truth for the audit tests: one run of a real program under `strace -f` with the
shim preloaded, so the trace and strace describe the very same processes (same pids,
same files, same bytes), and a comparison of strace's system calls with the report.

What is compared, and why these rules (docs/ARCHITECTURE.md, "What the I/O counts mean"):
the shim sees the libc entry points a program calls, strace sees system calls. The two
agree call for call on descriptor I/O (open, read, pread, readv, fstat, stat, access...)
when the program makes the call itself. They differ, by design, where libc makes calls
of its own, so the comparison leaves those out:
  - files a process opened as a FILE (fopen, fdopen, freopen: the report's own open
    record says so) or used as stdin, stdout or stderr: only their opens are compared. stdio refills its buffer with read()
    calls of its own (the report counts fread/fgets calls and the bytes they returned),
    and fstat()s the descriptor when it allocates the buffer;
  - directories: opendir/fdopendir open and fstat them inside libc, and scans are
    summarized;
  - fchmodat(AT_SYMLINK_NOFOLLOW)'s O_PATH open inside libc;
  - the shim's own system calls: it reads /proc and the ELF headers of the program it
    starts in and of each program about to be exec'd (set-user-ID? static?) with raw
    system calls, so programs exec'd in the run are left out; it probes mounts with
    statx(STATX_MNT_ID), which no program here asks for; and `colabtrace run`'s own
    process is not one of the job's;
  - the last file call of a process a signal ended, when it was its thread's last system
    call before the signal: the call returned in the kernel, the signal came before the
    hook recorded it, and the program never saw it return (a pool worker's stat, then the
    pool's SIGTERM). The report may lack exactly that call.
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import unittest
from collections import defaultdict
from dataclasses import dataclass, field

from ctharness import CLI, SHIM, SYSTEM_PYTHON, clean_env, dump, parse_dump_line

STRACE = shutil.which("strace")

_LINE = re.compile(r'^(?P<name>\w+)\((?P<args>.*)\)\s+=\s+(?P<ret>0x[0-9a-f]+|-?\d+|\?)(?P<rest>.*)$')
_FDPATH = re.compile(r'^(-?\d+|AT_FDCWD)<(.*)>(\(deleted\))?$')  # a file unlinked while open
# An O_TMPFILE open's unnamed file: strace -y shows "<dir>/#<inode>", the report one row per
# directory, "<dir>/<O_TMPFILE>" (pytest captures output in such files).
_TMPFILE = re.compile(r'^(.*)/#\d+$')
_READS = ("read", "pread64", "readv", "preadv", "preadv2")
_WRITES = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
_COPIES = ("copy_file_range", "sendfile")  # the source file's row counts them
_IO_FIELDS = {**{n: ("reads", "bytes_read") for n in _READS}, **{n: ("writes", "bytes_written") for n in _WRITES},
              **{n: ("copies", "bytes_copied") for n in _COPIES}}
_PATH_STATS = ("stat", "lstat", "access")  # the path is the first argument
_AT_STATS = ("newfstatat", "fstatat64", "statx", "faccessat", "faccessat2")
_STDIO_OPENS = {"fopen", "fopen64", "freopen", "freopen64", "fdopen"}
_STD_FDS = ("0", "1", "2")
# A glibc opendir: exactly these flags (a program's own O_DIRECTORY open carries others,
# or none of O_NONBLOCK).
_OPENDIR_FLAGS = "O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_DIRECTORY"
# fchmodat(AT_SYMLINK_NOFOLLOW)'s own O_PATH open (tar sets modes so); a program's O_PATH
# opens (cp probes its destination with O_PATH|O_DIRECTORY) are its calls.
_FCHMODAT_FLAGS = "O_RDONLY|O_NOFOLLOW|O_CLOEXEC|O_PATH"


def require_strace(test: unittest.TestCase) -> None:
    if STRACE is None:
        test.skipTest("strace is not installed (apt-get install strace): no ground truth")
    probe = subprocess.run([STRACE, "-f", "-qq", "-o", "/dev/null", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        test.skipTest(f"strace cannot trace here (ptrace not permitted?): {probe.stderr.strip()[:200]}")


def require_program(test: unittest.TestCase, *names: str) -> None:
    for n in names:
        if shutil.which(n) is None and not os.path.exists(n):
            test.skipTest(f"{n} is not installed")


@dataclass
class Counts:
    opens: int = 0
    reads: int = 0
    bytes_read: int = 0
    stats: int = 0
    open_errors: int = 0
    writes: int = 0
    bytes_written: int = 0
    copies: int = 0
    bytes_copied: int = 0
    mmaps: int = 0

    def as_dict(self, fields) -> dict:
        return {k: getattr(self, k) for k in fields}


@dataclass
class Task:
    tid: int
    execs: list = field(default_factory=list)  # successful execve paths, in order
    argv: list | None = None  # of the last successful execve (when strace printed it whole)
    exit_code: int | None = None
    killed_by: str | None = None
    clones: list = field(default_factory=list)  # (child tid, is a thread)
    libs: list = field(default_factory=list)  # shared objects ld.so mapped after the last exec, in order


def _split_args(s: str) -> list[str]:
    out, cur, depth, quoted, esc = [], [], 0, False, False
    for ch in s:
        if quoted:
            cur.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                quoted = False
            continue
        if ch == '"':
            quoted = True
        elif ch in "[{(<":
            depth += 1
        elif ch in "]})>":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if cur:
        out.append("".join(cur).strip())
    return out


def _unquote(s: str) -> str:
    s = s.strip()
    if s.endswith("..."):
        s = s[:-3]
    if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
        return s[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    return s


def _named(path: str) -> str:
    return _TMPFILE.sub(r"\1/<O_TMPFILE>", path)


def _fd_path(arg: str):
    m = _FDPATH.match(arg.strip())
    return (m.group(1), _named(m.group(2))) if m else (None, None)


class StraceRun:
    """The system calls of every task of one `strace -ff -y` run, as per-(pid, path)
    counts under the rules above."""

    def __init__(self, prefix: str, root: str):
        self.root = root
        self.tasks: dict[int, Task] = {}
        self.counts: dict[tuple[int, str], Counts] = defaultdict(Counts)
        self.opened_flags: dict[tuple[int, str], list[str]] = defaultdict(list)
        # Files a process used as stdin, stdout or stderr: FILEs (printf's flushes are
        # stdio's own writes), so only their opens are compared.
        self.std_streams: set[tuple[int, str]] = set()
        # Paths a process listed (getdents64): directories, even one opened without
        # O_DIRECTORY (shutil.rmtree's os.open + scandir) and gone by the end of the run.
        self.listed: set[tuple[int, str]] = set()
        # A task's file call that was its last system call before a signal came from
        # outside (the signal that ended it, if any came last; the shim's handler's own
        # calls and its re-raise do not count): ((pid, path), {field: amount}).
        self.last_call: dict[int, tuple[tuple[int, str], dict] | None] = {}
        self._tallied = None  # what the system call line scanned last counted
        files = {int(fn.rsplit(".", 1)[1]): fn for fn in glob.glob(prefix + ".*")}
        lines = {}
        for tid, fn in files.items():
            with open(fn, errors="replace") as f:
                lines[tid] = f.read().splitlines()
        for tid, ls in lines.items():
            self._scan_lifecycle(tid, ls)
        self.tgid = self._thread_groups()
        for tid, ls in lines.items():
            self._scan_io(tid, ls)

    # -- processes --
    def _scan_lifecycle(self, tid: int, ls: list[str]) -> None:
        t = self.tasks.setdefault(tid, Task(tid))
        maps: dict[str, str] = {}  # fd -> path of a .so opened since the last exec
        for line in ls:
            if line.startswith("+++ exited with"):
                t.exit_code = int(line.split()[3])
                continue
            if line.startswith("+++ killed by"):
                t.killed_by = line.split()[3]
                continue
            m = _LINE.match(line)
            if not m:
                continue
            name, ret = m.group("name"), m.group("ret")
            if name in ("execve", "execveat") and ret == "0":
                args = _split_args(m.group("args"))
                t.execs.append(_unquote(args[0 if name == "execve" else 1]))
                vec = args[1 if name == "execve" else 2]
                t.argv = None if "..." in vec else [_unquote(a) for a in _split_args(vec.strip()[1:-1]) if a]
                t.libs = []
                maps = {}
            elif name in ("clone", "clone3", "fork", "vfork") and ret.isdigit() and int(ret) > 0:
                t.clones.append((int(ret), "CLONE_THREAD" in m.group("args")))
            elif name == "openat" and ret.isdigit():
                p = re.match(r"<(.*)>", m.group("rest").strip())
                if p and re.search(r"\.so(\.\d+)*$", p.group(1)):
                    maps[ret] = p.group(1)
            elif name == "mmap" and ret.startswith("0x"):
                fd, path = _fd_path(_split_args(m.group("args"))[4])
                if path is not None and maps.get(fd) == path:
                    real = os.path.realpath(path)
                    if real not in t.libs:
                        t.libs.append(real)

    def _thread_groups(self) -> dict[int, int]:
        parent_of_thread = {}
        for t in self.tasks.values():
            for child, is_thread in t.clones:
                if is_thread:
                    parent_of_thread[child] = t.tid
        tgid = {}
        for tid in self.tasks:
            g = tid
            while g in parent_of_thread:
                g = parent_of_thread[g]
            tgid[tid] = g
        return tgid

    def processes(self) -> dict[int, Task]:
        """Tasks that are processes (not threads), by pid; not `colabtrace run` itself."""
        return {tid: t for tid, t in self.tasks.items()
                if self.tgid[tid] == tid and not (t.execs and os.path.realpath(t.execs[-1]) == os.path.realpath(CLI))}

    # -- file I/O --
    def _tally(self, tid: int, key: tuple[int, str], **amounts: int) -> None:
        c = self.counts[key]
        for k, v in amounts.items():
            setattr(c, k, getattr(c, k) + v)
        self._tallied = (key, amounts)

    def _scan_io(self, tid: int, ls: list[str]) -> None:
        pid = self.tgid[tid]
        cwd = self.root
        self._tallied = None
        after_signal = False
        for line in ls:
            if line.startswith("--- SIG"):
                # The shim's fatal-signal handler records, then sends the signal again
                # (tgkill: SI_TKILL from its own pid): its system calls come between the two
                # deliveries, and the call the first one cut short is still the last the
                # program made.
                if not ("si_code=SI_TKILL" in line and f"si_pid={pid}," in line):
                    self.last_call[tid] = self._tallied  # what the last system call counted
                after_signal = True
                continue
            if line.startswith("+++ killed by"):
                if not after_signal:  # SIGKILL: strace shows no delivery line
                    self.last_call[tid] = self._tallied
                continue
            after_signal = False
            m = _LINE.match(line)
            if not m:
                continue
            self._tallied = None
            name, ret = m.group("name"), m.group("ret")
            cw = re.search(r"AT_FDCWD<([^>]*)>", line)
            if cw:
                cwd = cw.group(1)
            args = _split_args(m.group("args"))
            r = int(ret) if re.fullmatch(r"-?\d+", ret) else None

            def at_path(dirarg: str, p: str) -> str:
                if p.startswith("/"):
                    return os.path.normpath(p)
                _, d = _fd_path(dirarg)
                return os.path.normpath(os.path.join(d or cwd, p))

            if name in ("open", "creat", "openat"):
                flags = args[1] if name == "open" else ("" if name == "creat" else args[2])
                if r is not None and r < 0:
                    rel = _unquote(args[0] if name in ("open", "creat") else args[1])
                    path = at_path("" if name in ("open", "creat") else args[0], rel)
                    if "O_TMPFILE" in flags:
                        path += "/<O_TMPFILE>"
                    if flags.strip() not in (_OPENDIR_FLAGS, _FCHMODAT_FLAGS):
                        self._tally(tid, (pid, path), open_errors=1)
                    continue
                if r is None:
                    continue
                p = re.match(r"<(.*?)>(\(deleted\))?$", m.group("rest").strip())
                if not p:
                    continue
                path = _named(p.group(1))
                self.opened_flags[(pid, path)].append(flags)
                if flags.strip() in (_OPENDIR_FLAGS, _FCHMODAT_FLAGS):
                    continue
                self._tally(tid, (pid, path), opens=1)
            elif name in _IO_FIELDS or name in ("fstat", "newfstatat") and _fd_path(args[0])[0] in _STD_FDS:
                fd, path = _fd_path(args[1] if name == "sendfile" else args[0])
                if fd in _STD_FDS:
                    self.std_streams.add((pid, path))
                    continue
                count, nbytes = _IO_FIELDS[name]
                # Failed copies count (as the report's copies do); failed reads and writes not.
                if path is not None and r is not None and (r >= 0 or count == "copies"):
                    self._tally(tid, (pid, path), **{count: 1, nbytes: max(r, 0)})
            elif name == "mmap" and ret.startswith("0x") and len(args) > 4:
                _, path = _fd_path(args[4])
                if path is not None:
                    self._tally(tid, (pid, path), mmaps=1)
            elif name == "statx" and "STATX_MNT_ID" in args[3]:
                continue  # the shim's mount probe
            elif name in _AT_STATS:
                if "AT_EMPTY_PATH" in m.group("args") and _unquote(args[1]) == "":
                    _, path = _fd_path(args[0])
                else:
                    path = at_path(args[0], _unquote(args[1]))
                if path:
                    self._tally(tid, (pid, path), stats=1)
            elif name in _PATH_STATS:
                self._tally(tid, (pid, at_path("", _unquote(args[0]))), stats=1)
            elif name == "fstat":
                _, path = _fd_path(args[0])
                if path:
                    self._tally(tid, (pid, path), stats=1)
            elif name == "getdents64":
                _, path = _fd_path(args[0])
                if path:
                    self.listed.add((pid, path))
            elif name == "chdir" and r == 0:
                cwd = at_path("", _unquote(args[0]))
            elif name == "fchdir" and r == 0:
                cwd = _fd_path(args[0])[1] or cwd


@dataclass
class AuditRun:
    returncode: int
    stdout: str
    stderr: str
    strace: StraceRun
    report: dict
    rows: dict  # (pid, path) -> io_files row of that process (export --format ndjson)
    stdio: set  # (pid, path) a process opened as a FILE
    root: str


def audit_run(test: unittest.TestCase, shell_cmd: str, root: str, env=None, timeout=120,
              via_run=False) -> AuditRun:
    """Runs `bash -c shell_cmd` in root under strace -ff with the shim preloaded, or with
    via_run under `colabtrace run` (which sets LD_PRELOAD itself; its own process is then
    left out of the comparisons), traces and strace output in siblings of root; then reads
    both back."""
    base = os.path.dirname(root.rstrip("/"))
    out = os.path.join(base, "traces")
    prefix = os.path.join(base, "strace", "s")
    for d in (out, os.path.dirname(prefix)):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    e = clean_env(env)
    # -E: only the traced command gets the shim; strace itself runs bare.
    argv = [STRACE, "-ff", "-y", "-q", "-s", "256", "-o", prefix]
    if via_run:
        shutil.rmtree(out)
        argv += [CLI, "run", "-o", out, "--", "bash", "-c", shell_cmd]
    else:
        argv += ["-E", f"LD_PRELOAD={SHIM}", "-E", f"COLABTRACE_OUT={out}/", "bash", "-c", shell_cmd]
    p = subprocess.run(argv, cwd=root, env=e, capture_output=True, text=True, timeout=timeout)
    st = StraceRun(prefix, root)
    rep = json.loads(subprocess.run([CLI, "report", "--format", "json", out], capture_output=True, text=True,
                                    check=True).stdout)
    nd = os.path.join(base, "ndjson")
    shutil.rmtree(nd, ignore_errors=True)
    subprocess.run([CLI, "export", "--format", "ndjson", "-o", nd, out], check=True, capture_output=True)
    rows = {}
    with open(os.path.join(nd, "io_files.ndjson")) as f:
        for line in f:
            j = json.loads(line)
            rows[(j["pid"], j["path"])] = j
    stdio = set()
    for trace in glob.glob(os.path.join(out, "*.ctrace")):
        pid = None
        for line in dump(trace):
            parsed = parse_dump_line(line)
            if parsed is None:
                continue
            kind, rec = parsed
            if kind == "process_start":
                pid = int(rec["pid"])
            elif kind == "io_open" and rec.get("path", "").startswith(root):
                from_stdio = rec.get("api") and _api_name(int(rec["api"])) in _STDIO_OPENS
                if from_stdio and pid is not None:
                    stdio.add((pid, rec["path"]))
    return AuditRun(p.returncode, p.stdout, p.stderr, st, rep, rows, stdio, root)


_API_NAMES: dict[int, str] = {}


def _api_name(code: int) -> str:
    if not _API_NAMES:
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "..", "..", "include", "colabtrace", "format", "records.h")) as f:
            text = f.read()
        block = text[text.index("#define COLABTRACE_IO_APIS(X)"):]
        block = block[:block.index("enum class IoApi")]
        for c, _, n in re.findall(r'X\((\d+), (\w+), "([^"]+)"\)', block):
            _API_NAMES[int(c)] = n
    return _API_NAMES.get(code, str(code))


ALL_FIELDS = ("opens", "open_errors", "reads", "bytes_read", "stats", "writes", "bytes_written", "copies",
              "bytes_copied", "mmaps")


def compare_files(run: AuditRun, paths=None, fields=ALL_FIELDS) -> tuple[list, int]:
    """Per (process, file under root): strace's counts against the report's, under the
    rules in the module docstring. Returns (differences, rows compared)."""
    keys = {k for k in run.strace.counts if k[1].startswith(run.root + "/")}
    keys |= {k for k in run.rows if k[1].startswith(run.root + "/")}
    procs = run.strace.processes()
    programs = {os.path.realpath(os.path.join(run.root, e)) for t in run.strace.tasks.values() for e in t.execs}
    diffs, compared = [], 0
    for pid, path in sorted(keys):
        if paths is not None and path not in paths:
            continue
        if pid not in procs or path in programs:
            continue
        row = run.rows.get((pid, path), {})
        directory = (os.path.isdir(path) or (pid, path) in run.strace.listed or
                     any("O_DIRECTORY" in f and "O_TMPFILE" not in f for f in run.strace.opened_flags.get((pid, path), [])))
        # A FILE's opens (and failed opens) are exact; its reads and writes are stdio's. So
        # are a directory's opens (opendir's own open is a scan, not an open).
        exact_opens = directory or (pid, path) in run.stdio or (pid, path) in run.strace.std_streams
        if os.path.isfile(path) and row.get("kind") == "directory":
            diffs.append(f"pid {pid} {path}: a regular file reported as a directory")
        use = tuple(k for k in fields if k in ("opens", "open_errors")) if exact_opens else fields
        s = run.strace.counts.get((pid, path), Counts()).as_dict(use)
        r = {k: row.get(k, 0) for k in use}
        compared += 1
        if s != r and not (procs[pid].killed_by and _lost_last_call(run, pid, path, s, r)):
            diffs.append(f"pid {pid} {path}: strace {s} report {r}")
    return diffs, compared


def _lost_last_call(run: AuditRun, pid: int, path: str, s: dict, r: dict) -> bool:
    """A process a signal ended may have been ended inside a hooked call: its system call
    returned (strace saw it), the signal came before the hook recorded it, and the program
    never saw the call return, so the trace loses nothing it promises. Found under load:
    a multiprocessing pool worker's stat of its main script, then the pool's SIGTERM. True
    when the report lacks exactly one of its threads' last call, on this path (the caller
    checks that a signal ended it)."""
    for tid, group in run.strace.tgid.items():
        last = run.strace.last_call.get(tid)
        if group != pid or last is None or last[0] != (pid, path):
            continue
        if {k: v - last[1].get(k, 0) for k, v in s.items()} == r:
            return True
    return False


def _interpreted(path: str, argv):
    """What the kernel runs for an execve of path: an interpreter script ("#!interp [arg]")
    runs interp with argv [interp, (arg,) path, argv[1:]...], as /proc/PID/exe and cmdline
    (and so the report) show; strace shows the execve's own path and argv. Returns
    (executable, argv) of the process."""
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return path, argv
    if not first.startswith(b"#!"):
        return path, argv
    words = first[2:].decode(errors="replace").strip().split(None, 1)
    if not words:
        return path, argv
    return words[0], None if argv is None else [words[0], *words[1:], path, *argv[1:]]


def compare_processes(run: AuditRun) -> list:
    """Every process strace saw is in processes[] with its parent, program, arguments and
    exit status, and no other."""
    diffs = []
    procs = run.strace.processes()
    parent = {}
    for t in run.strace.tasks.values():
        for child, is_thread in t.clones:
            if not is_thread:
                parent[child] = run.strace.tgid[t.tid]
    rep = {p["pid"]: p for p in run.report["processes"]}
    if set(procs) != set(rep):
        diffs.append(f"pids: strace-only {sorted(set(procs) - set(rep))} report-only {sorted(set(rep) - set(procs))}")
    for pid in sorted(set(procs) & set(rep)):
        t, p = procs[pid], rep[pid]
        end = p["end"]
        if t.killed_by is not None:
            # SIGKILL leaves no end record of its own: "killed", with the reaper's signal.
            kind = "killed" if t.killed_by == "SIGKILL" else "signaled"
            if end["kind"] != kind or end["signal"] != signal.Signals[t.killed_by].value:
                diffs.append(f"pid {pid}: strace killed by {t.killed_by}, report {end}")
        elif end["kind"] != "exited" or end["code"] != t.exit_code:
            diffs.append(f"pid {pid}: strace exit {t.exit_code}, report {end}")
        if pid in parent and parent[pid] in procs and p["ppid"] != parent[pid]:
            diffs.append(f"pid {pid}: strace parent {parent[pid]}, report ppid {p['ppid']}")
        exe, argv = (_interpreted(os.path.join(run.root, t.execs[-1]), t.argv) if t.execs else (None, t.argv))
        if argv is not None and p["argv"] != argv:
            diffs.append(f"pid {pid}: strace argv {argv}, report argv {p['argv']}")
        if t.execs:
            want = os.path.realpath(exe)
            if os.path.realpath(p["exe"]) != want:
                diffs.append(f"pid {pid}: strace exec'd {want}, report exe {p['exe']}")
    return diffs


def compare_libraries(run: AuditRun) -> list:
    """Per process: the shared objects ld.so mapped (strace: opened, then mmap'd, after
    the last exec) are the report's libraries[] of that process's last image, besides the
    shim, the dynamic loader, the vDSO and the program itself, which ld.so does not open;
    the program's own row is the one marked executable."""
    diffs = []
    last_image = defaultdict(int)
    for lib in run.report["libraries"]:
        if lib.get("ok") is not False:
            last_image[lib["pid"]] = max(last_image[lib["pid"]], lib["image"])
    by_pid = defaultdict(set)
    for lib in run.report["libraries"]:
        if lib.get("ok") is False or lib["image"] != last_image[lib["pid"]]:
            continue  # a failed load, or an image before the last exec
        if lib.get("executable") or not lib["path"].startswith("/"):
            continue
        by_pid[lib["pid"]].add(os.path.realpath(lib["path"]))
    shim = os.path.realpath(SHIM)
    for pid, t in sorted(run.strace.processes().items()):
        if not t.execs:
            continue  # a fork child: the parent's libraries, mapped by no one
        # The process's threads map libraries too (a JVM loads libjava on its main thread).
        threads = [x for x in run.strace.tasks.values() if run.strace.tgid[x.tid] == pid]
        want = {p for x in threads for p in x.libs if p != shim}
        got = {p for p in by_pid.get(pid, set()) if p != shim and "/ld-linux" not in p}
        exe = [lib["path"] for lib in run.report["libraries"]
               if lib["pid"] == pid and lib.get("executable") and lib["image"] == last_image[pid]]
        program = os.path.realpath(_interpreted(os.path.join(run.root, t.execs[-1]), None)[0])
        if [os.path.realpath(p) for p in exe] != [program]:
            if t.killed_by is not None and not any(
                    lib["pid"] == pid and lib.get("executable") and os.path.realpath(lib["path"]) == program
                    for lib in run.report["libraries"]):
                # Killed between its last exec and the shim's constructor there (a spawn
                # pool worker SIGTERMed as it starts, more likely under load): that image
                # wrote nothing, so neither its executable nor its libraries are in the
                # trace. Only a process that died of a signal may lack its last image.
                continue
            diffs.append(f"pid {pid} ({t.execs[-1]}): executable rows of the last image: {exe}")
        if t.killed_by is not None and got <= want and any(
                set(x.libs[len(x.libs) - len(want - got):]) == want - got for x in threads):
            # Killed inside a dlopen: the shim records a load when the call returns (no
            # returned call is lost), so strace saw the maps of the load in flight, the last
            # ones that thread made.
            continue
        if want != got:
            diffs.append(f"pid {pid} ({t.execs[-1]}): strace-only {sorted(want - got)} report-only {sorted(got - want)}")
    return diffs


class AuditChecks:
    """The checks every audit test makes, as a mixin of a TempDirTest: set SCRIPT (run
    by bash in self.root), PROGRAMS (skip when one is missing), MIN_FILES (rows the file
    comparison must at least cover) and optionally prepare(root) to lay out its files.
    setUp runs the script once; each check compares one part of the report with strace."""

    SCRIPT = ""
    PROGRAMS: tuple = ()
    MIN_FILES = 1
    ENV: dict | None = None
    VIA_RUN = False  # under `colabtrace run` rather than LD_PRELOAD
    FIELDS = ALL_FIELDS
    # The warning and error findings the run truly deserves (a healthy run: none).
    FINDINGS: tuple = ()

    def prepare(self, root: str) -> None:
        pass

    def setUp(self):
        super().setUp()
        require_strace(self)
        require_program(self, *self.PROGRAMS)
        self.root = os.path.join(self.tmp, "w")
        os.makedirs(self.root)
        self.prepare(self.root)
        self.run_ = audit_run(self, self.SCRIPT, self.root, env=self.ENV, via_run=self.VIA_RUN)

    def test_file_counts_equal_strace(self):
        self.maxDiff = None
        diffs, compared = compare_files(self.run_, fields=self.FIELDS)
        self.assertGreaterEqual(compared, self.MIN_FILES)
        self.assertEqual(diffs, [])

    def test_processes_and_exit_codes_equal_strace(self):
        self.assertEqual(compare_processes(self.run_), [])

    def test_no_false_alarm(self):
        # perf.* verdicts judge time, and this run's time is strace's: every system call
        # stops the process twice for the tracer, so a loop waits for its (traced) DataLoader
        # workers far longer than bare (the spawn training loop waited 92% of its steps).
        # The perf.* rules are held to the program's own measurements in tests/perf.
        got = sorted({f["id"] for f in self.run_.report["findings"]
                      if f["severity"] != "info" and not f["id"].startswith("perf.")})
        self.assertEqual(got, sorted(self.FINDINGS), [f["summary"] for f in self.run_.report["findings"]])

    def test_summed_rows_and_process_totals_agree(self):
        # io.files[] is one row per path summed over processes; processes[].io sums a
        # process's rows: both agree with the per-process rows (export --format ndjson).
        fields = ALL_FIELDS
        summed = defaultdict(lambda: dict.fromkeys(fields, 0))
        per_pid = defaultdict(lambda: dict.fromkeys(fields, 0))
        for (pid, path), row in self.run_.rows.items():
            for k in fields:
                summed[path][k] += row[k]
                per_pid[pid][k] += row[k]
        files = {f["path"]: {k: f.get(k, 0) for k in fields} for f in self.run_.report["io"]["files"]}
        self.assertEqual(files, dict(summed))
        totals = ("opens", "open_errors", "reads", "bytes_read", "stats", "writes", "bytes_written")
        for p in self.run_.report["processes"]:
            self.assertEqual({k: p["io"][k] for k in totals}, {k: per_pid[p["pid"]][k] for k in totals}, p["pid"])

    def test_libraries_equal_what_ld_so_mapped(self):
        self.maxDiff = None
        self.assertEqual(compare_libraries(self.run_), [])


class OnceAudit(AuditChecks):
    """AuditChecks with one traced run per class, shared by its checks (a torch run takes
    10-20 s under strace), as a mixin of a unittest.TestCase. MODULES: what SYSTEM_PYTHON
    must import (skip otherwise)."""
    MODULES: tuple = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ct-audit-")
        cls.shared = None

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        require_strace(self)
        require_program(self, *self.PROGRAMS)
        if self.MODULES and subprocess.run([SYSTEM_PYTHON, "-c", "import " + ", ".join(self.MODULES)],
                                           capture_output=True).returncode != 0:
            self.skipTest(f"{SYSTEM_PYTHON} lacks one of {', '.join(self.MODULES)}")
        self.root = os.path.join(self.tmp, "w")
        if type(self).shared is None:
            try:
                os.makedirs(self.root)
                self.prepare(self.root)
                type(self).shared = audit_run(self, self.SCRIPT, self.root, env=self.ENV, via_run=self.VIA_RUN,
                                              timeout=240)
            except Exception as e:  # noqa: BLE001
                type(self).shared = e  # every check of the class fails with the run's own error
        if isinstance(type(self).shared, Exception):
            raise type(self).shared
        self.run_ = type(self).shared
