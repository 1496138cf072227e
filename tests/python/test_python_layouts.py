"""The shim's CPython frame layouts (shim/python/python_stack.cpp, kLayouts) against the
real headers: for each CPython here with its headers installed, compile offsetof() of
every field the walker reads and compare with the table's row, field by field."""
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
    0x0308: [f"{PYENV}/3.8.18/include/python3.8"],
    0x0309: [f"{PYENV}/3.9.18/include/python3.9"],
    0x030A: [f"{PYENV}/3.10.13/include/python3.10"],
    0x030B: ["/usr/include/python3.11", f"{PYENV}/3.11.7/include/python3.11"],
    0x030C: [f"{PYENV}/3.12.1/include/python3.12"],
    0x030D: [f"{PYENV}/3.13.0/include/python3.13"],
}

# Prints "field value" lines named as Layout's fields in python_stack.cpp; frame_size is
# the header's sizeof (the table's is what the walker copies: less, but it must cover
# every field read). 3.11+: _PyInterpreterFrame chains. 3.8-3.10: PyFrameObject chains.
PROBE = r"""
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#include "internal/pycore_code.h"
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_interpframe.h"
#include "internal/pycore_stackref.h"
#endif
#else
#include <frameobject.h>
#endif
#define FIELD(name, value) printf("%s %lld\n", name, (long long)(value))
int main(void) {
#if PY_VERSION_HEX >= 0x030B0000
  printf("kind FrameKind::kInterpreterFrame\n");
#if PY_VERSION_HEX >= 0x030D0000
  FIELD("tstate_frame", offsetof(PyThreadState, current_frame));
  FIELD("frame_in_tstate", 1);
  FIELD("cframe_current_frame", 0);
  FIELD("frame_code", offsetof(_PyInterpreterFrame, f_executable));
  FIELD("frame_position", offsetof(_PyInterpreterFrame, instr_ptr));
#else
  FIELD("tstate_frame", offsetof(PyThreadState, cframe));
  FIELD("frame_in_tstate", 0);
  FIELD("cframe_current_frame", offsetof(_PyCFrame, current_frame));
  FIELD("frame_code", offsetof(_PyInterpreterFrame, f_code));
  FIELD("frame_position", offsetof(_PyInterpreterFrame, prev_instr));
#endif
  FIELD("frame_previous", offsetof(_PyInterpreterFrame, previous));
  FIELD("frame_owner", offsetof(_PyInterpreterFrame, owner));
  FIELD("frame_size", sizeof(_PyInterpreterFrame));
  FIELD("code_linetable", offsetof(PyCodeObject, co_linetable));
  FIELD("code_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
  FIELD("code_instructions", offsetof(PyCodeObject, co_code_adaptive));
  FIELD("owner_generator", FRAME_OWNED_BY_GENERATOR);
  /* The lowest owner of the interpreter's own frames, and the tag bits of f_executable. */
#if PY_VERSION_HEX >= 0x030E0000
  FIELD("owner_entry", FRAME_OWNED_BY_INTERPRETER);
  FIELD("code_tag_bits", Py_TAG_BITS);
#elif PY_VERSION_HEX >= 0x030C0000
  FIELD("owner_entry", FRAME_OWNED_BY_CSTACK);
  FIELD("code_tag_bits", 0);
#else
  FIELD("owner_entry", -1);
  FIELD("code_tag_bits", 0);
#endif
#else
  _Static_assert(sizeof(((PyFrameObject *)0)->f_lasti) == sizeof(int), "f_lasti is an int");
  printf("kind FrameKind::kFrameObject\n");
  FIELD("tstate_frame", offsetof(PyThreadState, frame));
  FIELD("frame_in_tstate", 1);
  FIELD("frame_code", offsetof(PyFrameObject, f_code));
  FIELD("frame_previous", offsetof(PyFrameObject, f_back));
  FIELD("frame_position", offsetof(PyFrameObject, f_lasti));
  FIELD("frame_size", sizeof(PyFrameObject));
#if PY_VERSION_HEX >= 0x030A0000
  /* 3.10 counts f_lasti in code units; PyCode_Addr2Line takes bytes. */
  FIELD("lasti_unit", sizeof(_Py_CODEUNIT));
  FIELD("code_linetable", offsetof(PyCodeObject, co_linetable));
#else
  FIELD("lasti_unit", 1);
  FIELD("code_linetable", offsetof(PyCodeObject, co_lnotab));
#endif
#endif
  _Static_assert(sizeof(((PyCodeObject *)0)->co_firstlineno) == sizeof(int), "co_firstlineno is an int");
  FIELD("code_filename", offsetof(PyCodeObject, co_filename));
  FIELD("code_name", offsetof(PyCodeObject, co_name));
  FIELD("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
  FIELD("unicode_length", offsetof(PyASCIIObject, length));
  FIELD("unicode_state", offsetof(PyASCIIObject, state));
  FIELD("ascii_data", sizeof(PyASCIIObject));
  FIELD("compact_data", sizeof(PyCompactUnicodeObject));
  return 0;
}
"""

# 3.13+: the byte positions, in _Py_DebugOffsets, of the values the shim reads
# (kDebugOffsetsShapes), named as that table's fields; the shape's two constants
# (owner_entry, code_tag_bits) are checked by comparing the layout it gives with PROBE's.
DEBUG_FIELDS = {
    "free_threaded": "free_threaded",
    "current_frame": "thread_state.current_frame",
    "frame_struct_size": "interpreter_frame.size",
    "frame_previous": "interpreter_frame.previous",
    "frame_executable": "interpreter_frame.executable",
    "frame_instr_ptr": "interpreter_frame.instr_ptr",
    "frame_owner": "interpreter_frame.owner",
    "code_filename": "code_object.filename",
    "code_name": "code_object.name",
    "code_linetable": "code_object.linetable",
    "code_firstlineno": "code_object.firstlineno",
    "code_adaptive": "code_object.co_code_adaptive",
    "ob_type": "pyobject.ob_type",
    "bytes_ob_size": "bytes_object.ob_size",
    "bytes_ob_sval": "bytes_object.ob_sval",
    "unicode_state": "unicode_object.state",
    "unicode_length": "unicode_object.length",
    "unicode_ascii": "unicode_object.asciiobject_size",
}
DEBUG_PROBE = ("#define Py_BUILD_CORE 1\n#include <Python.h>\n#include <stddef.h>\n#include <stdio.h>\n"
               "#include \"internal/pycore_runtime.h\"\nint main(void) {\n"
               "  printf(\"size %zu\\n\", sizeof(_Py_DebugOffsets));\n"
               + "".join(f"  printf(\"{k} %zu\\n\", offsetof(_Py_DebugOffsets, {v}));\n"
                         for k, v in DEBUG_FIELDS.items())
               + "  return 0;\n}\n")
SHAPE_CONSTANTS = ("owner_entry", "code_tag_bits")
INTERPRETERS = {0x030D: f"{PYENV}/3.13.0/bin/python3.13"}  # 3.13+ interpreters here

# Reads _PyRuntime.debug_offsets in the running interpreter: the values at the positions
# given on the command line ("name=position"), as "name value" lines.
READ_DEBUG_OFFSETS = r"""
import ctypes, struct, sys
fields = dict((a.split("=")[0], int(a.split("=")[1])) for a in sys.argv[1:])
raw = bytes((ctypes.c_char * (max(fields.values()) + 8)).in_dll(ctypes.pythonapi, "_PyRuntime"))
assert raw[:8] == b"xdebugpy", raw[:8]
print("version", struct.unpack_from("<Q", raw, 8)[0])
for name, pos in fields.items():
    print(name, struct.unpack_from("<Q", raw, pos)[0])
"""


def layout_from_debug_offsets(d: dict[str, int], shape: dict[str, object]) -> dict[str, object]:
    """What LayoutFromDebugOffsets in python_stack.cpp builds from the values d read at
    the shape's positions: the debug offsets' own values, the shape's constants, and what
    it keeps from 3.12-3.15."""
    return {
        "kind": "FrameKind::kInterpreterFrame", "tstate_frame": d["current_frame"],
        "frame_in_tstate": 1, "cframe_current_frame": 0, "frame_code": d["frame_executable"],
        "frame_previous": d["frame_previous"], "frame_position": d["frame_instr_ptr"],
        "frame_owner": d["frame_owner"], "frame_size": min(d["frame_struct_size"], 128),
        "code_filename": d["code_filename"], "code_name": d["code_name"],
        "code_linetable": d["code_linetable"], "code_firstlineno": d["code_firstlineno"],
        "code_firsttraceable": d["code_adaptive"] - 16, "code_instructions": d["code_adaptive"],
        "unicode_length": d["unicode_length"], "unicode_state": d["unicode_state"],
        "ascii_data": d["unicode_ascii"], "compact_data": d["unicode_ascii"] + 16,
        "owner_generator": 1, "owner_entry": shape["owner_entry"], "code_tag_bits": shape["code_tag_bits"],
    }


def rows_of(table: str) -> dict[int, dict[str, object]]:
    """The rows of a constexpr table of python_stack.cpp by version, each {field: value}
    from its designated initializers."""
    with open(SOURCE, encoding="utf-8") as f:
        text = f.read()
    body = re.search(r"constexpr \w+ " + table + r"\[\] = \{(.*?)\n\};", text, re.S)
    assert body, f"no {table} table in " + SOURCE
    rows = {}
    for m in re.finditer(r"\{\s*(\.version\s*=[^}]*)\}", body.group(1)):
        row: dict[str, object] = {}
        for field in m.group(1).split(","):
            name, value = (x.strip() for x in field.split("="))
            if value.startswith("FrameKind::"):
                row[name.lstrip(".")] = value
            elif value in ("true", "false"):
                row[name.lstrip(".")] = int(value == "true")
            else:
                row[name.lstrip(".")] = int(value, 0)
        rows[row.pop("version")] = row
    return rows


def table_rows() -> dict[int, dict[str, object]]:
    """kLayouts' rows by version."""
    return rows_of("kLayouts")


def compile_and_run(inc: str, tmp: str, source: str, extra: tuple[str, ...] = ()) -> str:
    """The output of source, compiled against the headers in inc (and the include folders
    in extra: Debian's pyconfig.h is under its multiarch folder) and run."""
    src, exe = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
    with open(src, "w") as f:
        f.write(source)
    c = subprocess.run(["cc", "-I" + inc, *("-I" + e for e in extra), src, "-o", exe], capture_output=True,
                       text=True)
    assert c.returncode == 0, c.stderr[-2000:]
    return subprocess.run([exe], capture_output=True, text=True, check=True).stdout


def probe(inc: str, tmp: str, source: str = PROBE, extra: tuple[str, ...] = ()) -> dict[str, object]:
    """PROBE (or source) compiled against inc and run: its "name value" lines."""
    got = {}
    for line in compile_and_run(inc, tmp, source, extra).splitlines():
        name, value = line.split()
        got[name] = value if value.startswith("FrameKind") else int(value)
    return got


class LayoutTest(unittest.TestCase):
    def test_the_table_has_a_row_per_supported_version(self):
        self.assertEqual(sorted(table_rows()), sorted(INCLUDES))

    def test_layouts_match_headers(self):
        if shutil.which("cc") is None:
            self.skipTest("no C compiler")
        rows = table_rows()
        checked = []
        for version, dirs in INCLUDES.items():
            row = rows[version]
            for inc in dirs:
                if not os.path.exists(os.path.join(inc, "Python.h")):
                    continue
                with self.subTest(include=inc), tempfile.TemporaryDirectory() as tmp:
                    got = probe(inc, tmp)
                    # The table's frame_size is what the walker copies: it must cover the
                    # frame's fields (the header's sizeof is the struct's full size).
                    position_size = 8 if got["kind"] == "FrameKind::kInterpreterFrame" else 4
                    ends = [got["frame_code"] + 8, got["frame_previous"] + 8,
                            got["frame_position"] + position_size]
                    if "frame_owner" in got:
                        ends.append(got["frame_owner"] + 1)
                    else:
                        ends.append(16)  # a frame object's ob_type, which the walk checks
                    self.assertGreaterEqual(row["frame_size"], max(ends))
                    self.assertLessEqual(row["frame_size"], min(got["frame_size"], 128))
                    want = {k: v for k, v in got.items() if k != "frame_size"}
                    have = {k: v for k, v in row.items() if k != "frame_size"}
                    self.assertEqual(have, want)
                    checked.append(inc)
        print("checked", checked, file=sys.stderr, flush=True)
        if not checked:
            self.skipTest("no CPython headers installed")

    def test_debug_offsets_shapes_match_headers(self):
        if shutil.which("cc") is None:
            self.skipTest("no C compiler")
        shapes = rows_of("kDebugOffsetsShapes")
        self.assertEqual(sorted(shapes), [0x030D, 0x030E, 0x030F])
        # 3.14 and 3.15 have no interpreter here: test_newest_pythons.py checks theirs.
        for version, shape in shapes.items():
            if version not in INCLUDES or not os.path.exists(os.path.join(INCLUDES[version][-1], "Python.h")):
                continue
            inc = INCLUDES[version][-1]
            with self.subTest(include=inc), tempfile.TemporaryDirectory() as tmp:
                positions = {k: v for k, v in shape.items() if k not in SHAPE_CONSTANTS}
                self.assertEqual(positions, probe(inc, tmp, DEBUG_PROBE))

    def test_debug_offsets_give_the_table_row(self):
        """On 3.13 the layout built from the running interpreter's debug offsets must be
        the table's row, field by field (the shim keeps the row where they differ)."""
        shapes, rows = rows_of("kDebugOffsetsShapes"), table_rows()
        checked = []
        for version, exe in INTERPRETERS.items():
            if not os.path.exists(exe):
                continue
            with self.subTest(python=exe):
                shape = shapes[version]
                args = [f"{k}={shape[k]}" for k in DEBUG_FIELDS]
                out = subprocess.run([exe, "-c", READ_DEBUG_OFFSETS, *args], capture_output=True,
                                     text=True, check=True).stdout
                d = {name: int(value) for name, value in (line.split() for line in out.splitlines())}
                self.assertEqual((d["version"] >> 16) & 0xFFFF, version)
                # The checks LayoutFromDebugOffsets makes before it trusts the values.
                self.assertEqual((d["free_threaded"], d["ob_type"], d["bytes_ob_size"], d["bytes_ob_sval"]),
                                 (0, 8, 16, 32))
                self.assertEqual(layout_from_debug_offsets(d, shape), rows[version])
                checked.append(exe)
        print("checked", checked, file=sys.stderr, flush=True)
        if not checked:
            self.skipTest("no CPython 3.13+ here")


if __name__ == "__main__":
    unittest.main()
