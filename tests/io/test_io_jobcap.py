"""The job cap of `colabtrace run` (COLABTRACE_JOB_MAX_MB, issue 39): a job whose pool of
workers is made anew every epoch (10 epochs of 3 workers, each epoch's workers reading
1,200 small files between them) traced through a 1 MiB window, once with no job cap to
speak of and once with COLABTRACE_JOB_MAX_MB=5. The capped job's traces stay within
5 MiB on disk, at each check run recorded and at the end; run compacted traces of ended
workers while the job ran; the report marks them (processes[].window.compacted, the text
report's I/O window line) and gives the same findings and per-file counts as the job run
without the cap. A bad value gets one line on stderr and the default; running processes that
alone pass the cap get one line too."""
import glob
import json
import os
import struct
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest, cli, colabtrace_run, records
from iotest import assert_same_io, make_files

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
EPOCHS, WORKERS = 10, 3
SPIKE_MB = 24
CAP_MB = 5  # the uncapped job takes about 8 MiB of disk: the cap is passed mid-job


def disk_bytes(out_dir: str) -> int:
    """What du counts of the folder's traces."""
    return sum(os.stat(p).st_blocks * 512 for p in glob.glob(os.path.join(out_dir, "*.ctrace")))


def run_trace(out_dir: str) -> str:
    (path,) = glob.glob(os.path.join(out_dir, "colabtrace.run.*.ctrace"))
    return path


class JobCapTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        """One run of the job without a cap and one with a 5 MiB cap, shared by the tests."""
        super().setUpClass()
        import tempfile
        cls.dir = tempfile.mkdtemp(prefix="ct-jobcap-")
        cls.data = os.path.join(cls.dir, "data")
        make_files(cls.data, 1200, 1000)
        argv = [SYSTEM_PYTHON, os.path.join(HERE, "py", "epochs_pool.py"), cls.data, str(EPOCHS), str(WORKERS), "0.3"]
        cls.full_dir, cls.capped_dir = os.path.join(cls.dir, "full"), os.path.join(cls.dir, "capped")
        # Each worker holds 24 MiB for 0.1 s, sampled every 20 ms: a peak only its periodic
        # samples saw, which compaction removes with the event chunks (the thinned tiers keep it).
        env = {"COLABTRACE_WINDOW_MB": "1", "COLABTRACE_SAMPLE_MS": "20", "SPIKE_MB": str(SPIKE_MB)}
        cls.full = colabtrace_run(cls.full_dir, argv, env=env)
        cls.capped = colabtrace_run(cls.capped_dir, argv, env=dict(env, COLABTRACE_JOB_MAX_MB=str(CAP_MB)))
        cls.full_rep = json.loads(cli("report", "--format", "json", cls.full_dir).stdout)
        cls.capped_rep = json.loads(cli("report", "--format", "json", cls.capped_dir).stdout)
        cls.capped_text = cli("report", cls.capped_dir).stdout

    @classmethod
    def tearDownClass(cls):
        import shutil
        shutil.rmtree(cls.dir, ignore_errors=True)
        super().tearDownClass()

    def test_runs_are_the_same_job(self):
        for r, rep in ((self.full, self.full_rep), (self.capped, self.capped_rep)):
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["bytes"], EPOCHS * 1200 * 1000)
            # The main process and each epoch's workers (a worker may have read no file).
            self.assertEqual(len(rep["processes"]), 1 + EPOCHS * WORKERS)
        # No cap line: every check found the job within its cap, or compacted it there.
        self.assertNotIn("COLABTRACE_JOB_MAX_MB", self.capped.stderr)

    def test_within_the_cap_at_each_check_and_at_the_end(self):
        # Without the cap the same job takes more than CAP_MB; with it, no more.
        self.assertGreater(disk_bytes(self.full_dir), CAP_MB * MIB)
        self.assertLessEqual(disk_bytes(self.capped_dir), CAP_MB * MIB)
        (job,) = [r["job"] for r in self.capped_rep["run"]]
        self.assertEqual(job["max_bytes"], CAP_MB * MIB)
        self.assertEqual(job["process_max_mb"], 8)  # 5 MiB / 8 is below the shim's floor, 8
        self.assertLessEqual(job["peak_bytes"], CAP_MB * MIB)
        self.assertLessEqual(job["bytes"], CAP_MB * MIB)
        self.assertEqual(job["traces"], len(glob.glob(os.path.join(self.capped_dir, "*.ctrace"))))
        checks = records(run_trace(self.capped_dir), "job_disk")
        self.assertGreaterEqual(len(checks), 2)
        self.assertTrue(all(int(c["bytes"]) <= CAP_MB * MIB for c in checks), checks)
        # Run compacted while the job ran, not only at its end.
        self.assertGreater(int(checks[-2]["compacted"]), 0, checks)
        self.assertEqual(int(checks[-1]["compacted"]), job["compacted"])
        # Each process got the per-process cap in its environment (its trace header's
        # max_bytes, at offset 128).
        for p in self.capped_rep["processes"]:
            with open(p["trace_file"], "rb") as f:
                head = f.read(136)
            self.assertEqual(struct.unpack_from("<Q", head, 128)[0], 8 * MIB, p["trace_file"])
        # Without a cap given, the default: 4096 MiB, 512 MiB per process.
        (full_job,) = [r["job"] for r in self.full_rep["run"]]
        self.assertEqual((full_job["max_bytes"], full_job["process_max_mb"], full_job["compacted"]),
                         (4096 * MIB, 512, 0))

    def test_the_compacted_are_marked_and_lose_no_finding(self):
        rep, full = self.capped_rep, self.full_rep
        compacted = [p for p in rep["processes"] if p["window"]["compacted"]]
        (job,) = [r["job"] for r in rep["run"]]
        self.assertEqual(len(compacted), job["compacted"])
        self.assertGreater(len(compacted), 0)
        main = self.capped_rep["run"][0]["child_pid"]
        for p in compacted:
            self.assertNotEqual(p["pid"], main)  # only ended processes: never the main one
            self.assertEqual(p["window"]["events_in_full"], 0)
            self.assertGreater(p["window"]["events_total"], 0)
            self.assertTrue(p["io"]["from_aggregates"])
            # Its periodic samples went with the event chunks; its peak is the thinned tiers'.
            self.assertGreaterEqual(p["peak_rss_bytes"], SPIKE_MB << 20, p["pid"])
        self.assertTrue(all(p["peak_rss_bytes"] >= SPIKE_MB << 20 for p in full["processes"]
                            if p["pid"] in json.loads(self.full.stdout)["workers"]))
        self.assertFalse(any(p["window"]["compacted"] for p in full["processes"]))
        # The same job: every finding (id, severity), the io ones figure for figure, and
        # the same per-file sums.
        self.assertEqual(sorted((f["id"], f["severity"]) for f in rep["findings"]),
                         sorted((f["id"], f["severity"]) for f in full["findings"]))
        self.assertIn("io.small-files", assert_same_io(self, full, rep, self.data))
        self.assertEqual(sum(p["window"]["events_total"] for p in compacted),
                         sum(int(c["events"]) for p in compacted
                             for c in records(p["trace_file"], "trace_compacted")))
        self.assertIn(f"the traces of {len(compacted)} ended processes were compacted to their sums "
                      "(COLABTRACE_JOB_MAX_MB)", self.capped_text)

    def test_bad_value_gets_one_line_and_the_default(self):
        out = os.path.join(self.tmp, "bad")
        r = colabtrace_run(out, ["/bin/true"], env={"COLABTRACE_JOB_MAX_MB": "8G", "COLABTRACE_MAX_MB": "2048"})
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stderr.splitlines() if "COLABTRACE_" in l]
        self.assertEqual(lines, [
            "colabtrace run: COLABTRACE_JOB_MAX_MB=8G is not MiB from 1 to 16777216; using 4096",
            "colabtrace run: COLABTRACE_MAX_MB=2048 lowered to 512 (COLABTRACE_JOB_MAX_MB=4096 / 8)",
        ])
        (job,) = [x["job"] for x in json.loads(cli("report", "--format", "json", out).stdout)["run"]]
        self.assertEqual((job["max_bytes"], job["process_max_mb"]), (4096 * MIB, 512))
        # A COLABTRACE_MAX_MB below the share stays, and says nothing.
        low = os.path.join(self.tmp, "low")
        r = colabtrace_run(low, ["/bin/true"], env={"COLABTRACE_MAX_MB": "64"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("COLABTRACE_", r.stderr)
        (job,) = [x["job"] for x in json.loads(cli("report", "--format", "json", low).stdout)["run"]]
        self.assertEqual((job["max_bytes"], job["process_max_mb"]), (4096 * MIB, 64))

    def test_running_processes_past_the_cap_are_named_once(self):
        # Four Pythons running at once take more than a 1 MiB cap, and none has ended to be
        # compacted: run says so once, and goes on; once they ended, their compaction
        # brings the folder within the cap.
        out = os.path.join(self.tmp, "over")
        sleeper = f"{SYSTEM_PYTHON} -c 'import time; time.sleep(2.5)'"
        r = colabtrace_run(out, ["/bin/sh", "-c", f"{sleeper} & {sleeper} & {sleeper} & {sleeper}; wait"],
                           env={"COLABTRACE_JOB_MAX_MB": "1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stderr.splitlines() if "COLABTRACE_JOB_MAX_MB" in l]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertRegex(lines[0], r"^colabtrace run: the job's traces take [0-9.]+ MiB, more than "
                                   r"COLABTRACE_JOB_MAX_MB=1 MiB, with every ended process's trace compacted "
                                   r"\([2-5] still running, each capped at COLABTRACE_MAX_MB=8\)$")
        rep = json.loads(cli("report", "--format", "json", out).stdout)
        (job,) = [x["job"] for x in rep["run"]]
        self.assertGreater(job["peak_bytes"], MIB)
        self.assertLessEqual(job["bytes"], MIB)
        self.assertLessEqual(disk_bytes(out), MIB)
        # Only as many as it took, oldest ended first.
        self.assertGreater(job["compacted"], 0)
        self.assertEqual(job["compacted"], sum(p["window"]["compacted"] for p in rep["processes"]))


if __name__ == "__main__":
    unittest.main()
