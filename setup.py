"""Builds the native half of the `colabtrace` Python package (see pyproject.toml).

`build_py` first copies python/colabtrace, then configures the whole CMake project into
setuptools' temporary build folder (tests off), builds the shim (libcolabtrace.so) and
the CLI, and copies them into the package as colabtrace/_lib/, with the step-marker
header as colabtrace/include/. The shim finds the start-up hook in ../_startup and the
CLI finds the shim next to itself, so the package works from wherever pip puts it.

Environment: CMAKE_ARGS (extra configure arguments, e.g. a compiler launcher),
CMAKE_BUILD_PARALLEL_LEVEL (build jobs; CMake's own variable), COLABTRACE_CMAKE (cmake),
COLABTRACE_CMAKE_BUILD_DIR (a CMake build folder of this project, already configured: it
is used as it is, not configured again, and only the shim and the CLI are brought up to
date there; the test suite packages the binaries it tests this way, rather than
compiling them a second time).
"""
import os
import platform
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel

ROOT = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(ROOT, "VERSION"), encoding="utf-8") as _f:
    VERSION = _f.read().strip()  # the one place (pyproject.toml reads it too)


class BuildPyWithNative(build_py):
    def run(self):
        super().run()
        cmake = os.environ.get("COLABTRACE_CMAKE") or shutil.which("cmake")
        if cmake is None:
            sys.exit("colabtrace: building needs cmake (and ninja-build, g++, libfmt-dev, "
                     "libabsl-dev, libunwind-dev, libzstd-dev); see README.md")
        cmake_dir = os.environ.get("COLABTRACE_CMAKE_BUILD_DIR")
        if cmake_dir:
            cmake_dir = os.path.abspath(cmake_dir)
            if not os.path.isfile(os.path.join(cmake_dir, "CMakeCache.txt")):
                sys.exit(f"colabtrace: COLABTRACE_CMAKE_BUILD_DIR={cmake_dir} is no configured "
                         "CMake build folder (no CMakeCache.txt)")
            # The two targets, brought up to date in that folder as it is configured. Under
            # Ninja the name "colabtrace" is the CLI's output, so the shim goes by its file.
            shim = ("lib/libcolabtrace.so" if os.path.exists(os.path.join(cmake_dir, "build.ninja"))
                    else "colabtrace")
            subprocess.check_call([cmake, "--build", cmake_dir, "--target", shim, "colabtrace_cli"])
        else:
            build_temp = self.get_finalized_command("build_ext").build_temp
            cmake_dir = os.path.join(os.path.abspath(build_temp), "cmake")
            configure = [cmake, "-S", ROOT, "-B", cmake_dir, "-DCOLABTRACE_BUILD_TESTS=OFF",
                         "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}"]
            if shutil.which("ninja") and not os.path.exists(os.path.join(cmake_dir, "Makefile")):
                configure += ["-G", "Ninja"]
            configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
            subprocess.check_call(configure)
            # Everything the project builds with tests off: the shim, the CLI and what they
            # need. (No --target: under Ninja, "colabtrace" names the CLI's output, not the
            # shim.)
            subprocess.check_call([cmake, "--build", cmake_dir])

        lib_dir = os.path.join(self.build_lib, "colabtrace", "_lib")
        self.mkpath(lib_dir)
        for built in (os.path.join(cmake_dir, "lib", "libcolabtrace.so"), os.path.join(cmake_dir, "bin", "colabtrace")):
            copy = os.path.join(lib_dir, os.path.basename(built))
            self.copy_file(built, copy)
            # Debug information stays in the build folder; symbols stay for stacks.
            if shutil.which("objcopy"):
                subprocess.check_call(["objcopy", "--strip-debug", copy])
        check_floor(os.path.join(lib_dir, "colabtrace"))
        with open(os.path.join(self.build_lib, "colabtrace", "_version.py"), "w", encoding="utf-8") as f:
            f.write(f'version = "{VERSION}"\n')
        header = os.path.join(ROOT, "include", "colabtrace", "colabtrace.h")
        if os.path.exists(header):
            include_dir = os.path.join(self.build_lib, "colabtrace", "include", "colabtrace")
            self.mkpath(include_dir)
            self.copy_file(header, include_dir)


def check_floor(cli):
    """Refuses binaries that would not travel: `colabtrace --version --verbose` reads the
    CLI and the shim next to it with the project's ELF reader and exits 1 when either
    needs a library beyond glibc's own or a glibc symbol version above the wheel's floor
    (manylinux_2_28). A wheel built where the toolchain raises the floor never ships."""
    p = subprocess.run([cli, "--version", "--verbose"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"colabtrace: the built binaries break the wheel's glibc floor:\n{p.stdout}{p.stderr}")


class WheelForEveryPython(bdist_wheel):
    """One wheel for every Python 3 on every glibc 2.28+ Linux of this architecture: the
    shim and the CLI are no Python extension modules (py3-none), and check_floor has
    checked what they need (manylinux_2_28)."""

    def get_tag(self):
        return "py3", "none", f"manylinux_2_28_{platform.machine()}"


class BinaryDistribution(Distribution):
    """The wheel holds a native library and program: platform-tagged, never pure."""

    def has_ext_modules(self):
        return True


# Not build/: that name is the project's own CMake build folder (README.md).
os.makedirs(os.path.join(ROOT, "build-pip"), exist_ok=True)
setup(
    cmdclass={"build_py": BuildPyWithNative, "bdist_wheel": WheelForEveryPython},
    distclass=BinaryDistribution,
    options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}},
)
