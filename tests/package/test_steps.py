"""Step markers: colabtrace_step(n) from C (the header's weak reference) and
colabtrace.step(n) from Python (ctypes) write one `step` record per call, with the
program's numbers and the calling thread; without the shim both run and do nothing."""
import os
import subprocess
import sys
import unittest

from ctharness import BUILD, SYSTEM_PYTHON, TempDirTest, parse_dump_line, dump, run_traced, test_bin

STEPS_C = test_bin("package", "ct_step_markers")
PYTHON_PACKAGE = os.path.join(BUILD, "python")  # the build tree's copy of python/colabtrace


def steps_by_thread(trace):
    """{tid: [n, ...]} in trace order."""
    out = {}
    for line in dump(trace):
        parsed = parse_dump_line(line)
        if parsed is not None and parsed[0] == "step":
            out.setdefault(parsed[1]["tid"], []).append(int(parsed[1]["n"]))
    return out


def bare_env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("COLABTRACE_")}
    env.update(extra)
    return env


class CSteps(TempDirTest):
    def test_steps_from_two_threads(self):
        run = run_traced([STEPS_C, "250", "40"], out_dir=self.tmp)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout, "marked 290 steps, shim present\n")
        self.assertEqual(len(run.traces), 1)
        steps = steps_by_thread(run.traces[0])
        self.assertEqual(sorted(len(v) for v in steps.values()), [40, 250])
        main, worker = sorted(steps.values(), key=len, reverse=True)
        self.assertEqual(main, list(range(250)))
        self.assertEqual(worker, list(range(1000, 1040)))

    def test_runs_without_the_shim(self):
        p = subprocess.run([STEPS_C, "5", "5"], env=bare_env(), cwd=self.tmp, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, "marked 10 steps, shim absent\n"), p.stderr)
        self.assertEqual(os.listdir(self.tmp), [])


PY_STEPS = """
import colabtrace, threading
for i in range(17):
    colabtrace.step(i * 3)
t = threading.Thread(target=lambda: [colabtrace.step(2**64 - 1 - i) for i in range(4)])
t.start(); t.join()
try:
    colabtrace.step(-1)
except ValueError:
    print("negative refused")
print("shim", "present" if colabtrace._shim_step_function() else "absent")
"""


class PythonSteps(TempDirTest):
    def test_steps_from_python(self):
        run = run_traced([SYSTEM_PYTHON, "-c", PY_STEPS], out_dir=self.tmp,
                         env={"PYTHONPATH": PYTHON_PACKAGE})
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout, "negative refused\nshim present\n")
        self.assertEqual(len(run.traces), 1)
        steps = sorted(steps_by_thread(run.traces[0]).values(), key=len, reverse=True)
        self.assertEqual(steps, [[i * 3 for i in range(17)], [2**64 - 1 - i for i in range(4)]])

    def test_python_without_the_shim(self):
        p = subprocess.run([SYSTEM_PYTHON, "-c", PY_STEPS], env=bare_env(PYTHONPATH=PYTHON_PACKAGE),
                           cwd=self.tmp, capture_output=True, text=True, timeout=60)
        self.assertEqual((p.returncode, p.stdout), (0, "negative refused\nshim absent\n"), p.stderr)
        self.assertEqual(os.listdir(self.tmp), [])


if __name__ == "__main__":
    unittest.main()
