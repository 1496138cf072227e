"""GPU memory through the CUDA runtime API (simulated libcudart.so.13 over the simulated
driver): every scenario's counts, peaks, leaks and verdicts, exactly."""
import json
import os
import subprocess
import unittest

import ctharness as h
from gputest import GiB, MiB, GpuTest, bare, prog, sim_env

RT = "gpu_runtime_scenarios"


class RuntimeScenarios(GpuTest):
    def test_basic_counts_versions_device_and_one_record_per_call(self):
        run, rep, trace = self.run_scenario(RT, "basic")
        self.assertEqual(run.stdout, "runtime=13000 driver=13000\n")
        g = self.gpu(rep)
        self.counts(g, 3, 2, 0, 7 * MiB, 4 * MiB)
        dev = g["devices"][0]
        self.assertEqual((dev["index"], dev["name"], dev["compute_capability"], dev["total_bytes"],
                          dev["pci_bus_id"]), (0, "Simulated GPU", "8.0", 16 * GiB, "0000:01:00.0"))
        self.assertEqual(dev["api_family"], {"runtime": 3, "driver": 0})
        self.assertEqual(dev["apis"], {"cudaMalloc": 3})
        # The runtime call reached the driver: still one record per allocation, with the
        # driver API noted on it.
        allocs = h.records(trace, "gpu_alloc")
        self.assertEqual(len(allocs), 3)
        self.assertEqual({(a["api"], a["layer"], a["driver_api"]) for a in allocs}, {("1", "0", "64")})
        self.assertEqual(len(h.records(trace, "gpu_free")), 2)
        v = g["versions"][-1]
        self.assertEqual((v["runtime"], v["driver"]), (13000, 13000))
        self.assertTrue(v["runtime_lib"].endswith("/libcudart.so.13"), v)
        self.assertTrue(v["driver_lib"].endswith("/libcuda.so.1"), v)
        first_use = [m for m in h.records(trace, "gpu_mem_info") if m["why"] == "0"]
        self.assertEqual(len(first_use), 1)
        self.assertEqual(int(first_use[0]["total"]), 16 * GiB)
        asked = [m for m in h.records(trace, "gpu_mem_info") if m["why"] == "2"]
        self.assertEqual(len(asked), 1)
        self.assertEqual(rep["gpu"]["devices"][0]["pids"], [rep["processes"][0]["pid"]])
        self.none(rep, "gpu.oom")
        # 4 MiB allocated once and held at exit is context, not a leak (issue 9).
        self.none(rep, "gpu.leak")
        self.assertEqual((g["leak_growth_bytes"], g["held_at_exit_bytes"]), (0, 4 * MiB))

    def test_fragmentation_oom(self):
        _, rep, _ = self.run_scenario(RT, "fragmentation_oom",
                                      {"SIMCUDA_MEM_BYTES": "4608M", "SIMCUDA_CONTEXT_BYTES": "0"})
        g = self.gpu(rep)
        self.counts(g, 9, 5, 1, 9 * 512 * MiB, 4 * 512 * MiB)
        f = self.one(rep, "gpu.oom-fragmentation")
        self.assertEqual(f["severity"], "error")
        ev = f["evidence"]
        self.assertEqual((ev["request_bytes"], ev["free_bytes"], ev["total_bytes"]),
                         (GiB, 2560 * MiB, 4608 * MiB))
        self.assertEqual((ev["largest_free_extent_bytes"], ev["free_extents"], ev["free_extent_bytes"],
                          ev["free_outside_segments_bytes"]), (512 * MiB, 5, 2560 * MiB, 0))
        self.assertAlmostEqual(ev["fragmentation"], 0.8)
        self.assertEqual((ev["process_live_bytes"], ev["process_segments"]), (2 * GiB, 4))
        holders = ev["segments_holding_gaps"]
        self.assertEqual(len(holders), 4)
        self.assertEqual({b["size"] for b in holders}, {512 * MiB})
        self.assertTrue(any("fragmentation_oom" in fr for fr in holders[0]["stack"]), holders[0])
        self.none(rep, "gpu.oom")
        failure = g["failures"][0]
        self.assertEqual((failure["verdict"], failure["cause"], failure["rc_name"]),
                         ("gpu.oom-fragmentation", "fragmentation", "cudaErrorMemoryAllocation"))

    def test_genuine_oom_is_not_fragmentation(self):
        _, rep, _ = self.run_scenario(RT, "genuine_oom", {"SIMCUDA_MEM_BYTES": "8G"})
        g = self.gpu(rep)
        self.counts(g, 7, 7, 1, 7 * GiB, 0)
        ev = self.one(rep, "gpu.oom")["evidence"]
        self.assertEqual(ev["cause"], "this-process")
        self.assertEqual((ev["request_bytes"], ev["free_bytes"], ev["process_live_bytes"],
                          ev["process_allocations"], ev["held_elsewhere_bytes"]),
                         (GiB, 512 * MiB, 7 * GiB, 7, 512 * MiB))
        self.none(rep, "gpu.oom-fragmentation")

    def test_oom_from_another_process(self):
        _, rep, _ = self.run_scenario(RT, "other_process_oom",
                                      {"SIMCUDA_MEM_BYTES": "8G", "SIMCUDA_OTHER_BYTES": "5G"})
        ev = self.one(rep, "gpu.oom")["evidence"]
        self.assertEqual(ev["cause"], "other-process")
        self.assertEqual((ev["free_bytes"], ev["process_live_bytes"], ev["held_elsewhere_bytes"]),
                         (1536 * MiB, GiB, 5 * GiB + 512 * MiB))
        # The context's share is an estimate: the first reading's "elsewhere", capped at 1 GiB.
        self.assertEqual(ev["context_estimate_bytes"] + ev["other_processes_estimate_bytes"],
                         5 * GiB + 512 * MiB)
        self.none(rep, "gpu.oom-fragmentation")

    def test_oom_from_context_overhead(self):
        _, rep, _ = self.run_scenario(RT, "context_oom",
                                      {"SIMCUDA_MEM_BYTES": "2G", "SIMCUDA_CONTEXT_BYTES": "900M"})
        ev = self.one(rep, "gpu.oom")["evidence"]
        self.assertEqual(ev["cause"], "context")
        self.assertEqual((ev["request_bytes"], ev["free_bytes"], ev["process_live_bytes"],
                          ev["held_elsewhere_bytes"], ev["context_estimate_bytes"]),
                         (600 * MiB, 2048 * MiB - 900 * MiB - 600 * MiB, 600 * MiB, 900 * MiB, 900 * MiB))

    def test_oom_names_a_traced_process_holding_the_device(self):
        holder_env = dict(os.environ)
        holder_env.update(sim_env({"SIMCUDA_MEM_BYTES": "8G", "HOLD_MIB": "5120"}))
        holder_env.update({"LD_PRELOAD": h.SHIM, "COLABTRACE_OUT": self.tmp + "/"})
        holder = subprocess.Popen([prog(RT), "hold"], env=holder_env, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(holder.stdout.readline(), "held\n")
            # The simulated devices are separate per process: the second one is told the
            # first's memory is taken (SIMCUDA_OTHER_BYTES), as the real driver would see.
            run = h.run_traced([prog(RT), "other_process_oom"], out_dir=self.tmp,
                               env=sim_env({"SIMCUDA_MEM_BYTES": "8G", "SIMCUDA_OTHER_BYTES": "5G"}))
            self.assertEqual(run.returncode, 0, run.stderr)
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
            holder.stdout.close()
        self.assertEqual(holder.returncode, 0)
        rep = h.report(self.tmp)
        self.assertEqual(len(rep["processes"]), 2)
        f = self.one(rep, "gpu.oom")
        ev = f["evidence"]
        self.assertEqual(ev["cause"], "other-process")
        self.assertEqual(ev["other_traced_processes"], [{"pid": holder.pid, "bytes": 5 * GiB}])
        self.assertIn(f"pid {holder.pid}", f["summary"])
        # Both processes on one device: the run's device peak is their sum.
        self.assertEqual(len(rep["gpu"]["devices"]), 1)
        self.assertEqual(rep["gpu"]["devices"][0]["pids"], sorted([holder.pid, f["pid"]]))
        self.assertEqual(rep["gpu"]["devices"][0]["peak_bytes"], 6 * GiB)
        self.assertEqual(rep["gpu"]["peak_bytes"], 6 * GiB)

    def test_leaks_grouped_by_stack(self):
        # 12 steps, each leaking 2 x 8 MiB (leak_small) and 32 MiB (leak_big).
        _, rep, _ = self.run_scenario(RT, "leaks")
        g = self.gpu(rep)
        self.counts(g, 48, 12, 0, 584 * MiB, 576 * MiB)
        self.assertEqual((g["leak_growth_bytes"], g["held_at_exit_bytes"]), (576 * MiB, 0))
        self.assertEqual(rep["gpu"]["leak_growth_bytes"], 576 * MiB)
        f = self.one(rep, "gpu.leak")
        ev = f["evidence"]
        self.assertEqual(f["severity"], "warning")
        self.assertEqual((ev["growth_bytes"], ev["allocations"], ev["at"], ev["groups"],
                          ev["held_at_exit_bytes"], ev["leaked_bytes"]),
                         (576 * MiB, 36, "exit", 2, 0, 576 * MiB))
        by = ev["by_stack"]
        self.assertEqual([(b["bytes"], b["count"]) for b in by], [(384 * MiB, 12), (192 * MiB, 24)])
        self.assertTrue(any(fr.startswith("leak_big") for fr in by[0]["stack"]), by[0]["stack"])
        self.assertTrue(any(fr.startswith("leak_small") for fr in by[1]["stack"]), by[1]["stack"])
        # 11 more 32 MiB blocks over at least 11 steps of 200 ms: at most 160 MiB/s.
        self.assertLessEqual(by[0]["rate_bytes_per_s"], 160 * MiB)
        self.assertGreater(by[0]["rate_bytes_per_s"], 40 * MiB)
        self.assertGreaterEqual(by[0]["after_warmup_count"], 3)

    def test_cache_held_at_exit_is_not_a_leak(self):
        # Four 64 MiB segments at warm-up, still held at exit; the steps free what they take.
        _, rep, _ = self.run_scenario(RT, "cache_like")
        g = self.gpu(rep)
        self.counts(g, 16, 12, 0, 264 * MiB, 256 * MiB)
        self.none(rep, "gpu.leak")
        self.assertEqual((g["leak_growth_bytes"], g["held_at_exit_bytes"]), (0, 256 * MiB))
        self.assertEqual((rep["gpu"]["leak_growth_bytes"], rep["gpu"]["held_at_exit_bytes"]),
                         (0, 256 * MiB))

    def test_check_keys_on_leak_growth_and_does_not_flap_on_caches(self):
        # A budget from the cache-like run: the same run again passes (256 MiB held at
        # exit both times); the leaking run regresses on gpu.leak_growth_bytes.
        _, _, cache = self.run_scenario(RT, "cache_like")
        budget = os.path.join(self.tmp, "budget.json")
        h.cli("baseline", "-o", budget, cache)
        with open(budget) as f:
            b = json.load(f)
        self.assertEqual(b["total"]["gpu.leak_growth_bytes"], {"value": 0, "max": 0})
        _, _, again = self.run_scenario(RT, "cache_like")
        p = h.cli("check", "--baseline", budget, again, check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        _, _, leaking = self.run_scenario(RT, "leaks")
        p = h.cli("check", "--baseline", budget, leaking, check=False)
        self.assertEqual(p.returncode, 1, p.stdout)
        rows = [l.split() for l in p.stdout.splitlines() if l.split()[1:2] == ["gpu.leak_growth_bytes"]]
        self.assertEqual([(r[0], r[-2]) for r in rows],
                         [("total", "REGRESSION"), ("gpu_runtime_scenarios", "REGRESSION")], p.stdout)
        self.assertIn("gpu.leak", p.stdout)

    def test_churn(self):
        _, rep, _ = self.run_scenario(RT, "churn")
        g = self.gpu(rep)
        self.counts(g, 2000, 2000, 0, MiB, 0)
        ev = self.one(rep, "gpu.churn")["evidence"]
        self.assertEqual(ev["raw_pairs"], 2000)
        self.assertGreaterEqual(ev["rate_per_s"], 100)
        self.assertEqual(g["churn"]["raw_pairs"], 2000)
        self.none(rep, "gpu.leak")

    def test_async_pools(self):
        _, rep, trace = self.run_scenario(RT, "async_pools")
        g = self.gpu(rep)
        self.counts(g, 6, 4, 0, 4 * 16 * MiB, 2 * 16 * MiB)
        self.assertEqual(g["by_kind"]["stream_ordered"], {"allocations": 6, "bytes": 4 * 16 * MiB + 2 * 8 * MiB})
        self.assertEqual(g["by_kind"]["device"]["allocations"], 0)
        self.assertEqual(g["pools_created"], 1)
        pools = h.records(trace, "gpu_pool")
        self.assertEqual([p["api"] for p in pools], ["74", "76", "75"])  # create, trim, destroy
        self.assertEqual(pools[0]["value"], "0")  # maxSize 0
        allocs = h.records(trace, "gpu_alloc")
        self.assertEqual([a["api"] for a in allocs], ["3"] * 4 + ["7"] * 2)
        self.assertEqual({a["driver_api"] for a in allocs}, {"68", "72"})
        self.assertEqual(len({a["pool"] for a in allocs if a["api"] == "7"}), 1)

    def test_managed_pitched_and_pinned_host_memory_kept_apart(self):
        _, rep, _ = self.run_scenario(RT, "managed_and_host")
        g = self.gpu(rep)
        self.counts(g, 2, 2, 0, 32 * MiB + 102400, 0)
        self.assertEqual(g["by_kind"]["managed"], {"allocations": 1, "bytes": 32 * MiB})
        self.assertEqual(g["by_kind"]["device"], {"allocations": 1, "bytes": 102400})
        self.assertEqual(g["host_pinned"], {"allocations": 2, "frees": 2, "failed_allocations": 0,
                                            "peak_bytes": 3 * MiB, "leaked_bytes": 0})
        self.assertEqual(rep["gpu"]["host_pinned"]["allocations"], 2)

    def test_many_threads_at_once(self):
        _, rep, trace = self.run_scenario(RT, "threads")
        g = self.gpu(rep)
        self.counts(g, 1 + 8 * 501, 1 + 8 * 500, 0, g["peak_bytes"], 36 * MiB)
        self.assertGreaterEqual(g["peak_bytes"], 36 * MiB)
        self.assertLessEqual(g["peak_bytes"], 36 * MiB + 8 * MiB)
        allocs = h.records(trace, "gpu_alloc")
        self.assertEqual(len(allocs), 4009)
        self.assertEqual(len({a["tid"] for a in allocs}), 9)
        self.assertEqual(len({a["addr"] for a in allocs if a["rc"] == "0"}) > 0, True)
        # The eight blocks the threads keep come once, at the end: held, not growing.
        self.none(rep, "gpu.leak")
        self.assertEqual((g["leak_growth_bytes"], g["held_at_exit_bytes"]), (0, 36 * MiB))

    def test_sigkilled_process_reports_live_allocations_as_leaked(self):
        run, rep, _ = self.run_scenario(RT, "killed", returncode=-9)
        p = rep["processes"][0]
        self.assertEqual(p["end"]["kind"], "killed")
        self.counts(self.gpu(rep), 10, 0, 0, 320 * MiB, 320 * MiB)
        ev = self.one(rep, "gpu.leak")["evidence"]
        self.assertEqual((ev["at"], ev["allocations"], ev["groups"], ev["growth_bytes"]),
                         ("kill", 10, 1, 320 * MiB))
        self.assertIn("killed", self.one(rep, "gpu.leak")["summary"])

    def test_cache_flush_and_failed_retry(self):
        _, rep, _ = self.run_scenario(RT, "flush_retry_oom",
                                      {"SIMCUDA_MEM_BYTES": "4G", "SIMCUDA_CONTEXT_BYTES": "0"})
        g = self.gpu(rep)
        self.counts(g, 8, 8, 2, 4 * GiB, 0)
        self.assertEqual([f["retry_of"] for f in g["failures"]], [None, 0])
        self.assertEqual([f["recovered"] for f in g["failures"]], [False, False])
        ev = self.one(rep, "gpu.oom")["evidence"]
        self.assertEqual(ev["cause"], "this-process")
        self.assertEqual(ev["unrecovered_failures"], 1)
        r = ev["cache_flush_and_retry"]
        self.assertEqual((r["frees_before_retry"], r["freed_bytes_before_retry"], r["retry_failed"]),
                         (1, 512 * MiB, True))
        self.assertEqual((ev["free_bytes"], ev["process_live_bytes"]), (512 * MiB, 3584 * MiB))

    def test_recovered_failure_is_no_oom_finding(self):
        _, rep, _ = self.run_scenario(RT, "flush_retry_recovered",
                                      {"SIMCUDA_MEM_BYTES": "4G", "SIMCUDA_CONTEXT_BYTES": "0"})
        g = self.gpu(rep)
        self.counts(g, 9, 9, 1, 4 * GiB, 0)
        self.assertTrue(g["failures"][0]["recovered"])
        self.none(rep, "gpu.oom")
        self.none(rep, "gpu.oom-fragmentation")

    def test_allocator_setting_made_after_the_first_allocation(self):
        _, rep, _ = self.run_scenario(RT, "late_config")
        ev = self.one(rep, "gpu.allocator-config-ignored")["evidence"]
        late = ev["set_after_first_allocation"]
        self.assertEqual([(x["variable"], x["value"], x["how"]) for x in late],
                         [("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", "setenv")])
        self.assertGreater(late[0]["set_at_ns"], ev["first_allocation_at_ns"])

    def test_setting_from_the_start_is_not_late(self):
        _, rep, _ = self.run_scenario(RT, "basic", env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
        self.none(rep, "gpu.allocator-config-ignored")  # not PyTorch: nothing to contradict

    def test_near_capacity(self):
        _, rep, _ = self.run_scenario(RT, "near_capacity",
                                      {"SIMCUDA_MEM_BYTES": "2G", "SIMCUDA_CONTEXT_BYTES": "0"})
        ev = self.one(rep, "gpu.near-capacity")["evidence"]
        self.assertEqual((ev["peak_bytes"], ev["total_bytes"], ev["percent_of_device"]),
                         (2006 * MiB, 2 * GiB, 97.9))

    def test_no_driver_gives_the_runtimes_own_error_unchanged(self):
        argv = [prog(RT), "no_driver"]
        without = bare(argv, sim_env(driver=False))
        run, rep, trace = self.run_scenario(RT, "no_driver", driver=False)
        self.assertEqual(run.stdout, without.stdout)
        self.assertIn("cudaMalloc=35 ptr=0x1 cudaMemGetInfo=35", run.stdout)
        self.counts(self.gpu(rep), 0, 0, 1, 0, 0)
        self.assertEqual(rep["processes"][0]["gpu"]["failures_by_code"], {"35": 1})
        self.assertEqual([a["rc"] for a in h.records(trace, "gpu_alloc")], ["35"])
        v = self.gpu(rep)["versions"][0]
        self.assertEqual((v["runtime"], v["driver"]), (13000, 0))
        self.none(rep, "gpu.oom")

    def test_pytorch_like_setting_contradicted_by_its_calls(self):
        conf = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128,expandable_segments:True"}
        _, rep, _ = self.run_scenario("gpu_torchlike", "segments", env=conf)
        self.counts(self.gpu(rep), 4, 4, 0, 80 * MiB, 0)
        ev = self.one(rep, "gpu.allocator-config-ignored")["evidence"]
        self.assertEqual(ev["set_after_first_allocation"], [])
        self.assertEqual([c["variable"] for c in ev["contradicted_by_calls"]], ["PYTORCH_CUDA_ALLOC_CONF"])
        _, rep, _ = self.run_scenario("gpu_torchlike", "segments",
                                      env={"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128"})
        self.none(rep, "gpu.allocator-config-ignored")

    def test_stacks_off_keeps_the_call_site(self):
        _, rep, trace = self.run_scenario(RT, "leaks", env={"COLABTRACE_STACKS": "0"})
        allocs = h.records(trace, "gpu_alloc")
        self.assertEqual({a["stack"] for a in allocs}, {"-"})
        self.assertNotIn("0x0", {a["caller"] for a in allocs})
        # Without stacks the call site is the only frame: every block came from must_alloc.
        ev = self.one(rep, "gpu.leak")["evidence"]
        self.assertEqual(ev["groups"], 1)
        self.assertEqual(len(ev["by_stack"][0]["stack"]), 1)
        self.assertTrue(ev["by_stack"][0]["stack"][0].startswith("must_alloc"), ev["by_stack"])

    def test_disabled_shim_records_nothing_and_changes_nothing(self):
        argv = [prog(RT), "basic"]
        run = h.run_traced(argv, env=dict(sim_env(), COLABTRACE_DISABLE="1"), out_dir=self.tmp)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout, "runtime=13000 driver=13000\n")
        self.assertEqual(run.traces, [])


if __name__ == "__main__":
    unittest.main()
