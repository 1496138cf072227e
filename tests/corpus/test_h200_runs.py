"""Real runs on an NVIDIA H200 (CUDA 13.0, driver 580.159.04, PyTorch 2.11.0+cu130, CuPy,
JAX) under this shim, by `tools/gpu_validate` (programs in tests/gpu/real/), kept in
data/h200-2026-11-27.tar.xz with each program's output (`NAME.out`). The library files
are not here: the file-based checks are skipped (and say so); every other verdict is each
run's truth, with exact counts. docs/gpu-validation.md records the runs.
"""
import unittest

import ctharness as h
from h200traces import H200Traces, serious


class H200Runs(H200Traces):
    DATA = "h200-2026-11-27.tar.xz"

    def fault(self, run):
        faults = h.findings(self.report(run), "gpu.device-fault")
        self.assertEqual(len(faults), 1, run)
        return faults[0]["evidence"]

    def test_an_out_of_bounds_write_is_named_after_the_crash(self):
        # fault.cu: fill and poke on s1, other on s0; poke writes out of bounds. Every launch
        # returned success; cudaStreamSynchronize(s1) returned 700 (the program says so).
        self.assertIn("sync s1 cudaErrorIllegalAddress", self.out("fault"))
        for run, api, name in (("fault", "cudaStreamSynchronize", "cudaErrorIllegalAddress"),
                               ("fault_static", "cuStreamSynchronize", "CUDA_ERROR_ILLEGAL_ADDRESS")):
            self.assertEqual(serious(self.report(run)), [("gpu.device-fault", "error")], run)
            ev = self.fault(run)
            self.assertEqual((ev["error"], ev["error_name"], ev["api"]), (700, name, api), run)
            self.assertEqual(len(ev["kernels"]), 2, run)  # s1's two, not s0's
            self.assertEqual(ev["culprit"], ev["kernels"][0], run)
            self.assertEqual({k["library"] for k in ev["kernels"]}, {run}, run)
            if run == "fault_static":
                # The driver named them in the trace. With the shared runtime the names come
                # from the program's symbols, which are on the H200 only (its report there
                # said poke(float*, long) too: docs/gpu-validation.md).
                self.assertEqual([k["kernel"] for k in ev["kernels"]], ["poke(float*, long)", "fill(float*)"])
            self.assertEqual([k["grid"] + k["block"] for k in ev["kernels"]], [[1, 1, 1, 32, 1, 1]] * 2, run)
        self.assertEqual(serious(self.report("fault_clean")), [])

    def test_pytorch_device_side_assert_names_the_index_kernel_and_its_line(self):
        self.assertIn("device-side assert triggered", self.out("torch_index_oob"))
        rep = self.report("torch_index_oob")
        self.assertEqual(serious(rep), [("gpu.device-fault", "error")])  # no gpu.launch-failed after it
        ev = self.fault("torch_index_oob")
        self.assertEqual((ev["error"], ev["error_name"], ev["api"]), (710, "cudaErrorAssert", "cudaMemcpyAsync"))
        self.assertEqual(len(ev["kernels"]), 1)
        culprit = ev["culprit"]
        # Its name comes from libtorch_cuda.so's symbols, on the H200 only (there:
        # void at::native::index_elementwise_kernel<128, 4, ...>).
        self.assertEqual(culprit["library"], "libtorch_cuda.so")
        self.assertTrue(culprit["python_line"].endswith("tests/gpu/real/torch_index_oob.py:10 in <module>"),
                        culprit["python_line"])
        self.assertTrue(ev["python_stack"][0].endswith("torch_index_oob.py:11 in <module>"))  # .item()

    def test_nvcc_launches_without_an_image(self):
        # kern.cu for sm_80 only on the sm_90 GPU: five launches, each 209.
        self.assertEqual(self.out("kern_wrong").count("cudaErrorNoKernelImageForDevice"), 5)
        lf = h.findings(self.report("kern_wrong"), "gpu.launch-failed")
        self.assertEqual(len(lf), 1)
        ev = lf[0]["evidence"]
        self.assertEqual((ev["error"], ev["error_name"], ev["api"], ev["count"]),
                         (209, "cudaErrorNoKernelImageForDevice", "__cudaLaunchKernel", 5))
        # NVIDIA's static runtime launches inside the program: what shows is the driver's
        # failed lookup, once (the runtime caches it).
        lf = h.findings(self.report("kern_static"), "gpu.launch-failed")
        self.assertEqual(len(lf), 1)
        ev = lf[0]["evidence"]
        self.assertEqual((ev["kernel"], ev["library"], ev["error"], ev["api"], ev["count"]),
                         ("scale(float*)", "kern_sm80_static", 209, "cuLibraryGetKernel", 1))

    def test_cupti_hands_over_to_torch_profiler(self):
        # COLABTRACE_CUPTI=1 and torch.profiler: the profiler keeps every CUDA event it has
        # bare (40 with CUDA started first, 41 with the profiler started first).
        for run, bare in (("prof_cupti", "prof_bare"), ("prof_first_cupti", "prof_first_bare")):
            events = [line for line in self.out(run).splitlines() if line.startswith("cuda_events")]
            self.assertEqual(events, [line for line in self.out(bare).splitlines() if line.startswith("cuda_events")])
            self.assertNotIn("CUPTI initialization failed", self.out(run))
            rep = self.report(run)
            self.assertEqual(serious(rep), [], run)
            self.assertEqual([p["gpu"]["cupti"]["state"] for p in rep["processes"] if p.get("gpu", {}).get("cupti")],
                             ["handed-over"], run)
            self.assertEqual(rep["gpu"]["allocations"], 5, run)
        self.assertIn("cuda_events 40", self.out("prof_cupti"))

    def test_healthy_frameworks_raise_no_alarm(self):
        # CuPy probes cuTENSOR (its optional backend module needs libcutensor.so.2, absent):
        # info. JAX's CPU and CUDA plugins: no duplicate. A training loop: nothing.
        for run in ("cupy", "jax", "torch_train"):
            self.assertEqual(serious(self.report(run)), [], run)
        cutensor = [f for f in h.findings(self.report("cupy"), "abi.load-failed")
                    if f["evidence"]["requested"].endswith("cupy_backends/cuda/libs/cutensor.cpython-312-x86_64-linux-gnu.so")]
        self.assertEqual(len(cutensor), 1)
        self.assertEqual(cutensor[0]["severity"], "info")
        self.assertEqual(self.report("torch_train")["gpu"]["allocations"], 19)


if __name__ == "__main__":
    unittest.main()
