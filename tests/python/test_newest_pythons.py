"""Python stacks on CPython 3.14 and 3.15 (issue 29), which this machine's pyenv lacks:
Debian unstable's builds of them, their libc and their headers, in a chroot of those
packages (tests/harness/debroot.py: downloaded once from Debian's archive, kept in the
test cache). The shim has no kLayouts row for either: it reads their layout from
_PyRuntime.debug_offsets, at the positions kDebugOffsetsShapes gives.

- The shape rows against the headers (offsetof in _Py_DebugOffsets), and the layout the
  running interpreter's debug offsets give against the layout its headers give, field by
  field (the shape's constants included: the owner of the interpreter's own frames and
  the tag bits of f_executable, a _PyStackRef from 3.14).
- End to end, with the build's shim and CLI copied into the chroot (they need glibc 2.28,
  unstable has 2.42): a SIGSEGV three functions deep names all four frames, and `colabtrace
  run --hang-timeout` reads a sleeping thread's stack from outside the process.

Skipped, saying why, where the packages cannot be had (no network, not root).
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import ctharness as h
import debroot

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "hang_run"))
import test_thread_state_layout as tstate  # noqa: E402  (the outside reader's PyThreadState rows)
from test_python_layouts import (DEBUG_FIELDS, DEBUG_PROBE, READ_DEBUG_OFFSETS, SHAPE_CONSTANTS,
                                 compile_and_run, layout_from_debug_offsets, probe, rows_of)
import test_python_stacks as pystacks  # a module, so its TestCases do not run here

# (major << 8) | minor -> the interpreter's name in the chroot.
NEWEST = {0x030E: "3.14", 0x030F: "3.15"}
PACKAGES = ["libc6", "libgcc-s1", "zlib1g", "libexpat1", "libssl3t64", "libffi8", "libzstd1"] + [
    f"{p}{v}{s}" for v in NEWEST.values()
    for p, s in (("python", "-minimal"), ("libpython", "-minimal"), ("libpython", "-stdlib"), ("libpython", "-dev"))]
INSIDE = "/tmp/ct-newest"  # the test's folder, as the chroot sees it
HANG_TIMEOUT_S = 3


def newest_root() -> tuple[str | None, str]:
    return debroot.debian_root("sid-python", "sid", PACKAGES, "usr/bin/python3.15")


class NewestPythonsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, why = newest_root()
        if cls.root is None:
            raise unittest.SkipTest(why)
        cls.opt = debroot.install_binaries(cls.root, [h.CLI, h.SHIM])
        cls.here = cls.root + INSIDE
        shutil.rmtree(cls.here, ignore_errors=True)
        os.makedirs(cls.here)

    def python(self, v: str) -> str:
        return f"/usr/bin/python{v}"

    def includes(self, v: str) -> tuple[str, tuple[str, ...]]:
        return f"{self.root}/usr/include/python{v}", (f"{self.root}/usr/include",)

    def in_root(self, argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        with debroot.proc_mounted(self.root):
            return subprocess.run(["chroot", self.root, *argv], capture_output=True, text=True, timeout=timeout,
                                  env=h.clean_env())

    def write(self, name: str, source: str) -> str:
        with open(os.path.join(self.here, name), "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(source))
        return f"{INSIDE}/{name}"

    def crashed_report(self, v: str, inside: str) -> dict:
        """`colabtrace run` in the chroot of python{v} running the script at inside, which
        must die of SIGSEGV; the report of its trace."""
        out = f"{INSIDE}/{os.path.basename(inside)}-{v}"
        ran = self.in_root([f"{self.opt}/colabtrace", "run", "-o", out, "--", self.python(v), inside])
        self.assertEqual(ran.returncode, 128 + 11, ran.stderr)
        (trace,) = glob.glob(os.path.join(self.root + out, "colabtrace.python3*.ctrace"))
        return h.report(trace)

    # ---- the layout -----------------------------------------------------------------------
    def test_shape_rows_match_headers(self):
        shapes = rows_of("kDebugOffsetsShapes")
        for version, v in NEWEST.items():
            with self.subTest(python=v), tempfile.TemporaryDirectory() as tmp:
                inc, extra = self.includes(v)
                positions = {k: x for k, x in shapes[version].items() if k not in SHAPE_CONSTANTS}
                self.assertEqual(positions, probe(inc, tmp, DEBUG_PROBE, extra))

    def test_debug_offsets_give_the_headers_layout(self):
        shapes = rows_of("kDebugOffsetsShapes")
        for version, v in NEWEST.items():
            with self.subTest(python=v), tempfile.TemporaryDirectory() as tmp:
                shape = shapes[version]
                ran = self.in_root([self.python(v), "-c", READ_DEBUG_OFFSETS,
                                    *(f"{k}={shape[k]}" for k in DEBUG_FIELDS)])
                self.assertEqual(ran.returncode, 0, ran.stderr)
                d = {n: int(x) for n, x in (line.split() for line in ran.stdout.splitlines())}
                self.assertEqual((d["version"] >> 16) & 0xFFFF, version)
                # The checks LayoutFromDebugOffsets makes before it trusts the values.
                self.assertEqual((d["free_threaded"], d["ob_type"], d["bytes_ob_size"], d["bytes_ob_sval"]),
                                 (0, 8, 16, 32))
                inc, extra = self.includes(v)
                headers = probe(inc, tmp, extra=extra)
                got = layout_from_debug_offsets(d, shape)
                self.assertEqual(got.pop("frame_size"), min(headers.pop("frame_size"), 128))
                self.assertEqual(got, headers)

    def test_thread_state_rows_match_headers(self):
        # The outside reader of `run --hang-timeout` walks the interpreter's thread list.
        rows = tstate.table()
        for version, v in NEWEST.items():
            with self.subTest(python=v), tempfile.TemporaryDirectory() as tmp:
                inc, extra = self.includes(v)
                seen, *offsets = [int(x) for x in compile_and_run(inc, tmp, tstate.PROBE, extra).split()]
                self.assertEqual(seen, version)
                self.assertEqual(rows[version], offsets)

    # ---- end to end -----------------------------------------------------------------------
    def test_three_frames_deep(self):
        inside = self.write("native_crash.py", pystacks.NativeCrashTest.SCRIPT)
        script = self.root + inside

        def frame(marker: str, func: str) -> str:
            return f"{inside}:{pystacks.line_of(script, marker)} in {func}"

        want = [frame("# KILL", "crash"), frame("# CALL-CRASH", "größe"), frame("# CALL-GROESSE", "中间"),
                frame("# CALL-MIDDLE", "<module>")]
        for v in NEWEST.values():
            with self.subTest(python=v):
                rep = self.crashed_report(v, inside)
                (f,) = h.findings(rep, "proc.fatal-signal")
                self.assertEqual(f["evidence"]["python_stack"], want)
                (proc,) = rep["processes"]
                self.assertNotIn("python_stacks", proc)  # no "unavailable" note

    def test_a_call_back_from_c(self):
        # sorted() calls the key function from C: the interpreter puts its own entry frame
        # (3.14+: FRAME_OWNED_BY_INTERPRETER) between through_c and crash. The walk skips
        # it and goes on.
        inside = self.write("through_c.py", """\
            import os, signal

            def crash(x):
                os.kill(os.getpid(), signal.SIGSEGV)  # KILL

            def through_c():
                return sorted([1], key=crash)  # SORTED

            through_c()  # CALL
            """)
        script = self.root + inside
        want = [f"{inside}:{pystacks.line_of(script, '# KILL')} in crash",
                f"{inside}:{pystacks.line_of(script, '# SORTED')} in through_c",
                f"{inside}:{pystacks.line_of(script, '# CALL')} in <module>"]
        for v in NEWEST.values():
            with self.subTest(python=v):
                (f,) = h.findings(self.crashed_report(v, inside), "proc.fatal-signal")
                self.assertEqual(f["evidence"]["python_stack"], want)

    def test_hang_timeout_reads_the_stack_from_outside(self):
        inside = self.write("sleeper.py", """\
            import threading, time

            def sleep_here():
                time.sleep(3600)  # SLEEP

            def in_worker():
                sleep_here()  # CALL-SLEEP

            t = threading.Thread(target=in_worker, daemon=True)
            t.start()
            t.join()  # JOIN
            """)
        script = self.root + inside
        for v in NEWEST.values():
            with self.subTest(python=v):
                out = f"{INSIDE}/hang-{v}"
                ran = self.in_root([f"{self.opt}/colabtrace", "run", "-o", out, f"--hang-timeout={HANG_TIMEOUT_S}",
                                    "--", self.python(v), inside], timeout=HANG_TIMEOUT_S + 60)
                self.assertEqual(ran.returncode, 124, ran.stderr)
                (run_trace,) = glob.glob(os.path.join(self.root + out, "colabtrace.run.*.ctrace"))
                states = h.records(run_trace, "thread_state")
                stacks = sorted(s["python_stack"].split("\n") for s in states if s["python_stack"])
                threading_py = f"/usr/lib/python{v}/threading.py"
                worker = [f"{inside}:{pystacks.line_of(script, '# SLEEP')} in sleep_here",
                          f"{inside}:{pystacks.line_of(script, '# CALL-SLEEP')} in in_worker"]
                (main,) = [s for s in stacks if s[-1].endswith(" in <module>")]
                self.assertEqual(main[-1], f"{inside}:{pystacks.line_of(script, '# JOIN')} in <module>")
                self.assertTrue(all(f.startswith(threading_py + ":") for f in main[:-1]), main)
                (wstack,) = [s for s in stacks if s[:2] == worker]
                self.assertTrue(all(f.startswith(threading_py + ":") for f in wstack[2:]), wstack)
                self.assertEqual(len(states), 2, states)


if __name__ == "__main__":
    unittest.main()
