"""GPU device faults named after the crash (issue 23), end to end against the simulated CUDA
runtime and driver, whose SIMCUDA_FAULT_KERNEL makes a kernel fault its stream: the launch
succeeds, the next synchronisation of that stream returns 700 (or the given code), and every
later call fails with it, as on a real GPU.

Three kernels on two streams (fill and gather on s1, reduce on s2; gather faults), then s1 is
synchronised: gpu.device-fault names the call that reported it, s1's two kernels newest first
(gather, the culprit, then fill), and, from Python, the line each was launched from. A clean
run of the same launches reports nothing. Under SIGABRT after the error the ring is still in
the trace; without any error seen, a fatal signal writes it too.

Each kernel carries its whole Python stack (py/kernel_stacks.py: two kernels launched by one
helper line, one through an installed package), and its python_line is the innermost of the
program's own frames, on every CPython with a frame layout."""
import os
import re
import textwrap
import unittest

import ctharness as h
from pykernels import KERNEL_STACKS, PYTHONS, distinct_pythons, kernel_stacks_expected
from gputest import GpuTest, SIMCUDA_DIR

PROG = "gpu_launch_scenarios"
FAULT = {"SIMCUDA_FAULT_KERNEL": "gather"}

class DeviceFaultC(GpuTest):
    def fault(self, rep):
        fs = h.findings(rep, "gpu.device-fault")
        self.assertEqual(len(fs), 1, [f["id"] for f in rep["findings"]])
        return fs[0]

    def test_names_the_faulting_streams_kernels_newest_first(self):
        _, rep, trace = self.run_scenario(PROG, "device_fault", sim=FAULT)
        faults = h.records(trace, "gpu_fault")
        # The first sticky error (cudaStreamSynchronize of s1) and the first later call
        # failing with it (cudaMalloc); nothing for the calls after those.
        self.assertEqual([(r["order"], r["api"], r["rc"], r["device_wide"]) for r in faults],
                         [("1", "27", "700", "0"), ("2", "1", "700", "1")])
        ring = h.records(trace, "gpu_launch_ring")
        self.assertEqual(len(ring), 3, ring)  # fill, gather, reduce: written once, at the fault
        f = self.fault(rep)
        self.assertEqual(f["severity"], "error")
        ev = f["evidence"]
        self.assertEqual((ev["error"], ev["error_name"], ev["api"], ev["scope"], ev["device"]),
                         (700, "cudaErrorIllegalAddress", "cudaStreamSynchronize", "stream", 0))
        self.assertEqual(ev["stream"], faults[0]["stream"])
        self.assertEqual([(k["kernel"], k["library"], k["api"]) for k in ev["kernels"]],
                         [("gather", PROG, "cudaLaunchKernel"), ("fill", PROG, "cudaLaunchKernel")])
        self.assertEqual(ev["culprit"]["kernel"], "gather")
        self.assertEqual(ev["kernels_on_other_streams"], [])  # reduce's stream was synchronised
        self.assertEqual((ev["kernels"][0]["grid"], ev["kernels"][0]["block"]), ([4, 1, 1], [128, 1, 1]))
        self.assertTrue(any(fr.startswith("device_fault") for fr in ev["stack"]), ev["stack"])
        self.assertEqual((ev["later_call"]["api"], ev["later_call"]["error"]), ("cudaMalloc", 700))
        self.assertIn("gather", f["summary"])
        self.assertIn("cudaStreamSynchronize", f["summary"])
        for how in ("CUDA_LAUNCH_BLOCKING=1", "compute-sanitizer --tool memcheck",
                    "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1"):
            self.assertIn(how, f["advice"])
        # The launch that failed after the fault (700) belongs to the fault: no launch failure.
        self.none(rep, "gpu.launch-failed")
        self.assertEqual(h.records(trace, "gpu_launch_failed"), [])

    def test_clean_run_reports_nothing(self):
        _, rep, trace = self.run_scenario(PROG, "device_fault_clean")
        self.assertEqual(h.records(trace, "gpu_fault"), [])
        self.assertEqual(h.records(trace, "gpu_launch_ring"), [])
        self.assertEqual(h.records(trace, "gpu_launch_failed"), [])
        self.none(rep, "gpu.device-fault")
        self.none(rep, "gpu.launch-failed")

    def test_abort_after_the_error_keeps_the_ring(self):
        # PyTorch aborts in some paths after a CUDA error: the ring was written at the error.
        _, rep, trace = self.run_scenario(PROG, "device_fault_abort", sim=FAULT, returncode=-6)
        self.assertEqual({r["why"] for r in h.records(trace, "gpu_launch_ring")}, {"1"})
        self.assertEqual(len(h.records(trace, "gpu_launch_ring")), 3)
        ev = self.fault(rep)["evidence"]
        self.assertEqual([k["kernel"] for k in ev["kernels"]], ["gather", "fill"])
        self.assertEqual(len(h.findings(rep, "proc.fatal-signal")), 1)

    def test_fatal_signal_with_kernels_in_flight_writes_the_ring(self):
        _, rep, trace = self.run_scenario(PROG, "abort_in_flight", returncode=-6)
        ring = h.records(trace, "gpu_launch_ring")
        self.assertEqual(sorted((r["why"], r["seq"]) for r in ring), [("2", "1"), ("2", "2"), ("2", "3")])
        self.none(rep, "gpu.device-fault")  # no CUDA error was ever seen

    def test_check_treats_it_as_a_regression(self):
        _, _, clean = self.run_scenario(PROG, "device_fault_clean")
        _, _, faulty = self.run_scenario(PROG, "device_fault", sim=FAULT)
        budget = os.path.join(self.tmp, "budget.json")
        h.cli("baseline", clean, "-o", budget)
        ok = h.cli("check", "--baseline", budget, clean, check=False)
        self.assertEqual(ok.returncode, 0, ok.stdout + ok.stderr)
        bad = h.cli("check", "--baseline", budget, faulty, check=False)
        self.assertEqual(bad.returncode, 1, bad.stdout + bad.stderr)
        self.assertIn("new error finding gpu.device-fault", bad.stdout)

    def test_html_report_shows_it_first(self):
        # Another error finding sorts before gpu.device-fault by id (abi.no-kernel-image from
        # a second process): the HTML page still leads with the device fault.
        _, _, faulty = self.run_scenario(PROG, "device_fault", sim=FAULT)
        _, rep, no_image = self.run_scenario(PROG, "runtime_no_image")
        self.assertEqual(len(h.findings(rep, "abi.no-kernel-image")), 1)
        out = os.path.join(self.tmp, "r.html")
        h.cli("report", "--format", "html", "-o", out, faulty, no_image)
        with open(out, encoding="utf-8") as f:
            page = f.read()
        ids = re.findall(r'<article class="finding [a-z]+" data-id="([^"]+)"', page)
        self.assertEqual(ids[0], "gpu.device-fault", ids)
        self.assertIn("abi.no-kernel-image", ids)


PY_PROGRAM = textwrap.dedent('''\
    import ctypes, os, sys
    sim = os.environ["SIMCUDA_DIR"]
    rt = ctypes.CDLL(os.path.join(sim, "libcudart.so.13"))
    drv = ctypes.CDLL(os.path.join(sim, "libcuda.so.1"))
    fault = sys.argv[1] == "fault"

    def check(rc, want=0):
        if rc != want:
            raise SystemExit(f"CUDA call returned {rc}, expected {want}")

    check(rt.cudaFree(None))  # the runtime makes the primary context current
    module = ctypes.c_void_p()
    check(drv.cuModuleLoadData(ctypes.byref(module), b"SIMCUBIN sm_80 fn=fill fn=gather fn=reduce"))
    kernels = {}
    for name in (b"fill", b"gather", b"reduce"):
        f = ctypes.c_void_p()
        check(drv.cuModuleGetFunction(ctypes.byref(f), module, name))
        kernels[name] = f
    s1, s2 = ctypes.c_void_p(), ctypes.c_void_p()
    check(rt.cudaStreamCreate(ctypes.byref(s1)))
    check(rt.cudaStreamCreate(ctypes.byref(s2)))

    def fill_rows():
        check(drv.cuLaunchKernel(kernels[b"fill"], 8, 1, 1, 256, 1, 1, 0, s1, None, None))  # LAUNCH fill

    def gather_rows():
        check(drv.cuLaunchKernel(kernels[b"gather"], 8, 1, 1, 256, 1, 1, 0, s1, None, None))  # LAUNCH gather

    def reduce_rows():
        check(drv.cuLaunchKernel(kernels[b"reduce"], 8, 1, 1, 256, 1, 1, 0, s2, None, None))  # LAUNCH reduce

    fill_rows()
    gather_rows()
    reduce_rows()
    check(rt.cudaStreamSynchronize(s1), 700 if fault else 0)  # SYNC
    ''')


class DeviceFaultPython(GpuTest):
    def run_python(self, mode, sim):
        if not PYTHONS:
            self.skipTest("no CPython with a known frame layout")
        path = os.path.join(self.tmp, "train.py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(PY_PROGRAM)
        env = {"SIMCUDA_DIR": SIMCUDA_DIR}
        return self.run_scenario(PROG, mode, sim=sim, env=env, argv=[PYTHONS[0], path, mode]), path

    def line(self, path, marker):
        with open(path, encoding="utf-8") as f:
            rows = [i + 1 for i, l in enumerate(f) if marker in l]
        self.assertEqual(len(rows), 1, marker)
        return rows[0]

    def test_python_lines_of_the_kernels_in_flight(self):
        (_, rep, trace), path = self.run_python("fault", FAULT)
        ev = h.findings(rep, "gpu.device-fault")[0]["evidence"]
        self.assertEqual(ev["api"], "cudaStreamSynchronize")
        self.assertEqual(ev["python_stack"][0], f"{path}:{self.line(path, '# SYNC')} in <module>")
        self.assertEqual([(k["kernel"], k["python_line"]) for k in ev["kernels"]], [
            ("gather", f"{path}:{self.line(path, '# LAUNCH gather')} in gather_rows"),
            ("fill", f"{path}:{self.line(path, '# LAUNCH fill')} in fill_rows")])
        self.assertEqual([(k["kernel"], k["python_line"]) for k in ev["kernels_on_other_streams"]],
                         [("reduce", f"{path}:{self.line(path, '# LAUNCH reduce')} in reduce_rows")])
        self.assertEqual(ev["culprit"]["kernel"], "gather")

    def test_python_clean_run_reports_nothing(self):
        (_, rep, trace), _ = self.run_python("clean", None)
        self.assertEqual(h.records(trace, "gpu_launch_ring"), [])
        self.none(rep, "gpu.device-fault")


class KernelStacksPython(GpuTest):
    def test_each_kernel_carries_its_whole_python_stack(self):
        if not PYTHONS:
            self.skipTest("no CPython with a known frame layout")
        want = kernel_stacks_expected()
        for python in distinct_pythons():
            with self.subTest(python=python):
                _, rep, _ = self.run_scenario(PROG, "kernel-stacks", sim={"SIMCUDA_FAULT_KERNEL": "spin"},
                                              env={"SIMCUDA_DIR": SIMCUDA_DIR}, returncode=3,
                                              argv=[python, KERNEL_STACKS])
                f = h.findings(rep, "gpu.device-fault")
                self.assertEqual(len(f), 1, [x["id"] for x in rep["findings"]])
                ev = f[0]["evidence"]
                self.assertEqual([(k["kernel"], k["python_line"], k["python_stack"]) for k in ev["kernels"]], want)
                self.assertEqual(ev["culprit"]["kernel"], "spin")
                # The summary names the program's line, not the package's.
                self.assertIn(f"kernel spin (", f[0]["summary"])
                self.assertIn(want[0][1], f[0]["summary"])


if __name__ == "__main__":
    unittest.main()
