"""The Python start-up hook's collective records in a trace whose window rolls (issue 39,
format 1.5: collective records give way with the window; the collective chunks keep each
process group's counters and latest collectives). tests/dist/py/many_collectives.py:
- one process, a group of one, COLABTRACE_WINDOW_MB=1: 16,000 all_reduces (with 12 stats
  each) roll the window, and the trace keeps 32 event chunks and stays within 2 MiB; the
  report's counts per group are exact (collective_group records) and the latest 64 of
  each group are collective records, none twice;
- the same program SIGKILLed at two counts while its window rolls: every trace reads,
  and its counters are the all_reduces that had returned (the one in its hook's end at
  the kill counted or not);
- a torchrun job of 3 ranks (Debian's torch, gloo) where rank 1 sleeps after 6,000
  all_reduces while the others wait in the next one until gloo's 3 s timeout, traced in
  full and with COLABTRACE_WINDOW_S=1: the same dist.hang (the rank named, the collective
  waited in, the waiting ranks) and the same per-group counts in the report, exact.
Each run happens once per class (setUpClass) and its assertions share it."""
import os
import shutil
import struct
import tempfile
import unittest

import ctharness as h
from test_torchrun import Job, torch_missing

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "py", "many_collectives.py")
RING = 64  # format::kCollRing
MIB = 1 << 20
CHUNK = 32768


def where(marker: str) -> str:
    return f"many_collectives.py:{h.marked_line(PROGRAM, marker)} in main"


def records(trace: str, name: str) -> list[dict]:
    return [f for n, f in (r for r in map(h.parse_dump_line, h.dump(trace)) if r is not None) if n == name]


def chunk_magics(trace: str) -> tuple[int, dict[bytes, int]]:
    """The trace's next_chunk_offset (FileHeader offset 64: how far its chunks reach) and
    how many chunks of each magic lie before it."""
    with open(trace, "rb") as f:
        b = f.read()
    used = struct.unpack_from("<Q", b, 64)[0]
    magics: dict[bytes, int] = {}
    for at in range(CHUNK, used, CHUNK):
        magics[b[at:at + 4]] = magics.get(b[at:at + 4], 0) + 1
    return used, magics


def groups_of(trace: str) -> dict[int, dict]:
    return {int(g["group"]): {k: int(g[k]) for k in ("collectives", "raised", "entered", "returned")}
            for g in records(trace, "collective_group")}


class SingleProcessWindow(unittest.TestCase):
    N = 16000

    @classmethod
    def setUpClass(cls):
        why = torch_missing()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="ct-collwin-")
        cls.env = {"COLABTRACE_PYTHON": "1", "OMP_NUM_THREADS": "1", "COLABTRACE_WINDOW_MB": "1"}
        cls.traced = h.run_traced([h.SYSTEM_PYTHON, PROGRAM, "single", str(cls.N), os.path.join(cls.tmp, "count")],
                               env=cls.env, out_dir=os.path.join(cls.tmp, "full"), timeout=180)
        cls.trace = cls.traced.traces[0]
        cls.collectives = records(cls.trace, "collective")
        cls.report = h.report(cls.trace)

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_window_rolled_and_trace_bounded(self):
        self.assertEqual(self.traced.returncode, 0, self.traced.stderr[-3000:])
        self.assertEqual(self.traced.stdout, f"done {self.N}\n")
        w = self.report["processes"][0]["window"]
        # 16,000 all_reduces, 192,000 stats and 3 barriers (and the imports' file calls);
        # fewer than half are still in the file.
        self.assertGreaterEqual(w["events_total"], 13 * self.N + 3)
        self.assertLess(w["events_in_full"], w["events_total"] // 2)
        # 1 MiB of event chunks (32), one collective chunk, and the header, record, state
        # and I/O aggregate chunks (torch's imports: about 19 chunks); traced in full, 90
        # event chunks and 3.5 MiB.
        used, magics = chunk_magics(self.trace)
        self.assertEqual(magics[b"CTEV"], MIB // CHUNK)
        self.assertEqual(magics[b"CTCG"], 1)
        self.assertLessEqual(used, 2 * MIB)

    def test_group_counts_exact(self):
        self.assertEqual(groups_of(self.trace), {
            1: {"collectives": self.N, "raised": 0, "entered": self.N, "returned": self.N},
            2: {"collectives": 3, "raised": 0, "entered": 3, "returned": 3}})

    def test_latest_collectives_kept_once(self):
        seqs = [(int(c["group"]), int(c["seq"])) for c in self.collectives]
        self.assertEqual(len(seqs), len(set(seqs)), "a ring entry read twice")
        self.assertLess(len(seqs), self.N // 2)
        kept = set(seqs)
        for s in range(self.N - RING + 1, self.N + 1):
            self.assertIn((1, s), kept)
        self.assertEqual(sorted(s for g, s in kept if g == 2), [1, 2, 3])
        last = [c for c in self.collectives if c["group"] == "1" and c["seq"] == str(self.N)][0]
        self.assertEqual((last["op"], last["count"], last["dtype"], last["where"], last["status"]),
                         ("1", "1", "torch.float32", where("M_ALL_REDUCE"), "0"))

    def test_killed_while_rolling(self):
        """SIGKILLed at two counts past the first roll (about 6,000 all_reduces)."""
        for at in (9000, 13500):
            with self.subTest(at=at):
                out = os.path.join(self.tmp, f"kill{at}")
                os.makedirs(out)
                counter = os.path.join(out, "count")
                rc, done = h.sigkill_at_count(
                    ["env", "LD_PRELOAD=" + h.SHIM, "COLABTRACE_OUT=" + out + "/",
                     *(f"{k}={v}" for k, v in self.env.items()),
                     h.SYSTEM_PYTHON, PROGRAM, "single", str(self.N), counter],
                    h.clean_env({}), counter, at, timeout=60)
                self.assertEqual(rc, -9)
                self.assertGreaterEqual(done, at)
                traces = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".ctrace")]
                self.assertEqual(len(traces), 1)
                rep = h.report(traces[0])
                self.assertLess(rep["processes"][0]["window"]["events_in_full"],
                                rep["processes"][0]["window"]["events_total"])
                g = groups_of(traces[0])[1]
                self.assertIn(g["collectives"], (done, done + 1), g)
                self.assertEqual(g["entered"], g["collectives"])
                kept = {int(c["seq"]) for c in records(traces[0], "collective") if c["group"] == "1"}
                self.assertTrue(set(range(done - RING + 2, done + 1)) <= kept, (done, max(kept)))


class RankSleepsAfterManyCollectives(unittest.TestCase):
    """The torchrun job, in full and through a 1 s window."""
    N = 6000

    @classmethod
    def setUpClass(cls):
        why = torch_missing()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="ct-collwin-job-")
        args = (str(cls.N), "-")
        cls.full = Job(cls.tmp, "stall", program=PROGRAM, args=args, name="full")
        cls.window = Job(cls.tmp, "stall", env={"COLABTRACE_WINDOW_S": "1"}, program=PROGRAM, args=args,
                         name="window")

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def hang(self, job: Job) -> dict:
        f = job.findings("dist.hang")
        self.assertEqual(len(f), 1, ([x["id"] for x in job.report["findings"]], job.context()))
        return f[0]

    def test_window_rolled_in_every_rank(self):
        for p in self.window.ranks:
            w = p["window"]
            self.assertLess(w["events_in_full"], w["events_total"] // 2, p["pid"])
            self.assertGreaterEqual(w["events_total"], 13 * self.N)

    def test_same_hang_verdict(self):
        for job in (self.full, self.window):
            with self.subTest(job=job.out):
                self.assertEqual([x["id"] for x in job.findings("dist.")], ["dist.hang"])
                f = self.hang(job)
                ev = f["evidence"]
                self.assertEqual((f["pid"], ev["rank"], ev["ranks"], ev["missing_ranks"]),
                                 (job.rank_pid(1), 1, [1], []))
                c = ev["collective"]
                self.assertEqual((c["op"], c["comm"], c["seq"], c["count"], c["dtype"], c["where"]),
                                 ("all_reduce", "group 1", self.N + 1, 1, "torch.float32", where("M_WAITS")))
                self.assertEqual(sorted((w["rank"], w["pid"], w["raised"], w["op"], w["seq"]) for w in ev["waiting"]),
                                 [(0, job.rank_pid(0), True, "all_reduce", self.N + 1),
                                  (2, job.rank_pid(2), True, "all_reduce", self.N + 1)])

    def test_same_counts_per_group(self):
        for job in (self.full, self.window):
            with self.subTest(job=job.out):
                ranks = job.report["dist"]["jobs"][0]["ranks"]
                got = {r["rank"]: [(g["group"], g["collectives"], g["raised"], g["last_seq"]) for g in r["collectives"]]
                       for r in ranks}
                self.assertEqual(got, {0: [(1, self.N + 1, 1, self.N + 1)], 1: [(1, self.N, 0, self.N)],
                                       2: [(1, self.N + 1, 1, self.N + 1)]})


if __name__ == "__main__":
    unittest.main()
