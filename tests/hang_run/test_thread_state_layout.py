"""The PyThreadState offsets `colabtrace run --hang-timeout`'s outside stack reader uses to
walk an interpreter's list of threads (analyzer/cli/python_remote.cpp,
kThreadStateLayouts) against the real headers: for each CPython here with its headers
installed, compile offsetof() of every field it reads and compare with the table's row."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, "analyzer", "cli", "python_remote.cpp")
PYENV = os.environ.get("PYENV_ROOT", "/root/.pyenv") + "/versions"

PROBE = r"""
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
int main(void) {
  printf("%d %zu %zu %zu %zu\n", (int)((PY_MAJOR_VERSION << 8) | PY_MINOR_VERSION),
         offsetof(PyThreadState, prev), offsetof(PyThreadState, next),
         offsetof(PyThreadState, interp), offsetof(PyThreadState, native_thread_id));
  return 0;
}
"""


def table() -> dict[int, list[int]]:
    with open(SOURCE, encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"kThreadStateLayouts\[\] = \{(.*?)\n\};", text, re.S)
    assert body, "no kThreadStateLayouts table in " + SOURCE
    rows = {}
    for m in re.finditer(r"\{0x([0-9A-Fa-f]{4}),([^}]*)\}", body.group(1)):
        rows[int(m.group(1), 16)] = [int(x) for x in m.group(2).split(",")]
    return rows


class ThreadStateLayoutTest(unittest.TestCase):
    def test_offsets_match_headers(self):
        if shutil.which("cc") is None:
            self.skipTest("no C compiler")
        rows = table()
        self.assertEqual(sorted(rows), [0x030B, 0x030C, 0x030D, 0x030E, 0x030F])
        dirs = sorted(glob.glob(f"{PYENV}/3.1[1-9]*/include/python3.*")) + glob.glob("/usr/include/python3.1[1-9]")
        checked = set()
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as f:
                f.write(PROBE)
            for inc in dirs:
                if not os.path.exists(os.path.join(inc, "cpython", "pystate.h")):
                    continue
                exe = os.path.join(tmp, "probe")
                c = subprocess.run(["cc", "-I", inc, src, "-o", exe], capture_output=True, text=True)
                self.assertEqual(c.returncode, 0, c.stderr[-2000:])
                version, *offsets = [int(x) for x in subprocess.check_output([exe], text=True).split()]
                if version not in rows:
                    continue  # a newer CPython than the reader knows: no stacks from its list
                with self.subTest(headers=inc):
                    self.assertEqual(rows[version], offsets)
                checked.add(version)
        if not checked:
            self.skipTest("no CPython 3.11+ headers here")
        print("checked", sorted(hex(v) for v in checked), flush=True)


if __name__ == "__main__":
    unittest.main()
