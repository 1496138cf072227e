"""GpuSync records (issue 27): a synchronising CUDA call of the program's own that blocked
at least 50 us leaves one record (api, layer, dur, stream, device_wide, rc); queries, error
queries, asynchronous copies and the driver calls a runtime call makes underneath are never
timed. Against the simulated runtime and driver (tests/simcuda), whose
SIMCUDA_SLOW_KERNEL=crunch:20 makes every launch of the kernel `crunch` run 20 ms, so the
synchronisation after it blocks that long.

The program also synchronises a quiet stream (q) with nothing to wait for: that call takes
microseconds, but a busy machine may preempt it for longer than 50 us, and then its record
is the truth. So the blocking calls are asserted exactly (every record of 5 ms or more),
and a record on q, if any, must be a short synchronisation of q."""
import os
import re
import unittest

import ctharness as h

PROG = h.test_bin("steps", "steps_gpu_sync")
SIMCUDA_DIR = os.path.join(h.BUILD, "simcuda")
SLOW_MS = 20
RUNTIME, DRIVER = "0", "1"  # GpuLayer


def sim_env(slow: bool = True) -> dict:
    e = {k: "" for k in os.environ if k.startswith("SIMCUDA_") and k != "SIMCUDA_DIR"}
    e["LD_LIBRARY_PATH"] = SIMCUDA_DIR
    if slow:
        e["SIMCUDA_SLOW_KERNEL"] = f"crunch:{SLOW_MS}"
    return e


@unittest.skipUnless(os.path.exists(PROG), "steps_gpu_sync was not built (no simulated CUDA)")
class GpuSyncRecords(h.TempDirTest):
    def run_scenario(self, scenario, sync_api):
        """Runs the scenario; returns its blocking GpuSync records (5 ms or more) and the
        stream s, after checking that any other record is a quick synchronisation of q."""
        run = h.run_traced([PROG, scenario], env=sim_env(), out_dir=os.path.join(self.tmp, scenario))
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        (trace,) = run.traces
        m = re.search(r"stream=(0x[0-9a-f]+) quiet=(0x[0-9a-f]+)", run.stdout)
        stream, quiet = int(m.group(1), 16), int(m.group(2), 16)
        syncs = h.records(trace, "gpu_sync")
        for s in syncs:
            s["dur_ns"] = int(s["dur"].removesuffix("ns"))
            s["stream_id"] = int(s["stream"], 16)
            self.assertEqual(s["rc"], "0")
        blocking = [s for s in syncs if s["dur_ns"] >= 5_000_000]
        for s in syncs:
            if s["dur_ns"] < 5_000_000:  # a preempted quick call: only q's synchronisation
                self.assertEqual((s["api"], s["stream_id"]), (sync_api, quiet), s)
        for s in blocking:  # the 20 ms the kernel ran, give or take
            self.assertGreaterEqual(s["dur_ns"], (SLOW_MS - 2) * 1_000_000, s)
        return blocking, stream

    def test_runtime_calls(self):
        syncs, stream = self.run_scenario("runtime", "27")
        # Per round: cudaStreamSynchronize(s) (27), cudaDeviceSynchronize (26), cudaMemcpy
        # to the host (33). Nothing from cuStreamSynchronize & co. underneath (layer 1).
        self.assertEqual([(s["api"], s["layer"], s["stream_id"], s["device_wide"]) for s in syncs],
                         [("27", RUNTIME, stream, "0"), ("26", RUNTIME, 0, "1"),
                          ("33", RUNTIME, 0, "0")] * 3)

    def test_driver_calls(self):
        syncs, stream = self.run_scenario("driver", "108")
        # cuStreamSynchronize(s) (108), cuCtxSynchronize (106), cuMemcpyDtoH_v2 (120).
        self.assertEqual([(s["api"], s["layer"], s["stream_id"], s["device_wide"]) for s in syncs],
                         [("108", DRIVER, stream, "0"), ("106", DRIVER, 0, "1"),
                          ("120", DRIVER, 0, "0")] * 3)


if __name__ == "__main__":
    unittest.main()
