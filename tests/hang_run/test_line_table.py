"""The outside stack reader's location-table decoder (analyzer/cli/python_remote.cpp,
LineOfInstruction) against CPython itself: for every code object of a set of standard
library modules, the line of every instruction must be the one co_lines() gives, in each
CPython 3.11+ installed here."""
from __future__ import annotations

import json
import os
import subprocess
import unittest

import ctharness as h
import hangtest

PROBE = os.path.join(h.BUILD, "tests", "hang_run", "hang_line_table")

# Run in each interpreter: every code object of these modules (nested ones too), as
# {"first": co_firstlineno, "table": hex, "units": n, "lines": [line of unit -1..n-1]}.
DUMP = r"""
import json, sys, types
import argparse, asyncio, collections, dataclasses, email.message, json.decoder, threading, typing, unittest.case
def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)
out = []
for name in sorted(sys.modules):
    m = sys.modules[name]
    for obj in list(vars(m).values()) if m else []:
        fns = []
        if isinstance(obj, types.FunctionType):
            fns = [obj]
        elif isinstance(obj, type):
            fns = [v for v in vars(obj).values() if isinstance(v, types.FunctionType)]
        for f in fns:
            for co in walk(f.__code__):
                units = len(co.co_code) // 2
                lines = [co.co_firstlineno] + [-1] * units
                for start, end, line in co.co_lines():
                    for u in range(start // 2, min(end // 2, units)):
                        lines[1 + u] = -1 if line is None else line
                out.append({"first": co.co_firstlineno, "table": co.co_linetable.hex(),
                            "units": units, "lines": lines})
json.dump(out, sys.stdout)
"""


class LineTableTest(unittest.TestCase):
    def test_every_instruction_has_cpythons_line(self):
        self.assertTrue(os.path.exists(PROBE), f"{PROBE} is not built (ninja hang_run_test_programs)")
        pythons = hangtest.interpreters()
        if not pythons:
            self.skipTest("no CPython 3.11 or later here")
        for version, python in pythons.items():
            with self.subTest(python=python):
                p = subprocess.run([python, "-c", DUMP], capture_output=True, text=True,
                                   env=h.clean_env(), timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr[-2000:])
                codes = json.loads(p.stdout)
                self.assertGreater(len(codes), 1000, "too few code objects to be a test")
                # Every location-table entry kind must occur: short (0-9), one-line
                # (10-12), no column (13), long (14), no location (15).
                kinds = set()
                for c in codes:
                    table = bytes.fromhex(c["table"])
                    kinds.update((b >> 3) & 15 for b in table if b & 0x80)
                self.assertEqual(kinds, set(range(16)))
                feed = "".join(f"{c['first']} {c['table'] or '-'} {c['units']}\n" for c in codes)
                r = subprocess.run([PROBE], input=feed, capture_output=True, text=True, timeout=120)
                self.assertEqual(r.returncode, 0, r.stderr)
                got = r.stdout.splitlines()
                self.assertEqual(len(got), len(codes))
                wrong = [(c, g) for c, g in zip(codes, got)
                         if [int(x) for x in g.split()] != c["lines"]]
                self.assertEqual(wrong[:1], [], f"{len(wrong)} of {len(codes)} code objects differ "
                                                f"in {python}")


if __name__ == "__main__":
    unittest.main()
