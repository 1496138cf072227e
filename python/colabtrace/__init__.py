"""colabtrace: post-mortem diagnosis of GPU training runs.

The package installed by ``pip install .`` bundles the native parts in ``_lib/``: the
LD_PRELOAD shim (``libcolabtrace.so``) and the ``colabtrace`` program, which the
``colabtrace`` command and ``python -m colabtrace`` run. In a CMake build tree the same
package is copied to ``<build>/python/colabtrace`` and finds ``<build>/lib`` and
``<build>/bin`` instead.

* ``shim_path()``: the shim, for ``LD_PRELOAD``;
* ``cli_path()``: the ``colabtrace`` program;
* ``include_dir()``: the folder holding ``colabtrace/colabtrace.h`` (C step markers);
* ``step(n)``: marks the start of step ``n`` in the trace (a no-op without the shim);
* ``load_ipython_extension``: ``%load_ext colabtrace``.
"""

import os

try:  # written from the VERSION file by setup.py (a wheel) or CMake (a build tree)
    from ._version import version as __version__
except ImportError:  # the source checkout itself (python/colabtrace)
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "VERSION"),
              encoding="utf-8") as _f:
        __version__ = _f.read().strip()
__all__ = ["shim_path", "cli_path", "include_dir", "step"]

_HERE = os.path.dirname(os.path.abspath(__file__))
# The installed package, then a build tree (<build>/python/colabtrace).
_BUILD_TREE = os.path.join(_HERE, os.pardir, os.pardir)


def _first_existing(kind, candidates):
    for path in candidates:
        if os.path.exists(path):
            return os.path.realpath(path)
    raise FileNotFoundError(f"colabtrace: no {kind} in this installation (looked at "
                            + ", ".join(os.path.normpath(p) for p in candidates) + ")")


def shim_path():
    """Absolute path of the bundled libcolabtrace.so (the LD_PRELOAD shim)."""
    return _first_existing("libcolabtrace.so", [
        os.path.join(_HERE, "_lib", "libcolabtrace.so"),
        os.path.join(_BUILD_TREE, "lib", "libcolabtrace.so")])


def cli_path():
    """Absolute path of the bundled ``colabtrace`` program."""
    return _first_existing("colabtrace program", [
        os.path.join(_HERE, "_lib", "colabtrace"),
        os.path.join(_BUILD_TREE, "bin", "colabtrace")])


def include_dir():
    """The folder to add with -I for ``#include <colabtrace/colabtrace.h>``."""
    return os.path.dirname(os.path.dirname(_first_existing("colabtrace.h", [
        os.path.join(_HERE, "include", "colabtrace", "colabtrace.h"),
        os.path.join(_HERE, os.pardir, os.pardir, "include", "colabtrace", "colabtrace.h")])))


_UNRESOLVED = object()
_step_function = _UNRESOLVED


def _shim_step_function():
    """The shim's colabtrace_step, or None when this process runs without the shim."""
    global _step_function
    if _step_function is _UNRESOLVED:
        try:
            import ctypes

            fn = ctypes.CDLL(None).colabtrace_step
            fn.argtypes = [ctypes.c_uint64]
            fn.restype = None
            _step_function = fn
        except (OSError, AttributeError, ImportError):
            _step_function = None
    return _step_function


def step(n):
    """Marks the start of step ``n`` (an epoch, a batch: any counter that is >= 0) in the
    trace, so budgets and the GPU leak trend can be read per step. A no-op, and cheap,
    in a process that runs without the shim.

    Under ``colabtrace run`` (or ``COLABTRACE_PYTHON=1``) a PyTorch loop's steps are also
    found without markers, from its optimizer steps and DataLoader batches; where a
    process marks its own steps, the analyzer counts its markers alone."""
    n = int(n)
    if n < 0 or n >= 1 << 64:
        raise ValueError(f"colabtrace.step: {n} is not an unsigned 64-bit step number")
    fn = _shim_step_function()
    if fn is not None:
        fn(n)


def load_ipython_extension(ipython):
    """``%load_ext colabtrace``: the ``%colabtrace`` line and cell magics."""
    from . import _ipython

    _ipython.load(ipython)
