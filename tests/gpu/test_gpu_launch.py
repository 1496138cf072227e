"""Failed kernel launches (issue 13), end to end: programs launch kernels through the
simulated runtime and driver under the shim; failures become gpu_launch_failed records and
gpu.launch-failed findings naming the kernel with the exact count; a missing image (209,
98) also raises abi.no-kernel-image; successful launches leave no record and no finding."""
import unittest

import ctharness as h
from gputest import GpuTest

PROG = "gpu_launch_scenarios"


class LaunchFailures(GpuTest):
    def launch_findings(self, rep):
        return {(f["evidence"]["kernel"], f["evidence"]["error"]): f for f in h.findings(rep, "gpu.launch-failed")}

    def test_runtime_launch_without_kernel_image(self):
        _, rep, trace = self.run_scenario(PROG, "runtime_no_image")
        recs = h.records(trace, "gpu_launch_failed")
        # 7 failed launches, each one record at runtime level (the driver calls the
        # runtime made underneath are not recorded twice); the 5 good launches, none.
        self.assertEqual(len(recs), 7, recs)
        self.assertEqual({(r["api"], r["layer"], r["rc"]) for r in recs}, {("17", "0", "209")})
        self.assertEqual({r["device"] for r in recs}, {"0"})
        fs = self.launch_findings(rep)
        self.assertEqual(list(fs), [("scale_sm90_only", 209)])
        f = fs[("scale_sm90_only", 209)]
        self.assertEqual(f["severity"], "error")
        ev = f["evidence"]
        self.assertEqual((ev["error_name"], ev["count"], ev["api"]),
                         ("cudaErrorNoKernelImageForDevice", 7, "cudaLaunchKernel"))
        self.assertEqual(ev["library"], PROG)
        self.assertGreater(ev["first_at_ns"], 0)
        self.assertTrue(any(fr.startswith("runtime_no_image") for fr in ev["stack"]), ev["stack"])
        # The simulated runtime loads the image through a wrapped driver pointer, so the
        # failed loads are cited too (the real runtime's own loads are not seen).
        errors = self.one(rep, "abi.no-kernel-image")["evidence"]["errors"]
        self.assertEqual(sorted((e["api"], e["rc"]) for e in errors),
                         sorted([("cudaLaunchKernel", 209)] * 7 + [("cuModuleLoadData", 209)] * 7))

    def test_successful_launches_leave_no_record(self):
        _, rep, trace = self.run_scenario(PROG, "runtime_ok")
        self.assertEqual(h.records(trace, "gpu_launch_failed"), [])
        self.none(rep, "gpu.launch-failed")
        self.none(rep, "abi.no-kernel-image")

    def test_other_runtime_entry_points_and_invalid_device_function(self):
        _, rep, trace = self.run_scenario(PROG, "runtime_variants")
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual(sorted((r["api"], r["rc"]) for r in recs),
                         sorted([("19", "209")] * 2 + [("21", "209")] * 3 + [("17", "98")] * 4))
        fs = self.launch_findings(rep)
        self.assertEqual(sorted(fs), [("never_registered", 98), ("scale_sm90_only", 209)])
        self.assertEqual(fs[("scale_sm90_only", 209)]["evidence"]["count"], 5)
        self.assertEqual(fs[("never_registered", 98)]["evidence"]["count"], 4)
        self.assertEqual(fs[("never_registered", 98)]["evidence"]["error_name"],
                         "cudaErrorInvalidDeviceFunction")
        errors = self.one(rep, "abi.no-kernel-image")["evidence"]["errors"]
        self.assertEqual(sorted((e["api"], e["rc"]) for e in errors if e["api"] != "cuModuleLoadData"),
                         sorted([("cudaLaunchKernelExC", 209)] * 2 + [("cudaLaunchCooperativeKernel", 209)] * 3 +
                                [("cudaLaunchKernel", 98)] * 4))

    def test_more_call_sites_than_the_cache_holds(self):
        _, rep, trace = self.run_scenario(PROG, "runtime_many_sites")
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual([(r["api"], r["rc"]) for r in recs], [("17", "209")])
        fs = self.launch_findings(rep)
        self.assertEqual(list(fs), [("scale_sm90_only", 209)])
        self.assertEqual(fs[("scale_sm90_only", 209)]["evidence"]["count"], 1)

    def test_driver_launch_failures_named_by_the_driver(self):
        _, rep, trace = self.run_scenario(PROG, "driver_failures")
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual(sorted((r["api"], r["layer"], r["rc"], r["name"]) for r in recs), sorted(
            [("96", "1", "719", "saxpy_fails")] * 4 + [("98", "1", "719", "saxpy_fails")] * 2 +
            [("96", "1", "209", "lib_no_image")] * 3))
        funcs = h.records(trace, "gpu_function")
        self.assertEqual(sorted(f["name"] for f in funcs), ["lib_no_image", "saxpy_fails", "saxpy_ok"])
        interposed = [r for r in h.records(trace, "gpu_interpose") if r["name"] == "cuLaunchKernelEx"]
        self.assertEqual(len(interposed), 1, interposed)
        fs = self.launch_findings(rep)
        self.assertEqual(sorted(fs), [("lib_no_image", 209), ("saxpy_fails", 719)])
        self.assertEqual(fs[("saxpy_fails", 719)]["evidence"]["count"], 6)
        self.assertEqual(fs[("saxpy_fails", 719)]["evidence"]["error_name"], "CUDA_ERROR_LAUNCH_FAILED")
        self.assertEqual(fs[("lib_no_image", 209)]["evidence"]["count"], 3)
        self.assertEqual(fs[("lib_no_image", 209)]["evidence"]["error_name"], "CUDA_ERROR_NO_BINARY_FOR_GPU")
        errors = self.one(rep, "abi.no-kernel-image")["evidence"]["errors"]
        self.assertEqual([(e["api"], e["rc"], e["kernel"]) for e in errors],
                         [("cuLaunchKernel", 209, "lib_no_image")] * 3)


if __name__ == "__main__":
    unittest.main()
