"""Thinned samples (issue 39; docs/trace-format.md, "Thinned-sample chunks"): the periodic
resource samples lie in the window's event chunks and give way with it, and their summary
stays in three fixed tiers (CTTS chunks), with the run's exact peaks.

One C program (progs/ct_thin.c) stats a file in a loop (file I/O events that roll a
one-second window), makes memory spikes of 32 + 16 k MiB, each held while it goes on
stat()ing, and records in a shared file what it held."""
import glob
import os
import random
import signal
import struct
import subprocess
import unittest

from coretest import CHUNK_MAGICS, prog, report, shim_env
from ctharness import TempDirTest, sigkill_when

CHUNK = 32768
MIB = 1 << 20
MAGICS = CHUNK_MAGICS
# include/colabtrace/format/sample_tiers.h
TIER_OFFSET, RUN_OFFSET, ENTRIES_OFFSET, ENTRY_BYTES = 32, 64, 384, 160
RUN_FIELDS = ("samples", "peak_rss", "peak_rss_ticks", "peak_vm", "peak_vm_ticks", "peak_cgroup",
              "peak_cgroup_ticks", "peak_threads", "peak_threads_ticks")
# The shim's own mapping of its trace may change the RSS between a program's reading and
# a sample's by up to one 2 MiB extent (mapped, or unmapped once its chunks are finished).
MAPPING_SLACK = 4 * MIB


def chunks(trace):
    """(kind, seq, bytes) of every chunk of the file, by its magic."""
    with open(trace, "rb") as f:
        data = f.read()
    out = []
    for off in range(CHUNK, len(data) - 4, CHUNK):
        out.append((MAGICS.get(data[off:off + 4], "unused"), struct.unpack_from("<I", data, off + 16)[0],
                    data[off:off + CHUNK]))
    return out


def thinned_run(trace):
    """The whole half of ThinRun in tier 0's chunk (the run's peaks), read from the bytes."""
    (c,) = [c for kind, seq, c in chunks(trace) if kind == "thinned" and seq == 0]
    seq = struct.unpack_from("<Q", c, RUN_OFFSET)[0]
    half = RUN_OFFSET + 64 + 128 * (seq & 1)
    return dict(zip(RUN_FIELDS, struct.unpack_from("<9Q", c, half)))


def header(trace):
    with open(trace, "rb") as f:
        h = f.read(256)
    return {"hwm": struct.unpack_from("<Q", h, 64)[0], "dropped_until": struct.unpack_from("<Q", h, 136)[0],
            "recycled": struct.unpack_from("<Q", h, 152)[0]}


def report_thinned_only(trace):
    """The report when the reader takes every periodic sample from the tiers."""
    old = os.environ.get("COLABTRACE_ANALYZER_THINNED_SAMPLES_ONLY")
    os.environ["COLABTRACE_ANALYZER_THINNED_SAMPLES_ONLY"] = "1"
    try:
        return report(trace)
    finally:
        if old is None:
            del os.environ["COLABTRACE_ANALYZER_THINNED_SAMPLES_ONLY"]
        else:
            os.environ["COLABTRACE_ANALYZER_THINNED_SAMPLES_ONLY"] = old


def finding_ids(rep):
    return sorted((f["id"], tuple(sorted(f.get("pids", [])))) for f in rep["findings"])


class ThinnedSamplesTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.file = os.path.join(self.tmp, "file")
        with open(self.file, "wb") as f:
            f.write(b"x")
        self.state = os.path.join(self.tmp, "state")
        self.runs = 0

    def argv(self, lead_s, spikes, hold_ms, seconds):
        return [prog("ct_thin"), self.file, str(lead_s), str(spikes), str(hold_ms), str(seconds), self.state]

    def read_state(self):
        with open(self.state, "rb") as f:
            return struct.unpack("<4Q", f.read(32))

    def run_thin(self, env, lead_s, spikes, hold_ms, seconds):
        self.runs += 1
        out = os.path.join(self.tmp, f"run{self.runs}")
        os.mkdir(out)
        p = subprocess.run(self.argv(lead_s, spikes, hold_ms, seconds), env=shim_env(out, env),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
        rep = report(trace)
        self.assertEqual(rep["warnings"], [], "the trace reads whole")
        self.assertEqual(rep["processes"][0]["end"]["code"], 0)
        return trace, rep, int(p.stdout.split()[1])

    def test_a_spike_the_window_gave_up_keeps_its_exact_peak(self):
        # A sample every millisecond, a window of one second: the three spikes (the last of
        # 64 MiB, held 150 ms) are 2.5 s behind the window when the program ends.
        env = {"COLABTRACE_SAMPLE_MS": "1", "COLABTRACE_WINDOW_S": "1"}
        trace, rep, peak_end_ns = self.run_thin(env, 0.2, 3, 150, 2.5)
        spikes, held_rss, _, over = self.read_state()
        self.assertEqual((spikes, over), (3, 1))
        proc = rep["processes"][0]
        self.assertGreater(header(trace)["recycled"], 0, "the window rolled")
        self.assertGreater(proc["window"]["full_from_ns"], peak_end_ns, "the spikes are in the given-up part")
        run = thinned_run(trace)
        self.assertGreater(run["samples"], 500)  # about one a millisecond, fewer under load
        # The report's peak is the shim's exact peak, from the tiers alone: at least what the
        # program held (64 MiB and its baseline), and the last spike's.
        self.assertEqual(proc["peak_rss_bytes"], run["peak_rss"])
        self.assertGreaterEqual(proc["peak_rss_bytes"], held_rss - MAPPING_SLACK)
        self.assertGreater(held_rss, 64 * MIB)
        # Size: the records never dropped fit in two record chunks (3,000 samples and their
        # clocks kept whole would take seven), and one tier chunk for a run of seconds; the
        # rest is the window's event chunks.
        kinds = {}
        for kind, _, _ in chunks(trace):
            kinds[kind] = kinds.get(kind, 0) + 1
        self.assertEqual(kinds["thinned"], 1, kinds)
        self.assertLessEqual(kinds["record"], 2, kinds)
        kept = sum(n for k, n in kinds.items() if k not in ("event", "unused"))
        self.assertLessEqual(kept, 2 + 1 + 1 + 1 + 1, kinds)  # record, state, aggregate, ring, thinned
        self.assertEqual(header(trace)["hwm"], CHUNK * (1 + sum(n for k, n in kinds.items() if k != "unused")))

        # The same program traced in full: its report and its report from the tiers alone
        # (COLABTRACE_ANALYZER_THINNED_SAMPLES_ONLY=1) give the same peak to the byte and
        # the same findings, which are the windowed run's.
        full, rep_full, _ = self.run_thin({"COLABTRACE_SAMPLE_MS": "1"}, 0.2, 3, 150, 2.5)
        self.assertEqual(header(full)["dropped_until"], 0)
        thin = report_thinned_only(full)
        self.assertEqual(thin["warnings"], [])
        self.assertEqual(thin["processes"][0]["peak_rss_bytes"], rep_full["processes"][0]["peak_rss_bytes"])
        self.assertEqual(thin["processes"][0]["peak_rss_bytes"], thinned_run(full)["peak_rss"])
        self.assertEqual(finding_ids(thin), finding_ids(rep_full))
        self.assertEqual(finding_ids(rep), finding_ids(rep_full))

    def test_sigkill_while_samples_roll(self):
        # The rule: a level of RSS the program held for at least two sample periods while
        # making traced calls is seen by a periodic sample, so a killed run's peak is at
        # least the RSS the program measured at the start of its last completed hold, less
        # what the shim's own trace mapping may have changed (MAPPING_SLACK).
        rng = random.Random(39)
        for attempt in range(4):
            with self.subTest(attempt=attempt):
                out = os.path.join(self.tmp, f"kill{attempt}")
                os.mkdir(out)
                if os.path.exists(self.state):
                    os.unlink(self.state)
                env = {"COLABTRACE_SAMPLE_MS": "2", "COLABTRACE_WINDOW_S": "1"}
                p = subprocess.Popen(self.argv(1.2, 8, 40, 5), env=shim_env(out, env),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                target = 1 + rng.randrange(8)

                def spiked():
                    try:
                        return self.read_state()[0] >= target
                    except (FileNotFoundError, struct.error):
                        return False
                sigkill_when(p, spiked, 0.002, rng.random() * 0.04)
                self.assertEqual(p.returncode, -signal.SIGKILL)
                spikes, held_rss, _, _ = self.read_state()
                self.assertGreaterEqual(spikes, 1)
                (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
                self.assertGreater(header(trace)["recycled"], 0, "the window rolled")
                rep = report(trace)
                self.assertEqual(rep["warnings"], [])
                proc = rep["processes"][0]
                self.assertEqual(proc["end"]["kind"], "killed")
                self.assertGreaterEqual(proc["peak_rss_bytes"], held_rss - MAPPING_SLACK)
                self.assertGreaterEqual(proc["peak_rss_bytes"], thinned_run(trace)["peak_rss"])
                (killed,) = [f for f in rep["findings"] if f["id"] == "proc.killed"]
                self.assertGreater(killed["evidence"]["last_rss_bytes"], 0)


if __name__ == "__main__":
    unittest.main()
