"""Python stacks recorded by the shim (shim/python), end to end with real CPython.

Each test runs a real Python program under the shim and compares the recorded
`path:line in function` frames with the program's own source lines.
"""
from __future__ import annotations

import os
import subprocess
import textwrap
import unittest

import ctharness as h

SIMCUDA_DIR = os.environ.get("SIMCUDA_DIR", os.path.join(h.BUILD, "simcuda"))
CUDART = os.path.join(SIMCUDA_DIR, "libcudart.so.13")
NATIVE_THREAD = os.path.join(h.BUILD, "tests", "python", "libpython_native_thread.so")
# The CPython builds here with a known frame layout: Debian's 3.11 and pyenv's 3.11, 3.12,
# 3.13 (interpreter frames) and 3.8, 3.9, 3.10 (frame objects; no Py_Version), the
# binaries, not pyenv's wrapper script. Debian's 3.11 first: the tests that run one
# interpreter take it.
PYTHONS = [p for p in ("/usr/bin/python3.11", "/root/.pyenv/versions/3.11.7/bin/python3.11",
                       "/root/.pyenv/versions/3.12.1/bin/python3.12",
                       "/root/.pyenv/versions/3.13.0/bin/python3.13",
                       "/root/.pyenv/versions/3.8.18/bin/python3.8",
                       "/root/.pyenv/versions/3.9.18/bin/python3.9",
                       "/root/.pyenv/versions/3.10.13/bin/python3.10")
           if os.path.exists(p)]
# One without a layout (3.7): no Python stack, and nothing breaks.
UNSUPPORTED = "/root/.pyenv/versions/3.7.16/bin/python3.7"
# Every CPython here whose frames the shim cannot read (pyenv's 2.7, 3.6 and 3.7), with
# its version: the report names each one.
UNREADABLE = [(p, v) for v, p in (
    (v, f"/root/.pyenv/versions/{v}/bin/python{'.'.join(v.split('.')[:2])}")
    for v in ("2.7.18", "3.6.15", "3.7.16")) if os.path.exists(p)]


def line_of(path: str, marker: str) -> int:
    """The 1-based line of the unique line containing marker."""
    with open(path, encoding="utf-8") as f:
        lines = [i + 1 for i, l in enumerate(f) if marker in l]
    assert len(lines) == 1, (marker, lines)
    return lines[0]


def frames(text: str) -> list[str]:
    return text.split("\n") if text and text != "-" else []


class PythonStackTest(h.TempDirTest):
    def write(self, name: str, source: str) -> str:
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(source))
        return path

    def frame(self, path, marker, func):
        return f"{path}:{line_of(path, marker)} in {func}"


@unittest.skipUnless(PYTHONS, "no CPython with a known frame layout here")
class FatalSignalTest(PythonStackTest):
    SCRIPT = """\
        import ctypes

        def inner():
            return ctypes.string_at(0)  # FAULT

        def middle():
            return inner()  # CALL-INNER

        def outer():
            middle()  # CALL-MIDDLE

        outer()  # CALL-OUTER
        """

    def test_null_read_in_nested_functions(self):
        script = self.write("crash.py", self.SCRIPT)
        for python in PYTHONS:
            with self.subTest(python=python):
                run = h.run_traced([python, script])
                self.assertEqual(run.returncode, -11, run.stderr)
                self.assertEqual(len(run.traces), 1)
                # The innermost frame is ctypes' own string_at, at its call of _string_at.
                ctypes_file = subprocess.run(
                    [python, "-c", "import ctypes; print(ctypes.__file__)"],
                    capture_output=True, text=True, check=True).stdout.strip()
                string_at = f"{ctypes_file}:{line_of(ctypes_file, 'return _string_at(ptr, size)')} in string_at"
                want = [string_at,
                        self.frame(script, "# FAULT", "inner"),
                        self.frame(script, "# CALL-INNER", "middle"),
                        self.frame(script, "# CALL-MIDDLE", "outer"),
                        self.frame(script, "# CALL-OUTER", "<module>")]
                sig = h.records(run.traces[0], "signal")
                self.assertEqual(len(sig), 1)
                self.assertEqual(frames(sig[0]["py_stack"]), want)
                rep = h.report(run.traces[0])
                (f,) = h.findings(rep, "proc.fatal-signal")
                self.assertEqual(f["evidence"]["python_stack"], want)
                self.assertIn(" at " + string_at, f["summary"])
                text = h.cli("report", run.traces[0]).stdout
                self.assertIn("Python stack at SIGSEGV", text)
                self.assertIn("  " + want[1] + "\n", text)

    @unittest.skipUnless(os.path.exists(UNSUPPORTED), "no CPython without a known layout here")
    def test_unknown_interpreter_degrades_to_no_python_stack(self):
        script = self.write("crash.py", self.SCRIPT)
        run = h.run_traced([UNSUPPORTED, script])
        self.assertEqual(run.returncode, -11, run.stderr)
        (f,) = h.findings(h.report(*run.traces), "proc.fatal-signal")
        self.assertIsNone(f["evidence"]["python_stack"])
        self.assertGreater(len(f["evidence"]["stack"]), 0)  # the native stack is still there

    @unittest.skipUnless(UNREADABLE, "no CPython without a known layout here")
    def test_an_unreadable_interpreter_is_named_in_the_report(self):
        # A parent and its fork child: each trace says it, in JSON and in the text report.
        script = self.write("forks.py", """\
            import os
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)
            """)
        for python, version in UNREADABLE:
            with self.subTest(python=python):
                run = h.run_traced([python, script])
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertEqual(len(run.traces), 2)
                rep = h.report(*run.traces)
                short = ".".join(version.split(".")[:2])
                want = {"available": False, "version": short, "interpreter": version,
                        "why": "no frame layout for this CPython version"}
                self.assertEqual([p.get("python_stacks") for p in rep["processes"]], [want, want])
                pids = [p["pid"] for p in rep["processes"]]  # the text lists them in this order
                text = h.cli("report", *run.traces).stdout
                self.assertIn(f"Python stacks unavailable for {short} (CPython {version}, pids "
                              f"{pids[0]} {pids[1]}): no frame layout for this CPython version\n", text)

    @unittest.skipUnless(PYTHONS, "no CPython with a known frame layout here")
    def test_a_readable_interpreter_is_not_named(self):
        for python in PYTHONS:
            with self.subTest(python=python):
                run = h.run_traced([python, "-c", "pass"])
                self.assertEqual(run.returncode, 0, run.stderr)
                (proc,) = h.report(*run.traces)["processes"]
                self.assertNotIn("python_stacks", proc)
                self.assertNotIn("Python stacks unavailable", h.cli("report", *run.traces).stdout)

    def test_not_python_has_no_python_stack(self):
        run = h.run_traced(["/bin/sh", "-c", "kill -SEGV $$"])
        self.assertEqual(run.returncode, -11)
        (f,) = h.findings(h.report(*run.traces), "proc.fatal-signal")
        self.assertIsNone(f["evidence"]["python_stack"])


@unittest.skipUnless(PYTHONS, "no CPython with a known frame layout here")
class NativeCrashTest(PythonStackTest):
    # Three functions deep below <module>, and no other frame: os.kill is C code, so the
    # innermost frame is the program's own line. Two names are not ASCII: a 1-byte
    # (Latin-1) and a 2-byte compact string, whose text starts after the longer string
    # header of 3.8-3.11 (its wstr fields) and the shorter one of 3.12+.
    SCRIPT = """\
        import os, signal

        def crash():
            os.kill(os.getpid(), signal.SIGSEGV)  # KILL

        def größe():
            crash()  # CALL-CRASH

        def 中间():
            größe()  # CALL-GROESSE

        中间()  # CALL-MIDDLE
        """

    def test_three_frames_deep_under_every_interpreter(self):
        script = self.write("native_crash.py", self.SCRIPT)
        want = [self.frame(script, "# KILL", "crash"),
                self.frame(script, "# CALL-CRASH", "größe"),
                self.frame(script, "# CALL-GROESSE", "中间"),
                self.frame(script, "# CALL-MIDDLE", "<module>")]
        for python in PYTHONS:
            with self.subTest(python=python):
                run = h.run_traced([python, script])
                self.assertEqual(run.returncode, -11, run.stderr)
                self.assertEqual(len(run.traces), 1)
                rep = h.report(run.traces[0])
                (f,) = h.findings(rep, "proc.fatal-signal")
                self.assertEqual(f["evidence"]["python_stack"], want)
                self.assertIn(" at " + want[0], f["summary"])
                (proc,) = rep["processes"]
                self.assertNotIn("python_stacks", proc)  # no "unavailable" note
                text = h.cli("report", run.traces[0]).stdout
                self.assertIn("Python stack at SIGSEGV", text)
                for frame in want:
                    self.assertIn("  " + frame + "\n", text)
                self.assertNotIn("Python stacks unavailable", text)


@unittest.skipUnless(PYTHONS, "no CPython with a known frame layout here")
class KilledTest(PythonStackTest):
    SCRIPT = """\
        import os, time

        def busy(deadline):
            while time.monotonic() < deadline:
                os.stat("/etc/hostname")  # STAT

        def main():
            busy(time.monotonic() + 0.3)  # BUSY
            os.kill(os.getpid(), 9)

        main()  # MAIN
        """

    def test_last_python_position_of_a_killed_process(self):
        script = self.write("killed.py", self.SCRIPT)
        run = h.run_traced([PYTHONS[0], script], env={"COLABTRACE_SAMPLE_MS": "20"})
        self.assertEqual(run.returncode, -9)
        (f,) = h.findings(h.report(*run.traces), "proc.killed")
        sample = f["evidence"]["last_python_sample"]
        self.assertEqual(sample["python_stack"], [self.frame(script, "# STAT", "busy"),
                                                  self.frame(script, "# BUSY", "main"),
                                                  self.frame(script, "# MAIN", "<module>")])
        self.assertGreaterEqual(len(h.records(run.traces[0], "py_sample")), 2)


@unittest.skipUnless(PYTHONS and os.path.exists(CUDART), "needs a readable CPython and the simulated cudart")
class GpuAllocationTest(PythonStackTest):
    SCRIPT = """\
        import ctypes, os, sys, threading

        rt = ctypes.CDLL(sys.argv[1])
        native = ctypes.CDLL(sys.argv[2])
        native.alloc_in_native_thread.restype = ctypes.c_void_p
        native.alloc_in_native_thread.argtypes = [ctypes.c_void_p, ctypes.c_size_t]

        def alloc(n):
            p = ctypes.c_void_p()
            assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0  # MALLOC
            return p

        def release(p):
            rt.cudaFree(p)  # FREE

        def step():
            a = alloc(1 << 20)  # STEP-ALLOC
            release(a)  # STEP-FREE

        def worker():
            release(alloc(3 << 20))  # WORKER

        for _ in range(3):
            step()  # LOOP
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        # A thread created in C: no Python thread state, so no Python stack.
        fn = ctypes.cast(rt.cudaMalloc, ctypes.c_void_p).value
        assert native.alloc_in_native_thread(fn, 2 << 20)  # NATIVE
        pid = os.fork()
        if pid == 0:
            step()  # CHILD
            os._exit(0)
        os.waitpid(pid, 0)
        """

    def test_allocations_threads_and_fork(self):
        script = self.write("gpu.py", self.SCRIPT)
        for python in PYTHONS:
            with self.subTest(python=python):
                run = h.run_traced([python, script, CUDART, NATIVE_THREAD],
                                   env={"LD_LIBRARY_PATH": SIMCUDA_DIR})
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertEqual(len(run.traces), 2, run.traces)
                parent, child = sorted(run.traces, key=lambda t: len(h.records(t, "fork")) == 0)
                malloc = self.frame(script, "# MALLOC", "alloc")
                free = self.frame(script, "# FREE", "release")
                loop = self.frame(script, "# LOOP", "<module>")
                step_alloc = [malloc, self.frame(script, "# STEP-ALLOC", "step")]
                step_free = [free, self.frame(script, "# STEP-FREE", "step")]

                allocs = h.records(parent, "gpu_alloc")
                by_size = {}
                for a in allocs:
                    by_size.setdefault(int(a["size"]), []).append(frames(a["py_stack"]))
                # The main thread, with the GIL released by ctypes around each call.
                self.assertEqual(by_size[1 << 20], [step_alloc + [loop]] * 3)
                # A Python thread: its own frames, ending in threading's bootstrap.
                (worker,) = by_size[3 << 20]
                self.assertEqual(worker[:2], [malloc, self.frame(script, "# WORKER", "worker")])
                self.assertTrue(worker[-1].endswith(" in _bootstrap"), worker)
                # The native thread.
                self.assertEqual(by_size[2 << 20], [[]])
                frees = [frames(f["py_stack"]) for f in h.records(parent, "gpu_free")]
                self.assertEqual(frees[:3], [step_free + [loop]] * 3)
                self.assertEqual(frees[3][:2], [free, self.frame(script, "# WORKER", "worker")])
                # The fork child records its own stacks in its own trace (the parent's
                # interned ids mean nothing there).
                child_allocs = [frames(a["py_stack"]) for a in h.records(child, "gpu_alloc")]
                self.assertEqual(child_allocs, [step_alloc + [self.frame(script, "# CHILD", "<module>")]])


@unittest.skipUnless(PYTHONS and os.path.exists(CUDART), "needs a readable CPython and the simulated cudart")
class LaunchFailureTest(PythonStackTest):
    SCRIPT = """\
        import ctypes, sys

        class Dim3(ctypes.Structure):
            _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]

        rt = ctypes.CDLL(sys.argv[1])
        rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p,
                                        ctypes.c_size_t, ctypes.c_void_p]
        stub = ctypes.create_string_buffer(16)  # never registered: no kernel behind it

        def launch():
            return rt.cudaLaunchKernel(ctypes.addressof(stub), Dim3(1, 1, 1), Dim3(32, 1, 1),
                                       None, 0, None)  # LAUNCH

        assert launch() != 0  # CALL
        """

    def test_failed_launch_has_python_stack(self):
        script = self.write("launch.py", self.SCRIPT)
        run = h.run_traced([PYTHONS[0], script, CUDART], env={"LD_LIBRARY_PATH": SIMCUDA_DIR})
        self.assertEqual(run.returncode, 0, run.stderr)
        want = [f"{script}:{line_of(script, 'return rt.cudaLaunchKernel')} in launch",
                self.frame(script, "# CALL", "<module>")]
        (rec,) = h.records(run.traces[0], "gpu_launch_failed")
        self.assertEqual(frames(rec["py_stack"]), want)
        (f,) = h.findings(h.report(run.traces[0]), "gpu.launch-failed")
        self.assertEqual(f["evidence"]["python_stack"], want)


if __name__ == "__main__":
    unittest.main()
