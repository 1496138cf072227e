"""NCCL jobs on the simulated libnccl.so.2 (issue 38, "Collectives: NCCL"): tests/nccl/nccl_job.c
started as 3 ranks (with torchrun's variables) by its own launcher, under `colabtrace run`.
- healthy: 5 steps of one all-reduce on the world communicator; a split by parity with one
  broadcast per step; a grouped send/recv ring. Every rank's calls and counts, and every
  communicator's id (NCCL's commHash, recomputed here from the unique id the ranks shared:
  an implementation of NCCL's src/include/bitops.h independent of the shim's), alike on
  every rank; no dist.* finding;
- skip: rank 1 skips the all-reduce of step 3 and blocks in open() of a FIFO; the others wait
  in their stream synchronisation until `colabtrace run --hang-timeout 2` ends the job:
  dist.hang names rank 1 and all-reduce #3 of the world communicator; under plain
  LD_PRELOAD with every process SIGKILLed, the traces still give each rank's collective and
  call, and rank 1 as the culprit;
- bcast: rank 2 broadcasts where the others all-reduce (collective #2):
  dist.collective-mismatch names rank 2;
- abort: rank 1 aborts the communicator; the others' ncclCommGetAsyncError reports the remote
  error (recorded once), then they abort too;
- shrink: rank 1 exits 3 after the world communicator is made; the others revoke it (an
  all-reduce on it is then refused), shrink it excluding rank 1 (the child's id as NCCL 2.28
  names it, alike on both survivors) and make their steps on the child; dist.first-failure
  names rank 1.
Each job runs once per class (setUpClass), in a folder of its own."""
import glob
import os
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest

import ctharness as h

SIMCUDA_DIR = os.path.join(h.BUILD, "simcuda")
JOB = h.test_bin("nccl", "nccl_job")
M64 = (1 << 64) - 1


def eat_hash(acc, data: bytes):
    """NCCL's eatHash (src/include/bitops.h), in Python."""
    acc[0] ^= len(data)
    for i in range(0, len(data), 8):
        acc[0] = (acc[0] + acc[1]) & M64
        acc[1] ^= acc[0]
        acc[0] ^= acc[0] >> 31
        acc[0] = (acc[0] * 0x9DE62BBC8CEF3CE3) & M64
        acc[1] ^= acc[1] >> 32
        acc[1] = (acc[1] * 0x485CD6311B599E79) & M64
        acc[0] = (acc[0] + int.from_bytes(data[i:i + 8].ljust(8, b"\0"), "little")) & M64


def digest_hash(acc) -> int:
    x = acc[0]
    x ^= x >> 31
    x = (x * 0xBAC3BD562846DE6B) & M64
    x = (x + acc[1]) & M64
    x ^= x >> 32
    return (x * 0x995A187A14E7B445) & M64


def fields(rec: dict, *names) -> tuple:
    """A dumped record's fields as integers (decimal or 0x hex)."""
    return tuple(int(rec[n], 0) for n in names)


def id_hash(uid: bytes) -> int:
    acc = [1, 1]
    eat_hash(acc, uid)
    return digest_hash(acc)


def split_hash(parent: int, split: int, color: int) -> int:
    acc = [1, 1]
    eat_hash(acc, struct.pack("<Q", parent))
    eat_hash(acc, struct.pack("<i", split))
    eat_hash(acc, struct.pack("<i", color))
    return digest_hash(acc)


class NcclJob(unittest.TestCase):
    MODE: list = []
    RUN_ARGS: tuple = ()

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ct-nccl-")
        cls.out = os.path.join(cls.tmp, "out")
        cls.env = {"LD_LIBRARY_PATH": SIMCUDA_DIR, "TMPDIR": cls.tmp, "SIMNCCL_DIR": cls.tmp}
        cls.launch()
        cls.report = h.report(cls.out)
        ids = glob.glob(os.path.join(cls.tmp, "nccl-job-*.id"))
        cls.uid = b""
        if len(ids) == 1:
            with open(ids[0], "rb") as f:
                cls.uid = f.read()
        cls.ranks = sorted((p for p in cls.report["processes"] if (p.get("dist") or {}).get("role") == "rank"),
                           key=lambda p: p["dist"]["rank"])
        cls.traces = {}
        for t in glob.glob(os.path.join(cls.out, "colabtrace.nccl_job.*.ctrace")):
            pid = int(t.rsplit(".", 2)[1])
            for p in cls.ranks:
                if p["pid"] == pid:
                    cls.traces[p["dist"]["rank"]] = t

    @classmethod
    def launch(cls):
        """The job under `colabtrace run`."""
        cls.proc = subprocess.run([h.CLI, "run", "-o", cls.out, *cls.RUN_ARGS, "--", JOB, "3", *cls.MODE],
                                  env=h.clean_env(cls.env), capture_output=True, text=True, timeout=60)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def rank_pid(self, rank: int) -> int:
        return next(p["pid"] for p in self.ranks if p["dist"]["rank"] == rank)

    def dist_findings(self, fid=None) -> list[dict]:
        return [f for f in self.report["findings"] if f["id"].startswith(fid or "dist.")]

    def world(self) -> int:
        return id_hash(self.uid)


class Healthy(NcclJob):
    MODE = ["healthy"]

    def test_job_succeeds_without_dist_findings(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-3000:])
        self.assertEqual([p["dist"]["rank"] for p in self.ranks], [0, 1, 2])
        self.assertEqual(self.dist_findings(), [])
        self.assertEqual(len(self.uid), 128)

    def test_communicators_are_named_alike_on_every_rank(self):
        world = self.world()
        half = {0: split_hash(world, 1, 0), 1: split_hash(world, 1, 1)}
        self.assertNotEqual(half[0], half[1])
        for rank in range(3):
            comms = h.records(self.traces[rank], "nccl_comm")
            got = [fields(c, "event", "comm", "parent", "nranks", "rank", "color", "split", "rc") for c in comms]
            child_rank = {0: 1, 1: 0, 2: 0}[rank]  # keys -rank: the child's ranks run backwards
            self.assertEqual(got, [
                (1, world, 0, 3, rank, 0, 0, 0),                                  # ncclCommInitRank
                (5, half[rank % 2], world, 2 if rank % 2 == 0 else 1, child_rank, rank % 2, 1, 0),  # split
                (7, half[rank % 2], world, 2 if rank % 2 == 0 else 1, child_rank, 0, 0, 0),   # destroy
                (7, world, 0, 3, rank, 0, 0, 0),
            ], rank)

    def test_each_rank_calls_and_counts(self):
        world = self.world()
        for rank in range(3):
            half = split_hash(world, 1, rank % 2)
            calls = h.records(self.traces[rank], "nccl_call")
            got = [fields(c, "n", "op", "comm", "seq", "count", "dtype", "peer", "group", "rc") for c in calls]
            want = []
            for step in range(1, 6):
                want.append((2 * step - 1, 1, world, step, 1024, 7, -1, 0, 0))  # all_reduce float32
                want.append((2 * step, 2, half, step, 16, 2, 0, 0, 0))          # broadcast int32, root 0
            want.append((11, 10, world, 0, 64, 1, (rank + 1) % 3, 1, 0))       # send, in a group
            want.append((12, 11, world, 0, 64, 1, (rank + 2) % 3, 1, 0))       # recv
            self.assertEqual(got, want, rank)
            states = sorted(fields(s, "comm", "colls", "p2p", "state", "splits")
                            for s in h.records(self.traces[rank], "nccl_comm_state"))
            self.assertEqual(states, sorted([(world, 5, 2, 3, 1), (half, 5, 0, 3, 0)]), rank)


class RankSkipsAnAllReduce(NcclJob):
    MODE = ["skip", "1"]
    RUN_ARGS = ("--hang-timeout", "2")

    def test_hang_names_the_rank_and_the_sequence_number(self):
        self.assertNotEqual(self.proc.returncode, 0)
        self.assertEqual(self.dist_findings("dist.first-failure"), [])
        f = self.dist_findings("dist.hang")
        self.assertEqual(len(f), 1, [x["id"] for x in self.report["findings"]])
        ev = f[0]["evidence"]
        self.assertEqual((f[0]["pid"], ev["rank"], ev["ranks"], ev["missing_ranks"]), (self.rank_pid(1), 1, [1], []))
        c = ev["collective"]
        self.assertEqual((c["op"], c["seq"], c["comm"], c["count"], c["dtype"]),
                         ("all_reduce", 3, f"nccl comm 0x{self.world():016x}", 1024, "float32"))
        self.assertEqual(sorted((w["rank"], w["pid"], w["op"], w["seq"], w["raised"]) for w in ev["waiting"]),
                         [(0, self.rank_pid(0), "all_reduce", 3, False), (2, self.rank_pid(2), "all_reduce", 3, False)])
        for w in ev["waiting"]:
            self.assertGreaterEqual(w["waited_ns"], 2 * 10**9)
        self.assertEqual(ev["blocked_in"]["steps"], 2)
        self.assertRegex(f[0]["summary"], rf"^rank 1 \(host [^,]+, pid {self.rank_pid(1)}\) never entered all_reduce #3")


class RankSkipsAnAllReduceAndAllAreKilled(NcclJob):
    """The same job under plain LD_PRELOAD, every process SIGKILLed once rank 1 has sat in its
    open() for 3 s: the NCCL chunks and the notes the traces keep still say which collective
    the others waited in and where rank 1 was. With no `colabtrace run` to say how long it sat
    there (the shim samples nothing while a process makes no call), the job model may read
    rank 1's end as a hang or as the first failure; either way it names rank 1, never another."""
    MODE = ["skip", "1"]

    @classmethod
    def launch(cls):
        env = h.clean_env({**cls.env, "LD_PRELOAD": h.SHIM, "COLABTRACE_OUT": cls.out + "/"})
        os.makedirs(cls.out)
        p = subprocess.Popen([JOB, "3", *cls.MODE], env=env, start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 20
            while not glob.glob(os.path.join(cls.tmp, "*.fifo")) and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(3)
        finally:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        cls.proc = p

    def test_what_each_rank_was_in_survives_the_kill(self):
        self.assertEqual(self.proc.returncode, -signal.SIGKILL)
        ranks = {r["rank"]: r for r in self.report["dist"]["jobs"][0]["ranks"]}
        self.assertEqual(sorted(ranks), [0, 1, 2])
        for r in (0, 2):
            w = ranks[r]["waiting"]
            self.assertEqual((w["op"], w["seq"], w["raised"]), ("all_reduce", 3, False), r)
        self.assertIsNone(ranks[1]["waiting"])
        rank1 = next(p for p in self.report["processes"] if p["pid"] == self.rank_pid(1))
        self.assertEqual([(c["call"], c["path"]) for c in rank1["in_flight"]],
                         [("open", glob.glob(os.path.join(self.tmp, "*.fifo"))[0])])

    def test_rank_1_is_the_culprit(self):
        culprits = [(f["id"], f["evidence"]["rank"]) for f in self.dist_findings()
                    if f["id"] in ("dist.hang", "dist.first-failure")]
        self.assertIn(culprits, ([("dist.hang", 1)], [("dist.first-failure", 1)]))
        for f in self.dist_findings("dist.hang"):
            self.assertEqual((f["evidence"]["collective"]["seq"], f["evidence"]["collective"]["comm"]),
                             (3, f"nccl comm 0x{self.world():016x}"))


class RankBroadcastsWhereOthersAllReduce(NcclJob):
    MODE = ["bcast", "2"]

    def test_mismatch_names_the_odd_rank(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-3000:])
        f = self.dist_findings("dist.collective-mismatch")
        self.assertEqual(len(f), 1, [x["id"] for x in self.report["findings"]])
        ev = f[0]["evidence"]
        self.assertEqual((f[0]["pid"], ev["rank"], ev["ranks"], ev["seq"], ev["comm"]),
                         (self.rank_pid(2), 2, [2], 2, f"nccl comm 0x{self.world():016x}"))
        self.assertEqual([(c["rank"], c["op"], c["count"], c["dtype"]) for c in ev["calls"]],
                         [(0, "all_reduce", 1024, "float32"), (1, "all_reduce", 1024, "float32"),
                          (2, "broadcast", 1024, "float32")])
        self.assertEqual([x["id"] for x in self.dist_findings()], ["dist.collective-mismatch"])


class RankAbortsTheCommunicator(NcclJob):
    MODE = ["abort", "1"]

    def test_abort_and_the_others_async_error(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr[-3000:])
        world = self.world()
        for rank in range(3):
            got = [fields(c, "event", "comm", "nranks", "rank", "rc")
                   for c in h.records(self.traces[rank], "nccl_comm")]
            # 9: ncclCommGetAsyncError's first error, ncclRemoteError (6), recorded once
            # however often it was polled; 8: the abort.
            middle = [] if rank == 1 else [(9, world, 3, rank, 6)]
            self.assertEqual(got, [(1, world, 3, rank, 0), *middle, (8, world, 3, rank, 0)], rank)
            self.assertEqual([fields(s, "comm", "colls", "state") for s in h.records(self.traces[rank], "nccl_comm_state")],
                             [(world, 0, 4)], rank)
        self.assertEqual(self.dist_findings(), [])



class LostRankShrunkAway(NcclJob):
    MODE = ["shrink", "1"]

    def test_revoke_and_shrink_name_the_child_alike(self):
        world = self.world()
        small = split_hash(world, 0, 0)  # NCCL 2.28: a shrink is a split with count 0, color 0
        self.assertNotIn(small, (split_hash(world, 1, 0), world))
        for rank in (0, 2):
            got = [fields(c, "event", "comm", "parent", "nranks", "rank", "color", "split", "rc")
                   for c in h.records(self.traces[rank], "nccl_comm")]
            child_rank = {0: 0, 2: 1}[rank]
            self.assertEqual(got, [
                (1, world, 0, 3, rank, 0, 0, 0),                 # ncclCommInitRank
                (11, world, 0, 3, rank, 0, 0, 0),                # ncclCommRevoke
                (10, small, world, 2, child_rank, 0, 0, 0),      # ncclCommShrink, excluding rank 1
                (7, small, world, 2, child_rank, 0, 0, 0),       # destroy
                (7, world, 0, 3, rank, 0, 0, 0),
            ], rank)
            calls = [fields(c, "n", "op", "comm", "seq", "count", "rc") for c in h.records(self.traces[rank], "nccl_call")]
            # The all-reduce on the revoked communicator: refused (ncclInvalidUsage, 5), so it
            # takes no sequence number; then the steps on the child, numbered from 1.
            self.assertEqual(calls, [(1, 1, world, 0, 1024, 5)] + [(1 + s, 1, small, s, 1024, 0) for s in range(1, 6)], rank)
            states = sorted(fields(s, "comm", "colls", "state", "splits") for s in h.records(self.traces[rank], "nccl_comm_state"))
            self.assertEqual(states, sorted([(world, 0, 3, 0), (small, 5, 3, 0)]), rank)
        self.assertEqual([fields(c, "event", "comm", "nranks", "rank") for c in h.records(self.traces[1], "nccl_comm")],
                         [(1, world, 3, 1)])

    def test_the_lost_rank_failed_first(self):
        self.assertEqual(self.proc.returncode, 1)
        got = [(f["id"], f["severity"]) for f in self.report["findings"] if f["severity"] != "info"]
        self.assertEqual(got, [("dist.first-failure", "error")])
        self.assertIn("rank 1 ", self.dist_findings("dist.first-failure")[0]["summary"])
        self.assertIn("exited 3", self.dist_findings("dist.first-failure")[0]["summary"])


if __name__ == "__main__":
    unittest.main()
