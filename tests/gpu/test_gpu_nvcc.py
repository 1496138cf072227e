"""Programs nvcc really compiled (scenarios/nvcc_kernels.cu, sm_80 code only), run against the
simulated CUDA runtime and driver under the shim (issues 21 and 23). nvcc 13's host stubs call
__cudaGetKernel and __cudaLaunchKernel, not cudaLaunchKernel; the H200 corpus run kern_wrong
failed five such launches with 209 and its trace had no launch record.

- gpu_nvcc_shared (-cudart shared): the shim interposes __cudaLaunchKernel, names the kernel
  from its host stub (demangled), in the program.
- gpu_nvcc_static (nvcc's default static runtime; the simulated libcudart_static.a stands in
  for the toolkit's): the runtime is inside the program, so only the driver calls it makes
  are seen; the failed lazy lookup (cuLibraryGetKernel, 209) names the kernel, the library
  is the program that holds the image.

Skipped with a message where nvcc is absent (CI's machine)."""
import os
import unittest

import ctharness as h
from gputest import GpuTest

NVCC = os.environ.get("GPU_NVCC", "")
KERNELS = [("scale(float*)", 5), ("void axpy<float>(float, float const*, float*)", 3)]


def program(kind):
    return h.test_bin("gpu", f"gpu_nvcc_{kind}")


class NvccPrograms(GpuTest):
    def setUp(self):
        super().setUp()
        if not NVCC:
            self.skipTest("no nvcc on this machine: the nvcc-built launch programs were not built")
        for kind in ("shared", "static"):
            if not os.path.exists(program(kind)):
                self.skipTest(f"{program(kind)} was not built")

    def run_nvcc(self, kind, scenario, sim, returncode=0):
        return self.run_scenario(f"gpu_nvcc_{kind}", scenario, sim=sim, returncode=returncode,
                                 argv=[program(kind), scenario])

    def launch_findings(self, rep):
        return {(f["evidence"]["kernel"], f["evidence"]["count"]): f for f in h.findings(rep, "gpu.launch-failed")}

    def test_shared_runtime_launches_without_image(self):
        # SIMCUDA_CC 9.0: the sm_80 code does not run (the corpus run's H200 is sm_90).
        _, rep, trace = self.run_nvcc("shared", "no_image", {"SIMCUDA_CC": "9.0"})
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual([(r["api"], r["layer"], r["rc"]) for r in recs], [("23", "0", "209")] * 8)
        fs = self.launch_findings(rep)
        self.assertEqual(sorted(fs), sorted(KERNELS))
        for (kernel, count), f in fs.items():
            ev = f["evidence"]
            self.assertEqual((ev["error"], ev["error_name"], ev["library"], ev["api"]),
                             (209, "cudaErrorNoKernelImageForDevice", "gpu_nvcc_shared", "__cudaLaunchKernel"))
        img = self.one(rep, "abi.no-kernel-image")
        self.assertIn("gpu_nvcc_shared", img["summary"])
        self.assertEqual(sorted((e["api"], e["kernel"], e["caller"]) for e in img["evidence"]["errors"]),
                         sorted([("__cudaLaunchKernel", k, "gpu_nvcc_shared") for k, n in KERNELS for _ in range(n)]))

    def test_static_runtime_launches_without_image(self):
        _, rep, trace = self.run_nvcc("static", "no_image", {"SIMCUDA_CC": "9.0"})
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual(sorted((r["api"], r["layer"], r["rc"], r["name"]) for r in recs), sorted(
            [("103", "1", "209", "_Z5scalePf")] * 5 + [("103", "1", "209", "_Z4axpyIfEvT_PKS0_PS0_")] * 3))
        fs = self.launch_findings(rep)
        self.assertEqual(sorted(fs), sorted(KERNELS))
        for f in fs.values():
            ev = f["evidence"]
            self.assertEqual((ev["error"], ev["error_name"], ev["library"], ev["api"]),
                             (209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "gpu_nvcc_static", "cuLibraryGetKernel"))
        img = self.one(rep, "abi.no-kernel-image")
        self.assertEqual({(e["kernel"], e["caller"]) for e in img["evidence"]["errors"]},
                         {(k, "gpu_nvcc_static") for k, _ in KERNELS})

    def test_successful_launches_leave_no_record(self):
        for kind in ("shared", "static"):
            with self.subTest(kind=kind):
                _, rep, trace = self.run_nvcc(kind, "ok", {"SIMCUDA_CC": "8.0"})
                self.assertEqual(h.records(trace, "gpu_launch_failed"), [])
                self.assertEqual(h.records(trace, "gpu_launch_ring"), [])
                self.none(rep, "gpu.launch-failed")
                self.none(rep, "abi.no-kernel-image")

    def test_out_of_bounds_write_is_named_after_the_fault(self):
        # The out-of-bounds kernel (its device name is what SIMCUDA_FAULT_KERNEL matches)
        # launches fine; cudaStreamSynchronize(s1) reports 700; the fault names s1's two
        # kernels, newest first, and lists the kernel in flight on s2 apart.
        sync_api = {"shared": "cudaStreamSynchronize", "static": "cuStreamSynchronize"}
        later_api = {"shared": "cudaMalloc", "static": "cuMemAlloc_v2"}
        for kind in ("shared", "static"):
            with self.subTest(kind=kind):
                _, rep, trace = self.run_nvcc(kind, "fault", {"SIMCUDA_FAULT_KERNEL": "_Z9oob_writePfl"})
                ev = self.one(rep, "gpu.device-fault")["evidence"]
                self.assertEqual((ev["error"], ev["api"], ev["scope"]), (700, sync_api[kind], "stream"))
                self.assertEqual([(k["kernel"], k["library"]) for k in ev["kernels"]],
                                 [("oob_write(float*, long)", f"gpu_nvcc_{kind}"),
                                  ("fine(float*)", f"gpu_nvcc_{kind}")])
                self.assertEqual([(k["kernel"], k["grid"]) for k in ev["kernels_on_other_streams"]],
                                 [("fine(float*)", [4, 1, 1])])
                self.assertEqual(ev["later_call"]["api"], later_api[kind])
                self.assertTrue(any(fr.startswith("fault(bool)") for fr in ev["stack"]), ev["stack"])
                self.none(rep, "gpu.launch-failed")

    def test_abort_after_the_fault(self):
        for kind in ("shared", "static"):
            with self.subTest(kind=kind):
                _, rep, trace = self.run_nvcc(kind, "fault_abort", {"SIMCUDA_FAULT_KERNEL": "_Z9oob_writePfl"},
                                              returncode=-6)
                self.assertEqual(len(h.records(trace, "gpu_launch_ring")), 3)
                ev = self.one(rep, "gpu.device-fault")["evidence"]
                self.assertEqual(ev["culprit"]["kernel"], "oob_write(float*, long)")
                self.assertEqual(len(h.findings(rep, "proc.fatal-signal")), 1)


if __name__ == "__main__":
    unittest.main()
