"""CUPTI (issue 13; off unless COLABTRACE_CUPTI=1) against the simulated libcupti.so,
driven by the simulated driver: injection set only when unset, subscription and back-off,
activity buffer decoding, the merge with the hooks (nothing counted twice, CUPTI-only
allocations counted and flagged), dropped-record accounting, and no DT_NEEDED."""
import glob
import os
import subprocess
import tempfile
import unittest

import ctharness as h
from gputest import MiB, GpuTest, prog, sim_env

PROG = "gpu_cupti_scenarios"
ALLOCATED = {4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB}


class Cupti(GpuTest):
    def run_cupti(self, env):
        run, rep, trace = self.run_scenario(PROG, "allocs", env=env)
        return run, rep, trace, rep["processes"][0]["gpu"]

    def states(self, trace):
        return [int(s["state"]) for s in h.records(trace, "cupti_state")]

    def test_injection_self_set_subscription_decoding_and_merge(self):
        run, rep, trace, g = self.run_cupti({"COLABTRACE_CUPTI": "1"})
        injection, loaded = run.stdout.split()
        self.assertEqual(os.path.realpath(injection.split("=", 1)[1]), os.path.realpath(h.SHIM))
        self.assertEqual(loaded, "cupti_loaded=1")
        # InitializeInjection (6), subscribed (1), flushed at exit (5).
        self.assertEqual(self.states(trace), [6, 1, 5])
        mem = h.records(trace, "cupti_memory")
        activity = [m for m in mem if m["source"] == "1"]
        callbacks = [m for m in mem if m["source"] == "2"]
        self.assertEqual(sorted((m["op"], int(m["bytes"])) for m in activity if m["op"] == "1"),
                         sorted(("1", b) for b in ALLOCATED))
        self.assertEqual(len([m for m in activity if m["op"] == "2"]), 1)
        self.assertEqual(sorted(int(m["bytes"]) for m in callbacks if m["op"] == "1"), sorted(ALLOCATED))
        self.assertEqual({m["device"] for m in activity}, {"0"})
        modules = h.records(trace, "cupti_module")
        self.assertEqual([(m["event"], m["archs"]) for m in modules], [("1", ""), ("2", "80")])
        # Hooks saw 3 allocations; CUPTI saw those 3 (twice each) plus the static-cudart one.
        self.assertEqual(len(h.records(trace, "gpu_alloc")), 3)
        self.counts(self.gpu(rep), 4, 1, 0, 28 * MiB, 20 * MiB)
        c = g["cupti"]
        self.assertEqual((c["state"], c["injected"], c["activity_records"], c["dropped_records"],
                          c["merged_allocations"], c["cupti_only_allocations"], c["cupti_only_bytes"],
                          c["module_archs"]),
                         ("subscribed", True, 5, 0, 3, 1, 32 * MiB, ["80"]))
        cov = self.one(rep, "gpu.coverage-incomplete")["evidence"]["causes"]
        self.assertIn({"cause": "allocations-seen-only-by-cupti", "allocations": 1, "bytes": 32 * MiB}, cov)

    def test_never_overrides_another_tools_injection(self):
        run, rep, trace, g = self.run_cupti({"COLABTRACE_CUPTI": "1",
                                             "CUDA_INJECTION64_PATH": "/nonexistent/nsys-injection.so"})
        self.assertEqual(run.stdout.strip(), "injection=/nonexistent/nsys-injection.so cupti_loaded=1")
        # Not injected, but started after the successful cuInit.
        self.assertEqual(self.states(trace), [1, 5])
        self.assertEqual((g["cupti"]["state"], g["cupti"]["injected"]), ("subscribed", False))

    def test_backs_off_when_cupti_has_a_subscriber(self):
        _, rep, trace, g = self.run_cupti({"COLABTRACE_CUPTI": "1", "SIMCUPTI_OTHER_SUBSCRIBER": "1"})
        states = h.records(trace, "cupti_state")
        self.assertEqual([(s["state"], s["rc"]) for s in states[1:]], [("2", "39")])
        self.assertEqual(h.records(trace, "cupti_memory"), [])
        self.assertEqual(h.records(trace, "cupti_module"), [])
        self.counts(self.gpu(rep), 3, 1, 0, 28 * MiB, 20 * MiB)
        self.assertEqual((g["cupti"]["state"], g["cupti"]["rc"]), ("backed-off", 39))
        causes = self.one(rep, "gpu.coverage-incomplete")["evidence"]["causes"]
        self.assertIn({"cause": "cupti-has-another-subscriber", "rc": 39}, causes)

    def test_dropped_records_are_counted(self):
        _, rep, trace, g = self.run_cupti({"COLABTRACE_CUPTI": "1", "SIMCUPTI_DROP": "2"})
        self.assertEqual(sum(int(s["dropped"]) for s in h.records(trace, "cupti_state")), 2)
        self.assertEqual(len([m for m in h.records(trace, "cupti_memory") if m["source"] == "1"]), 3)
        self.assertEqual((g["cupti"]["activity_records"], g["cupti"]["dropped_records"]), (3, 2))
        # The callbacks still saw every allocation: the merge is unchanged.
        self.assertEqual(g["cupti"]["cupti_only_allocations"], 1)
        causes = self.one(rep, "gpu.coverage-incomplete")["evidence"]["causes"]
        self.assertIn({"cause": "cupti-records-dropped", "records": 2}, causes)

    def test_off_by_default(self):
        run, rep, trace, g = self.run_cupti({})
        self.assertEqual(run.stdout.strip(), "injection=(unset) cupti_loaded=0")
        for name in ("cupti_state", "cupti_memory", "cupti_module"):
            self.assertEqual(h.records(trace, name), [], name)
        self.assertNotIn("cupti", g)
        self.counts(self.gpu(rep), 3, 1, 0, 28 * MiB, 20 * MiB)

    def test_loaded_cubins_feed_no_kernel_image(self):
        _, _, trace, _ = self.run_cupti({"COLABTRACE_CUPTI": "1"})
        # The simulated driver loads one module whose cubin is sm_80: it runs on sm_86
        # (same major, higher minor) but not on sm_90 nor on sm_75.
        for arch, expect in (("sm_86", []), ("sm_90", ["80"]), ("sm_75", ["80"])):
            rep = h.report(trace, extra=("--gpu-arch", arch))
            found = [m["cubin_archs"] for f in h.findings(rep, "abi.no-kernel-image")
                     for m in f["evidence"].get("loaded_modules", [])]
            self.assertEqual(found, expect, arch)
            if expect:
                f = self.one(rep, "abi.no-kernel-image")
                self.assertEqual(f["evidence"]["gpu_arch"], arch)
                self.assertEqual(f["evidence"]["arch_source"], "--gpu-arch")

    def run_under_cli(self, *flags):
        """`colabtrace run [flags] -- scenario allocs`: the job's trace, its stdout."""
        out = tempfile.mkdtemp(prefix="run-cupti-", dir=self.tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COLABTRACE_") or k == "COLABTRACE_BUILD_DIR"}
        env.pop("CUDA_INJECTION64_PATH", None)
        env.update(sim_env())
        env["COLABTRACE_SHIM"] = h.SHIM
        p = subprocess.run([h.CLI, "run", "-o", out, *flags, "--", prog(PROG), "allocs"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        jobs = [t for t in glob.glob(os.path.join(out, "*.ctrace")) if ".run." not in os.path.basename(t)]
        self.assertEqual(len(jobs), 1, jobs)
        return jobs[0], p.stdout

    def test_run_cupti_flag_turns_it_on_and_run_leaves_it_off(self):
        trace, stdout = self.run_under_cli("--cupti")
        self.assertIn("cupti_loaded=1", stdout)
        self.assertEqual(self.states(trace), [6, 1, 5])
        trace, stdout = self.run_under_cli()
        self.assertIn("cupti_loaded=0", stdout)
        self.assertEqual(self.states(trace), [])

    def test_shim_has_no_cuda_or_cupti_dependency_and_exports_the_injection_entry(self):
        dyn = subprocess.run(["readelf", "-d", h.SHIM], capture_output=True, text=True, check=True).stdout
        needed = [l for l in dyn.splitlines() if "(NEEDED)" in l]
        self.assertTrue(needed)
        self.assertEqual([l for l in needed if "cupti" in l or "cuda" in l], [])
        syms = subprocess.run(["nm", "-D", "--defined-only", h.SHIM], capture_output=True, text=True,
                              check=True).stdout
        self.assertIn(" InitializeInjection", syms)


if __name__ == "__main__":
    unittest.main()
