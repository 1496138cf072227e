"""The toolkit's REAL libcudart.so.13 under the shim (tests/simcuda's probe loads it with
dlopen and takes its functions with dlsym):
  - without any driver the program gets the runtime's own error (35) exactly as without
    the shim, and the failed cudaMalloc is recorded;
  - against the simulated driver, every entry point the real runtime asks cuGetProcAddress
    for that the shim traces comes back wrapped (the real runtime stops at a private
    export table the simulator does not provide, so it allocates nothing; see
    tests/simcuda/real_cudart13_requests.txt)."""
import os
import re
import unittest

import ctharness as h
from gputest import REAL_CUDART, GpuTest, bare, sim_env

PROBE = os.path.join(h.BUILD, "tests", "simcuda", "sim_real_cudart_probe")
SIM_SRC = os.path.join(os.path.dirname(__file__), "..", "simcuda")

# The driver entry points the shim wraps (interpose.cpp's kVariants), by base name.
TRACED_BASES = {
    "cuMemAlloc", "cuMemFree", "cuMemAllocManaged", "cuMemAllocPitch", "cuMemAllocAsync",
    "cuMemFreeAsync", "cuMemAllocFromPoolAsync", "cuMemPoolCreate", "cuMemPoolDestroy",
    "cuMemPoolTrimTo", "cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap",
    "cuMemAddressReserve", "cuMemAddressFree", "cuMemGetInfo", "cuMemAllocHost",
    "cuMemHostAlloc", "cuMemFreeHost", "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx",
    "cuModuleLoadFatBinary", "cuLibraryLoadData", "cuLibraryLoadFromFile", "cuInit",
    "cuGetProcAddress", "cuLaunchKernel", "cuLaunchKernelEx", "cuLaunchCooperativeKernel",
    "cuModuleGetFunction", "cuLibraryGetKernel", "cuFuncGetName", "cuKernelGetFunction",
    "cuCtxSynchronize", "cuStreamSynchronize", "cuStreamQuery", "cuEventSynchronize", "cuEventQuery",
    "cuMemcpy", "cuMemcpyAsync", "cuMemcpyHtoD", "cuMemcpyDtoH", "cuMemcpyDtoD", "cuMemcpyHtoDAsync",
    "cuMemcpyDtoHAsync"}


def sim_entries():
    """(base, version, ptds) of every entry point the simulated driver resolves."""
    out = set()
    with open(os.path.join(SIM_SRC, "sim_driver_entries.h")) as f:
        lines = f.readlines()
    for line in lines:
        m = re.match(r"E\((\w+),\s*(\d+),\s*(\w+),\s*(\d)\)", line.strip())
        if m:
            out.add((m.group(1), int(m.group(2)), m.group(4) == "1"))
    return out


def requests():
    out = []
    with open(os.path.join(SIM_SRC, "real_cudart13_requests.txt")) as f:
        lines = f.readlines()
    for line in lines:
        if line.startswith("#") or not line.strip():
            continue
        name, version, flags = line.split()
        out.append((name, int(version), int(flags)))
    return out


@unittest.skipUnless(os.path.exists(REAL_CUDART) and os.path.exists(PROBE), "no real libcudart.so.13")
class RealCudart(GpuTest):
    def probe(self, driver: bool):
        argv = [PROBE, REAL_CUDART]
        without = bare(argv, sim_env(driver=driver))
        run, rep, trace = self.run_scenario("", "", argv=argv, driver=driver)
        self.assertEqual(run.stdout, without.stdout)
        return run, rep, trace

    def test_without_a_driver_the_runtime_error_is_unchanged(self):
        run, rep, trace = self.probe(driver=False)
        if "libcuda_loaded=1" in run.stdout:
            self.skipTest("a libcuda.so.1 is installed")
        self.assertIn("cudaMalloc=35 (cudaErrorInsufficientDriver)", run.stdout)
        allocs = h.records(trace, "gpu_alloc")
        self.assertEqual([(a["api"], a["rc"], a["addr"]) for a in allocs], [("1", "35", "0x0")])
        self.assertEqual([(f["api"], f["rc"]) for f in h.records(trace, "gpu_free")], [("2", "35")])
        g = self.gpu(rep)
        self.counts(g, 0, 0, 1, 0, 0)
        v = g["versions"][0]
        self.assertEqual((v["runtime"], v["driver"]), (13000, 0))
        self.assertEqual(v["runtime_lib"], REAL_CUDART)
        # The cause is the missing driver (its failed load), not a driver too old.
        self.assertEqual(h.findings(rep, "abi.driver-too-old"), [])
        self.assertEqual([f["evidence"]["requested"] for f in h.findings(rep, "abi.load-failed")],
                         ["libcuda.so.1"])

    def test_entry_points_the_real_runtime_requests_are_wrapped(self):
        run, rep, trace = self.probe(driver=True)
        self.assertIn("cudaMalloc=801 (cudaErrorNotSupported)", run.stdout)
        interposed = h.records(trace, "gpu_interpose")
        self.assertTrue(all(r["wrapped"] == "1" for r in interposed), interposed)
        got = {(r["name"], int(r["version"]), int(r["flags"])) for r in interposed if r["via"] == "2"}
        # What the real runtime asked for, the simulator resolved, and the shim traces:
        # one wrapper per distinct real function, i.e. per (base, per-thread?) variant.
        resolvable = sim_entries()
        expected = set()
        seen = set()
        for name, version, flags in requests():
            if name not in TRACED_BASES:
                continue
            per_thread = flags & 2 != 0
            variants = [e for e in resolvable if e[0] == name and e[1] <= version and (per_thread or not e[2])]
            if not variants:
                continue
            best = max(variants, key=lambda e: (e[1], e[2]))
            if best in seen:
                continue
            seen.add(best)
            expected.add((name, version, flags))
        # cuGetProcAddress_v2 itself came through dlsym (via 0), not through itself.
        expected.discard(("cuGetProcAddress", 12000, 0))
        self.assertEqual(got, expected)
        self.assertIn(("cuMemAlloc", 3020, 0), got)
        self.assertIn(("cuMemAllocAsync", 11020, 2), got)
        dlsym = {r["name"] for r in interposed if r["via"] == "0"}
        self.assertEqual(dlsym, {"cudaRuntimeGetVersion", "cudaDriverGetVersion", "cudaMalloc",
                                 "cudaFree", "cudaMemGetInfo", "cudaGetLastError",
                                 "cuGetProcAddress_v2"})
        allocs = h.records(trace, "gpu_alloc")
        self.assertEqual([(a["api"], a["rc"]) for a in allocs], [("1", "801")])
        self.counts(self.gpu(rep), 0, 0, 1, 0, 0)


if __name__ == "__main__":
    unittest.main()
