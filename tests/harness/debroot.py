"""Directories of Debian packages from another release, for running traced programs in a
chroot: an older glibc (Debian 11's 2.31), or CPython releases this machine lacks (3.14
and 3.15 from Debian unstable).

Each root is made once, by `apt-get download` of the named packages from Debian's archive
(apt's own state kept apart from the system's) and `dpkg-deb -x` of each, and kept in
$COLABTRACE_TEST_CACHE (ctest sets it to the real ~/.cache/colabtrace-tests, outside each
test's own HOME). `apt-get download` takes no dependencies: the lists name every
package a root needs. Where the packages cannot be had (no network, no apt-get or
dpkg-deb, not root for chroot), callers get (None, why) and skip, saying why.
"""
from __future__ import annotations

import contextlib
import fcntl
import glob
import os
import shutil
import subprocess

CACHE = os.environ.get("COLABTRACE_TEST_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                                "colabtrace-tests")


def debian_root(name: str, suite: str, packages: list[str], marker: str) -> tuple[str | None, str]:
    """The root directory CACHE/<name>-root holding `packages` from Debian `suite`, made
    once; `marker` (a path inside the root) says it is complete. (None, why) where it
    cannot be made. Two tests asking at once make it once (a lock file)."""
    root = os.path.join(CACHE, f"{name}-root")
    if os.path.exists(os.path.join(root, marker)):
        return root, ""
    if os.geteuid() != 0:
        return None, "chroot needs root"
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        return None, f"no apt-get/dpkg-deb to fetch Debian {suite}'s packages"
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, f"{name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(root, marker)):
            return root, ""
        work = os.path.join(CACHE, f"{name}-apt")
        for d in ("lists/partial", "archives/partial", "etc"):
            os.makedirs(os.path.join(work, d), exist_ok=True)
        with open(os.path.join(work, "etc", "sources.list"), "w", encoding="utf-8") as f:
            f.write(f"deb [trusted=yes] http://deb.debian.org/debian {suite} main\n")
        opts = [f"-oDir::Etc::SourceList={work}/etc/sources.list", "-oDir::Etc::SourceParts=/nonexistent",
                f"-oDir::State::Lists={work}/lists", f"-oDir::Cache::Archives={work}/archives",
                "-oAPT::Sandbox::User=root"]
        p = subprocess.run(["apt-get", *opts, "update"], capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            return None, f"cannot reach Debian {suite}'s archive: {p.stderr.strip()[-300:]}"
        archives = os.path.join(work, "archives")
        for old in glob.glob(os.path.join(archives, "*.deb")):
            os.unlink(old)  # a retry after the suite moved on takes only today's versions
        p = subprocess.run(["apt-get", *opts, "download", *[f"{n}/{suite}" for n in packages]],
                           capture_output=True, text=True, timeout=600, cwd=archives)
        if p.returncode != 0:
            return None, f"cannot download Debian {suite}'s packages: {p.stderr.strip()[-300:]}"
        partial = root + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        for deb in glob.glob(os.path.join(archives, "*.deb")):
            subprocess.run(["dpkg-deb", "-x", deb, partial], check=True)
        os.makedirs(os.path.join(partial, "tmp"), exist_ok=True)
        os.makedirs(os.path.join(partial, "proc"), exist_ok=True)
        # Releases with a merged /usr (Debian 12+) ship /lib64/ld-linux-x86-64.so.2 and
        # the rest under usr/ only; base-files, not among the packages, makes the links.
        for d in ("bin", "sbin", "lib", "lib64"):
            if not os.path.lexists(os.path.join(partial, d)) and os.path.isdir(os.path.join(partial, "usr", d)):
                os.symlink(os.path.join("usr", d), os.path.join(partial, d))
        shutil.rmtree(root, ignore_errors=True)
        os.rename(partial, root)
    return root, ""


@contextlib.contextmanager
def proc_mounted(root: str):
    """/proc mounted inside root for the duration (the shim and the CLI read it)."""
    proc = os.path.join(root, "proc")
    os.makedirs(proc, exist_ok=True)
    subprocess.run(["mount", "-t", "proc", "proc", proc], check=True)
    try:
        yield
    finally:
        subprocess.run(["umount", proc], check=False)


def install_binaries(root: str, files: list[str], dest: str = "/opt/colabtrace") -> str:
    """Copies the shim and the CLI (paths here) into root at dest; returns dest."""
    opt = root + dest
    shutil.rmtree(opt, ignore_errors=True)
    os.makedirs(opt)
    for f in files:
        target = os.path.join(opt, os.path.basename(f))
        shutil.copy2(f, target)
        os.chmod(target, 0o755)
    return dest
