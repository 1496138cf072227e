"""Steps found with no change to the program (issue 27), counted exactly: one optimizer
over N iterations is N steps (source "optimizer"), two optimizers stepping in each
iteration (a GAN) are still N, a program's own markers win over its optimizer and are
never counted twice (source "marker"), a loop with a DataLoader and no optimizer steps
per batch (source "dataloader"). Programs with no training loop (a C program, a PyTorch
script) get no steps and no perf.* finding. A loop killed mid-step has that step kept
apart as interrupted, never as a slow step."""
import os
import unittest

from ctharness import (SYSTEM_PYTHON, TempDirTest, built_test_program, colabtrace_run, report,
                       run_traced)
from perftest import (COLABTRACE_PY, NEXT_BATCH_LINE, NO_LOOP, PerfTest, findings_of,
                      make_samples, perf_findings, torch_missing, train)


class StepCountTest(PerfTest, TempDirTest):
    def setUp(self):
        super().setUp()
        why = torch_missing()
        if why:
            self.skipTest(why)

    def in_memory(self, name, steps, *extra, how="preload"):
        return train(os.path.join(self.tmp, name),
                     ["--steps", str(steps), "--batch", "4", "--workers", "0", "--in-memory",
                      *extra], how=how)

    def test_one_optimizer_is_one_step_per_iteration(self):
        t = self.in_memory("one", 17)
        st = t.steps()
        self.assertEqual((st["count"], st["source"], st["interrupted"]), (17, "optimizer", False))
        self.assertEqual(st["batch_waits"], 17)  # one per next() on the DataLoader iterator
        self.assertRegex(st["wait_site"], rf"train_loop\.py:{NEXT_BATCH_LINE} in main$")
        self.assertLessEqual(st["median_ns"], st["p90_ns"])

    def test_two_optimizers_per_iteration_are_one_step(self):
        t = self.in_memory("two", 15, "--optimizers", "2", how="run")
        st = t.steps()
        self.assertEqual((st["count"], st["source"]), (15, "optimizer"))

    def test_markers_win_over_the_optimizer(self):
        # 16 iterations, 16 optimizer steps, a marker every other iteration: 8 steps.
        t = self.in_memory("markers", 16, "--markers", "2", "--colabtrace", COLABTRACE_PY)
        st = t.steps()
        self.assertEqual((st["count"], st["source"]), (8, "marker"))

    def test_dataloader_batches_when_nothing_else_marks_steps(self):
        t = self.in_memory("batches", 12, "--optimizers", "0")
        st = t.steps()
        self.assertEqual((st["count"], st["source"]), (12, "dataloader"))


class NoStepsTest(PerfTest, TempDirTest):
    def test_c_program_and_script_without_a_loop_have_no_steps(self):
        files = make_samples(os.path.join(self.tmp, "samples"), 6)
        prog = built_test_program("perf", "perf_no_steps")
        out = os.path.join(self.tmp, "c")
        p = colabtrace_run(out, [prog, *files])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), str(6 * 4096))
        runs = [("C program", report(out))]
        no_torch = torch_missing()
        if not no_torch:
            r = run_traced([SYSTEM_PYTHON, NO_LOOP, *files], env={"COLABTRACE_PYTHON": "1"},
                           out_dir=os.path.join(self.tmp, "py"))
            self.assertEqual(r.returncode, 0, r.stderr)
            runs.append(("PyTorch script", report(*r.traces)))
        for name, rep in runs:
            with self.subTest(name):
                self.assertTrue(rep["processes"])
                for proc in rep["processes"]:
                    self.assertNotIn("steps", proc, proc["argv"])
                    self.assertNotIn("workers", proc, proc["argv"])
                self.assertEqual([f["id"] for f in perf_findings(rep)], [])
        if no_torch:
            self.skipTest("the C program passed; the PyTorch script needs torch: " + no_torch)


class InterruptedStepTest(PerfTest, TempDirTest):
    def test_a_loop_killed_mid_step_has_an_interrupted_step_not_a_slow_one(self):
        why = torch_missing()
        if why:
            self.skipTest(why)
        # 8 iterations complete; the 9th sleeps 1.5 s (far longer than any step) and is
        # killed before its optimizer step; under `colabtrace run` and plain LD_PRELOAD.
        for how, rc in (("run", 128 + 9), ("preload", -9)):
            with self.subTest(how):
                t = train(os.path.join(self.tmp, how),
                          ["--steps", "30", "--batch", "4", "--workers", "0", "--in-memory",
                           "--kill-at", "8", "--kill-sleep", "1.5"], how=how, expect_rc=rc)
                self.assertIn("killing 8", t.stdout)
                (main,) = [p for p in t.rep["processes"]
                           if "train_loop.py" in " ".join(p["argv"])]
                self.assertEqual(main["end"]["kind"], "killed")
                st = t.steps(main["pid"])
                self.assertEqual((st["count"], st["source"]), (8, "optimizer"))
                self.assertIs(st["interrupted"], True)
                # It is in none of the step figures: 8 timed steps, 7 after warm-up, whose
                # 90th percentile (the slowest of 7, nearest rank) would be the sleep.
                self.assertEqual((st["timed"], st["analysed"]), (8, 7))
                self.assertLess(st["p90_ns"], 1_000_000_000)
                self.assertEqual(findings_of(t.rep, "perf.step-slowdown", main["pid"]), [])

if __name__ == "__main__":
    unittest.main()
