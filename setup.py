"""Builds the native half of the `colabtrace` Python package (see pyproject.toml).

`build_py` first copies python/colabtrace, then configures the whole CMake project into
setuptools' temporary build folder (tests off), builds the shim (libcolabtrace.so) and
the CLI, and copies them into the package as colabtrace/_lib/, with the step-marker
header as colabtrace/include/. The shim finds the start-up hook in ../_startup and the
CLI finds the shim next to itself, so the package works from wherever pip puts it.

Environment: CMAKE_ARGS (extra configure arguments, e.g. a compiler launcher),
CMAKE_BUILD_PARALLEL_LEVEL (build jobs; CMake's own variable), COLABTRACE_CMAKE (cmake).
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
        build_temp = self.get_finalized_command("build_ext").build_temp
        cmake_dir = os.path.join(os.path.abspath(build_temp), "cmake")
        cmake = os.environ.get("COLABTRACE_CMAKE") or shutil.which("cmake")
        if cmake is None:
            sys.exit("colabtrace: building needs cmake (and ninja-build, g++, libfmt-dev, "
                     "libabsl-dev, libunwind-dev, libzstd-dev); see README.md")
        configure = [cmake, "-S", ROOT, "-B", cmake_dir, "-DCOLABTRACE_BUILD_TESTS=OFF",
                     "-DCMAKE_BUILD_TYPE=Release", f"-DPython3_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja") and not os.path.exists(os.path.join(cmake_dir, "Makefile")):
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        subprocess.check_call(configure)
        # Everything the project builds with tests off: the shim, the CLI and what they need.
        # (No --target: under Ninja, "colabtrace" names the CLI's output, not the shim.)
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
