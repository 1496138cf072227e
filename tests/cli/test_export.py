"""`colabtrace export --format perfetto`: Chrome trace-event JSON of real runs."""
from __future__ import annotations

import collections
import json
import os
import re
import unittest

import ctharness as h
from cli_runs import (CHUNK, HAVE_GPU_HOOKS, HAVE_IO_HOOKS, HAVE_SIMCUDA, MIB, NO_SIMCUDA,
                      WAITS_ON_GPU, WAITS_ON_IO, data_file, gpu_workload, load_json, workload)


def of(doc, ph, name=None):
    return [e for e in doc["traceEvents"] if e["ph"] == ph and (name is None or e["name"] == name)]


def base_name(event) -> str:
    return event["name"].split(" (")[0]


def dump_seconds(trace: str, name: str) -> list[float]:
    """The times (seconds after the trace's start) of one record type in `colabtrace dump`."""
    return [float(line.split(" ", 2)[0]) for line in h.dump(trace) if line.split(" ", 3)[2] == name]


class ExportTest(h.TempDirTest):
    def export(self, *inputs, extra=()) -> dict:
        out = os.path.join(self.tmp, "trace.json")
        p = h.cli("export", "--format", "perfetto", "-o", out, *extra, *inputs, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        return load_json(out)

    def test_process_and_thread_names_exit_and_rss(self):
        run = workload(self.tmp, "run", reads=7, setenv=3)
        trace = run.traces[0]
        pid = h.report(run.out_dir)["processes"][0]["pid"]
        doc = self.export(run.out_dir)
        self.assertEqual(doc["displayTimeUnit"], "ns")
        self.assertEqual({e["pid"] for e in doc["traceEvents"]}, {pid})
        names = of(doc, "M", "process_name")
        self.assertEqual(len(names), 1)
        self.assertEqual(names[0]["args"]["name"],
                         f"cli_workload --file {data_file(self.tmp)} --reads 7 --chunk {CHUNK} --setenv 3 "
                         "--alloc-mib 0 --fork 0 --child-reads 0 --sleep-ms 0")
        self.assertEqual({e["tid"]: e["args"]["name"] for e in of(doc, "M", "thread_name")},
                         {pid: "cli_workload"})
        self.assertEqual(of(doc, "M", "process_labels"), [])
        exits = of(doc, "i", "exit")
        self.assertEqual(len(exits), 1)
        self.assertEqual((exits[0]["s"], exits[0]["args"]["code"]), ("p", 0))
        # This trace starts first, so export times equal dump times (µs vs s, to the ns).
        (exit_s,) = dump_seconds(trace, "exit")
        self.assertEqual(round(exits[0]["ts"] * 1000), round(exit_s * 1e9))
        samples = h.records(trace, "sample")
        rss = of(doc, "C", "RSS")
        self.assertEqual([e["args"]["bytes"] for e in rss], [int(s["rss_bytes"]) for s in samples])
        self.assertGreater(len(rss), 0)
        for e in doc["traceEvents"]:
            if e["ph"] != "M":
                self.assertIsInstance(e["ts"], float)
                self.assertGreaterEqual(e["ts"], 0)

    @unittest.skipUnless(HAVE_IO_HOOKS, WAITS_ON_IO)
    def test_one_complete_event_per_io_call(self):
        run = workload(self.tmp, "run", reads=7, setenv=3)
        pid = h.report(run.out_dir)["processes"][0]["pid"]
        doc = self.export(run.out_dir)
        complete = of(doc, "X")
        reads = [e for e in complete if base_name(e) == "io_read"]
        self.assertEqual(len(reads), 7)
        self.assertEqual({e["name"] for e in reads}, {"io_read (read)"})
        for e in reads:
            self.assertEqual((e["cat"], e["pid"], e["tid"]), ("io", pid, pid))
            self.assertEqual(e["args"]["result"], CHUNK)
            self.assertIsInstance(e["dur"], float)
            self.assertGreaterEqual(e["dur"], 0)
        opens = [e for e in complete if base_name(e) == "io_open"]
        self.assertEqual([e["args"]["path"] for e in opens], [data_file(self.tmp)])
        self.assertEqual(opens[0]["args"]["fd"], reads[0]["args"]["fd"])
        # Every record with a duration, and only those, becomes a complete event (but a
        # readdir scan summary, whose dur is a total: IoApi readdir 90, readdir64 91).
        dumped = collections.Counter(line.split(" ", 3)[2] for line in h.dump(run.traces[0])
                                     if " dur=" in line and not re.search(r" io_dir api=9[01] ", line))
        self.assertEqual(collections.Counter(base_name(e) for e in complete), dumped)

    def test_forked_children_fork_instants_and_common_time_origin(self):
        run = workload(self.tmp, "run", fork=2)
        rep = h.report(run.out_dir)
        parent = next(p for p in rep["processes"] if p["origin"] == "start")
        children = sorted(p["pid"] for p in rep["processes"] if p is not parent)
        doc = self.export(run.out_dir)
        names = {e["pid"]: e["args"]["name"] for e in of(doc, "M", "process_name")}
        self.assertEqual(sorted(names), sorted([parent["pid"], *children]))
        order = {e["pid"]: e["args"]["sort_index"] for e in of(doc, "M", "process_sort_index")}
        self.assertEqual(order[parent["pid"]], 0)
        forks = of(doc, "i", "fork")
        self.assertEqual(sorted(e["args"]["child_pid"] for e in forks), children)
        self.assertEqual({e["pid"] for e in forks}, {parent["pid"]})
        fork_ts = {e["args"]["child_pid"]: e["ts"] for e in forks}
        for e in of(doc, "i", "exit"):
            if e["pid"] in fork_ts:  # a child exits after its fork began, on one clock
                self.assertGreater(e["ts"], fork_ts[e["pid"]])
        self.assertEqual(len(of(doc, "i", "exit")), 3)

    def test_killed_trace_exports(self):
        run = workload(self.tmp, "run", reads=3, kill=True)
        pid = h.report(run.out_dir)["processes"][0]["pid"]
        doc = self.export(run.traces[0])
        self.assertEqual([e["args"]["labels"] for e in of(doc, "M", "process_labels")], ["killed"])
        killed = of(doc, "i", "killed")
        self.assertEqual([(e["pid"], e["s"]) for e in killed], [(pid, "p")])
        self.assertEqual(of(doc, "i", "exit"), [])
        self.assertEqual(len(of(doc, "M", "process_name")), 1)
        # The kill is the last thing in the trace.
        self.assertEqual(killed[0]["ts"], max(e["ts"] for e in doc["traceEvents"] if e["ph"] != "M"))

    def test_stdout(self):
        run = workload(self.tmp, "run", reads=2)
        p = h.cli("export", "-o", "-", run.out_dir, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc, self.export(run.out_dir))

    @unittest.skipUnless(HAVE_SIMCUDA, NO_SIMCUDA)
    @unittest.skipUnless(HAVE_GPU_HOOKS, WAITS_ON_GPU)
    def test_gpu_allocations_and_live_bytes(self):
        run = gpu_workload(self.tmp, "gpu", allocs=3, size=4 * MIB, leak=1)
        doc = self.export(run.out_dir)
        allocs = [e for e in of(doc, "X") if base_name(e) == "gpu_alloc"]
        self.assertEqual(len(allocs), len(h.records(run.traces[0], "gpu_alloc")))
        self.assertGreaterEqual(len(allocs), 3)
        live = [e["args"]["bytes"] for e in of(doc, "C", "GPU 0 live")]
        steps = [v for i, v in enumerate(live) if i == 0 or v != live[i - 1]]
        self.assertEqual(steps, [4 * MIB, 8 * MIB, 12 * MIB, 8 * MIB, 4 * MIB])

    def test_bad_usage_and_unreadable_inputs_exit_2(self):
        run = workload(self.tmp, "run", reads=2)
        out = os.path.join(self.tmp, "out.json")
        garbage = os.path.join(self.tmp, "garbage.ctrace")
        with open(garbage, "wb") as f:
            f.write(b"\0garbage" * 64)
        cases = [
            (("--format", "chrome", "-o", out, run.out_dir), "--format takes perfetto"),
            (("--format=json", "-o", out, run.out_dir), "--format takes perfetto"),
            ((run.out_dir,), "-o FILE is required"),
            (("-o", out), "no trace or directory given"),
            (("-o", out, "--frobnicate", run.out_dir), "unknown option '--frobnicate'"),
            (("-o", out, os.path.join(self.tmp, "missing")), "no readable trace"),
            (("-o", out, garbage), "no readable trace"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                p = h.cli("export", *args, check=False)
                self.assertEqual(p.returncode, 2)
                self.assertIn(message, p.stderr)
                self.assertFalse(os.path.exists(out))
        p = h.cli("export", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("--format perfetto", p.stdout)


if __name__ == "__main__":
    unittest.main()
