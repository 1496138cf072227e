"""Kernels launched from Python (tests/gpu/py/kernel_stacks.py) and what their Python stacks
must be, for the device-fault and hang tests; and the CPython builds whose frame layout the
shim knows (Python stacks in the launch ring)."""
from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_STACKS = os.path.join(HERE, "..", "gpu", "py", "kernel_stacks.py")
FASTKERN = os.path.join(HERE, "..", "gpu", "py", "site-packages", "fastkern", "__init__.py")
KERNEL_STACKS, FASTKERN = os.path.realpath(KERNEL_STACKS), os.path.realpath(FASTKERN)

# CPython builds with a known frame layout (3.8-3.13; Debian's 3.11 first, for the tests
# that run one).
PYTHONS = [p for p in ("/usr/bin/python3.11", "/root/.pyenv/versions/3.11.7/bin/python3.11",
                       "/root/.pyenv/versions/3.12.1/bin/python3.12",
                       "/root/.pyenv/versions/3.13.0/bin/python3.13",
                       "/root/.pyenv/versions/3.8.18/bin/python3.8",
                       "/root/.pyenv/versions/3.9.18/bin/python3.9",
                       "/root/.pyenv/versions/3.10.13/bin/python3.10", sys.executable)
           if os.path.exists(p)]


def distinct_pythons() -> list[str]:
    """PYTHONS, each interpreter once (sys.executable is often one of the others)."""
    return sorted(set(map(os.path.realpath, PYTHONS)))


def marked_line(path: str, marker: str) -> str:
    """"path:N" for the one line of path that ends with the comment `# marker`."""
    with open(path, encoding="utf-8") as f:
        rows = [i + 1 for i, l in enumerate(f) if l.rstrip().endswith("# " + marker)]
    if len(rows) != 1:
        raise AssertionError(f"{path}: {len(rows)} lines marked {marker!r}")
    return f"{path}:{rows[0]}"


def kernel_stacks_expected() -> list[tuple[str, str, list[str]]]:
    """(kernel, python_line, python_stack) of kernel_stacks.py's launches, newest first: the
    line is the innermost of the program's own frames (not fastkern's, in site-packages)."""
    main = marked_line(KERNEL_STACKS, "MAIN") + " in <module>"
    helper = marked_line(KERNEL_STACKS, "LAUNCH") + " in launch"
    spin = marked_line(KERNEL_STACKS, "STEP spin") + " in step"
    return [
        ("spin", spin, [marked_line(FASTKERN, "LAUNCH spin") + " in run", spin, main]),
        ("scale", helper, [helper, marked_line(KERNEL_STACKS, "STEP scale") + " in step", main]),
        ("fill", helper, [helper, marked_line(KERNEL_STACKS, "STEP fill") + " in step", main]),
    ]
