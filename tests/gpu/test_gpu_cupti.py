"""CUPTI (issue 13; off unless COLABTRACE_CUPTI=1) against the simulated libcupti.so,
driven by the simulated driver: injection set only when unset, subscription and back-off,
activity buffer decoding, the merge with the hooks (nothing counted twice, CUPTI-only
allocations counted and flagged, the driver's module statics never counted), dropped-record
accounting, and no DT_NEEDED.

Issue 21: the shim never breaks the program's own profiler and makes no finding of its own.
CUPTI has one subscriber (the simulation refuses a second with 39, as the real one does);
when the program (torch.profiler's Kineto) subscribes or registers its activity buffers
later, the shim hands CUPTI over and the profiler gets every record it gets bare. The shim
takes the libcupti the process already has, else the one beside its libcudart, and marks
its own load, so no abi.duplicate-library / abi.system-vs-pip is ever colabtrace's. The
real-GPU traces of the corpus (/work/shared/gpu-corpus, extracted to $COLABTRACE_GPU_CORPUS or
/tmp/corpus/traces) are checked where present."""
import glob
import os
import shutil
import subprocess
import tempfile
import unittest

import ctharness as h
from gputest import SIMCUDA_DIR, MiB, GpuTest, bare, prog, sim_env

PROG = "gpu_cupti_scenarios"
PROFILER = "gpu_cupti_profiler"
ALLOCATED = {4 * MiB, 8 * MiB, 16 * MiB, 32 * MiB}
DEVICE, DEVICE_STATIC = "3", "6"  # CUpti_ActivityMemoryKind
STATIC_BYTES = 512  # the simulated driver's statics per module (sim_tool.h)
CORPUS = os.environ.get("COLABTRACE_GPU_CORPUS", "/tmp/corpus/traces")


def real(path):
    return os.path.realpath(path)


def cupti_loads(trace):
    """lib_load records of libcupti files: (api, realpath, fresh, requester realpath)."""
    return [(l["api"], real(l["path"]), l["fresh"], real(l["requester"]) if l["requester"] not in ("", "-") else "")
            for l in h.records(trace, "lib_load") if os.path.basename(l["path"]).startswith("libcupti")]


def library_rows(rep, stem="libcupti"):
    return sorted(real(l["path"]) for l in rep["libraries"] if os.path.basename(l["path"] or "").startswith(stem))


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
        self.assertEqual(sorted(int(m["bytes"]) for m in activity if m["op"] == "1" and m["memory_kind"] == DEVICE),
                         sorted(ALLOCATED))
        # The module's statics: the driver's own memory, recorded with its kind, never counted.
        self.assertEqual([(m["op"], int(m["bytes"]), m["correlation"]) for m in activity
                          if m["memory_kind"] == DEVICE_STATIC], [("1", STATIC_BYTES, "0")])
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
                          c["module_archs"], c["driver_static_allocations"], c["driver_static_bytes"],
                          c["host_allocations"], c["handed_over_at_ns"]),
                         ("subscribed", True, 6, 0, 3, 1, 32 * MiB, ["80"], 1, STATIC_BYTES, 0, None))
        cov = self.one(rep, "gpu.coverage-incomplete")["evidence"]["causes"]
        self.assertIn({"cause": "allocations-seen-only-by-cupti", "allocations": 1, "bytes": 32 * MiB}, cov)
        # The process had no libcupti: the shim loaded one for itself (the default search finds
        # SIMCUDA_DIR's), recorded as colabtrace's (api 5) with the shim as requester, and the
        # report does not list it as the program's (the program's RTLD_NOLOAD probe that finds
        # it, cupti_loaded=1, does not make it the program's).
        own = real(os.path.join(SIMCUDA_DIR, "libcupti.so"))
        self.assertEqual(cupti_loads(trace), [("5", own, "1", real(h.SHIM)), ("1", own, "0", real(prog(PROG)))])
        self.assertEqual(library_rows(rep), [])

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
        # The first two memory records (the module's statics, the 4 MiB allocation) are dropped.
        activity = [m for m in h.records(trace, "cupti_memory") if m["source"] == "1"]
        self.assertEqual([(m["op"], int(m["bytes"])) for m in activity],
                         [("1", 8 * MiB), ("1", 16 * MiB), ("2", 0), ("1", 32 * MiB)])
        self.assertEqual((g["cupti"]["activity_records"], g["cupti"]["dropped_records"]), (4, 2))
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

    # ---- issue 21: the program's own profiler keeps CUPTI ---------------------------------

    def test_sim_refuses_a_second_subscriber_and_frees_the_slot_on_unsubscribe(self):
        expect = "first=0 second=39 unsubscribe=0 again=0"
        p = bare([prog(PROFILER), "subscribe_twice"], sim_env())
        self.assertEqual((p.returncode, p.stdout.strip()), (0, expect), p.stderr)
        # Under the shim, which subscribed at cuInit: the program's first cuptiSubscribe still
        # succeeds (the shim hands over), exactly as bare.
        run, rep, trace = self.run_scenario(PROFILER, "subscribe_twice", env={"COLABTRACE_CUPTI": "1"})
        self.assertEqual(run.stdout.strip(), expect)
        self.assertEqual([(s["state"], s["rc"]) for s in h.records(trace, "cupti_state")],
                         [("6", "0"), ("1", "0"), ("7", "0")])

    def check_profiler(self, scenario, expect="subscribe=0 callbacks=4 memory2=5 static=1 pool=0 foreign=0"):
        p = bare([prog(PROFILER), scenario], sim_env())
        self.assertEqual((p.returncode, p.stdout.strip()), (0, expect), p.stderr)
        for cupti in ("0", "1"):
            run, rep, trace = self.run_scenario(PROFILER, scenario, env={"COLABTRACE_CUPTI": cupti})
            self.assertEqual(run.stdout.strip(), expect, f"COLABTRACE_CUPTI={cupti}")
            g = self.gpu(rep)
            self.counts(g, 4, 1, 0, 52 * MiB, 52 * MiB)  # the hooks saw every allocation either way
        # With CUPTI on: injected, subscribed, handed over (cuptiUnsubscribe's rc 0), and nothing
        # after: no flush at exit, no record of the shim's once the program had CUPTI.
        states = h.records(trace, "cupti_state")
        self.assertEqual([(s["state"], s["rc"]) for s in states], [("6", "0"), ("1", "0"), ("7", "0")])
        # What the shim saw before: the first module's statics, the 4 MiB allocation (both ways).
        mem = h.records(trace, "cupti_memory")
        self.assertEqual(sorted((m["source"], m["memory_kind"], int(m["bytes"])) for m in mem),
                         [("1", DEVICE, 4 * MiB), ("1", DEVICE_STATIC, STATIC_BYTES), ("2", "0", 4 * MiB)])
        self.assertEqual(int(states[-1]["records"]), 2)  # flushed into the hand-over record
        self.assertEqual([m["event"] for m in h.records(trace, "cupti_module")], ["1", "2"])
        c = g["cupti"]
        self.assertEqual((c["state"], c["rc"], c["merged_allocations"], c["cupti_only_allocations"],
                          c["driver_static_allocations"]), ("handed-over", 0, 1, 0, 1))
        self.assertIsInstance(c["handed_over_at_ns"], int)
        self.assertGreater(c["handed_over_at_ns"], 0)
        causes = self.one(rep, "gpu.coverage-incomplete")["evidence"]["causes"]
        self.assertEqual(causes, [{"cause": "cupti-handed-over", "at_ns": c["handed_over_at_ns"]}])
        # The program's own libcupti (DT_NEEDED) is the one the shim used: one copy, listed once.
        self.assertEqual(library_rows(rep), [real(os.path.join(SIMCUDA_DIR, "libcupti.so.13"))])
        self.assertEqual([l[0] for l in cupti_loads(trace)].count("5"), 1)
        self.none(rep, "abi.duplicate-library")

    def test_program_profiler_subscribing_later_gets_every_record_it_gets_bare(self):
        self.check_profiler("profile")

    def test_program_profiler_subscribing_with_v2_gets_every_record_it_gets_bare(self):
        self.check_profiler("profile_v2")

    def test_program_with_its_own_activity_buffers_and_no_subscriber_gets_every_record(self):
        # cuptiActivityRegisterCallbacks alone takes CUPTI's process-wide buffers: the shim
        # hands over then too (else the shim's MEMORY_POOL kind and buffers would reach it).
        self.check_profiler("activity_only", "subscribe=-1 callbacks=0 memory2=5 static=1 pool=0 foreign=0")

    def test_program_profiler_taking_cupti_through_dlsym_gets_every_record(self):
        self.check_profiler("profile_dlsym")

    def test_rtld_default_lookup_of_cupti_fails_as_bare_without_a_libcupti(self):
        p = bare([prog(PROG), "lookup"], sim_env())
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "subscribe=0 register=0"), p.stderr)
        for cupti in ("0", "1"):
            run, _, _ = self.run_scenario(PROG, "lookup", env={"COLABTRACE_CUPTI": cupti})
            self.assertEqual(run.stdout.strip(), "subscribe=0 register=0")

    def test_shim_takes_the_libcupti_the_process_already_has(self):
        # The program loaded its own copy (a wheel's, as PyTorch does); the loader's default
        # search would find another (SIMCUDA_DIR on LD_LIBRARY_PATH). The shim must use the
        # program's: one libcupti, no duplicate, nothing of colabtrace's in the report.
        wheel = os.path.join(self.tmp, "venv", "lib", "python3.12", "site-packages", "nvidia", "cu13", "lib")
        os.makedirs(wheel)
        copy = os.path.join(wheel, "libcupti.so.13")
        shutil.copy2(real(os.path.join(SIMCUDA_DIR, "libcupti.so.13")), copy)
        run, rep, trace = self.run_scenario(PROG, "allocs_with_cupti",
                                            env={"COLABTRACE_CUPTI": "1", "CUPTI_COPY": copy})
        self.assertIn("cupti_loaded=1", run.stdout)
        self.assertEqual([int(s["state"]) for s in h.records(trace, "cupti_state")], [6, 1, 5])
        loads = cupti_loads(trace)
        # The program's dlopen, the shim's (of the object already there), the program's probe.
        self.assertEqual([l[:3] for l in loads], [("1", real(copy), "1"), ("5", real(copy), "0"), ("1", real(copy), "0")])
        self.assertEqual(loads[1][3], real(h.SHIM))
        self.assertEqual(library_rows(rep), [real(copy)])
        self.none(rep, "abi.duplicate-library")
        self.none(rep, "abi.system-vs-pip")
        self.assertEqual(self.gpu(rep)["cupti"]["activity_records"], 6)

    def test_shim_takes_the_libcupti_beside_the_programs_libcudart(self):
        # No LD_LIBRARY_PATH: the loader's search from the shim finds no libcupti; the one in
        # the directory of the program's libcudart (found by its RUNPATH) is taken.
        run, rep, trace = self.run_scenario(PROG, "allocs_with_cudart", env={"COLABTRACE_CUPTI": "1"},
                                            driver=False)
        self.assertIn("cupti_loaded=1", run.stdout)
        self.assertEqual([int(s["state"]) for s in h.records(trace, "cupti_state")], [6, 1, 5])
        own = real(os.path.join(SIMCUDA_DIR, "libcupti.so.13"))
        self.assertEqual([l[:3] for l in cupti_loads(trace)], [("5", own, "1"), ("1", own, "0")])
        self.assertEqual(library_rows(rep), [])

    @unittest.skipUnless(os.path.isdir(os.path.join(CORPUS, "torch_cupti")),
                         f"the real-GPU corpus is not extracted at {CORPUS} (COLABTRACE_GPU_CORPUS)")
    def test_real_gpu_corpus_torch_cupti_has_no_finding_of_colabtraces(self):
        # torch_train with COLABTRACE_CUPTI=1 on an H200 (shim of 2b91e70): 940 module-static
        # and 3 pinned-host CUPTI records, and the toolkit's libcupti.so the old shim loaded
        # beside the wheel's libcupti.so.13.
        train = h.report(os.path.join(CORPUS, "torch_train"))
        rep = h.report(os.path.join(CORPUS, "torch_cupti"))
        self.assertEqual(train["gpu"]["allocations"], 19)
        self.assertEqual(rep["gpu"]["allocations"], 19)
        c = rep["processes"][0]["gpu"]["cupti"]
        self.assertEqual((c["cupti_only_allocations"], c["driver_static_allocations"], c["host_allocations"]),
                         (0, 940, 3))
        self.none(rep, "abi.duplicate-library")
        self.none(rep, "abi.system-vs-pip")
        self.assertEqual(library_rows(rep), ["/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13"])
        self.assertEqual([f for f in h.findings(rep, "gpu.coverage-incomplete")], [])

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
