"""Multi-rank jobs at scale (issue 38, "Scale"): a generated torchrun job of 64 ranks on 8
hosts (tests/harness/ct_gen_job.cpp: about 1 MiB of steps, GPU allocations, file I/O and
calls in flight per rank, written with the shim's encoder; each host's torchrun agent
traced too), read by the real `colabtrace report`. The verdict must have the shape the
real 3-rank job gives (tests/dist/test_torchrun.py, RankKilled):
- rank 37 SIGKILLed in its pread after 5 steps: dist.first-failure names it (cause
  "killed", 5 steps, its stop on the job's wall-clock axis), the 63 others (exit 1 when
  gloo lost the peer, 32-82 ms later) are its consequences with their
  proc.python-exception folded, and so are the 8 agents (exit 1); the only errors are the
  culprit's dist.first-failure and proc.killed;
- the same job with the culprit's trace cut inside a chunk, and with the culprit's trace
  missing: the job model then gives no verdict (dist/job_model.h: a failed job with a rank
  whose trace is damaged, or a rank with no trace, cannot tell which rank failed first),
  so there is no dist.first-failure and no other rank is blamed; the report says why;
- a healthy job: 64 ranks of 10 steps, no dist.* finding.
Each job is generated and reported once per class (setUpClass)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import ctharness as h

RANKS = 64
PER_HOST = 8
CULPRIT = 37
AFTER_STEP = 5
JOB = "ct-gen@node000:29500"
MS = 1_000_000
# The generator's timeline (ct_gen_job.cpp): a rank starts 500 ms + 10 ms x its local rank
# into the job and ends a step every second; the culprit dies 700 ms into step
# AFTER_STEP + 1, in a pread that began 2 ms before (its call in flight: the last sign of
# life its trace gives); the others exit 30 + rank % 51 ms after it died.
CULPRIT_STOP_NS = (500 + 10 * (CULPRIT % PER_HOST) + AFTER_STEP * 1000 + 700 - 2) * MS - 500 * MS


def gen_job() -> str:
    return h.built_test_program("dist", "ct_gen_job")


class GeneratedJob(unittest.TestCase):
    SHAPE = "kill"

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ct-dist-gen-")
        cls.dir = os.path.join(cls.tmp, "job")
        p = subprocess.run([gen_job(), "--ranks", str(RANKS), "--per-host", str(PER_HOST), "--out", cls.dir,
                            "--shape", cls.SHAPE, "--culprit", str(CULPRIT), "--after-step", str(AFTER_STEP)],
                           capture_output=True, text=True, check=True)
        cls.manifest = json.loads(p.stdout)
        cls.ranks = {t["rank"]: t for t in cls.manifest["traces"] if t["role"] == "rank"}
        cls.agents = [t for t in cls.manifest["traces"] if t["role"] == "launcher"]
        cls.alter()
        cls.report = h.report(cls.dir)
        cls.text = h.cli("report", cls.dir).stdout

    @classmethod
    def alter(cls):
        """Changes the generated traces before the report (the variants)."""

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def culprit_file(self) -> str:
        return os.path.join(self.dir, self.ranks[CULPRIT]["file"])

    def job(self) -> dict:
        jobs = self.report["dist"]["jobs"]
        self.assertEqual(len(jobs), 1, [j["job"] for j in jobs])
        return jobs[0]

    def errors(self) -> set:
        return {(f["id"], f["pid"]) for f in self.report["findings"] if f["severity"] == "error"}

    def assert_job_listed(self, steps: int, ranks: list[int]):
        """The job and its ranks as processes[].dist and dist.jobs[0] give them."""
        self.assertEqual(self.manifest["job"], JOB)
        j = self.job()
        self.assertEqual((j["job"], j["launcher"], j["restart"], j["world_size"]), (JOB, "torchrun", 0, RANKS))
        self.assertEqual(j["hosts"], [f"node{k:03d}" for k in range(RANKS // PER_HOST)])
        self.assertEqual((j["clock"], j["clock_uncertainty_ns"]), ("wall", 100_000_000))
        self.assertEqual(j["launcher_pids"], sorted(a["pid"] for a in self.agents))
        self.assertEqual([(r["rank"], r["pid"], r["host"], r["steps"]) for r in j["ranks"]],
                         [(r, self.ranks[r]["pid"], self.ranks[r]["host"], steps) for r in ranks])
        by_pid = h.by_pid(self.report)
        for r in ranks:
            self.assertEqual(by_pid[self.ranks[r]["pid"]]["dist"],
                             {"rank": r, "local_rank": r % PER_HOST, "world_size": RANKS,
                              "host": self.ranks[r]["host"], "job": JOB, "restart": 0, "role": "rank",
                              "launcher": "torchrun"})
        for a in self.agents:
            self.assertNotIn("dist", by_pid[a["pid"]])  # the agents carry no rank variables


class RankKilled(GeneratedJob):
    SHAPE = "kill"

    def test_ranks_listed(self):
        self.assert_job_listed(AFTER_STEP, list(range(RANKS)))
        j = self.job()
        self.assertEqual((j["missing_ranks"], j["problems"], j["first_failure_rank"], j["stopped_from_outside"]),
                         ([], [], CULPRIT, False))

    def test_first_failure_is_the_killed_rank(self):
        f = h.findings(self.report, "dist.first-failure")
        self.assertEqual([x["id"] for x in self.report["findings"] if x["id"].startswith("dist.")],
                         ["dist.first-failure"])
        f = f[0]
        pid = self.ranks[CULPRIT]["pid"]
        self.assertEqual((f["severity"], f["pid"]), ("error", pid))
        ev = f["evidence"]
        self.assertEqual((ev["rank"], ev["pid"], ev["host"], ev["cause"], ev["steps"], ev["at_ns"]),
                         (CULPRIT, pid, "node004", "killed", AFTER_STEP, CULPRIT_STOP_NS))
        self.assertEqual(ev["end"], {"kind": "killed", "code": None, "signal": 9, "signal_name": "SIGKILL"})
        self.assertEqual((ev["job"], ev["restart"], ev["world_size"]), (JOB, 0, RANKS))
        self.assertTrue(f["summary"].startswith(
            f"rank {CULPRIT} (host node004, pid {pid}) failed first: it was killed by SIGKILL with no exit record"
            f" (the OOM killer, or a kill from outside the job) after {AFTER_STEP} steps at 5.75 s into the job; "
            f"ranks 0, 1, 2, "), f["summary"])
        self.assertTrue(f["summary"].endswith("62 and 63 ended after it (exited 1) as its consequences"), f["summary"])

    def test_the_others_are_its_consequences(self):
        ev = h.findings(self.report, "dist.first-failure")[0]["evidence"]
        ranks = [c for c in ev["consequences"] if c["role"] == "rank"]
        others = [r for r in range(RANKS) if r != CULPRIT]
        # In the order they stopped: 32 + rank % 51 ms after the culprit.
        self.assertEqual([(c["rank"], c["pid"], c["host"], c["after_ns"]) for c in ranks],
                         sorted(((r, self.ranks[r]["pid"], self.ranks[r]["host"], (32 + r % 51) * MS) for r in others),
                                key=lambda x: (x[3], x[0])))
        for c in ranks:
            self.assertEqual(c["end"], {"kind": "exited", "code": 1, "signal": None}, c)
            # gloo's RuntimeError, folded: no error of its own.
            self.assertEqual([(x["id"], x["pid"]) for x in c["folded"]], [("proc.python-exception", c["pid"])])
            self.assertIn("Connection closed by peer [node004]:29500", c["folded"][0]["summary"])
        launchers = [c for c in ev["consequences"] if c["role"] == "launcher"]
        self.assertEqual(sorted((c["pid"], c["host"], c["end"]["code"]) for c in launchers),
                         sorted((a["pid"], a["host"], 1) for a in self.agents))
        # As in the real job: the culprit's own proc.killed beside dist.first-failure, and
        # no other error.
        pid = self.ranks[CULPRIT]["pid"]
        self.assertEqual(self.errors(), {("dist.first-failure", pid), ("proc.killed", pid)})

    def test_culprit_was_killed_in_its_read(self):
        pid = self.ranks[CULPRIT]["pid"]
        f = [x for x in self.report["findings"] if x["id"] == "proc.killed"]
        self.assertEqual([x["pid"] for x in f], [pid])
        self.assertEqual([(c["call"], c["api"], c["path"], c["blocked_ns"]) for c in f[0]["evidence"]["in_flight"]],
                         [("read", "pread64", f"/data/shards/shard-{CULPRIT:05d}-{AFTER_STEP + 1:04d}.tar", 52 * MS)])

    def test_ranks_table_marks_it(self):
        self.assertRegex(self.text, rf"\n  {CULPRIT} +node004 +{self.ranks[CULPRIT]['pid']} +{AFTER_STEP} +"
                                    r"killed by SIGKILL   <- failed first\n")
        self.assertEqual(len(re.findall(r"<- failed first", self.text)), 1)


class CulpritTruncated(GeneratedJob):
    """The culprit's trace cut 16 KiB before its end, inside its last chunk (32 KiB)."""

    @classmethod
    def alter(cls):
        path = os.path.join(cls.dir, cls.ranks[CULPRIT]["file"])
        cls.cut_at = os.path.getsize(path) - 16384
        os.truncate(path, cls.cut_at)

    def test_no_verdict_and_why(self):
        pid = self.ranks[CULPRIT]["pid"]
        j = self.job()
        self.assertEqual(j["problems"], [
            f"rank {CULPRIT}'s trace (pid {pid} on node004) could be read only in part: when it stopped is unknown, "
            "so the rank that failed first cannot be told"])
        self.assertEqual((j["missing_ranks"], j["first_failure_rank"]), ([], None))
        self.assertEqual([x for x in self.report["findings"] if x["id"].startswith("dist.")], [])
        chunk_start = self.cut_at // 32768 * 32768
        self.assertIn(f"{self.culprit_file()}: offset {chunk_start}: the file ends inside this chunk; "
                      "records after the end are lost", self.report["warnings"])
        self.assertIn(f"job {JOB} (restart 0): " + j["problems"][0], self.report["warnings"])

    def test_no_rank_is_blamed(self):
        # Every rank keeps its own error: the culprit's proc.killed, the others'
        # proc.python-exception (gloo's lost connection); none is folded into a wrong culprit.
        pid = self.ranks[CULPRIT]["pid"]
        self.assertEqual(self.errors(), {("proc.killed", pid)} | {
            ("proc.python-exception", self.ranks[r]["pid"]) for r in range(RANKS) if r != CULPRIT})
        self.assertNotIn("<- failed first", self.text)


class CulpritMissing(GeneratedJob):
    """The culprit's trace left out (a lost file): 63 ranks of 64."""

    @classmethod
    def alter(cls):
        os.unlink(os.path.join(cls.dir, cls.ranks[CULPRIT]["file"]))

    def test_missing_rank_stated_and_no_verdict(self):
        self.assert_job_listed(AFTER_STEP, [r for r in range(RANKS) if r != CULPRIT])
        j = self.job()
        problem = (f"rank {CULPRIT} of {RANKS} has no trace here (a host's folder left out, or a trace lost): "
                   "the rank that failed first cannot be told")
        self.assertEqual((j["missing_ranks"], j["problems"], j["first_failure_rank"]), ([CULPRIT], [problem], None))
        self.assertIn(f"job {JOB} (restart 0): {problem}", self.report["warnings"])

    def test_no_rank_is_blamed(self):
        # The first of the others to exit (rank 0, 32 ms after the kill) is no culprit.
        self.assertEqual([x for x in self.report["findings"] if x["id"].startswith("dist.")], [])
        self.assertEqual(self.errors(), {("proc.python-exception", self.ranks[r]["pid"])
                                         for r in range(RANKS) if r != CULPRIT})
        self.assertNotIn("<- failed first", self.text)


class Healthy(GeneratedJob):
    SHAPE = "healthy"

    def test_ranks_listed_and_no_dist_finding(self):
        self.assert_job_listed(10, list(range(RANKS)))
        j = self.job()
        self.assertEqual((j["missing_ranks"], j["problems"], j["first_failure_rank"]), ([], [], None))
        self.assertEqual([x["id"] for x in self.report["findings"] if x["severity"] == "error"], [])
        self.assertEqual([x for x in self.report["findings"] if x["id"].startswith("dist.")], [])
        self.assertTrue(all(r["end"] == {"kind": "exited", "code": 0, "signal": None} for r in j["ranks"]))


if __name__ == "__main__":
    unittest.main()
