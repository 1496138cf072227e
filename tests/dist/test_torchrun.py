"""Multi-rank jobs (issue 38): a real `torchrun` job of 3 ranks (Debian's torch 1.13, the
gloo backend, a tiny DDP model, 10 steps; tests/dist/py/ddp_train.py) run under
`colabtrace run`, and its report's ranks (processes[].dist, "dist", the Ranks table) and
dist.first-failure:
- healthy: 3 ranks with role rank and 10 steps each, their DataLoader workers with role
  worker, no dist.* finding;
- rank 1 SIGKILLs itself at step 6 (as the OOM killer does): dist.first-failure names
  rank 1, whatever rank torchrun's "Root Cause" names, and ranks 0 and 2, which exit 1
  when gloo loses its peer, are its consequences, with no error of their own;
- rank 1 raises at step 6: named, with its cause.
Each job runs once per test process and its assertions share it (setUpClass)."""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import unittest

import ctharness as h

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "py", "ddp_train.py")
TORCHRUN = "/usr/bin/torchrun"
NPROC = 3


marked_line = h.marked_line


def torch_missing() -> str:
    if not os.path.exists(TORCHRUN):
        return TORCHRUN + " is not installed (Debian's python3-torch)"
    p = subprocess.run([h.SYSTEM_PYTHON, "-c", "import torch.distributed"], capture_output=True, text=True)
    return "" if p.returncode == 0 else "import torch.distributed failed: " + p.stderr.strip()[-200:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    """One torchrun job of NPROC ranks under `colabtrace run`: its output, its JSON and
    text reports, and the job string its ranks carry."""

    def __init__(self, tmp: str, mode: str, env: dict | None = None, run_args=(), timeout: float = 240,
                 program: str = TRAIN, args=(), name: str = ""):
        self.out = os.path.join(tmp, name or mode)
        port = free_port()
        self.run_id = "ct-" + (name or mode)
        # A static rendezvous on 127.0.0.1 at a free port (torchrun's --standalone would
        # take the fixed port 29400, which tests running side by side would share).
        # Debian's torchrun 1.13 on Python 3.11 fails in to_map (its Std flag enum
        # iterates without its zero member there) unless given --redirects and --tee 1
        # or 2: its bug, not ours.
        argv = [TORCHRUN, "--nnodes", "1", "--nproc_per_node", str(NPROC), "--redirects", "2", "--tee", "2",
                "--master_addr", "127.0.0.1", "--master_port", str(port), "--rdzv_id", self.run_id,
                program, mode, *args]
        self.proc = subprocess.run([h.CLI, "run", "-o", self.out, *run_args, "--", *argv],
                                   env=h.clean_env({"OMP_NUM_THREADS": "1", **(env or {})}),
                                   capture_output=True, text=True, timeout=timeout)
        self.job = f"{self.run_id}@127.0.0.1:{port}"
        self.report = h.report(self.out)
        self.text = h.cli("report", self.out).stdout
        self.ranks = sorted((p for p in self.report["processes"] if (p.get("dist") or {}).get("role") == "rank"),
                            key=lambda p: p["dist"]["rank"])
        self.workers = [p for p in self.report["processes"] if (p.get("dist") or {}).get("role") == "worker"]

    def rank_pid(self, rank: int) -> int:
        return next(p["pid"] for p in self.ranks if p["dist"]["rank"] == rank)

    def findings(self, prefix: str) -> list[dict]:
        return [f for f in self.report["findings"] if f["id"].startswith(prefix)]

    def context(self) -> str:
        return self.proc.stderr[-4000:]


class TorchrunJob(unittest.TestCase):
    MODE = ""
    RUN_ARGS: tuple = ()  # `colabtrace run`'s own options
    job: Job

    @classmethod
    def setUpClass(cls):
        why = torch_missing()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="ct-dist-")
        cls.job = Job(cls.tmp, cls.MODE, env=cls.job_env(), run_args=cls.RUN_ARGS, timeout=300)

    @classmethod
    def job_env(cls) -> dict:
        """The job's environment beyond the test's own."""
        return {}

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def assert_ranks(self, steps: dict[int, int]):
        j = self.job
        self.assertEqual([p["dist"]["rank"] for p in j.ranks], list(range(NPROC)), j.context())
        hostname = socket.gethostname()
        for p in j.ranks:
            self.assertEqual(p["dist"], {"rank": p["dist"]["rank"], "local_rank": p["dist"]["rank"],
                                         "world_size": NPROC, "host": hostname, "job": j.job, "restart": 0,
                                         "role": "rank", "launcher": "torchrun"})
            self.assertEqual(p["steps"]["count"], steps[p["dist"]["rank"]], p["pid"])
        jobs = j.report["dist"]["jobs"]
        self.assertEqual(len(jobs), 1, jobs)
        self.assertEqual(jobs[0]["job"], j.job)
        self.assertEqual(jobs[0]["world_size"], NPROC)
        self.assertEqual(jobs[0]["missing_ranks"], [])
        self.assertEqual(jobs[0]["problems"], [])
        self.assertEqual(jobs[0]["clock"], "monotonic")
        self.assertEqual([(r["rank"], r["pid"], r["steps"]) for r in jobs[0]["ranks"]],
                         [(r, j.rank_pid(r), steps[r]) for r in range(NPROC)])
        # The Ranks table comes before the per-process detail.
        self.assertIn("== Ranks ==", j.text)
        self.assertLess(j.text.index("== Ranks =="), j.text.index("== Processes =="))
        for r in range(NPROC):
            self.assertRegex(j.text, rf"\n  {r} +{re.escape(hostname)} +{j.rank_pid(r)} +{steps[r]} ")


    def assert_consequence_end(self, c: dict):
        """A rank that lost its peer: gloo's "Connection closed by peer" ends it with exit 1,
        unless torchrun's agent, polling its workers, saw the failure first and sent it
        SIGTERM (a race the test does not fix: both are consequences)."""
        if c["end"]["kind"] == "exited":
            self.assertEqual(c["end"], {"kind": "exited", "code": 1, "signal": None}, c)
        else:
            self.assertEqual(c["end"], {"kind": "signaled", "code": None, "signal": 15, "signal_name": "SIGTERM"}, c)


class Healthy(TorchrunJob):
    MODE = "healthy"

    def test_three_ranks_with_their_steps(self):
        self.assertEqual(self.job.proc.returncode, 0, self.job.context())
        self.assert_ranks({0: 10, 1: 10, 2: 10})

    def test_dataloader_workers_are_workers_of_their_rank(self):
        j = self.job
        self.assertEqual(len(j.workers), NPROC, [p["pid"] for p in j.workers])
        ranks = {p["pid"]: p["dist"]["rank"] for p in j.ranks}
        for w in j.workers:
            self.assertEqual(ranks[w["ppid"]], w["dist"]["rank"])  # its parent is its rank
        self.assertEqual(sorted(w["dist"]["rank"] for w in j.workers), list(range(NPROC)))
        self.assertEqual([r["workers"] for r in j.report["dist"]["jobs"][0]["ranks"]], [1] * NPROC)

    def test_no_dist_finding(self):
        self.assertEqual(self.job.findings("dist."), [])
        self.assertIsNone(self.job.report["dist"]["jobs"][0]["first_failure_rank"])


class RankKilled(TorchrunJob):
    MODE = "kill"

    def test_ranks_listed(self):
        self.assertNotEqual(self.job.proc.returncode, 0)
        # Rank 1 died at the top of step 6, after 5 optimizer steps; the others lost
        # their peer in step 6's all-reduce.
        self.assert_ranks({0: 5, 1: 5, 2: 5})

    def test_first_failure_is_the_killed_rank(self):
        j = self.job
        f = j.findings("dist.")
        self.assertEqual([x["id"] for x in f], ["dist.first-failure"], j.context())
        f = f[0]
        self.assertEqual(f["severity"], "error")
        self.assertEqual(f["pid"], j.rank_pid(1))
        ev = f["evidence"]
        self.assertEqual((ev["rank"], ev["pid"], ev["host"], ev["cause"], ev["steps"]),
                         (1, j.rank_pid(1), socket.gethostname(), "killed", 5))
        self.assertEqual(ev["end"], {"kind": "killed", "code": None, "signal": 9, "signal_name": "SIGKILL"})
        self.assertEqual(ev["job"], j.job)
        self.assertGreater(ev["at_ns"], 0)
        # torchrun's own summary names the first exit it saw as the root cause; whichever
        # rank that is, the culprit here is rank 1.
        self.assertIn("Root Cause (first observed failure)", j.proc.stderr)

    def test_the_others_are_its_consequences(self):
        j = self.job
        ev = j.findings("dist.first-failure")[0]["evidence"]
        ranks = [c for c in ev["consequences"] if c["role"] == "rank"]
        self.assertEqual(sorted((c["rank"], c["pid"], c["host"]) for c in ranks),
                         [(0, j.rank_pid(0), socket.gethostname()), (2, j.rank_pid(2), socket.gethostname())])
        for c in ranks:
            self.assert_consequence_end(c)
            self.assertGreaterEqual(c["after_ns"], 0)
        launchers = [c for c in ev["consequences"] if c["role"] == "launcher"]
        self.assertEqual(len(launchers), 1, ev["consequences"])  # torchrun's agent: ChildFailedError
        self.assertEqual(launchers[0]["end"]["code"], 1)
        # No error of their own; the culprit keeps its proc.killed.
        errors = {(x["id"], x["pid"]) for x in j.report["findings"] if x["severity"] == "error"}
        self.assertEqual(errors, {("dist.first-failure", j.rank_pid(1)), ("proc.killed", j.rank_pid(1))})

    def test_ranks_table_marks_it(self):
        self.assertRegex(self.job.text, rf"\n  1 +\S+ +{self.job.rank_pid(1)} +5 +killed by SIGKILL   <- failed first\n")


class RankRaises(TorchrunJob):
    MODE = "raise"

    def test_first_failure_is_the_rank_that_raised(self):
        j = self.job
        self.assertNotEqual(j.proc.returncode, 0)
        self.assertIn("ValueError: bad sample at step 6", j.proc.stderr)
        f = j.findings("dist.")
        self.assertEqual([x["id"] for x in f], ["dist.first-failure"], j.context())
        ev = f[0]["evidence"]
        self.assertEqual((ev["rank"], ev["pid"], ev["cause"], ev["steps"]), (1, j.rank_pid(1), "exception", 5))
        self.assertEqual(ev["end"], {"kind": "exited", "code": 1, "signal": None})
        # The others lost their peer (gloo: exit 1), or the launcher ended them first
        # (SIGTERM from its pid), whichever came first: either way, consequences.
        ranks = [c for c in ev["consequences"] if c["role"] == "rank"]
        self.assertEqual(sorted(c["rank"] for c in ranks), [0, 2])
        for c in ranks:
            self.assert_consequence_end(c)
        self.assertIn("rank 1 (host " + socket.gethostname() + f", pid {j.rank_pid(1)}) failed first: it raised "
                      "ValueError: bad sample at step 6 (exited 1) after 5 steps", f[0]["summary"])
        # Its exception, message and line, as processes[].exception has them.
        p = next(p for p in j.ranks if p["dist"]["rank"] == 1)
        self.assertEqual((p["exception"]["type"], p["exception"]["message"]), ("ValueError", "bad sample at step 6"))
        self.assertIn(f"ddp_train.py:{marked_line(TRAIN, 'raise')} in main", p["exception"]["python_stack"][0])


if __name__ == "__main__":
    unittest.main()
