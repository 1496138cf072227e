"""Failed kernel launches (issues 13, 21), end to end: programs launch kernels through the
simulated runtime and driver under the shim; failures become gpu_launch_failed records and
gpu.launch-failed findings naming the kernel with the exact count; a missing image (209,
98) also raises abi.no-kernel-image; successful launches leave no record and no finding.
The launch path nvcc 13 generates (__cudaGetKernel, __cudaLaunchKernel) is covered by a
hand-written stub here and by real nvcc output in test_gpu_nvcc.py."""
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
        # The simulated runtime loads the image lazily as a library (which succeeds) and looks
        # the kernel up through a wrapped driver pointer: the failed lookup inside the launch
        # is the launch's failure, recorded once, at the runtime level.
        errors = self.one(rep, "abi.no-kernel-image")["evidence"]["errors"]
        self.assertEqual([(e["api"], e["rc"], e["kernel"], e["caller"]) for e in errors],
                         [("cudaLaunchKernel", 209, "scale_sm90_only", PROG)] * 7)
        loads = h.records(trace, "gpu_module")
        self.assertEqual([(m["api"], m["rc"]) for m in loads], [("91", "0"), ("91", "0")])
        self.assertEqual({m["image_object"].rsplit("/", 1)[-1] for m in loads}, {PROG})

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
        self.assertEqual(sorted((e["api"], e["rc"]) for e in errors),
                         sorted([("cudaLaunchKernelExC", 209)] * 2 + [("cudaLaunchCooperativeKernel", 209)] * 3 +
                                [("cudaLaunchKernel", 98)] * 4))

    def test_more_call_sites_than_the_cache_holds(self):
        _, rep, trace = self.run_scenario(PROG, "runtime_many_sites")
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual([(r["api"], r["rc"]) for r in recs], [("17", "209")])
        fs = self.launch_findings(rep)
        self.assertEqual(list(fs), [("scale_sm90_only", 209)])
        self.assertEqual(fs[("scale_sm90_only", 209)]["evidence"]["count"], 1)

    def test_nvcc_launch_path(self):
        # A stub written as nvcc 13 writes it: __cudaGetKernel once, then
        # __cudaPushCallConfiguration/__cudaPopCallConfiguration and __cudaLaunchKernel per
        # launch; 4 launches fail with 209. The handle is named through the __cudaGetKernel
        # record (its host stub), the library is the program.
        _, rep, trace = self.run_scenario(PROG, "runtime_nvcc_stub")
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual([(r["api"], r["layer"], r["rc"]) for r in recs], [("23", "0", "209")] * 4)
        got = h.records(trace, "gpu_function")
        self.assertEqual([(g["api"], g["handle"]) for g in got if g["api"] == "25"],
                         [("25", recs[0]["func"])])
        fs = self.launch_findings(rep)
        self.assertEqual(list(fs), [("nvcc_style_sm90", 209)])
        ev = fs[("nvcc_style_sm90", 209)]["evidence"]
        self.assertEqual((ev["count"], ev["api"], ev["library"], ev["error_name"]),
                         (4, "__cudaLaunchKernel", PROG, "cudaErrorNoKernelImageForDevice"))
        self.assertTrue(any(fr.startswith("runtime_nvcc_stub") for fr in ev["stack"]), ev["stack"])

    def test_driver_lookup_without_image_is_the_launch_failure(self):
        # A library without code for the device loads (lazily, as the real CUDA 13 driver
        # does) and its kernel lookup fails with 209: 3 failed cuLibraryGetKernel calls,
        # named by the name asked for, in the library the image came from.
        _, rep, trace = self.run_scenario(PROG, "driver_lookup_no_image")
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual([(r["api"], r["layer"], r["rc"], r["name"]) for r in recs],
                         [("103", "1", "209", "_Z6lookupPf")] * 3)
        fs = self.launch_findings(rep)
        self.assertEqual(list(fs), [("lookup(float*)", 209)])
        ev = fs[("lookup(float*)", 209)]["evidence"]
        self.assertEqual((ev["count"], ev["api"], ev["library"], ev["error_name"]),
                         (3, "cuLibraryGetKernel", PROG, "CUDA_ERROR_NO_BINARY_FOR_GPU"))
        # The 2 lookups of a name the other library lacks (500) are probes: no record.

    def test_driver_launch_failures_named_by_the_driver(self):
        _, rep, trace = self.run_scenario(PROG, "driver_failures")
        recs = h.records(trace, "gpu_launch_failed")
        self.assertEqual(sorted((r["api"], r["layer"], r["rc"], r["name"]) for r in recs), sorted(
            [("96", "1", "701", "saxpy_fails")] * 4 + [("98", "1", "701", "saxpy_fails")] * 2 +
            [("96", "1", "209", "lib_no_image")] * 3))
        funcs = h.records(trace, "gpu_function")
        self.assertEqual(sorted(f["name"] for f in funcs), ["lib_no_image", "saxpy_fails", "saxpy_ok"])
        interposed = [r for r in h.records(trace, "gpu_interpose") if r["name"] == "cuLaunchKernelEx"]
        self.assertEqual(len(interposed), 1, interposed)
        fs = self.launch_findings(rep)
        self.assertEqual(sorted(fs), [("lib_no_image", 209), ("saxpy_fails", 701)])
        self.assertEqual(fs[("saxpy_fails", 701)]["evidence"]["count"], 6)
        self.assertEqual(fs[("saxpy_fails", 701)]["evidence"]["error_name"],
                         "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES")
        self.assertEqual(fs[("lib_no_image", 209)]["evidence"]["count"], 3)
        self.assertEqual(fs[("lib_no_image", 209)]["evidence"]["error_name"], "CUDA_ERROR_NO_BINARY_FOR_GPU")
        errors = self.one(rep, "abi.no-kernel-image")["evidence"]["errors"]
        self.assertEqual([(e["api"], e["rc"], e["kernel"]) for e in errors],
                         [("cuLaunchKernel", 209, "lib_no_image")] * 3)


if __name__ == "__main__":
    unittest.main()
