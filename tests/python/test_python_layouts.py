"""The shim's CPython frame layouts (shim/python/python_stack.cpp, kLayouts) against the
real headers: for each CPython here with its internal headers installed, compile
offsetof() of every field the walker reads and compare with the table's row."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "shim", "python", "python_stack.cpp")
PYENV = "/root/.pyenv/versions"
INCLUDES = {  # version -> include dirs of the interpreters installed here
    0x030B: ["/usr/include/python3.11", f"{PYENV}/3.11.7/include/python3.11"],
    0x030C: [f"{PYENV}/3.12.1/include/python3.12"],
    0x030D: [f"{PYENV}/3.13.0/include/python3.13"],
}

# Prints the table's columns in order (see Layout in python_stack.cpp).
PROBE = r"""
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
int main(void) {
#if PY_VERSION_HEX >= 0x030D0000
  size_t tstate_frame = offsetof(PyThreadState, current_frame), cframe_frame = 0;
  size_t f_code = offsetof(_PyInterpreterFrame, f_executable);
  size_t instr = offsetof(_PyInterpreterFrame, instr_ptr);
  int in_tstate = 1;
#else
  size_t tstate_frame = offsetof(PyThreadState, cframe);
  size_t cframe_frame = offsetof(_PyCFrame, current_frame);
  size_t f_code = offsetof(_PyInterpreterFrame, f_code);
  size_t instr = offsetof(_PyInterpreterFrame, prev_instr);
  int in_tstate = 0;
#endif
#if PY_VERSION_HEX >= 0x030C0000
  int cstack = FRAME_OWNED_BY_CSTACK;
#else
  int cstack = -1;
#endif
  printf("%zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %zu %d %d %d %zu\n",
         tstate_frame, cframe_frame, f_code, offsetof(_PyInterpreterFrame, previous), instr,
         offsetof(_PyInterpreterFrame, owner), sizeof(_PyInterpreterFrame),
         offsetof(PyCodeObject, co_filename), offsetof(PyCodeObject, co_name),
         offsetof(PyCodeObject, co_linetable), offsetof(PyCodeObject, _co_firsttraceable),
         offsetof(PyCodeObject, co_code_adaptive), offsetof(PyASCIIObject, length),
         offsetof(PyASCIIObject, state), sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject),
         (int)FRAME_OWNED_BY_GENERATOR, cstack, in_tstate, offsetof(PyCodeObject, co_firstlineno));
  return 0;
}
"""


def table_row(version: int) -> list[int]:
    with open(SOURCE, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"\{0x%04X,([^}]*)\}" % version, text)
    assert m, f"no layout row for 0x{version:04X}"
    words = [x.strip() for x in m.group(1).split(",")]
    return [1 if w == "true" else 0 if w == "false" else int(w) for w in words]


class LayoutTest(unittest.TestCase):
    def test_layouts_match_headers(self):
        if shutil.which("cc") is None:
            self.skipTest("no C compiler")
        checked = 0
        for version, dirs in INCLUDES.items():
            row = table_row(version)
            for inc in dirs:
                if not os.path.exists(os.path.join(inc, "internal", "pycore_frame.h")):
                    continue
                with self.subTest(include=inc), tempfile.TemporaryDirectory() as tmp:
                    src, exe = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
                    with open(src, "w") as f:
                        f.write(PROBE)
                    subprocess.run(["cc", "-I" + inc, src, "-o", exe], check=True)
                    got = [int(x) for x in subprocess.run([exe], capture_output=True, text=True,
                                                          check=True).stdout.split()]
                    # The table's frame_size is what the walker copies; it must cover the
                    # frame's fields (the header's sizeof is the struct's full size).
                    self.assertEqual(row[:6], got[:6])
                    self.assertGreaterEqual(row[6], got[4] + 8)
                    self.assertEqual(row[7:], got[7:])
                    checked += 1
        if checked == 0:
            self.skipTest("no CPython internal headers installed")


if __name__ == "__main__":
    unittest.main()
