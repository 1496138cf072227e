"""One portable wheel (issue 29): `pip wheel` of the checkout gives
colabtrace-<version>-py3-none-manylinux_2_28_<arch>.whl, made of the binaries the rest of
the suite tests (COLABTRACE_CMAKE_BUILD_DIR, as in test_pip_install.py).

- The policy check: every ELF file in the wheel is the CLI or the shim, and the CLI's
  `--version --verbose` (the project's own ELF reader) finds both within the floor: glibc's
  own libraries only, no glibc symbol version above GLIBC_2.28; `readelf` agrees on what
  they need. The check fails, naming the library and the version, for a shim that needs
  libzstd and GLIBC_2.34.
- Fresh venvs of Debian's Python 3.11 and pyenv's 3.10 install the wheel with pip alone (no
  index) and, with the build machine's abseil, zstd, fmt and libstdc++ hidden from the
  loader (bind mounts of /dev/null in a mount namespace of its own), give `colabtrace run`,
  `colabtrace report`, `python -m colabtrace`, `colabtrace.shim_path()`, one version from
  one place, the kernelspec, and (where IPython is installed) `%load_ext colabtrace`.
- On an older glibc: Debian 11's (glibc 2.31, with libdl and libpthread still apart from
  libc, the stat family still inline) in a chroot of its packages (downloaded once from
  Debian's archive, kept in ~/.cache/colabtrace-tests by tests/harness/debroot.py), the wheel's binaries trace
  python3.9 with `colabtrace run` and report it. Skipped, saying why, where the packages
  cannot be had.
"""
from __future__ import annotations

import glob
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import textwrap
import unittest
import zipfile

import debroot
from ctharness import SYSTEM_PYTHON
from test_pip_install import copy_checkout, missing_build_requirements

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
with open(os.path.join(SOURCE, "VERSION"), encoding="utf-8") as _f:
    VERSION = _f.read().strip()
TAG = f"py3-none-manylinux_2_28_{platform.machine()}"
FLOOR_LIBRARIES = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                   "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libgcc_s.so.1"}
PYTHON310 = "/root/.pyenv/versions/3.10.13/bin/python3.10"
# What the build machine has that a user's machine may not: hidden from the installed
# wheel's programs.
BUILD_LIBRARY_GLOBS = ("libabsl_*.so*", "libzstd.so*", "libfmt.so*", "libstdc++.so*")


def clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_PRELOAD", "PYTHONPATH", "PYTHONHOME", "LD_LIBRARY_PATH") and not k.startswith("COLABTRACE_")}
    env.update(extra)
    return env


def elf_files(root: str) -> list[str]:
    found = []
    for d, _, names in os.walk(root):
        for n in names:
            path = os.path.join(d, n)
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    found.append(os.path.relpath(path, root))
    return sorted(found)


def hidden_build_libraries() -> list[str]:
    libdir = f"/usr/lib/{platform.machine()}-linux-gnu"
    return sorted(p for g in BUILD_LIBRARY_GLOBS for p in glob.glob(os.path.join(libdir, g)))


def can_hide_libraries() -> str:
    """Why a mount namespace cannot hide files here ("" when it can)."""
    if shutil.which("unshare") is None:
        return "no unshare(1)"
    p = subprocess.run(["unshare", "-m", "true"], capture_output=True, text=True)
    return "" if p.returncode == 0 else f"unshare -m failed: {p.stderr.strip()}"


@unittest.skipIf(missing_build_requirements(), f"{SYSTEM_PYTHON} lacks setuptools/wheel/venv")
class Wheel(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ct-wheel-")
        src = os.path.join(cls.tmp, "src")
        copy_checkout(src)
        env = clean_env()
        if os.environ.get("COLABTRACE_BUILD_DIR"):
            env["COLABTRACE_CMAKE_BUILD_DIR"] = os.environ["COLABTRACE_BUILD_DIR"]
        cls.dist = os.path.join(cls.tmp, "dist")
        p = subprocess.run([SYSTEM_PYTHON, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                            "-w", cls.dist, src], env=env, capture_output=True, text=True, timeout=2100)
        if p.returncode != 0:
            raise AssertionError(f"pip wheel failed ({p.returncode}):\n{p.stdout[-6000:]}\n{p.stderr[-6000:]}")
        (cls.wheel,) = glob.glob(os.path.join(cls.dist, "*.whl"))
        cls.unpacked = os.path.join(cls.tmp, "unpacked")
        with zipfile.ZipFile(cls.wheel) as z:
            z.extractall(cls.unpacked)
        cls.cli = os.path.join(cls.unpacked, "colabtrace", "_lib", "colabtrace")
        os.chmod(cls.cli, 0o755)  # zipfile does not restore modes (pip does)

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_ok(self, argv, **kw) -> subprocess.CompletedProcess:
        kw.setdefault("env", clean_env())
        p = subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)
        self.assertEqual(p.returncode, 0, f"{argv}:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        return p

    # ---- the wheel itself ------------------------------------------------------------
    def test_one_wheel_for_every_python3(self):
        self.assertEqual(os.path.basename(self.wheel), f"colabtrace-{VERSION}-{TAG}.whl")
        with open(glob.glob(os.path.join(self.unpacked, "*.dist-info", "WHEEL"))[0], encoding="utf-8") as f:
            wheel = f.read()
        self.assertIn(f"Tag: {TAG}\n", wheel)
        self.assertIn("Root-Is-Purelib: false\n", wheel)

    def test_every_elf_file_meets_the_floor(self):
        self.assertEqual(elf_files(self.unpacked), ["colabtrace/_lib/colabtrace", "colabtrace/_lib/libcolabtrace.so"])
        os.chmod(os.path.join(self.unpacked, "colabtrace", "_lib", "libcolabtrace.so"), 0o755)
        out = self.run_ok([self.cli, "--version", "--verbose"]).stdout
        self.assertTrue(out.startswith(f"colabtrace {VERSION} (trace format 1."), out)
        self.assertIn("glibc 2.28 or later (manylinux_2_28)", out)
        self.assertNotIn("above the floor", out)
        for what, name in (("the CLI", "colabtrace"), ("the shim", "libcolabtrace.so")):
            path = os.path.realpath(os.path.join(self.unpacked, "colabtrace", "_lib", name))
            m = re.search(rf"  {what}: {re.escape(path)}\n    needs: (.*)\n    newest glibc symbol version: (\S+)\n", out)
            self.assertIsNotNone(m, out)
            needs = m.group(1).split()
            self.assertTrue(set(needs) <= FLOOR_LIBRARIES, needs)
            major, minor = (int(x) for x in m.group(2).removeprefix("GLIBC_").split(".")[:2])
            self.assertLessEqual((major, minor), (2, 28), m.group(2))
            if shutil.which("readelf"):  # another reader agrees
                dyn = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True).stdout
                self.assertEqual(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn), needs)
                versions = subprocess.run(["readelf", "-VW", path], capture_output=True, text=True, check=True).stdout
                glibc = {tuple(int(x) for x in v.split(".")[:2]) for v in re.findall(r"Name: GLIBC_([\d.]+)", versions)}
                self.assertEqual(max(glibc), (major, minor))

    def test_the_check_names_what_breaks_the_floor(self):
        # A shim built as a careless toolchain would: it needs libzstd and binds dladdr at
        # glibc 2.34's version.
        bad = os.path.join(self.tmp, "bad")
        os.makedirs(bad, exist_ok=True)
        shutil.copy2(self.cli, bad)
        src = os.path.join(bad, "bad.c")
        with open(src, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent("""\
                #define _GNU_SOURCE
                #include <dlfcn.h>
                #include <zstd.h>
                unsigned colabtrace_bad(void) { Dl_info i; return dladdr((void *)&colabtrace_bad, &i) + ZSTD_versionNumber(); }
                """))
        p = subprocess.run(["cc", "-shared", "-fPIC", "-o", os.path.join(bad, "libcolabtrace.so"), src, "-lzstd"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest(f"cannot build the bad shim: {p.stderr.strip()}")
        p = subprocess.run([os.path.join(bad, "colabtrace"), "--version", "--verbose"], capture_output=True,
                           text=True, env=clean_env(), timeout=60)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("    above the floor: libzstd.so.1 (not one of glibc's libraries)\n", p.stdout)
        self.assertIn("    above the floor: GLIBC_2.34 from libc.so.6 (above GLIBC_2.28)\n", p.stdout)
        self.assertIn("These binaries do not meet the floor", p.stdout)
        # The CLI itself still meets it: only the shim is named.
        self.assertEqual(p.stdout.count("above the floor:"), 2, p.stdout)

    # ---- fresh installs ------------------------------------------------------------------
    def install(self, python: str, system_site: bool) -> str:
        venv = os.path.join(self.tmp, "venv-" + os.path.basename(python))
        args = [python, "-m", "venv", *(["--system-site-packages"] if system_site else []), venv]
        self.run_ok(args)
        self.run_ok([os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-index", "--no-deps",
                     self.wheel])
        return venv

    def hidden(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        """Runs argv in a mount namespace where the build machine's libraries read as
        empty files: a program that needs one cannot start."""
        libs = hidden_build_libraries()
        script = "".join(f"mount --bind /dev/null '{p}' && " for p in libs) + 'exec "$@"'
        return self.run_ok(["unshare", "-m", "sh", "-c", script, "sh", *argv], **kw)

    def check_fresh_install(self, python: str, system_site: bool):
        why = can_hide_libraries()
        if why:
            self.skipTest(why)
        venv = self.install(python, system_site)
        py, cmd = os.path.join(venv, "bin", "python"), os.path.join(venv, "bin", "colabtrace")
        # The hiding works: a program of the build that needs them cannot start.
        if hidden_build_libraries():
            p = subprocess.run(["unshare", "-m", "sh", "-c",
                                "".join(f"mount --bind /dev/null '{p}' && " for p in hidden_build_libraries())
                                + "exec python3 -c 'import ctypes; ctypes.CDLL(\"libzstd.so.1\")'"],
                               capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0, "the build's libraries are still loadable")
        version = self.hidden([cmd, "--version"]).stdout
        self.assertEqual(version, self.hidden([py, "-m", "colabtrace", "--version"]).stdout)
        package_version = self.hidden([py, "-c", "import colabtrace; print(colabtrace.__version__)"]).stdout.strip()
        self.assertEqual(package_version, VERSION)
        self.assertTrue(version.startswith(f"colabtrace {VERSION} "), version)
        shim = self.hidden([py, "-c", "import colabtrace; print(colabtrace.shim_path())"]).stdout.strip()
        self.assertTrue(shim.startswith(os.path.realpath(venv)) and os.path.isfile(shim), shim)
        self.hidden([cmd, "--version", "--verbose"])
        # colabtrace run of a small Python program, and its report.
        out = os.path.join(self.tmp, "run-" + os.path.basename(python))
        code = "import os\nfor n in sorted(os.listdir('/etc'))[:20]: os.stat('/etc/' + n)\nprint('done')\n"
        ran = self.hidden([cmd, "run", "-o", out, "--", py, "-c", code])
        self.assertIn("done", ran.stdout)
        rep = json.loads(self.hidden([py, "-m", "colabtrace", "report", "--format", "json", out]).stdout)
        (proc,) = [p for p in rep["processes"] if p["argv"][1:2] == ["-c"]]
        self.assertEqual(proc["end"]["kind"], "exited")
        self.assertEqual(proc["end"]["code"], 0)
        self.assertEqual([f["id"] for f in rep["findings"] if f["severity"] in ("error", "warning")], [])
        # The kernelspec.
        prefix = os.path.join(self.tmp, "kernel-" + os.path.basename(python))
        self.hidden([cmd, "kernel", "install", "--prefix", prefix, "--python", py])
        specs = glob.glob(os.path.join(prefix, "share", "jupyter", "kernels", "*", "kernel.json"))
        self.assertEqual(len(specs), 1, specs)
        with open(specs[0], encoding="utf-8") as f:
            argv = json.load(f)["argv"]
        self.assertIn(py, argv)
        self.assertTrue(argv[0].startswith(os.path.realpath(venv)), argv)  # the wheel's own CLI
        return venv, py

    def test_fresh_venv_debian_python311(self):
        venv, py = self.check_fresh_install(SYSTEM_PYTHON, system_site=True)
        have_ipython = subprocess.run([py, "-c", "import IPython"], capture_output=True).returncode == 0
        if have_ipython:  # Debian's python3-ipython, through the system site packages
            p = self.hidden([py, "-c", "from IPython.core.interactiveshell import InteractiveShell\n"
                                       "ip = InteractiveShell.instance()\nip.run_line_magic('load_ext', 'colabtrace')\n"
                                       "print('loaded', 'colabtrace' in ip.extension_manager.loaded)"])
            self.assertIn("loaded True", p.stdout)

    @unittest.skipUnless(os.path.exists(PYTHON310), f"no {PYTHON310}")
    def test_fresh_venv_pyenv_python310(self):
        self.check_fresh_install(PYTHON310, system_site=False)

    # ---- an older glibc ------------------------------------------------------------------
    def test_runs_on_glibc_2_31(self):
        root, why = bullseye_root()
        if root is None:
            self.skipTest(why)
        lib = os.path.join(self.unpacked, "colabtrace", "_lib")
        debroot.install_binaries(root, [os.path.join(lib, name) for name in os.listdir(lib)])
        out = "/tmp/ct-wheel-run"
        for d in (out, out + "-crash"):
            shutil.rmtree(root + d, ignore_errors=True)
        with debroot.proc_mounted(root):
            code = "import os, threading\nt = threading.Thread(target=os.listdir, args=('/etc',)); t.start(); t.join()\n" \
                   "pid = os.fork()\nif pid == 0: os._exit(3)\nprint('child', os.waitpid(pid, 0)[1] >> 8)\n"
            ran = self.run_ok(["chroot", root, "/opt/colabtrace/colabtrace", "run", "-o", out, "--",
                               "/usr/bin/python3.9", "-c", code])
            self.assertIn("child 3", ran.stdout)
            rep = json.loads(self.run_ok(["chroot", root, "/opt/colabtrace/colabtrace", "report", "--format",
                                          "json", out]).stdout)
            self.assertEqual(sorted((p["end"]["kind"], p["end"]["code"]) for p in rep["processes"]),
                             [("exited", 0), ("exited", 3)])
            self.assertEqual([f["id"] for f in rep["findings"] if f["severity"] in ("error", "warning")], [])
            verbose = self.run_ok(["chroot", root, "/opt/colabtrace/colabtrace", "--version", "--verbose"]).stdout
            self.assertNotIn("above the floor", verbose)
            # A crash: the shim's unwinder (libgcc's, static) finds each frame's unwind
            # data without glibc 2.35's _dl_find_object, through dl_iterate_phdr.
            crashed = subprocess.run(["chroot", root, "/opt/colabtrace/colabtrace", "run", "-o", out + "-crash", "--",
                                      "/usr/bin/python3.9", "-c", "import os\nos.kill(os.getpid(), 11)\n"],
                                     capture_output=True, text=True, timeout=120, env=clean_env())
            self.assertEqual(crashed.returncode, 128 + 11, crashed.stderr)
            rep = json.loads(self.run_ok(["chroot", root, "/opt/colabtrace/colabtrace", "report", "--format",
                                          "json", out + "-crash"]).stdout)
            (fatal,) = [f for f in rep["findings"] if f["id"] == "proc.fatal-signal"]
            stack = fatal["evidence"]["stack"]
            self.assertTrue(stack[0].startswith("kill+"), stack)
            self.assertTrue(any(f.startswith("__libc_start_main+") for f in stack), stack)


def bullseye_root() -> tuple[str | None, str]:
    """A directory holding Debian 11's libc6 (glibc 2.31), libgcc-s1 and python3.9-minimal
    with what it needs (tests/harness/debroot.py)."""
    return debroot.debian_root("bullseye", "bullseye",
                               ["libc6", "libgcc-s1", "python3.9-minimal", "libpython3.9-minimal", "zlib1g",
                                "libexpat1", "libssl1.1"], "usr/bin/python3.9")


if __name__ == "__main__":
    unittest.main()
