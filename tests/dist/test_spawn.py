"""Ranks with no launcher's variables (issue 38, "Ranks"): a DDP job that
torch.multiprocessing.spawn starts, each process calling init_process_group(rank=...,
world_size=2) itself (tests/dist/py/spawn_train.py), under `colabtrace run`. The Python
start-up hook sees that call (a dist_group record), so the two processes are ranks 0 and 1
of one job ("init_process_group@ppid:PID", the process that spawned them, which is their
launcher). Rank 1 raises at step 4 (torch's spawn wrapper catches it, hands the traceback
to the parent and exits 1; the hook records it there, as spawned): dist.first-failure names
it with its exception, and rank 0's end (gloo lost its peer) and the spawning process's
(torch's ProcessRaisedException) are its consequences."""
import os
import shutil
import tempfile
import unittest

import ctharness as h
from test_torchrun import free_port, marked_line, torch_missing

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "py", "spawn_train.py")


class SpawnedRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = torch_missing()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="ct-dist-spawn-")
        out = os.path.join(cls.tmp, "out")
        cls.proc = h.colabtrace_run(out, [h.SYSTEM_PYTHON, TRAIN, str(free_port())], env={"OMP_NUM_THREADS": "1"},
                                    timeout=240)
        cls.report = h.report(out)
        cls.ranks = {p["dist"]["rank"]: p for p in cls.report["processes"]
                     if (p.get("dist") or {}).get("role") == "rank"}

    @classmethod
    def tearDownClass(cls):
        if not os.environ.get("KEEP_TEST_DIRS"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_two_ranks_of_one_job(self):
        self.assertNotEqual(self.proc.returncode, 0)
        self.assertEqual(sorted(self.ranks), [0, 1], self.proc.stderr[-3000:])
        parent = {p["ppid"] for p in self.ranks.values()}
        self.assertEqual(len(parent), 1)
        job = f"init_process_group@ppid:{parent.pop()}"
        for r, p in self.ranks.items():
            self.assertEqual((p["dist"]["rank"], p["dist"]["world_size"], p["dist"]["job"], p["dist"]["launcher"]),
                             (r, 2, job, "init_process_group"))
        self.assertEqual([j["job"] for j in self.report["dist"]["jobs"]], [job])

    def test_the_rank_that_raised_failed_first(self):
        f = [x for x in self.report["findings"] if x["id"].startswith("dist.")]
        self.assertEqual([x["id"] for x in f], ["dist.first-failure"], [x["summary"] for x in f])
        ev = f[0]["evidence"]
        # torch's spawn wrapper catches the worker's exception, hands its traceback to the
        # parent and exits 1: the rank ended on that exception.
        self.assertEqual((ev["rank"], ev["pid"], ev["cause"], ev["steps"]), (1, self.ranks[1]["pid"], "exception", 3))
        self.assertIn(f"rank 1 (host {ev['host']}, pid {self.ranks[1]['pid']}) failed first: it raised "
                      "ValueError: bad sample at step 4 (exited 1) after 3 steps", f[0]["summary"])
        # The rank at fault keeps its own proc.python-exception, as spawned, at its line.
        p = self.ranks[1]
        self.assertEqual((p["exception"]["type"], p["exception"]["message"], p["exception"]["spawned"]),
                         ("ValueError", "bad sample at step 4", True))
        self.assertIn(f"spawn_train.py:{marked_line(TRAIN, 'raise')} in worker", p["exception"]["python_stack"][0])
        own = [x for x in self.report["findings"] if x["id"] == "proc.python-exception" and x["pid"] == p["pid"]]
        self.assertEqual(len(own), 1, [x["summary"] for x in self.report["findings"]])
        self.assertIn("raised in the function torch.multiprocessing.spawn ran", own[0]["summary"])
        # Rank 0 may itself end on gloo's lost peer (RuntimeError, also spawned) before the
        # parent's SIGTERM comes: then that error folds into its consequence, never a finding
        # of its own.
        if "exception" in self.ranks[0]:
            r0 = next(c for c in ev["consequences"] if c["role"] == "rank")
            self.assertEqual([x["id"] for x in r0["folded"]], ["proc.python-exception"])
            self.assertFalse([x for x in self.report["findings"] if x.get("pid") == self.ranks[0]["pid"]])
        self.assertEqual([c["rank"] for c in ev["consequences"] if c["role"] == "rank"], [0])
        # The spawning process re-raises it (ProcessRaisedException, with the worker's
        # traceback in its message): the launcher's failure, folded in.
        launchers = [c for c in ev["consequences"] if c["role"] == "launcher"]
        self.assertEqual(len(launchers), 1)
        self.assertEqual(launchers[0]["end"]["code"], 1)
        folded = launchers[0]["folded"]
        self.assertEqual([x["id"] for x in folded], ["proc.python-exception"])
        self.assertIn("ProcessRaisedException", folded[0]["summary"])

if __name__ == "__main__":
    unittest.main()
