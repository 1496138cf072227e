"""The I/O heavy-hitter table (issue 39, format 1.6): past 65,536 files, a real program's
late files hold entries of a bounded table (Space-Saving, 1,024 entries in sets of 16)
while their directory's row sums the rest. One run: 66,000 stats of missing files fill
the file slots, 3,000 real files are visited once each (more than the table holds: the
entries change hands and fold into their directory's slot), then the last of them is
read 10,000 times more; the program is then SIGKILLed. The report names that file with
its exact count since it entered, every other kept row holds exactly its file's one
visit, the directory row holds exactly the rest, and the totals are the program's. A
second run is killed at a random instant while entries fold: its trace reads, and its
rows sum what its events say."""
import json
import os
import random
import signal
import subprocess
import time
import unittest

from ctharness import SHIM, TempDirTest, built_test_program, cli

PROG = built_test_program("io", "io_agg_visit")
MISSING, FILES, REREADS = 66000, 3000, 10000


def sizes(n: int) -> list[int]:
    return [1000 + 37 * (i % 200) for i in range(n)]


def report(traces: list[str], fmt: str, events: bool = False) -> str:
    """The report from the I/O aggregates alone (events: from the io_* events)."""
    env = dict(os.environ, COLABTRACE_ANALYZER_IGNORE_IO_EVENTS="0" if events else "1")
    old = os.environ.copy()
    os.environ.update(env)
    try:
        return cli("report", "--format", fmt, *traces).stdout
    finally:
        os.environ.clear()
        os.environ.update(old)


def visit(size: int) -> dict:
    """One visit of a file of `size` bytes (io_agg_visit.c's visit): its row's figures."""
    return {"opens": 1, "stats": 2, "reads": (size + 4095) // 4096 + 2, "bytes_read": size + 100}


class HeavyHitterTest(TempDirTest):
    def prepare(self) -> tuple[str, str, str, dict]:
        """The missing files' folder, FILES data files, the trace folder and the shim's
        environment for one run."""
        missing, data, out = (os.path.join(self.tmp, d) for d in ("missing", "data", "out"))
        for d in (missing, data, out):
            os.makedirs(d)
        for i, s in enumerate(sizes(FILES)):
            with open(os.path.join(data, f"f{i:05d}.bin"), "wb") as f:
                f.write(b"x" * s)
        env = {k: v for k, v in os.environ.items() if not k.startswith("COLABTRACE_") or k == "COLABTRACE_BUILD_DIR"}
        env.update(LD_PRELOAD=SHIM, COLABTRACE_OUT=out + "/")
        return missing, data, out, env

    def test_late_heavy_file_named_exactly_and_rows_sum_once(self):
        missing, data, out, env = self.prepare()
        hot = FILES - 1
        p = subprocess.Popen([PROG, "heavy", missing, str(MISSING), data, str(FILES), str(hot), str(REREADS)],
                             env=env, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "filled")
            did = json.loads(p.stdout.readline())
            self.assertEqual(p.stdout.readline().strip(), "stopped")
            os.kill(p.pid, signal.SIGKILL)
        finally:
            p.wait(timeout=120)
            p.stdout.close()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".ctrace")]
        self.assertEqual(len(traces), 1)
        agg = json.loads(report(traces, "json"))
        proc = agg["processes"][0]
        self.assertEqual(proc["end"]["kind"], "killed")
        self.assertIsNotNone(proc["io"]["per_directory_from_ns"])

        rows = [r for r in agg["io"]["files"] if r["path"].startswith(data + "/")]
        summed = [r for r in rows if r.get("summed_files")]
        kept = {r["path"]: r for r in rows if not r.get("summed_files")}
        self.assertEqual([r["path"] for r in summed], [data + "/<more files>"])
        self.assertEqual(summed[0]["kind"], "directory")
        self.assertNotIn("counted_from_ns", summed[0])
        # Bounded: at most the table's 1,024 entries; more files than that were visited,
        # so some folded into the directory row.
        self.assertGreater(len(kept), 0)
        self.assertLessEqual(len(kept), 1024)

        # The hot file: its visit and the re-reads, all made while it held its entry.
        hot_path = f"{data}/f{hot:05d}.bin"
        self.assertIn(hot_path, kept)
        h = kept[hot_path]
        v = visit(sizes(FILES)[hot])
        self.assertEqual(h["kind"], "file")
        self.assertEqual((h["opens"], h["stats"], h["reads"], h["bytes_read"]),
                         (v["opens"] + 1, v["stats"], v["reads"] + REREADS, v["bytes_read"] + 100 * REREADS))
        self.assertEqual(h["read_sizes"]["0-100"], 1 + REREADS)
        self.assertGreaterEqual(h["counted_from_ns"], proc["io"]["per_directory_from_ns"])
        # 3,000 files over 64 sets of 16: its set had folded entries before it came.
        self.assertGreater(h["calls_before_max"], 0)

        # Every other kept row holds its file's one visit exactly (it entered at the
        # visit's first call, a stat, and kept its entry since).
        for path, r in kept.items():
            self.assertIn("counted_from_ns", r, path)
            if path == hot_path:
                continue
            i = int(path[-9:-4])
            self.assertEqual({k: r[k] for k in ("opens", "stats", "reads", "bytes_read")}, visit(sizes(FILES)[i]), path)

        # The directory row holds exactly the rest: rows sum every call once, and the
        # totals are what the program did.
        for k, want in (("opens", did["opens"]), ("stats", did["stats"]),
                        ("reads", did["reads"] + did["preads"]), ("bytes_read", did["bytes"])):
            self.assertEqual(sum(r[k] for r in rows), want, k)
        self.assertEqual(summed[0]["opens"], FILES - (len(kept) - 1) - 1)

        text = report(traces, "text")
        self.assertIn(f"{hot_path}: counted from ", text)
        self.assertIn(f"up to {h['calls_before_max']} calls before then", text)


    def test_sigkill_while_entries_fold_leaves_a_readable_trace(self):
        # The same visits, 150 us apart, killed at a random instant up to 0.1 s after half of
        # them (1,500 files: entries taken and folded meanwhile): the trace
        # reads, and the rows under data/ sum what the events of the same trace say,
        # every count exact or one above (an aggregate is added before its event is
        # written: the call the kill caught in between).
        missing, data, out, env = self.prepare()
        p = subprocess.Popen([PROG, "heavy", missing, str(MISSING), data, str(FILES), "0", "1", "150"],
                             env=env, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline().strip(), "filled")
            self.assertEqual(p.stdout.readline().strip(), "half")
            time.sleep(random.uniform(0.0, 0.1))
            os.kill(p.pid, signal.SIGKILL)
        finally:
            p.wait(timeout=120)
            p.stdout.close()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".ctrace")]
        agg = json.loads(report(traces, "json"))
        self.assertEqual(agg["processes"][0]["end"]["kind"], "killed")
        ev = json.loads(report(traces, "json", events=True))
        totals = []
        for rep in (agg, ev):
            rows = [r for r in rep["io"]["files"] if r["path"].startswith(data + "/")]
            totals.append({k: sum(r[k] for r in rows) for k in ("opens", "stats", "reads", "bytes_read")})
        self.assertGreaterEqual(totals[1]["opens"], FILES // 2)  # the table full and folding
        for k in totals[0]:
            self.assertIn(totals[0][k] - totals[1][k], (0, 1) if k != "bytes_read" else range(0, 4097), k)


if __name__ == "__main__":
    unittest.main()
