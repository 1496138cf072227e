"""A rolled window loses no I/O finding (issue 39): the same real workload traced in full
and with a 1 MiB window (COLABTRACE_WINDOW_MB=1), which gives up most of its io_* events,
gives the same io findings, ids and severities, with the same figures that come from
sums (counts, bytes, files), and the same io.files[] rows for its data; the report says
which part it saw in full. The workloads are CPython reading many small files again and
again (io.small-files, io.reread) and a loader that stats each sample three times per
read (io.metadata-heavy)."""
import json
import os
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest, cli, run_traced
from iotest import assert_same_io, file_rows, make_files

HERE = os.path.dirname(os.path.abspath(__file__))


def report(traces, fmt="json"):
    out = cli("report", "--format", fmt, *traces).stdout
    return json.loads(out) if fmt == "json" else out


class RolledWindowTest(TempDirTest):
    def run_both(self, argv):
        """The JSON reports of argv traced in full and with a 1 MiB window, and the rolled
        run's text report."""
        full = run_traced(argv, out_dir=os.path.join(self.tmp, "full"))
        small = run_traced(argv, env={"COLABTRACE_WINDOW_MB": "1"}, out_dir=os.path.join(self.tmp, "small"))
        for r in (full, small):
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(len(r.traces), 1, r.traces)
        return report(full.traces), report(small.traces), report(small.traces, "text"), small.stdout

    def rolled(self, full, small):
        """The full run kept every event; the 1 MiB run gave most of them up, and its I/O
        model came from the aggregates."""
        wf, ws = full["processes"][0]["window"], small["processes"][0]["window"]
        self.assertEqual(wf["events_in_full"], wf["events_total"])
        self.assertFalse(wf["capped"])
        self.assertLess(ws["events_in_full"] * 2, ws["events_total"], ws)
        self.assertFalse(ws["capped"])
        self.assertTrue(small["processes"][0]["io"]["from_aggregates"])
        self.assertNotIn("from_aggregates", full["processes"][0]["io"])
        return ws

    def test_small_files_read_again_and_again(self):
        # 1,200 files of 3,000 bytes, 30 passes (36,000 opens), then 512-byte os.read()s.
        data = os.path.join(self.tmp, "small-files")
        make_files(data, 1200, 3000)
        full, small, text, out = self.run_both([SYSTEM_PYTHON, os.path.join(HERE, "py", "small_files.py"),
                                                data, "30", "512"])
        did = json.loads(out)
        ws = self.rolled(full, small)
        ids = assert_same_io(self, full, small, data)
        self.assertIn("io.small-files", ids)
        rows = file_rows(small, data + "/")
        self.assertEqual(sum(r["opens"] for r in rows.values()), 31 * 1200)
        self.assertEqual(sum(r["bytes_read"] for r in rows.values()), did["bytes"])
        # The first screen says what it saw in full and what only in sums.
        self.assertIn("I/O window", text)
        self.assertIn("in full", text)
        self.assertGreater(ws["full_from_ns"], 0)

    def test_stats_per_read(self):
        # 1,000 samples of 200 bytes, 100 epochs that each look every sample up twice and
        # read 10 of them.
        data = os.path.join(self.tmp, "storm")
        make_files(data, 1000, 200)
        full, small, _, _ = self.run_both([SYSTEM_PYTHON, os.path.join(HERE, "py", "lookup_storm.py"), data, "100",
                                           "10"])
        self.rolled(full, small)
        self.assertIn("io.metadata-heavy", assert_same_io(self, full, small, data))


if __name__ == "__main__":
    unittest.main()
