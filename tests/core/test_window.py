"""The window (issue 39; docs/trace-format.md, "Event chunks"): file I/O events kept in
full for the recent past only, every other record kept, and a hard cap on the file.

One C program (progs/ct_visits.c) visits page-cache files: stat, open, read, read (end of
file), close, five file I/O events per visit. Its run with no visits gives the events
every run writes besides (its counter file, inherited descriptors), so each windowed run
is checked against an exact count: events_total == base + 5 * visits."""
import glob
import os
import random
import signal
import struct
import subprocess
import unittest

import coretest
from coretest import cli, dump, prog, report, shim_env
from ctharness import TempDirTest, sigkill_at_count

CHUNK = 32768
NFILES = 1000
MIB = 1 << 20
MAGICS = coretest.CHUNK_MAGICS


def header(trace):
    """The FileHeader fields the window uses (include/colabtrace/format/wire.h)."""
    with open(trace, "rb") as f:
        h = f.read(256)
    (next_chunk_offset, flags) = struct.unpack_from("<QI", h, 64)
    (window_bytes, window_ticks, max_bytes, dropped_until, events_lost,
     recycled) = struct.unpack_from("<6Q", h, 112)
    return {"start_mono_ns": struct.unpack_from("<Q", h, 40)[0], "tps": struct.unpack_from("<Q", h, 56)[0],
            "hwm": next_chunk_offset,
            "flags": flags, "window_bytes": window_bytes, "window_ticks": window_ticks,
            "max_bytes": max_bytes, "dropped_until": dropped_until, "events_lost": events_lost,
            "recycled": recycled}


def chunk_kinds(trace):
    """How many chunks of each kind the file holds (by their magic)."""
    kinds = {}
    with open(trace, "rb") as f:
        data = f.read()
    for off in range(CHUNK, len(data) - 4, CHUNK):
        kind = MAGICS.get(data[off:off + 4], "unused")
        kinds[kind] = kinds.get(kind, 0) + 1
    return kinds


def io_lines(trace):
    """(seconds since the trace's start, record name, tid) of each file I/O record."""
    out = []
    for line in dump(trace):
        parts = line.split(" ", 3)
        if len(parts) >= 3 and parts[2].startswith("io_"):
            out.append((float(parts[0]), parts[2], int(parts[1][4:])))
    return out


class FilesTest(TempDirTest):
    """NFILES files of 4 KiB (self.files: f00000, f00001, ...) and a counter file for a
    test program's progress (self.counter); run_prog() runs a program under the shim."""
    NFILES = NFILES

    def setUp(self):
        super().setUp()
        self.files = os.path.join(self.tmp, "files")
        os.mkdir(self.files)
        for i in range(self.NFILES):
            with open(os.path.join(self.files, f"f{i:05d}"), "wb") as f:
                f.write(os.urandom(4096))
        self.counter = os.path.join(self.tmp, "counter")
        self.runs = 0

    def run_prog(self, argv, env):
        """Runs argv under the shim (exit 0, nothing on stderr); returns (its one trace,
        its stdout, the trace's JSON report, which reads whole)."""
        self.runs += 1
        out = os.path.join(self.tmp, f"run{self.runs}")
        os.mkdir(out)
        p = subprocess.run(argv, env=shim_env(out, env), capture_output=True, text=True, timeout=180)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stderr, "")
        (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
        rep = report(trace)
        self.assertEqual(rep["warnings"], [], "the trace reads whole")
        self.assertFalse(rep["processes"][0]["trace_truncated"])
        return trace, p.stdout, rep

    def kill_runs(self, argv, attempts, low, spread, check):
        """SIGKILLs argv under the shim with COLABTRACE_WINDOW_MB=1 once its counter
        reaches a count drawn from [low, low + spread), `attempts` times; each trace reads
        whole with its process killed, and check(trace, count reached, processes[0]
        .window) runs in the attempt's subtest."""
        rng = random.Random(39)
        for attempt in range(attempts):
            with self.subTest(attempt=attempt):
                out = os.path.join(self.tmp, f"kill{attempt}")
                os.mkdir(out)
                rc, done = sigkill_at_count(argv, shim_env(out, {"COLABTRACE_WINDOW_MB": "1"}), self.counter,
                                            low + rng.randrange(spread))
                self.assertEqual(rc, -signal.SIGKILL)
                (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
                rep = report(trace)
                self.assertEqual(rep["warnings"], [])
                proc = rep["processes"][0]
                self.assertEqual(proc["end"]["kind"], "killed")
                check(trace, done, proc["window"])


class WindowTest(FilesTest):
    def argv(self, visits, seconds=0, threads=1):
        return [prog("ct_visits"), self.files, str(NFILES), str(visits), str(seconds), str(threads),
                self.counter]

    def run_visits(self, env, visits, seconds=0, threads=1):
        """Runs ct_visits under the shim; returns (trace, visits made, processes[0])."""
        trace, out, rep = self.run_prog(self.argv(visits, seconds, threads), env)
        proc = rep["processes"][0]
        self.assertEqual(proc["end"]["code"], 0)
        return trace, int(out.split()[1]), proc

    def base_events(self):
        """The file I/O events of a run that visits nothing (all kept in full)."""
        trace, made, proc = self.run_visits({}, 0)
        self.assertEqual(made, 0)
        w = proc["window"]
        self.assertEqual(w["events_in_full"], w["events_total"])
        self.assertFalse(w["capped"])
        self.assertGreater(w["events_total"], 0)
        self.assertLess(w["events_total"], 50)
        return w["events_total"]

    def test_visits_under_a_small_window_then_by_time_then_at_the_cap(self):
        base = self.base_events()

        # 400,000 visits under a 4 MiB window: 2 M events, of which the last 128 event
        # chunks are kept; the file holds the window and the records never dropped.
        trace, made, proc = self.run_visits({"COLABTRACE_WINDOW_MB": "4"}, 400000)
        self.assertEqual(made, 400000)
        w = proc["window"]
        self.assertEqual(w["events_total"], base + 5 * 400000)
        self.assertFalse(w["capped"])
        h = header(trace)
        self.assertEqual(h["window_bytes"], 4 * MIB)
        self.assertEqual(h["max_bytes"], 1024 * MIB)
        self.assertEqual(h["events_lost"], 0)
        kinds = chunk_kinds(trace)
        self.assertEqual(kinds["event"], 4 * MIB // CHUNK)
        used = sum(n for k, n in kinds.items() if k != "unused")
        self.assertEqual(h["hwm"], CHUNK * (1 + used), "every chunk below the mark is in use")
        self.assertLessEqual(kinds["record"] + kinds["state"], 4, kinds)
        # The I/O aggregates: a slot per file (254 a chunk), the NFILES visited and the few
        # the loader touched; never rolled.
        self.assertGreaterEqual(kinds["aggregate"], -(-NFILES // 254))
        self.assertLessEqual(kinds["aggregate"], -(-(NFILES + 254) // 254), kinds)
        self.assertLessEqual(os.path.getsize(trace) - h["hwm"], 2 * MIB, "one reservation ahead at most")
        # The events in full are the main thread's (its one event chunk, never left, holds
        # its start-up events) and the last ones the visiting thread wrote: whole visits
        # from the first kept chunk's start to the end, every one after full_from_ns.
        lines = io_lines(trace)
        self.assertEqual(len(lines), w["events_in_full"])
        main = coretest.trace_pid(trace)
        self.assertEqual(len([l for l in lines if l[2] == main]), base)
        lines = [l for l in lines if l[2] != main]
        self.assertGreater(h["recycled"], 400)
        self.assertGreater(w["events_in_full"], 300000)
        self.assertLess(w["events_in_full"], 5 * 400000 // 4)
        names = [l[1] for l in lines]
        self.assertEqual(names[-5:], ["io_stat", "io_open", "io_read", "io_read", "io_close"])
        full_from_s = (w["full_from_ns"] - h["start_mono_ns"]) / 1e9
        self.assertGreater(lines[0][0], full_from_s - 0.001)
        text = cli("report", trace).stdout
        self.assertRegex(text, r"I/O window +2 M file I/O calls, of which the last [0-9.]+ m?s in full \(\d+ k\)")

        # COLABTRACE_WINDOW_S=1: the window rolls by time, 4 threads at once.
        trace, made, proc = self.run_visits({"COLABTRACE_WINDOW_S": "1"}, 0, seconds=3, threads=4)
        w = proc["window"]
        self.assertEqual(w["events_total"], base + 5 * made)
        self.assertGreater(made, 10000)
        h = header(trace)
        self.assertEqual(h["window_bytes"], 256 * MIB)
        self.assertGreater(h["recycled"], 0)
        lines = io_lines(trace)
        full_from_s = (w["full_from_ns"] - h["start_mono_ns"]) / 1e9
        span = lines[-1][0] - full_from_s
        self.assertGreater(span, 0.5)
        self.assertLess(span, 2.0)
        self.assertLess(w["events_in_full"], w["events_total"])

        # COLABTRACE_MAX_MB=8 with a 64 MiB window: event chunks stop growing the file
        # 2 MiB (a quarter of the cap) below it and roll there; the program runs on, the
        # trace says capped, the file stays under the cap and every kept record is there.
        trace, made, proc = self.run_visits({"COLABTRACE_MAX_MB": "8", "COLABTRACE_WINDOW_MB": "64"},
                                            200000, threads=2)
        self.assertEqual(made, 200000)
        w = proc["window"]
        self.assertTrue(w["capped"])
        self.assertEqual(w["events_total"], base + 5 * 200000)
        h = header(trace)
        self.assertEqual(h["max_bytes"], 8 * MIB)
        self.assertTrue(h["flags"] & 16)
        self.assertLessEqual(os.path.getsize(trace), 8 * MIB)
        self.assertLessEqual(h["hwm"], 6 * MIB + 2 * CHUNK)
        names = {l.split(" ", 3)[2] for l in dump(trace)}
        for kept in ("process_start", "exit", "string", "clock", "sample", "mount"):
            self.assertIn(kept, names)
        self.assertIn("size cap", cli("report", trace).stdout)

    def test_sigkill_while_the_window_rolls(self):
        base = self.base_events()

        def check(trace, done, w):
            self.assertGreater(header(trace)["recycled"], 0)
            # Every completed visit is counted; each of the 4 threads may be inside one.
            self.assertGreaterEqual(w["events_total"], base + 5 * done)
            self.assertLessEqual(w["events_total"], base + 5 * (done + 4))
            self.assertLessEqual(w["events_in_full"], w["events_total"])
            self.assertLessEqual(chunk_kinds(trace)["event"], MIB // CHUNK + 4)

        # 1 MiB is about 18,000 visits: past it the window rolls.
        self.kill_runs(self.argv(0, 60, 4), 12, 20000, 20000, check)

    def test_bad_values_get_one_line_and_the_default(self):
        cases = [("COLABTRACE_WINDOW_S", "0"), ("COLABTRACE_WINDOW_S", "10m"),
                 ("COLABTRACE_WINDOW_MB", "0"), ("COLABTRACE_WINDOW_MB", "5000"),
                 ("COLABTRACE_MAX_MB", "4"), ("COLABTRACE_MAX_MB", "-1")]
        for name, value in cases:
            with self.subTest(name=name, value=value):
                self.runs += 1
                out = os.path.join(self.tmp, f"bad{self.runs}")
                os.mkdir(out)
                p = subprocess.run(self.argv(10), env=shim_env(out, {name: value}), capture_output=True,
                                   text=True, timeout=60)
                self.assertEqual(p.returncode, 0)
                self.assertEqual(p.stdout, "visits 10\n")
                lines = p.stderr.splitlines()
                self.assertEqual(len(lines), 1, p.stderr)
                self.assertTrue(lines[0].startswith(f'colabtrace: ignoring {name}="{value}": expected '), lines[0])
                self.assertTrue(lines[0].endswith("; using the default"), lines[0])
                (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
                h = header(trace)
                self.assertEqual(h["window_bytes"], 256 * MIB)
                self.assertEqual(h["max_bytes"], 1024 * MIB)
                self.assertEqual(h["window_ticks"], 600 * h["tps"])
                w = report(trace)["processes"][0]["window"]
                self.assertEqual(w["events_in_full"], w["events_total"])


if __name__ == "__main__":
    unittest.main()
