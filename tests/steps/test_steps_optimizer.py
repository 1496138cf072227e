"""Training steps found without markers (issue 27): the Python start-up hook writes one
Step record (source 1, "optimizer") per iteration of a real PyTorch loop (Debian's torch
1.13, which has no global optimizer hooks: the hook wraps each optimizer class's step).
Exact counts for one optimizer, a GAN's two optimizers per iteration (one step each, not
two), a new optimizer every epoch (freed, or kept alive), a step that calls super().step(),
an LR scheduler wrapping the step, and markers next to an optimizer (both sources in the
trace). Under plain LD_PRELOAD with COLABTRACE_PYTHON=1 and under `colabtrace run`; the
program prints exactly what it prints bare."""
import json
import os
import unittest

import ctharness as h
from stepstest import PY, run_bare, run_python, shared_run, torch_missing

TRAIN = os.path.join(PY, "train.py")
N = 7
MARKER, OPTIMIZER = "0", "1"


class OptimizerSteps(h.TempDirTest):
    def setUp(self):
        super().setUp()
        why = torch_missing()
        if why:
            self.skipTest(why)

    def steps(self, mode, how, n=N):
        run = shared_run(self, [TRAIN, mode, str(n)], how)
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        self.assertEqual(run.stderr, "")
        out = json.loads(run.stdout)
        self.assertEqual(out["mode"], mode)
        jobs = [t for t in run.traces if not t.is_run_wrapper]
        self.assertEqual(len(jobs), 1, [t.path for t in run.traces])
        return run, jobs[0].by("step")

    def assert_optimizer_steps(self, steps, count):
        auto = [s for s in steps if s["source"] == OPTIMIZER]
        self.assertEqual([int(s["n"]) for s in auto], list(range(1, count + 1)))
        t = [s["_t"] for s in auto]
        self.assertEqual(t, sorted(t))

    def test_one_optimizer(self):
        for how in ("preload", "run"):
            with self.subTest(how=how):
                _, steps = self.steps("one", how)
                self.assertEqual(len(steps), N)
                self.assert_optimizer_steps(steps, N)

    def test_two_optimizers_per_iteration_are_one_step(self):
        for how in ("preload", "run"):
            with self.subTest(how=how):
                _, steps = self.steps("two", how)
                self.assertEqual(len(steps), N)  # not 2N
                self.assert_optimizer_steps(steps, N)

    def test_new_optimizer_every_epoch(self):
        # Freed at the end of its epoch: the next one leads from its first step.
        _, steps = self.steps("per_epoch", "preload")
        self.assert_optimizer_steps(steps, 3 * N)
        # Kept alive: the new one takes the lead at its second step (its first is lost).
        _, steps = self.steps("per_epoch_kept", "preload")
        self.assert_optimizer_steps(steps, 3 * N - 2)

    def test_step_calling_super_step_counts_once(self):
        _, steps = self.steps("nested", "preload")
        self.assert_optimizer_steps(steps, N)

    def test_scheduler_wrapping_the_step(self):
        _, steps = self.steps("scheduler", "run")
        self.assert_optimizer_steps(steps, N)

    def test_markers_and_optimizer_both_recorded(self):
        for how in ("preload", "run"):
            with self.subTest(how=how):
                _, steps = self.steps("markers", how)
                markers = [s for s in steps if s["source"] == MARKER]
                self.assertEqual([int(s["n"]) for s in markers], list(range(N)))
                self.assert_optimizer_steps(steps, N)
                self.assertEqual(len(steps), 2 * N)
                # Each marker (top of iteration i) comes before that iteration's step end.
                order = [(s["source"], int(s["n"])) for s in steps]
                self.assertEqual(order, [x for i in range(N) for x in ((MARKER, i), (OPTIMIZER, i + 1))])

    def test_output_unchanged(self):
        for mode in ("one", "two", "nested", "scheduler"):
            with self.subTest(mode=mode):
                bare = run_bare([TRAIN, mode, str(N)])
                self.assertEqual(bare.returncode, 0, bare.stderr)
                run, _ = self.steps(mode, "preload")
                self.assertEqual((run.stdout, run.stderr), (bare.stdout, bare.stderr))

    def test_torch2_global_hooks(self):
        # torch >= 2.0 (a stand-in: this machine's torch is 1.13): the global pre and post
        # step hooks. One optimizer N steps, two per iteration N more, a step calling
        # super().step() N more, then N iterations of a failing step (the program catches
        # the error: its post hook never runs) and a working one: 4N.
        fake = os.path.join(PY, "fake_torch2")
        run = run_python(self, [os.path.join(PY, "train2.py"), str(N)], "preload",
                         env={"PYTHONPATH": fake})
        self.assertEqual((run.returncode, run.stderr), (0, ""), run.stderr[-3000:])
        self.assertEqual(json.loads(run.stdout), [N] * 5)
        (trace,) = run.traces
        self.assert_optimizer_steps(trace.by("step"), 4 * N)

    def test_without_the_hook_no_optimizer_steps(self):
        # Plain LD_PRELOAD without COLABTRACE_PYTHON: the start-up hook does not run.
        r = h.run_traced([h.SYSTEM_PYTHON, TRAIN, "one", str(N)], out_dir=os.path.join(self.tmp, "plain"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(h.records(r.traces[0], "step"), [])


if __name__ == "__main__":
    unittest.main()
