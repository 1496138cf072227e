"""A slow FUSE filesystem for end-to-end tests: a passthrough view of a source folder
whose opens (and, if asked, reads) sleep, and whose reads of chosen files can block for
ever (a mount that stopped answering).

Run as a daemon (what SlowMount does; fusepy, libfuse 2):
    python3 slowfs.py SOURCE MOUNTPOINT CONTROL
It mounts SOURCE at MOUNTPOINT with type ``fuse.slowfs`` (source ``slowfs``) and stays in
the foreground. Its behaviour comes from CONTROL, a JSON file outside the mount that it
re-reads whenever the file is replaced, so a test or the traced program itself can make
the mount slower halfway through a run:
    {"open_ms": 12, "read_ms": 0, "hang": ["*.bin"]}
  open_ms  every open() of a file sleeps this long before it answers;
  read_ms  every read() sleeps this long before it answers;
  hang     fnmatch patterns of paths relative to SOURCE ("sub/f00001.bin"): a read of a
           matching file never answers (the reader blocks in the kernel until the daemon
           is killed; it then gets ENOTCONN).
Write CONTROL atomically (write_control does: a new file renamed over the old one).

From a test:
    with SlowMount(self, source, open_ms=12) as mnt:   # skips self without FUSE
        ... mnt.path ... mnt.set(open_ms=40) ...
The mount is torn down when the with-block ends, when the test's cleanups run
(addCleanup) and at interpreter exit, whichever comes first: the daemon is killed
first (so nothing can stay blocked on it), then the mount is detached with
``fusermount3 -u -z``. No process and no mount outlives a failing test.
"""
from __future__ import annotations

import atexit
import errno
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

FS_TYPE = "fuse.slowfs"
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's CPython, where python3-fusepy installs
_HERE = os.path.abspath(__file__)


def write_control(control: str, open_ms: float = 0, read_ms: float = 0, hang=()) -> None:
    """Replaces the CONTROL file with these settings (atomically: the daemon never reads
    half a file)."""
    tmp = f"{control}.{os.getpid()}.{threading.get_ident()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"open_ms": open_ms, "read_ms": read_ms, "hang": list(hang)}, f)
    os.replace(tmp, control)


def mount_type(mountpoint: str) -> str | None:
    """The filesystem type /proc/self/mountinfo gives for exactly this mount point, or None
    when nothing is mounted there."""
    want = os.path.realpath(mountpoint)
    found = None
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        for line in fh:
            f = line.split()
            mp = f[4].replace("\\040", " ")
            if mp == want:
                found = f[f.index("-") + 1]  # the last mount on a point is the visible one
    return found


def fuse_unavailable() -> str:
    """Why a slowfs mount cannot be made here ("" when it can)."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    if shutil.which("fusermount3") is None and shutil.which("fusermount") is None:
        return "fusermount3 is missing (Debian package fuse3)"
    p = subprocess.run([SYSTEM_PYTHON, "-c", "import fusepy"], capture_output=True, text=True)
    if p.returncode != 0:
        return ("cannot import fusepy in " + SYSTEM_PYTHON + " (apt-get install python3-fusepy): "
                + p.stderr.strip()[-200:])
    return ""


class SlowMount:
    """A slowfs daemon serving `source` at a fresh mount point, for one test.

    Attributes: path (the mount point), source, control (the control file), pid (the
    daemon's), fs_type ("fuse.slowfs"). set(...) changes the latencies at run time.
    """

    def __init__(self, test: unittest.TestCase | None, source: str, open_ms: float = 12,
                 read_ms: float = 0, hang=(), workdir: str | None = None):
        self.test = test
        self.source = os.path.realpath(source)
        self.fs_type = FS_TYPE
        self._owned_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="ct-slowfs-")
        self.path = os.path.join(self.workdir, "mnt")
        self.control = os.path.join(self.workdir, "control.json")
        self.log = os.path.join(self.workdir, "daemon.log")
        self._settings = (open_ms, read_ms, tuple(hang))
        self._proc: subprocess.Popen | None = None
        self._closed = False
        self.pid = None

    # ---- setup -------------------------------------------------------------------------
    def __enter__(self) -> "SlowMount":
        why = fuse_unavailable()
        if why:
            self._remove_workdir()
            self._skip("no FUSE here: " + why)
        os.makedirs(self.path, exist_ok=True)
        write_control(self.control, *self._settings)
        # Registered before the daemon starts: a test that fails from here on still
        # tears the mount down.
        if self.test is not None:
            self.test.addCleanup(self.close)
        atexit.register(self.close)
        env = {k: v for k, v in os.environ.items()
               if k != "LD_PRELOAD" and not k.startswith("COLABTRACE_")}  # never traced
        with open(self.log, "wb") as log:
            self._proc = subprocess.Popen(
                [SYSTEM_PYTHON, _HERE, self.source, self.path, self.control],
                env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
        self.pid = self._proc.pid
        deadline = time.monotonic() + 20
        while mount_type(self.path) != FS_TYPE:
            if self._proc.poll() is not None or time.monotonic() > deadline:
                out = self._log_tail()
                self.close()
                self._skip(f"the slowfs daemon could not mount {self.path} "
                                   f"(FUSE not permitted here?): {out}")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- while mounted -----------------------------------------------------------------
    def set(self, open_ms: float | None = None, read_ms: float | None = None, hang=None) -> None:
        """Changes the latencies (None keeps a value); later opens and reads obey."""
        o, r, h = self._settings
        self._settings = (o if open_ms is None else open_ms, r if read_ms is None else read_ms,
                          h if hang is None else tuple(hang))
        write_control(self.control, *self._settings)

    def alive(self) -> bool:
        """Whether the daemon still runs."""
        return self._proc is not None and self._proc.poll() is None

    # ---- teardown ----------------------------------------------------------------------
    def close(self) -> None:
        """Kills the daemon, then detaches the mount (lazily: a process still inside it
        gets ENOTCONN, never a hang). Idempotent; never raises."""
        if self._closed:
            return
        self._closed = True
        if self._proc is not None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for cmd in (["fusermount3", "-u", "-z", self.path], ["fusermount", "-u", "-z", self.path],
                    ["umount", "-l", self.path]):
            if mount_type(self.path) is None:
                break
            try:
                subprocess.run(cmd, capture_output=True, timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._remove_workdir()
        try:
            atexit.unregister(self.close)
        except Exception:  # noqa: BLE001 (interpreter shutting down)
            pass

    def _skip(self, why: str) -> None:
        """Skips the test (unittest.SkipTest without one)."""
        if self.test is not None:
            self.test.skipTest(why)
        raise unittest.SkipTest(why)

    def _remove_workdir(self) -> None:
        if self._owned_workdir and mount_type(self.path) is None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _log_tail(self) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()[-600:].strip()
        except OSError:
            return ""


# ---- the daemon ---------------------------------------------------------------------------

def _serve(source: str, mountpoint: str, control: str) -> None:
    import fusepy  # Debian's python3-fusepy (libfuse 2)

    class Settings:
        """The control file's values, re-read when the file is replaced."""

        def __init__(self):
            self.key = None
            self.open_s = self.read_s = 0.0
            self.hang: list[str] = []
            self.lock = threading.Lock()

        def current(self):
            try:
                st = os.stat(control)
                key = (st.st_ino, st.st_mtime_ns, st.st_size)
            except OSError:
                key = None
            with self.lock:
                if key is not None and key != self.key:
                    try:
                        with open(control, encoding="utf-8") as f:
                            c = json.load(f)
                        self.open_s = float(c.get("open_ms", 0)) / 1000
                        self.read_s = float(c.get("read_ms", 0)) / 1000
                        self.hang = [str(p) for p in c.get("hang", [])]
                        self.key = key
                    except (OSError, ValueError):
                        pass  # keep the last good settings
                return self.open_s, self.read_s, self.hang

    settings = Settings()
    never = threading.Event()  # never set: a hung read waits on it until the daemon dies

    class SlowFs(fusepy.Operations):
        """Passthrough to `source`, read-only, with the delays of the control file."""

        def _real(self, path):
            return os.path.join(source, path.lstrip("/"))

        def getattr(self, path, fh=None):
            try:
                st = os.lstat(self._real(path))
            except OSError as e:
                raise fusepy.FuseOSError(e.errno)
            return {k: getattr(st, k) for k in (
                "st_mode", "st_nlink", "st_size", "st_uid", "st_gid", "st_atime", "st_mtime",
                "st_ctime")}

        def readdir(self, path, fh):
            try:
                return [".", ".."] + os.listdir(self._real(path))
            except OSError as e:
                raise fusepy.FuseOSError(e.errno)

        def readlink(self, path):
            return os.readlink(self._real(path))

        def statfs(self, path):
            st = os.statvfs(self._real(path))
            return {k: getattr(st, k) for k in (
                "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
                "f_flag", "f_frsize", "f_namemax")}

        def open(self, path, flags):
            if flags & (os.O_WRONLY | os.O_RDWR):
                raise fusepy.FuseOSError(errno.EROFS)
            open_s, _, _ = settings.current()
            if open_s > 0:
                time.sleep(open_s)
            try:
                return os.open(self._real(path), os.O_RDONLY)
            except OSError as e:
                raise fusepy.FuseOSError(e.errno)

        def read(self, path, size, offset, fh):
            _, read_s, hang = settings.current()
            rel = path.lstrip("/")
            if any(fnmatch.fnmatch(rel, p) for p in hang):
                never.wait()
            if read_s > 0:
                time.sleep(read_s)
            return os.pread(fh, size, offset)

        def release(self, path, fh):
            os.close(fh)
            return 0

    fusepy.FUSE(SlowFs(), mountpoint, foreground=True, nothreads=False, ro=True,
                fsname="slowfs", subtype="slowfs")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: slowfs.py SOURCE MOUNTPOINT CONTROL")
    _serve(os.path.realpath(sys.argv[1]), sys.argv[2], sys.argv[3])
