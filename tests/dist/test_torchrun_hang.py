"""Multi-rank jobs that hang (issue 38, dist.hang and dist.collective-mismatch): a real
`torchrun` job of 3 ranks (Debian's torch 1.13, gloo, tests/dist/py/ddp_train.py) under
`colabtrace run`, where one rank never enters the collective the others wait in. The
Python start-up hook is on in every rank without COLABTRACE_PYTHON (they carry torchrun's
rank variables), and records each collective: DDP's gradient all-reduce in backward(),
a metric all_reduce.
- stall: rank 1 reads a file on a slow FUSE mount (tests/harness/slowfs.py) at step 6,
  for 20 s; gloo's 10 s timeout ends ranks 0 and 2 first (exit 1), torchrun then sends
  rank 1 SIGTERM. dist.hang names rank 1 and its read, not the ranks that exited first,
  and there is no dist.first-failure;
- the same stall on a mount that never answers, with no collective timeout, under
  `colabtrace run --hang-timeout`: run ends the job; dist.hang has rank 1's Python stack
  (read from outside) at its read, and the waiting ranks' lines in backward();
- metric: rank 0 alone all-reduces a metric after step 4: dist.collective-mismatch names
  rank 0, its line and size, against the others' gradient all-reduce, at one sequence
  number.
Each job runs once per test class and its assertions share it (setUpClass). The FUSE
daemon is killed and the mount detached when a class ends (SlowMount)."""
import os
import socket
import unittest

from slowfs import SlowMount
from test_torchrun import TRAIN, TorchrunJob, marked_line

HOST = socket.gethostname()
BACKWARD = f"ddp_train.py:{marked_line(TRAIN, 'backward')} in main"


class HangJob(TorchrunJob):
    ENV: dict = {}
    MOUNT: dict | None = None  # SlowMount settings: the stall file lies on that mount
    mount = None

    @classmethod
    def setUpClass(cls):
        try:
            super().setUpClass()
        finally:
            if cls.mount is not None:
                cls.mount.close()  # kills the daemon first: a reader left behind gets ENOTCONN

    @classmethod
    def job_env(cls) -> dict:
        env = dict(cls.ENV)
        if cls.MOUNT is not None:
            src = os.path.join(cls.tmp, "src")
            os.makedirs(src)
            with open(os.path.join(src, "x.bin"), "wb") as f:
                f.write(b"x" * 4096)
            cls.mount = SlowMount(None, src, **cls.MOUNT).__enter__()  # skips without FUSE
            env["CT_STALL_FILE"] = cls.stall_file = os.path.join(cls.mount.path, "x.bin")
        return env

    def finding(self, fid: str) -> dict:
        f = self.job.findings(fid)
        self.assertEqual(len(f), 1, (fid, [x["id"] for x in self.job.report["findings"]], self.job.context()))
        return f[0]

    def errors(self) -> set:
        return {(x["id"], x["pid"]) for x in self.job.report["findings"] if x["severity"] == "error"}


class RankStallsPastTheTimeout(HangJob):
    MODE = "stall"
    MOUNT = {"open_ms": 0, "read_ms": 20000}

    def test_the_stalled_rank_is_the_culprit(self):
        j = self.job
        self.assertNotEqual(j.proc.returncode, 0)
        self.assertEqual(j.findings("dist.first-failure"), [], "ranks 0 and 2 exited first, as consequences")
        f = self.finding("dist.hang")
        ev = f["evidence"]
        self.assertEqual((f["pid"], ev["rank"], ev["ranks"], ev["missing_ranks"], ev["host"]),
                         (j.rank_pid(1), 1, [1], [], HOST))
        b = ev["blocked_in"]
        self.assertEqual((b["state"], b["steps"], b["call"]["call"], b["call"]["path"], b["call"]["fs_type"]),
                         ("blocked", 5, "read", self.stall_file, "fuse.slowfs"))
        self.assertEqual(b["end"]["signal_name"], "SIGTERM")  # torchrun's, once the others failed
        self.assertGreaterEqual(b["call"]["blocked_ns"], 15 * 10**9)

    def test_what_the_others_waited_in(self):
        ev = self.finding("dist.hang")["evidence"]
        c = ev["collective"]
        # Step 6's gradient all-reduce: torch numbers it after DDP's own broadcasts and
        # the 5 all-reduces before it, the same on every rank.
        self.assertEqual((c["op"], c["comm"], c["count"], c["dtype"], c["where"]),
                         ("ddp_all_reduce", "group 1", 9, "torch.float32", BACKWARD))
        self.assertIsInstance(c["seq"], int)
        self.assertEqual(sorted((w["rank"], w["pid"], w["raised"], w["op"], w["seq"]) for w in ev["waiting"]),
                         [(0, self.job.rank_pid(0), True, "ddp_all_reduce", c["seq"]),
                          (2, self.job.rank_pid(2), True, "ddp_all_reduce", c["seq"])])
        for w in ev["waiting"]:
            # gloo's 10 s timeout
            self.assertGreaterEqual(w["waited_ns"], 9 * 10**9)
            self.assertLess(w["waited_ns"], 19 * 10**9)
            self.assertEqual(w["python_stack"], [BACKWARD])

    def test_the_others_ends_are_its_consequences(self):
        j = self.job
        ev = self.finding("dist.hang")["evidence"]
        ranks = [c for c in ev["consequences"] if c["role"] == "rank"]
        self.assertEqual(sorted(c["rank"] for c in ranks), [0, 2])
        for c in ranks:
            # gloo's timeout ends it (exit 1), unless torchrun, seeing the first of them
            # fail, sent it SIGTERM first: a race the test does not fix.
            self.assert_consequence_end(c)
            if c["end"]["kind"] == "exited":  # its timeout's RuntimeError folds in
                self.assertEqual([x["id"] for x in c["folded"]], ["proc.python-exception"], c)
            self.assertGreater(c["after_ns"], 0)
        self.assertEqual(len([c for c in ev["consequences"] if c["role"] == "launcher"]), 1)
        # Only the stalled rank keeps errors of its own.
        self.assertEqual({pid for _, pid in self.errors()}, {j.rank_pid(1)}, self.errors())
        self.assertIn(("dist.hang", j.rank_pid(1)), self.errors())

    def test_summary_and_ranks_table(self):
        j = self.job
        s = self.finding("dist.hang")["summary"]
        self.assertRegex(s, rf"^rank 1 \(host {HOST}, pid {j.rank_pid(1)}\) never entered DDP's gradient "
                            rf"all-reduce #\d+ in backward\(\) at {BACKWARD}: it was blocked \d+\.\d s in read\(\) of "
                            rf".*x\.bin \(fuse\.slowfs\) at step 6; ranks 0 and 2 waited in it up to \d+\.\d s and "
                            rf"gave up \((exited 1|SIGTERM from pid \d+)(, (exited 1|SIGTERM from pid \d+))?\)$")
        self.assertRegex(j.text, rf"\n  1 +\S+ +{j.rank_pid(1)} +5 +SIGTERM from pid \d+   <- never entered the "
                                 rf"collective\n")
        self.assertEqual(j.report["dist"]["jobs"][0]["never_entered_ranks"], [1])


class RankStallsUnderHangTimeout(HangJob):
    MODE = "stall"
    # No collective timeout: without run, the job would wait for ever.
    ENV = {"CT_GLOO_TIMEOUT": "3600"}
    # Long enough for three ranks to import torch on a loaded 2-core machine.
    RUN_ARGS = ("--hang-timeout", "25")
    MOUNT = {"open_ms": 0, "hang": ["x.bin"]}

    def test_run_ended_the_job_and_names_the_stalled_rank(self):
        j = self.job
        self.assertEqual(j.proc.returncode, 124, j.context())
        self.assertEqual(j.findings("dist.first-failure"), [])
        ev = self.finding("dist.hang")["evidence"]
        self.assertEqual((ev["rank"], ev["ranks"], ev["pid"]), (1, [1], j.rank_pid(1)))
        b = ev["blocked_in"]
        self.assertEqual((b["state"], b["call"]["call"], b["call"]["path"]), ("blocked", "read", self.stall_file))
        # Its Python stack, read from outside by run before it ended the job.
        self.assertEqual(b["python_stack"][0], f"{TRAIN}:{marked_line(TRAIN, 'stall-read')} in main")

    def test_the_waiting_ranks_lines_in_backward(self):
        j = self.job
        ev = self.finding("dist.hang")["evidence"]
        self.assertEqual(ev["collective"]["op"], "ddp_all_reduce")
        waiting = sorted(ev["waiting"], key=lambda w: w["rank"])
        self.assertEqual([(w["rank"], w["raised"]) for w in waiting], [(0, False), (2, False)])
        for w in waiting:
            # run read their stacks: torch's backward() frames, then the program's line.
            self.assertIn(f"{TRAIN}:{marked_line(TRAIN, 'backward')} in main", w["python_stack"], w)
            self.assertGreaterEqual(w["waited_ns"], 20 * 10**9)


class RankStraggles(HangJob):
    MODE = "straggle"
    # Each of rank 1's reads takes 150 ms: the page cache never has it (the daemon sleeps
    # in every read it answers).
    MOUNT = {"open_ms": 0, "read_ms": 150}

    def test_straggler_named_with_its_split(self):
        j = self.job
        self.assertEqual(j.proc.returncode, 0, j.context())
        f = self.finding("dist.straggler")
        self.assertEqual(f["severity"], "warning")
        ev = f["evidence"]
        self.assertEqual((f["pid"], ev["rank"], ev["ranks"], ev["host"]), (j.rank_pid(1), 1, [1], HOST))
        self.assertEqual(ev["steps_analysed"], 9)  # 10 optimizer steps, the first is warm-up
        # Its step goes to file I/O on the slow mount, where the others wait in all-reduce.
        self.assertGreaterEqual(ev["split"]["io_ns"], 140 * 10**6)
        self.assertGreater(ev["split"]["io_ns"], ev["split"]["other_ns"])
        self.assertEqual((ev["io"][0]["mount"], ev["io"][0]["fs_type"], ev["io"][0]["slow"]),
                         (self.mount.path, "fuse.slowfs", True))
        w = ev["waiting"]
        self.assertEqual((w["ranks"], w["collective"], w["where"]), ([0, 2], "ddp_all_reduce", BACKWARD))
        self.assertGreaterEqual(w["wait_ns"], 100 * 10**6)
        self.assertGreaterEqual(w["wait_fraction"], 0.5)

    def test_nothing_else_blamed(self):
        j = self.job
        self.assertEqual([x["id"] for x in j.findings("dist.")], ["dist.straggler"])
        # The waiting ranks are not input-bound: they have no batches to wait for.
        self.assertEqual([x["pid"] for x in j.findings("perf.input-bound")], [])
        self.assertRegex(self.finding("dist.straggler")["summary"],
                         rf"^rank 1 \(host {HOST}, pid {j.rank_pid(1)}\) makes every step slow: its steps take "
                         rf"\d+ ms, \d+ ms of them in file I/O on {self.mount.path} \(fuse\.slowfs\); ranks 0 and 2 "
                         rf"spend \d+% of each step \(\d+ ms\) waiting for it in DDP's gradient all-reduce at "
                         rf"{BACKWARD}$")


class MetricAllReduceOnOneRank(HangJob):
    MODE = "metric"

    def test_mismatch_names_rank_0(self):
        j = self.job
        self.assertNotEqual(j.proc.returncode, 0)
        f = self.finding("dist.collective-mismatch")
        ev = f["evidence"]
        self.assertEqual((f["pid"], ev["rank"], ev["ranks"], ev["comm"]), (j.rank_pid(0), 0, [0], "group 1"))
        calls = {c["rank"]: (c["op"], c["count"], c["dtype"], c["where"]) for c in ev["calls"]}
        self.assertEqual(calls, {
            0: ("all_reduce", 1, "torch.float32", f"ddp_train.py:{marked_line(TRAIN, 'metric')} in main"),
            1: ("ddp_all_reduce", 9, "torch.float32", BACKWARD),
            2: ("ddp_all_reduce", 9, "torch.float32", BACKWARD)})
        self.assertIsInstance(ev["seq"], int)

    def test_no_other_verdict(self):
        j = self.job
        self.assertEqual(j.findings("dist.first-failure"), [])
        self.assertEqual(j.findings("dist.hang"), [])
        self.assertTrue(j.report["dist"]["jobs"][0]["all_waiting"])
        # Every rank waited in a collective at its end; ranks 1 and 2's timeouts fold in.
        ev = self.finding("dist.collective-mismatch")["evidence"]
        self.assertEqual(sorted(c["rank"] for c in ev["consequences"] if c["role"] == "rank"), [1, 2])
        self.assertEqual({pid for _, pid in self.errors()}, {j.rank_pid(0)}, self.errors())

    def test_summary(self):
        s = self.finding("dist.collective-mismatch")["summary"]
        self.assertRegex(s, rf"^rank 0 called all_reduce at ddp_train\.py:{marked_line(TRAIN, 'metric')} in main "
                            rf"\(1 element of torch\.float32\) as collective #\d+ of group 1, where ranks 1 and 2 "
                            rf"called DDP's gradient all-reduce in backward\(\) at {BACKWARD} \(9 elements of "
                            rf"torch\.float32\)")


if __name__ == "__main__":
    unittest.main()
