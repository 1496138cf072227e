"""The I/O aggregates (issue 39): the per-file sums the shim keeps in the trace equal what
a real program did and the sums of its io_* events; a SIGKILL leaves the sums of every
call that had returned; past 65,536 files new files hold heavy-hitter entries (their
directories' rows sum the rest: test_io_heavy.py); and a real
workload reported from its aggregates alone (COLABTRACE_ANALYZER_IGNORE_IO_EVENTS=1) gives
the same io findings and figures as from its events."""
import json
import os
import re
import shutil
import signal
import subprocess
import unittest

from ctharness import (SHIM, SYSTEM_PYTHON, TempDirTest, built_test_program, cli, findings,
                       run_traced)
from iotest import file_rows, make_files

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCHS = os.path.join(HERE, "py", "epochs.py")
PROG = built_test_program("io", "io_agg_visit")

# Fields the aggregates carry exactly (io.files[] rows); times come apart by rounding only.
EXACT = ("opens", "reads", "bytes_read", "stats", "open_errors", "read_errors", "zero_byte_reads",
         "stat_errors", "size", "size_source", "passes", "read_sizes", "kind", "data", "fs_type", "mount")
TIMES = {"read_ns": "reads", "open_ns": "opens", "stat_ns": "stats"}


def report_json(*traces, aggregates: bool) -> dict:
    """The JSON report, from the io events or (aggregates) from the I/O aggregates alone."""
    old = os.environ.get("COLABTRACE_ANALYZER_IGNORE_IO_EVENTS")
    os.environ["COLABTRACE_ANALYZER_IGNORE_IO_EVENTS"] = "1" if aggregates else "0"
    try:
        return json.loads(cli("report", "--format", "json", *traces).stdout)
    finally:
        if old is None:
            del os.environ["COLABTRACE_ANALYZER_IGNORE_IO_EVENTS"]
        else:
            os.environ["COLABTRACE_ANALYZER_IGNORE_IO_EVENTS"] = old


def sizes(n: int) -> list[int]:
    return [1000 + 37 * i for i in range(n)]


def make_sized(directory: str, n: int) -> None:
    os.makedirs(directory, exist_ok=True)
    for i, s in enumerate(sizes(n)):
        with open(os.path.join(directory, f"f{i:05d}.bin"), "wb") as f:
            f.write(bytes([i % 251]) * s)


def size_bin(n: int) -> str:
    names = ["0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M",
             "100M-1G", "1G+"]
    uppers = [100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824]
    for name, up in zip(names, uppers):
        if n <= up:
            return name
    return names[-1]


class AggregateTest(TempDirTest):
    def same_as_events(self, agg_rows: dict, ev_rows: dict) -> None:
        """Every row of the aggregates equals the events' row: exact counts, and each time
        at least the events' sum and less than one ns per call above it (the sum of ticks
        is converted once, each event's own duration separately)."""
        self.assertEqual(sorted(agg_rows), sorted(ev_rows))
        for path, a in agg_rows.items():
            e = ev_rows[path]
            for k in EXACT:
                self.assertEqual(a[k], e[k], (path, k))
            for k, calls in TIMES.items():
                self.assertGreaterEqual(a[k], e[k], (path, k))
                self.assertLessEqual(a[k] - e[k], max(0, e[calls] + e.get("open_errors", 0) - 1), (path, k))

    def same_io_findings(self, agg: dict, ev: dict) -> list[str]:
        """Every io finding from the aggregates alone has the events' id, severity, summary
        and evidence; the times (and what formats them) sum the same calls' ticks,
        converted once rather than call by call, so they agree within 1 ns per call.
        Returns the ids."""
        def io_findings(rep):
            return sorted((f for f in rep["findings"] if f["id"].startswith("io.")), key=lambda f: f["id"])

        # A duration in a summary ("(812.3 ms)") is a time sum and may round to another
        # last digit; it is checked through the evidence.
        def text(f):
            return re.sub(r"\(\d+(\.\d+)? (ns|us|ms|s)\)", "(T)", f["summary"])

        got, want = io_findings(agg), io_findings(ev)
        self.assertEqual([(f["id"], f["severity"], text(f), f["advice"]) for f in got],
                         [(f["id"], f["severity"], text(f), f["advice"]) for f in want])
        calls = sum(f["opens"] + f["open_errors"] + f["reads"] + f["stats"] for f in ev["io"]["files"])
        timed = ("io_ns", "slow_io_ns", "total_io_ns", "metadata_ns")
        for g, w in zip(got, want):
            for key, value in w["evidence"].items():
                if key in timed:
                    self.assertLessEqual(abs(g["evidence"][key] - value), calls, (w["id"], key))
                elif key == "share":
                    self.assertAlmostEqual(g["evidence"][key], value, places=4)
                elif key == "mounts":
                    for mg, mw in zip(g["evidence"][key], value):
                        self.assertLessEqual(abs(mg["io_ns"] - mw["io_ns"]), calls)
                        self.assertEqual({k: v for k, v in mg.items() if k != "io_ns"},
                                         {k: v for k, v in mw.items() if k != "io_ns"})
                else:
                    self.assertEqual(g["evidence"][key], value, (w["id"], key))
        return [f["id"] for f in want]

    def test_python_workloads_same_findings_from_aggregates_alone(self):
        # CPython reading 1,200 small files whole (2 passes) then in 512-byte os.read()s,
        # and a loader that stats 1,000 samples 3 times for each one it reads: from their
        # aggregates alone, the same io findings, and the same rows for their files.
        small = os.path.join(self.tmp, "small")
        make_files(small, 1200, 3000)
        storm = os.path.join(self.tmp, "storm")
        make_files(storm, 1000, 200)
        runs = [run_traced([SYSTEM_PYTHON, os.path.join(HERE, "py", "small_files.py"), small, "2", "512"],
                           out_dir=os.path.join(self.tmp, "out-small")),
                run_traced([SYSTEM_PYTHON, os.path.join(HERE, "py", "lookup_storm.py"), storm, "3", "10"],
                           out_dir=os.path.join(self.tmp, "out-storm"))]
        want_ids = [["io.small-files"], ["io.metadata-heavy"]]
        for run, data, ids in zip(runs, (small, storm), want_ids):
            self.assertEqual(run.returncode, 0, run.stderr)
            ev = report_json(*run.traces, aggregates=False)
            agg = report_json(*run.traces, aggregates=True)
            self.assertEqual(self.same_io_findings(agg, ev), ids)
            self.same_as_events(file_rows(agg, data + "/"), file_rows(ev, data + "/"))

    def test_unnamed_files_and_a_null_path_probe(self):
        # Files O_TMPFILE makes have no name: their events and their aggregate are one row
        # per directory, "<dir>/<O_TMPFILE>", with the same counts. statx(0, NULL, ...) (Rust's
        # std probes for statx so) fails with EFAULT and visits no file: no row at all.
        d = os.path.join(self.tmp, "tmpdir")
        os.makedirs(d)
        prog = (
            "import ctypes, os, sys\n"
            "d = sys.argv[1]\n"
            "for i in range(3):\n"
            "    fd = os.open(d, os.O_TMPFILE | os.O_RDWR)\n"
            "    os.write(fd, b'x' * 100)\n"
            "    os.lseek(fd, 0, 0)\n"
            "    assert os.read(fd, 1000) == b'x' * 100\n"
            "    os.fstat(fd)\n"
            "    os.close(fd)\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "assert libc.statx(0, None, 0, 0xfff, None) == -1 and ctypes.get_errno() == 14\n")
        run = run_traced([SYSTEM_PYTHON, "-c", prog, d], out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        ev = report_json(*run.traces, aggregates=False)
        agg = report_json(*run.traces, aggregates=True)
        for rep in (ev, agg):
            self.assertEqual([f["path"] for f in rep["io"]["files"] if f["path"].startswith("<pid")], [])
            row = file_rows(rep, d + "/")
            self.assertEqual(list(row), [d + "/<O_TMPFILE>"])
            r = row[d + "/<O_TMPFILE>"]
            self.assertEqual((r["kind"], r["opens"], r["reads"], r["bytes_read"], r["stats"]), ("file", 3, 3, 300, 3))
        self.same_as_events(file_rows(agg, d + "/"), file_rows(ev, d + "/"))

    def test_visits_are_summed_exactly(self):
        # 40 files of 1,000..2,443 bytes, 3 passes, 512-byte reads: the program's own counts,
        # file by file, in the aggregates; and the same rows as the events give.
        data = os.path.join(self.tmp, "data")
        n, passes, chunk = 40, 3, 512
        make_sized(data, n)
        run = run_traced([PROG, "visit", data, str(n), str(passes), str(chunk), "0"],
                         out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        did = json.loads(run.stdout)
        agg = report_json(*run.traces, aggregates=True)
        ev = report_json(*run.traces, aggregates=False)
        self.assertTrue(agg["processes"][0]["io"]["from_aggregates"])
        self.assertIsNone(agg["processes"][0]["io"]["per_directory_from_ns"])
        self.assertNotIn("from_aggregates", ev["processes"][0]["io"])
        rows = file_rows(agg, data + "/")
        self.assertEqual(len(rows), n)
        totals = {"opens": 0, "reads": 0, "bytes": 0, "stats": 0}
        for i, s in enumerate(sizes(n)):
            r = rows[f"{data}/f{i:05d}.bin"]
            reads = (s + chunk - 1) // chunk + 1 + 1  # the chunks, the 0-byte read, the pread
            self.assertEqual(r["opens"], passes)
            self.assertEqual(r["reads"], passes * reads)
            self.assertEqual(r["zero_byte_reads"], passes)
            self.assertEqual(r["bytes_read"], passes * (s + 100))
            self.assertEqual(r["stats"], passes * 2)
            self.assertEqual(r["passes"], passes)
            self.assertEqual(r["size"], s)
            self.assertEqual(r["kind"], "file")
            want_bins = {}
            for b in [chunk] * (s // chunk) + ([s % chunk] if s % chunk else []) + [100]:
                want_bins[size_bin(b)] = want_bins.get(size_bin(b), 0) + passes
            self.assertEqual({k: v for k, v in r["read_sizes"].items() if v}, want_bins)
            totals["opens"] += r["opens"]
            totals["reads"] += r["reads"]
            totals["bytes"] += r["bytes_read"]
            totals["stats"] += r["stats"]
        self.assertEqual(totals, {"opens": did["opens"], "reads": did["reads"] + did["preads"],
                                  "bytes": did["bytes"], "stats": did["stats"]})
        self.same_as_events(rows, file_rows(ev, data + "/"))
        # The whole table, the interpreter-free program's libraries and all, equals the events'.
        self.same_as_events({f["path"]: f for f in agg["io"]["files"]},
                            {f["path"]: f for f in ev["io"]["files"]})

    def test_threads_updating_one_slot(self):
        # 8 threads pread one file 20,000 times each: not one update lost (the 160,000
        # reads and small reads wrap their 16-bit counts twice: carried into the slot's
        # high slot from whichever threads made the wraps).
        path = os.path.join(self.tmp, "one.bin")
        with open(path, "wb") as f:
            f.write(b"x" * 4096)
        run = run_traced([PROG, "threads", path, "8", "20000"], out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        rows = file_rows(report_json(*run.traces, aggregates=True), path)
        self.assertEqual(rows[path]["opens"], 8)
        self.assertEqual(rows[path]["reads"], 160000)
        self.assertEqual(rows[path]["bytes_read"], 160000 * 64)
        self.assertEqual(rows[path]["read_sizes"]["0-100"], 160000)
        self.assertEqual(rows[path]["passes"], 8)
        self.same_as_events(rows, file_rows(report_json(*run.traces, aggregates=False), path))

    def test_sigkill_leaves_the_sums_of_returned_calls(self):
        # Killed after 25 of 40 visits (the program waits, its calls returned): files 0-24
        # have one visit each in the aggregates, files 25-39 none.
        data = os.path.join(self.tmp, "data")
        n, chunk, stop = 40, 700, 25
        make_sized(data, n)
        out = os.path.join(self.tmp, "out")
        os.makedirs(out)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COLABTRACE_") or k == "COLABTRACE_BUILD_DIR"}
        env.update(LD_PRELOAD=SHIM, COLABTRACE_OUT=out + "/")
        p = subprocess.Popen([PROG, "visit", data, str(n), "1", str(chunk), str(stop)], env=env,
                             stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), f"stopped {stop}")
            os.kill(p.pid, signal.SIGKILL)
        finally:
            p.wait(timeout=60)
            p.stdout.close()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".ctrace")]
        agg = report_json(*traces, aggregates=True)
        self.assertEqual(agg["processes"][0]["end"]["kind"], "killed")
        rows = file_rows(agg, data + "/")
        self.assertEqual(sorted(rows), [f"{data}/f{i:05d}.bin" for i in range(stop)])
        for i, s in enumerate(sizes(stop)):
            r = rows[f"{data}/f{i:05d}.bin"]
            self.assertEqual((r["opens"], r["reads"], r["bytes_read"], r["stats"], r["passes"]),
                             (1, (s + chunk - 1) // chunk + 2, s + 100, 2, 1))
        self.same_as_events(rows, file_rows(report_json(*traces, aggregates=False), data + "/"))

    def test_more_files_than_slots_are_summed_per_directory(self):
        # 66,000 stats of missing files fill the 65,536 file slots (with the program's own
        # libraries); then 12 real files are visited: each holds a heavy-hitter entry
        # (format 1.6: test_io_heavy.py), its row exact and counted from when it entered;
        # the missing files' stats add up over the rows kept, the entries and any directory row.
        missing = os.path.join(self.tmp, "missing")
        data = os.path.join(self.tmp, "data")
        os.makedirs(missing)
        make_sized(data, 12)
        run = run_traced([PROG, "overflow", missing, "66000", data, "12"],
                         out_dir=os.path.join(self.tmp, "out"), timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr)
        agg = report_json(*run.traces, aggregates=True)
        proc_io = agg["processes"][0]["io"]
        self.assertIsNotNone(proc_io["per_directory_from_ns"])
        self.assertGreaterEqual(proc_io["per_directory_from_ns"], agg["processes"][0].get("start_ns", 0))
        rows = agg["io"]["files"]
        kept = [r for r in rows if not r.get("summed_files") and "counted_from_ns" not in r]
        self.assertEqual(len(kept), 65536)
        late = {r["path"]: r for r in rows if r["path"].startswith(data + "/")}
        self.assertEqual(sorted(late), [f"{data}/f{i:05d}.bin" for i in range(12)])
        for i, s in enumerate(sizes(12)):
            r = late[f"{data}/f{i:05d}.bin"]
            self.assertEqual(r["kind"], "file")
            self.assertGreaterEqual(r["counted_from_ns"], proc_io["per_directory_from_ns"])
            # At most the stats of the missing files past the slots that came first.
            self.assertLessEqual(r["calls_before_max"], 66000 - 65536)
            self.assertEqual((r["opens"], r["bytes_read"], r["reads"], r["stats"]),
                             (1, s + 100, (s + 4095) // 4096 + 2, 2))
        under = [r for r in rows if r["path"].startswith(missing + "/")]
        self.assertEqual(sum(r["stats"] for r in under), 66000)
        self.assertEqual(sum(r["stat_errors"] for r in under), 66000)

    def test_fuse_workload_same_findings_from_aggregates_alone(self):
        # The FUSE (bindfs, type fuse.drive) pipeline of test_io_filesystems: 200 small
        # files, 2 epochs. Reported from its events and from its aggregates alone, every
        # io finding has the same id, severity, summary and evidence.
        if shutil.which("bindfs") is None or not os.path.exists("/dev/fuse"):
            self.skipTest("bindfs or /dev/fuse is missing")
        src = os.path.join(self.tmp, "src")
        mnt = os.path.join(self.tmp, "drive")
        os.makedirs(mnt)
        make_files(src, 200, 2048)
        if subprocess.run(["bindfs", "-o", "subtype=drive", src, mnt], capture_output=True).returncode != 0:
            self.skipTest("bindfs could not mount (FUSE not permitted here)")
        try:
            run = run_traced([SYSTEM_PYTHON, EPOCHS, mnt, "2"], out_dir=os.path.join(self.tmp, "out"))
        finally:
            for cmd in (["fusermount", "-u", mnt], ["umount", "-l", mnt]):
                if subprocess.run(cmd, capture_output=True).returncode == 0:
                    break
        self.assertEqual(run.returncode, 0, run.stderr)
        ev = report_json(*run.traces, aggregates=False)
        agg = report_json(*run.traces, aggregates=True)
        self.assertEqual(self.same_io_findings(agg, ev), ["io.network-filesystem", "io.reread"])
        self.same_as_events(file_rows(agg, mnt + "/"), file_rows(ev, mnt + "/"))


if __name__ == "__main__":
    unittest.main()
