"""Multi-rank jobs across hosts (issue 38, "Hosts"): one torchrun job of 2 nodes x 2 ranks
on this machine, each node's agent under `unshare --uts` with a host name of its own
(nodea, nodeb) and `colabtrace run` writing into a folder of its own, as two hosts would.
The rendezvous is torchrun's static one on 127.0.0.1 (the nodes' names resolve nowhere;
all traffic stays on the loopback). Global rank 3 (nodeb's second) SIGKILLs itself at
step 6 (tests/dist/py/ddp_train.py "kill", CT_FAIL_RANK=3).
- Both folders in one `colabtrace report`: one job of 4 ranks on 2 hosts, ordered by wall
  time refined by the collectives both hosts left together; dist.first-failure names rank 3 with its host, and the 3 others (and both agents)
  are its consequences; processes[] and findings[] carry their host.
- nodeb's folder left out: ranks 2 and 3 are missing, which the report states; no rank
  with a trace is blamed (the missing ones may have failed first): ranks 0 and 1 waited
  in a collective that ranks 2 and 3 never entered as far as the traces show, and
  dist.hang names them as missing."""
import os
import shutil
import subprocess
import tempfile
import unittest

import ctharness as h
from test_torchrun import TORCHRUN, TRAIN, free_port, torch_missing

HOSTS = ("nodea", "nodeb")


def unshare_missing() -> str:
    p = subprocess.run(["unshare", "--uts", "hostname", "ct-probe"], capture_output=True, text=True)
    return "" if p.returncode == 0 else "unshare --uts is not permitted here: " + p.stderr.strip()


class TwoHosts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = torch_missing() or unshare_missing()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="ct-dist-hosts-")
        port = free_port()
        cls.job = f"ct-hosts@127.0.0.1:{port}"
        env = h.clean_env({"OMP_NUM_THREADS": "1", "CT_FAIL_RANK": "3"})
        cls.dirs, procs = [], []
        for node, host in enumerate(HOSTS):
            out = os.path.join(cls.tmp, host)
            cls.dirs.append(out)
            # Debian's torchrun 1.13 on Python 3.11 needs --redirects/--tee (its Std enum).
            torchrun = [TORCHRUN, "--nnodes", "2", "--node_rank", str(node), "--nproc_per_node", "2",
                        "--redirects", "2", "--tee", "2", "--master_addr", "127.0.0.1", "--master_port", str(port),
                        "--rdzv_id", "ct-hosts", TRAIN, "kill"]
            script = 'hostname "$1" && shift && exec "$@"'
            procs.append(subprocess.Popen(["unshare", "--uts", "sh", "-c", script, "sh", host, h.CLI, "run", "-o", out,
                                           "--", *torchrun], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        cls.output = [p.communicate(timeout=240)[0] for p in procs]
        cls.codes = [p.returncode for p in procs]
        cls.both = h.report(*cls.dirs)
        cls.one = h.report(cls.dirs[0])

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def ranks(self, report) -> dict:
        return {p["dist"]["rank"]: p for p in report["processes"]
                if (p.get("dist") or {}).get("role") == "rank"}

    def test_one_job_on_two_hosts(self):
        self.assertEqual(self.codes, [1, 1], self.output)
        ranks = self.ranks(self.both)
        self.assertEqual({r: (p["dist"]["host"], p["dist"]["job"], p["dist"]["local_rank"]) for r, p in ranks.items()},
                         {0: ("nodea", self.job, 0), 1: ("nodea", self.job, 1),
                          2: ("nodeb", self.job, 0), 3: ("nodeb", self.job, 1)})
        jobs = self.both["dist"]["jobs"]
        self.assertEqual(len(jobs), 1, jobs)
        self.assertEqual((jobs[0]["hosts"], jobs[0]["missing_ranks"], jobs[0]["problems"]), (list(HOSTS), [], []))
        # Wall time first, then refined by the all-reduces both hosts' ranks left together
        # (here one machine's clock: the spread is the loopback's and the scheduler's).
        self.assertEqual(jobs[0]["clock"], "collectives")
        self.assertGreaterEqual(jobs[0]["clock_uncertainty_ns"], 1_000_000)
        self.assertLess(jobs[0]["clock_uncertainty_ns"], 100_000_000)
        # pids repeat across hosts in general: every process says which host it ran on.
        for p in self.both["processes"]:
            self.assertIn(p["host"]["hostname"], HOSTS, p["pid"])

    def test_the_culprit_is_named_with_its_host(self):
        f = [x for x in self.both["findings"] if x["id"] == "dist.first-failure"]
        self.assertEqual(len(f), 1, [x["id"] for x in self.both["findings"]])
        ev = f[0]["evidence"]
        rank3 = self.ranks(self.both)[3]["pid"]
        self.assertEqual((ev["rank"], ev["host"], ev["pid"], ev["cause"], ev["steps"]),
                         (3, "nodeb", rank3, "killed", 5))
        self.assertEqual(f[0]["host"]["hostname"], "nodeb")
        self.assertEqual(sorted((c["rank"], c["host"]) for c in ev["consequences"] if c["role"] == "rank"),
                         [(0, "nodea"), (1, "nodea"), (2, "nodeb")])
        self.assertEqual(sorted(c["host"] for c in ev["consequences"] if c["role"] == "launcher"), list(HOSTS))
        self.assertIn(f"rank 3 (host nodeb, pid {rank3}) failed first", f[0]["summary"])

    def test_a_host_left_out_is_stated_and_no_present_rank_blamed(self):
        job = self.one["dist"]["jobs"][0]
        self.assertEqual((sorted(self.ranks(self.one)), job["missing_ranks"]), ([0, 1], [2, 3]))
        self.assertEqual(len(job["problems"]), 1, job["problems"])
        self.assertIn("2 and 3", job["problems"][0])
        self.assertIsNone(job["first_failure_rank"])
        # Ranks 0 and 1 both gave up waiting in step 6's all-reduce: the ranks that never
        # entered it are among the missing, and the verdict names them as missing.
        f = [x for x in self.one["findings"] if x["id"].startswith("dist.")]
        self.assertEqual([x["id"] for x in f], ["dist.hang"])
        ev = f[0]["evidence"]
        self.assertEqual((ev["rank"], ev["ranks"], ev["missing_ranks"], ev["pid"], ev["blocked_in"]["state"]),
                         (2, [2, 3], [2, 3], None, "missing"))
        self.assertEqual(sorted((w["rank"], w["raised"]) for w in ev["waiting"]), [(0, True), (1, True)])
        self.assertRegex(f[0]["summary"], r"^ranks 2 and 3 never entered DDP's gradient all-reduce #\d+ in backward\(\) "
                                          r"at ddp_train\.py:\d+ in main: none of them has a trace \(its host's folder "
                                          r"is missing, or it was never traced\); ranks 0 and 1 waited in it up to ")

if __name__ == "__main__":
    unittest.main()
