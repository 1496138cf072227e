"""Crawls and hangs on real hardware (issues 27, 28): an H200's runs under the shim and the
CLI of the portable wheel (issue 29), by `tools/gpu_validate` on 2026-11-28 (CUDA 13.0,
driver 580.159.04, PyTorch 2.11.0+cu130, CPython 3.12.3), kept in
data/h200-2026-11-28.tar.xz with each program's output (NAME.out: its JSON of what it
measured of itself, and the exit status) and the wheel's own checks (wheel.out).
docs/gpu-validation.md records the runs. Every verdict is each run's truth:

- steps_crawl: DataLoader workers whose samples take 5 ms each to arrive: the loop's own
  clock says 89% of its step time waited for batches; steps_gpu: four 4096-wide layers
  and loss.item() each step, 90% of the step in that synchronisation by the loop's clock;
  steps_train, corpus_gpu_fallback: healthy loops; steps_cpu, corpus_cpu_fallback: CUDA
  hidden on a machine with an H200.
- hang_loader, hang_kernel, hang_nvcc: `colabtrace run --hang-timeout` ended jobs stuck on
  a FIFO no one writes, on torch.cuda._sleep, on an nvcc kernel that spins.
- corpus_spin, corpus_torch_gpu_hang: ../shared/gpu-corpus's hung programs under plain
  LD_PRELOAD, SIGKILLed after 15 and 20 s: nothing saw when, so they stay proc.killed,
  naming the call they were killed in.
"""
import json

import unittest

import ctharness as h
from h200traces import H200Traces, serious


class H200CrawlsAndHangs(H200Traces):
    DATA = "h200-2026-11-28.tar.xz"

    def measured(self, run):
        """The program's own JSON line (torch_steps.py)."""
        (line,) = [l for l in self.out(run).splitlines() if l.startswith('{"pid"')]
        return json.loads(line)

    def steps(self, run, pid):
        return h.by_pid(self.report(run))[pid]["steps"]

    def test_an_input_bound_loop_is_measured_as_it_measured_itself(self):
        own = self.measured("steps_crawl")
        steps = self.steps("steps_crawl", own["pid"])
        self.assertEqual((steps["count"], steps["source"], steps["analysed"]), (60, "optimizer", 59))
        self.assertAlmostEqual(steps["input_wait_fraction"], own["input_wait_fraction"], delta=0.03)
        self.assertEqual(serious(self.report("steps_crawl")), [("perf.input-bound", "warning")])
        (f,) = h.findings(self.report("steps_crawl"), "perf.input-bound")
        ev = f["evidence"]
        self.assertEqual(sorted(ev["worker_pids"]), own["worker_pids"])
        self.assertEqual(ev["steps_analysed"], 59)
        # The workers slept 5 ms a sample: they mostly waited, neither reading nor computing.
        self.assertEqual(ev["cause"], "workers-wait", ev)
        self.assertGreater(ev["workers_wait_share"], 0.9)
        self.assertIn("torch_steps.py:78 in main", f["summary"])

    def test_a_gpu_bound_loop_is_its_synchronisation_and_no_alarm(self):
        own = self.measured("steps_gpu")
        steps = self.steps("steps_gpu", own["pid"])
        self.assertEqual((steps["count"], steps["source"]), (60, "optimizer"))
        self.assertAlmostEqual(steps["gpu_sync_fraction"], own["sync_fraction"], delta=0.03)
        self.assertAlmostEqual(steps["median_ns"] / 1e9, own["median_step_s"], delta=0.002)
        self.assertEqual(steps["input_wait_fraction"], 0)
        self.assertEqual(serious(self.report("steps_gpu")), [])

    def test_healthy_loops_under_run_raise_no_alarm(self):
        for run in ("steps_train", "corpus_gpu_fallback"):
            with self.subTest(run=run):
                rep = self.report(run)
                self.assertEqual(serious(rep), [])
                (p,) = [p for p in rep["processes"] if p.get("steps")]
                self.assertEqual((p["steps"]["count"], p["steps"]["source"]), (50, "optimizer"))
                self.assertIn("device cuda", self.out("corpus_gpu_fallback"))

    def test_a_loop_with_cuda_hidden_is_told_the_gpu_went_unused(self):
        for run, steps in (("steps_cpu", 60), ("corpus_cpu_fallback", 50)):
            with self.subTest(run=run):
                rep = self.report(run)
                self.assertEqual(serious(rep), [("perf.gpu-unused", "warning")])
                (f,) = h.findings(rep, "perf.gpu-unused")
                self.assertIn(f"{steps} steps of torch 2.11.0 ran on the CPU only", f["summary"])
                self.assertIn("NVIDIA H200", f["summary"])
                self.assertIn("CUDA_VISIBLE_DEVICES= hides every GPU", f["summary"])

    def hang(self, run):
        rep = self.report(run)
        (f,) = h.findings(rep, "proc.hang")
        self.assertEqual(f["evidence"]["ended_by"], "hang-timeout")
        self.assertEqual(h.findings(rep, "proc.killed"), [])
        self.assertIn("rc=124", self.out(run))
        return f

    def test_a_kernel_that_never_ends_under_hang_timeout(self):
        # Found here: the kernels in flight were left out when run's SIGTERM ended the job
        # (the rule read only the rings a SIGKILL leaves; the shim had written them at the
        # signal).
        f = self.hang("hang_kernel")
        ev = f["evidence"]
        self.assertEqual((ev["last_step"], ev["hang_timeout_ns"]), (5, 15_000_000_000))
        (p,) = ev["processes"]
        (call,) = p["in_flight"]
        self.assertEqual((call["call"], call["api"], call["device_wide"]), ("gpu_sync", "cudaDeviceSynchronize", True))
        self.assertGreater(call["blocked_ns"], 15_000_000_000)
        self.assertEqual(call["python_stack"][1:], ["/work/main/tests/gpu/real/torch_hang.py:73 in main",
                                                    "/work/main/tests/gpu/real/torch_hang.py:82 in <module>"])
        kernels = [(k["kernel"], k["python_line"]) for k in call["kernels"]]
        self.assertEqual(len(kernels), 3, kernels)
        self.assertEqual(kernels[0], ("at::cuda::(anonymous namespace)::spin_kernel(long)",
                                      "/work/main/tests/gpu/real/torch_hang.py:72 in main"))
        self.assertTrue(all(line == "/work/main/tests/gpu/real/torch_hang.py:71 in main" for _, line in kernels[1:]),
                        kernels)
        self.assertIn("was blocked 15.3 s in cudaDeviceSynchronize() waiting for kernel "
                      "at::cuda::(anonymous namespace)::spin_kernel(long) (and 2 more launched before it)",
                      f["summary"])

    def test_an_nvcc_kernel_that_never_ends_under_hang_timeout(self):
        f = self.hang("hang_nvcc")
        (p,) = f["evidence"]["processes"]
        (call,) = p["in_flight"]
        self.assertEqual((call["api"], call["device_wide"]), ("cudaStreamSynchronize", False))
        self.assertEqual([(k["kernel"], k["api"], k["stream"]) for k in call["kernels"]],
                         [("spin(long long)", "__cudaLaunchKernel", call["stream"]),
                          ("fill(float*)", "__cudaLaunchKernel", call["stream"])])
        self.assertIn("no progress: the main process", f["summary"])

    def test_a_worker_stuck_on_storage_under_hang_timeout(self):
        f = self.hang("hang_loader")
        ev = f["evidence"]
        main = [p for p in ev["processes"] if p["role"] == "main"]
        stuck = [p for p in ev["processes"] if p["role"] == "dataloader-worker" and p["stuck"]]
        self.assertEqual(len(main), 1)
        self.assertEqual([(p["worker_id"], [(c["call"], c["path"]) for c in p["in_flight"]]) for p in stuck],
                         [(0, [("read", "/tmp/gv/hang_loader_data/never.fifo")])])
        self.assertEqual([(c["call"], c["where"]) for c in main[0]["in_flight"]],
                         [("batch_wait", "torch_hang.py:77 in main")])
        self.assertIn("the main process (pid %d) waited" % main[0]["pid"], f["summary"])
        self.assertIn("DataLoader worker 0 (pid %d) was blocked" % stuck[0]["pid"], f["summary"])

    def test_hung_programs_killed_under_plain_preload_name_what_they_were_in(self):
        # Nothing outside the process saw when the SIGKILL came: it is no proc.hang (an
        # OOM kill mid-synchronisation looks the same), but the finding says where it was.
        for run, api, kernel, more in (
                ("corpus_spin", "cuCtxSynchronize_v2", "spin_forever(int volatile*)", " (and 1 more launched before it)"),
                ("corpus_torch_gpu_hang", "cudaDeviceSynchronize",
                 "at::cuda::(anonymous namespace)::spin_kernel(long)", "")):
            with self.subTest(run=run):
                rep = self.report(run)
                self.assertIn("rc=137", self.out(run))
                self.assertEqual(serious(rep), [("proc.killed", "error")])
                (f,) = h.findings(rep, "proc.killed")
                self.assertIn(f"; it was killed inside {api}() waiting for kernel {kernel}{more}, entered at +",
                              f["summary"])
                self.assertEqual([c["api"] for c in f["evidence"]["in_flight"]], [api])
                self.assertFalse(f["evidence"]["memory_high"])
                self.assertIn("a GPU kernel that never finished", f["advice"])
                self.assertIn("--hang-timeout", f["advice"])
        # corpus_torch_gpu_hang.py's truth: the kernel was launched by torch.cuda._sleep at line 9.
        (f,) = h.findings(self.report("corpus_torch_gpu_hang"), "proc.killed")
        (k,) = f["evidence"]["in_flight"][0]["kernels"]
        self.assertTrue(k["python_line"].endswith("torch_gpu_hang.py:9 in <module>"), k)

    def test_the_wheel_needs_only_glibc(self):
        w = self.out("wheel")
        self.assertIn("colabtrace 0.1.0 (trace format 1.2)", w)  # the wheel as it ran on the H200 (2026-11-28)
        self.assertIn("glibc ldd (Ubuntu GLIBC 2.39", w)
        needed = [l.split()[0] for l in w.splitlines() if "=>" in l]
        self.assertEqual(sorted(set(needed)), ["libc.so.6", "libdl.so.2", "libm.so.6", "libpthread.so.0"], needed)


if __name__ == "__main__":
    unittest.main(verbosity=2)
