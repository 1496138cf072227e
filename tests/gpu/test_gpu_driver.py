"""GPU memory through the CUDA driver API: a program linked against libcuda (the shim's
exported driver entry points), PyTorch-style VMM (expandable segments), run-time module
loads, and an XLA/TensorFlow-style client that reaches the driver only through dlopen,
dlsym and cuGetProcAddress_v2."""
import unittest

import ctharness as h
from gputest import GiB, MiB, GpuTest, bare, prog, sim_env

DRV = "gpu_driver_scenarios"
XLA = "gpu_xla_client"


class DriverScenarios(GpuTest):
    def test_linked_driver_program(self):
        _, rep, trace = self.run_scenario(DRV, "direct")
        g = self.gpu(rep)
        # cuMemAlloc x3 + pitched + managed; cuMemAlloc(NULL, ...) fails with 1.
        self.counts(g, 5, 4, 1, 8 * MiB + 16 * MiB + 32 * MiB, 32 * MiB)
        self.assertEqual(g["by_kind"]["managed"], {"allocations": 1, "bytes": 4 * MiB})
        self.assertEqual(g["by_kind"]["device"], {"allocations": 4, "bytes": 56 * MiB + 2048 * 10})
        self.assertEqual(g["host_pinned"]["allocations"], 1)
        self.assertEqual(g["failures_by_code"], {"1": 1})
        dev = g["devices"][0]
        self.assertEqual(dev["api_family"], {"runtime": 0, "driver": 5})
        self.assertEqual(dev["apis"], {"cuMemAlloc_v2": 3, "cuMemAllocManaged": 1, "cuMemAllocPitch_v2": 1})
        allocs = h.records(trace, "gpu_alloc")
        self.assertEqual({a["layer"] for a in allocs}, {"1"})
        pitched = [a for a in allocs if a["api"] == "67"]
        self.assertEqual((pitched[0]["pitch"], pitched[0]["size"]), ("2048", str(2048 * 10)))
        v = g["versions"][0]
        self.assertEqual((v["runtime"], v["driver"], v["runtime_lib"]), (-1, 13000, ""))
        asked = [m for m in h.records(trace, "gpu_mem_info") if m["why"] == "2"]
        self.assertEqual([m["layer"] for m in asked], ["1"])
        self.none(rep, "gpu.oom")

    def test_vmm_expandable_segments(self):
        _, rep, trace = self.run_scenario(DRV, "vmm_expandable")
        g = self.gpu(rep)
        self.counts(g, 5, 5, 0, 100 * MiB, 0)
        self.assertEqual(g["by_kind"]["vmm"], {"allocations": 5, "bytes": 100 * MiB})
        self.assertEqual(g["vmm"], {"creates": 5, "maps": 5})
        # The peak is reached when the fifth page is created, just before it is mapped.
        at_peak = g["devices"][0]["address_map_at_peak"]
        self.assertEqual((at_peak["segments"], at_peak["segment_bytes"], at_peak["free_extents"]),
                         (4, 80 * MiB, 0))
        apis = [v["api"] for v in h.records(trace, "gpu_vmm")]
        # reserve, 5 x (create, map), 2 x (unmap, release), 3 x release, unmap, free
        self.assertEqual(apis, ["81"] + ["77", "79"] * 5 + ["80", "78"] * 2 + ["78"] * 3 + ["80", "82"])
        # Memory released while still mapped stays until the unmap.
        points = [p[1] for p in g["devices"][0]["timeline"]]
        self.assertEqual(points[-1], 0)
        self.assertEqual(max(points), 100 * MiB)
        self.none(rep, "gpu.leak")

    def test_vmm_out_of_memory(self):
        _, rep, _ = self.run_scenario(DRV, "vmm_oom", {"SIMCUDA_MEM_BYTES": "256M", "SIMCUDA_CONTEXT_BYTES": "0"})
        g = self.gpu(rep)
        self.counts(g, 6, 6, 1, 240 * MiB, 0)
        ev = self.one(rep, "gpu.oom")["evidence"]
        self.assertEqual((ev["api"], ev["cause"], ev["request_bytes"], ev["free_bytes"], ev["process_allocations"]),
                         ("cuMemCreate", "this-process", 40 * MiB, 16 * MiB, 6))

    def test_modules_loaded_at_run_time(self):
        _, rep, trace = self.run_scenario(DRV, "modules")
        mods = h.records(trace, "gpu_module")
        self.assertEqual([(m["api"], m["rc"], m["image_size"]) for m in mods], [("88", "0", "25"), ("88", "209", "0")])
        self.assertTrue(mods[0]["caller"].endswith("/" + DRV))
        self.assertEqual(self.gpu(rep)["modules"], {"loaded": 1, "failed": 1})

    def test_failed_driver_initialisation_is_recorded(self):
        run, rep, trace = self.run_scenario(DRV, "init_error", {"SIMCUDA_INIT_ERROR": "999"})
        self.assertEqual(run.stdout, "cuInit=999 cuMemAlloc=3\n")
        self.assertEqual([(e["api"], e["rc"]) for e in h.records(trace, "gpu_error")], [("93", "999")])
        self.counts(self.gpu(rep), 0, 0, 1, 0, 0)

    def test_xla_style_client_allocations_are_traced(self):
        run, rep, trace = self.run_scenario(XLA, "allocate")
        self.assertEqual(run.stdout, "alloc=libcolabtrace.so free=libcolabtrace.so info=libcolabtrace.so "
                                     "alloc_dlsym=libcolabtrace.so\n")
        g = self.gpu(rep)
        self.counts(g, 4, 2, 1, 3 * 64 * MiB + 32 * MiB, 2 * 64 * MiB)
        self.assertEqual(g["devices"][0]["api_family"], {"runtime": 0, "driver": 4})
        ev = self.one(rep, "gpu.oom")["evidence"]
        self.assertEqual((ev["cause"], ev["layer"], ev["request_bytes"]), ("larger-than-device", "driver", 32 * GiB))
        wrapped = [(r["name"], r["via"], r["version"]) for r in h.records(trace, "gpu_interpose")]
        self.assertIn(("cuGetProcAddress_v2", "0", "0"), wrapped)  # dlsym
        self.assertIn(("cuMemAlloc", "2", "3020"), wrapped)         # cuGetProcAddress_v2
        # dlsym("cuMemAlloc_v2") is the same real function: the same wrapper, no new record.
        self.assertEqual(len([w for w in wrapped if w[0].startswith("cuMemAlloc")]), 1)

    def test_xla_style_lookups(self):
        argv = [prog(XLA), "lookups"]
        without = bare(argv, sim_env())
        run, _, _ = self.run_scenario(XLA, "lookups")
        got = dict(l.split("=", 1) for l in run.stdout.splitlines())
        base = dict(l.split("=", 1) for l in without.stdout.splitlines())
        wrapped = {"cuMemAlloc@3020", "cuMemAllocAsync@11020/ptds", "cuMemCreate@10020",
                   "cuGetProcAddress@12000", "dlsym:cuMemFree_v2", "via-wrapped-gpa:cuMemFree"}
        for key, owner in base.items():
            if key in wrapped:
                self.assertEqual((key, owner, got[key]), (key, "libcuda.so.1", "libcolabtrace.so"))
            else:
                self.assertEqual((key, got[key]), (key, owner))  # untouched, results included
        self.assertEqual(got["cuMemAlloc@2000"], "libcuda.so.1")   # legacy 32-bit variant
        self.assertEqual(got["cuGetExportTable@3000"], "libcuda.so.1")
        self.assertEqual(got["dlsym:cudnnCreate"], "none")
        self.assertEqual(got["stable"], "1")

    def test_no_cuda_appears_in_a_process_without_it(self):
        argv = [prog(XLA), "probe_default"]
        without = bare(argv, {})
        run = h.run_traced(argv, out_dir=self.tmp)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout, without.stdout)
        self.assertEqual(run.stdout, "cudaMalloc=null cuMemAlloc_v2=null cuGetProcAddress_v2=null\n"
                                     "libcuda_loaded=0 libcudart_loaded=0\n")


if __name__ == "__main__":
    unittest.main()
