"""`pip install --no-build-isolation --no-index .` of the checkout into a fresh venv
(Debian's setuptools and wheel through --system-site-packages), then the installed
`colabtrace` command, `python -m colabtrace`, the bundled shim (LD_PRELOAD and `colabtrace
run`), the start-up hook and colabtrace.step().

The checkout is copied first (tracked and untracked-but-not-ignored files, as `git
ls-files` lists them), so no build folder of the tree leaks into the package build. The
package is made of the binaries the rest of the suite tests: setup.py is pointed at the
suite's build folder (COLABTRACE_CMAKE_BUILD_DIR), where it brings the shim and the CLI up
to date and copies them, rather than compiling them a second time (six minutes on 2
cores). COLABTRACE_PIP_FROM_SCRATCH=1 makes pip configure and build its own folder instead,
as a user's `pip install .` does; ccache, where installed, makes repeated runs of that fast
(CCACHE_BASEDIR/CCACHE_NOHASHDIR make the copy's paths match).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from ctharness import SYSTEM_PYTHON

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


def missing_build_requirements():
    p = subprocess.run([SYSTEM_PYTHON, "-c", "import setuptools, wheel, venv, ensurepip"],
                       capture_output=True, text=True)
    return p.returncode != 0 and p.stderr.strip().splitlines()[-1]


def copy_checkout(dest):
    """The checkout's files as git sees them (no build folders), or the whole tree minus
    build*/ and .git without git."""
    try:
        names = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(SOURCE, dest, symlinks=True,
                        ignore=lambda d, n: [x for x in n if x.startswith("build") or x == ".git"])
        return
    for name in filter(None, names.decode().split("\0")):
        src = os.path.join(SOURCE, name)
        if not os.path.lexists(src):  # deleted in the working tree
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
        shutil.copy2(src, os.path.join(dest, name), follow_symlinks=False)


@unittest.skipIf(missing_build_requirements(),
                 f"{SYSTEM_PYTHON} lacks setuptools/wheel/venv (python3-setuptools, python3-wheel, "
                 f"python3-venv): {missing_build_requirements()}")
class PipInstall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ct-pip-")
        cls.src = os.path.join(cls.tmp, "src")
        copy_checkout(cls.src)
        cls.venv = os.path.join(cls.tmp, "venv")
        subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", cls.venv], check=True)
        cls.python = os.path.join(cls.venv, "bin", "python")
        env = cls.clean_env()
        if not os.environ.get("COLABTRACE_PIP_FROM_SCRATCH") and os.environ.get("COLABTRACE_BUILD_DIR"):
            env["COLABTRACE_CMAKE_BUILD_DIR"] = os.environ["COLABTRACE_BUILD_DIR"]
        elif shutil.which("ccache"):
            env.update(CMAKE_ARGS="-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
                       CCACHE_BASEDIR=cls.src, CCACHE_NOHASHDIR="1")
        env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        p = subprocess.run([cls.python, "-m", "pip", "install", "--no-build-isolation", "--no-index",
                            cls.src], env=env, capture_output=True, text=True, timeout=2100)
        if p.returncode != 0:
            raise AssertionError(f"pip install failed ({p.returncode}):\n{p.stdout[-6000:]}\n{p.stderr[-6000:]}")

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @staticmethod
    def clean_env(**extra):
        env = {k: v for k, v in os.environ.items()
               if k not in ("LD_PRELOAD", "PYTHONPATH", "PYTHONHOME") and not k.startswith("COLABTRACE_")}
        env.update(extra)
        return env

    def run_ok(self, argv, **kw):
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)
        self.assertEqual(p.returncode, 0, f"{argv}: {p.stderr}")
        return p

    def package_call(self, expr):
        return self.run_ok([self.python, "-c", f"import colabtrace; print({expr})"],
                           env=self.clean_env(), cwd=self.tmp).stdout.strip()

    def test_command_and_module_show_the_cli_help(self):
        command = self.run_ok([os.path.join(self.venv, "bin", "colabtrace"), "--help"], env=self.clean_env())
        module = self.run_ok([self.python, "-m", "colabtrace", "--help"], env=self.clean_env(), cwd=self.tmp)
        self.assertIn("Usage: colabtrace <command>", command.stdout)
        self.assertEqual(command.stdout, module.stdout)
        self.assertIn("  run ", command.stdout)

    def test_shim_is_inside_the_installed_package(self):
        site = self.package_call("colabtrace.__file__")
        shim = self.package_call("colabtrace.shim_path()")
        self.assertTrue(shim.startswith(os.path.realpath(self.venv)), shim)
        self.assertEqual(os.path.dirname(shim), os.path.join(os.path.dirname(site), "_lib"))
        self.assertTrue(os.path.isfile(shim))
        header = os.path.join(self.package_call("colabtrace.include_dir()"), "colabtrace", "colabtrace.h")
        self.assertTrue(os.path.isfile(header), header)

    def test_preloading_the_shim_leaves_a_trace(self):
        out = os.path.join(self.tmp, "preload")
        os.mkdir(out)
        shim = self.package_call("colabtrace.shim_path()")
        self.run_ok([self.python, "-c", "pass"], env=self.clean_env(LD_PRELOAD=shim, COLABTRACE_OUT=out + "/"))
        traces = [t for t in os.listdir(out) if t.endswith(".ctrace")]
        self.assertEqual(len(traces), 1, traces)
        rep = json.loads(self.run_ok([self.python, "-m", "colabtrace", "report", "--format", "json",
                                      os.path.join(out, traces[0])], env=self.clean_env()).stdout)
        self.assertEqual(len(rep["processes"]), 1)
        self.assertEqual(rep["processes"][0]["end"]["kind"], "exited")
        self.assertEqual(rep["processes"][0]["argv"][1:], ["-c", "pass"])

    def test_run_uses_the_bundled_shim_hook_and_steps(self):
        out = os.path.join(self.tmp, "run")
        code = "import colabtrace\nfor i in range(6): colabtrace.step(i)\n"
        colabtrace = os.path.join(self.venv, "bin", "colabtrace")
        self.run_ok([colabtrace, "run", "-o", out, "--", self.python, "-c", code], env=self.clean_env())
        traces = [os.path.join(out, t) for t in os.listdir(out)
                  if t.endswith(".ctrace") and ".run." not in t]
        self.assertEqual(len(traces), 1, os.listdir(out))
        lines = self.run_ok([colabtrace, "dump", traces[0]], env=self.clean_env()).stdout.splitlines()
        steps = [l.split(" n=")[1] for l in lines if l.split(" ")[2:3] == ["step"]]
        self.assertEqual(steps, [f"{i} source=0" for i in range(6)])  # source 0: the program's marker
        # The start-up hook, found by the bundled shim in colabtrace/_startup, records the
        # distribution behind each imported package: this one, from the venv.
        packages = [l for l in lines if l.split(" ")[2:3] == ["py_package"]]
        self.assertTrue(any('name="colabtrace"' in l and 'version="0.1.0"' in l for l in packages), packages)


if __name__ == "__main__":
    unittest.main()
