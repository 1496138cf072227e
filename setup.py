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
import shlex
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))


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
        self.copy_file(os.path.join(cmake_dir, "lib", "libcolabtrace.so"), lib_dir)
        self.copy_file(os.path.join(cmake_dir, "bin", "colabtrace"), lib_dir)
        header = os.path.join(ROOT, "include", "colabtrace", "colabtrace.h")
        if os.path.exists(header):
            include_dir = os.path.join(self.build_lib, "colabtrace", "include", "colabtrace")
            self.mkpath(include_dir)
            self.copy_file(header, include_dir)


class BinaryDistribution(Distribution):
    """The wheel holds a native library and program: platform-tagged, never pure."""

    def has_ext_modules(self):
        return True


# Not build/: that name is the project's own CMake build folder (README.md).
os.makedirs(os.path.join(ROOT, "build-pip"), exist_ok=True)
setup(
    cmdclass={"build_py": BuildPyWithNative},
    distclass=BinaryDistribution,
    options={"build": {"build_base": "build-pip"}, "egg_info": {"egg_base": "build-pip"}},
)
