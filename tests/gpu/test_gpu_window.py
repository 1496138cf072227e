"""GPU allocation records in the window (issue 39, format 1.5): a program that churns
cudaMalloc/cudaFree (gpu_runtime_scenarios churn_window: an early peak of 8 x 64 MiB,
200,000 pairs of 1 MiB, slow_leak's 20 x 4 MiB never freed), traced in full and with a
1 MiB window that rolls many times over, and SIGKILLed while the window rolls. The GPU
live-set chunks keep the live set and the counters: the windowed trace reports the
counts, the peak, the live set at exit and the leak of the full one, and stays small."""
import os
import random
import struct
import subprocess
import tempfile
import unittest

import ctharness as h
from gputest import GpuTest, MiB, prog, sim_env

RT = "gpu_runtime_scenarios"
ALLOCS, FREES, PEAK, LEAKED = 200028, 200008, 512 * MiB, 80 * MiB


def leak_view(rep, times=True):
    """What gpu.leak says (with its times and rates, or without: another run's differ)."""
    f = h.findings(rep, "gpu.leak")
    if not f:
        return None
    ev = f[0]["evidence"]
    by = [(b["bytes"], b["count"], b["stack"][:2]) + ((b["first_at_ns"], b["last_at_ns"], b["rate_bytes_per_s"])
                                                       if times else ()) for b in ev["by_stack"]]
    return (f[0]["severity"], ev["growth_bytes"], ev["allocations"], ev["held_at_exit_bytes"],
            ev["leaked_bytes"], ev["at"], ev["groups"], by) + ((ev["warmup_end_ns"],) if times else ())


def sampled_history(trace):
    """The GPU live set's sampled history, read from the file as format/gpu_live.h lays it
    out (the info chunk: magic CTGL, seq 0; a GpuLiveHistory at 16,384, its points after):
    (ticks, live bytes) of each point, in time order."""
    with open(trace, "rb") as f:
        data = f.read()
    for off in range(32768, len(data) - 32767, 32768):
        magic, _tid, _base, seq = struct.unpack_from("<IIQI", data, off)
        if magic == 0x4C475443 and seq == 0:
            hmagic, capacity = struct.unpack_from("<II", data, off + 16384)
            if hmagic != 0x54534948:
                return []
            points = (struct.unpack_from("<QQ", data, off + 16384 + 64 + 16 * k) for k in range(capacity))
            return sorted(p for p in points if p[0] != 0)
    return []


def report_as_if_given_up(trace):
    """The report of a trace read as if its window had given up every windowed GPU record."""
    os.environ["COLABTRACE_ANALYZER_IGNORE_GPU_EVENTS"] = "1"
    try:
        return h.report(trace)
    finally:
        del os.environ["COLABTRACE_ANALYZER_IGNORE_GPU_EVENTS"]


class GpuWindowTest(GpuTest):
    def check_program_figures(self, rep):
        g = self.gpu(rep)
        self.counts(g, ALLOCS, FREES, 0, PEAK, LEAKED)
        self.assertEqual((g["leak_growth_bytes"], g["held_at_exit_bytes"]), (LEAKED, 0))
        self.assertEqual(g["churn"]["raw_pairs"], FREES)
        self.assertEqual(sorted((f["id"], f["severity"]) for f in rep["findings"]),
                         [("gpu.churn", "warning"), ("gpu.leak", "warning")])
        lv = leak_view(rep, times=False)
        self.assertEqual(lv[1:7], (LEAKED, 20, 0, LEAKED, "exit", 1))
        self.assertEqual(lv[7][0][:2], (LEAKED, 20))
        self.assertTrue(any(fr.startswith("slow_leak") for fr in lv[7][0][2]), lv[7])

    def test_windowed_trace_reports_as_the_full_one(self):
        _, full, full_trace = self.run_scenario(RT, "churn_window")
        _, win, win_trace = self.run_scenario(RT, "churn_window", env={"COLABTRACE_WINDOW_MB": "1"})
        self.check_program_figures(full)
        self.check_program_figures(win)
        self.assertEqual(leak_view(win, times=False), leak_view(full, times=False))
        self.assertNotIn("seeded_from_ns", full["processes"][0]["gpu"])
        self.assertGreater(win["processes"][0]["gpu"]["seeded_from_ns"], 0)

        # The window rolled: the windowed trace kept a few of the GPU records and is small.
        self.assertEqual(len(h.records(full_trace, "gpu_alloc")), ALLOCS)
        win_allocs = h.records(win_trace, "gpu_alloc")
        self.assertLess(len(win_allocs), ALLOCS // 4)
        self.assertTrue(all(a["windowed"] == "1" for a in win_allocs))
        self.assertLess(os.path.getsize(win_trace), 3 * MiB)
        self.assertGreater(os.path.getsize(full_trace), 12 * MiB)

        # The full trace read as if the window had given up every windowed record: the
        # live set and the counters alone give the same report, times and rates included.
        only_set = report_as_if_given_up(full_trace)
        self.check_program_figures(only_set)
        self.assertEqual(leak_view(only_set), leak_view(full))
        for k in ("peak_bytes", "peak_at_ns", "allocations", "frees", "leaked_bytes"):
            self.assertEqual(only_set["processes"][0]["gpu"][k], full["processes"][0]["gpu"][k], k)
            self.assertEqual(only_set["gpu"][k], full["gpu"][k], k)

    def test_live_bytes_at_warmup_come_from_the_samples(self):
        # 512 MiB held through warm-up and freed half-way, while slow_leak's 30 blocks
        # pile up: less is live at exit than at warm-up's end, so nothing grows. Read as
        # if the window had given up every windowed record, the replay knows only the 30
        # blocks before its start; the live bytes the shim sampled (its history, at each
        # periodic sample) say what warm-up held, and the verdict is the full trace's.
        _, full, full_trace = self.run_scenario(RT, "shrink_while_leaking")
        only_set = report_as_if_given_up(full_trace)
        for rep in (full, only_set):
            g = self.gpu(rep)
            self.counts(g, 38, 8, 0, 512 * MiB + 16 * 4 * MiB, 120 * MiB)
            self.assertEqual((g["leak_growth_bytes"], g["held_at_exit_bytes"]), (0, 120 * MiB))
            self.assertEqual(h.findings(rep, "gpu.leak"), [])
        self.assertNotIn("seeded_from_ns", full["processes"][0]["gpu"])
        self.assertGreater(only_set["processes"][0]["gpu"]["seeded_from_ns"], 0)
        # The history: one point per periodic sample (every 100 ms, on the calls), none
        # dropped yet, the 544 MiB of warm-up among them and the 120 MiB of the end last.
        points = sampled_history(full_trace)
        live = [b for _, b in points]
        self.assertGreaterEqual(len(points), 20, points)
        self.assertIn(512 * MiB + 8 * 4 * MiB, live)
        self.assertEqual(live[-1], 120 * MiB)

    def test_sigkill_while_the_window_rolls(self):
        # Killed at three random moments of the churn: each trace reads, and its live set is
        # what the program had allocated and not freed by its last returned call, give or
        # take the one call in flight (an allocation the shim had put in the set before the
        # program saw it return, or a free it had taken out before the driver released it).
        rng = random.Random(os.environ.get("TEST_SEED", "39"))
        for threshold in sorted(rng.randrange(60000, 195000) for _ in range(3)):
            with self.subTest(threshold=threshold):
                out = tempfile.mkdtemp(prefix="kill-", dir=self.tmp)
                progress = os.path.join(out, "progress")
                env = dict(os.environ)
                env.update(sim_env())
                env.update({"LD_PRELOAD": h.SHIM, "COLABTRACE_OUT": out + "/", "COLABTRACE_WINDOW_MB": "1",
                            "CHURN_PROGRESS": progress})
                p = subprocess.Popen([prog(RT), "churn_window"], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                h.sigkill_when(p, lambda: h.read_counter(progress) >= threshold, 0.002)
                self.assertEqual(p.returncode, -9)
                with open(progress, "rb") as f:
                    allocs, frees, leaks = struct.unpack("<3Q", f.read(24))
                traces = [os.path.join(out, n) for n in os.listdir(out) if n.endswith(".ctrace")]
                self.assertEqual(len(traces), 1)
                rep = h.report(*traces)
                g = self.gpu(rep)
                self.assertGreater(g["seeded_from_ns"], 0)  # the window had rolled
                self.assertIn(g["allocations"] - allocs, (0, 1))
                self.assertIn(g["frees"] - frees, (0, 1))
                self.assertEqual(g["peak_bytes"], PEAK)
                # The program's live set: its leaks, and the 1 MiB block of a pair whose
                # free had not returned.
                live = leaks * 4 * MiB + (allocs - frees - leaks) * MiB
                self.assertIn(allocs - frees - leaks, (0, 1))
                self.assertIn(g["leaked_bytes"] - live, (0, MiB, 4 * MiB, -MiB))


if __name__ == "__main__":
    unittest.main()
