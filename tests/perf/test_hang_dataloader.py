"""A job that hangs (issue 28): a real PyTorch DataLoader (Debian's torch 1.13, 2 workers)
reads small files from a FUSE mount (tests/harness/slowfs.py); after 6 steps worker 0
reads a file whose reads never answer, and the main process waits for that batch for
ever. The whole process group is then killed with SIGKILL, as a job time limit or a
person does; the mount's daemon is killed next (only that frees a reader blocked on it),
then the mount is detached.

Under plain LD_PRELOAD and under `colabtrace run`, the report must say proc.hang, name
the worker, the call (read), the file, the mount, and the main process's wait for its
batch at its own line, and give no proc.killed. Under `colabtrace run --hang-timeout`,
run ends the job itself (exit 124) and the report has the Python stack of the main
thread (the `next(it)` of the loop) and of the worker (its dataset's read)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "harness"))

from ctharness import CLI, SHIM, SYSTEM_PYTHON, by_pid, clean_env, findings, read_until, report  # noqa: E402
from perftest import NEXT_BATCH_LINE, TRAIN, make_samples, torch_missing, _line_of  # noqa: E402
from slowfs import FS_TYPE, SlowMount, fuse_unavailable  # noqa: E402

STEPS, BATCH = 12, 4
HUNG_FILE = "s00024.bin"  # batch 6: worker 0's (batches alternate between the 2 workers)
READ_LINE = _line_of(TRAIN, "data = f.read()")
BLOCKED_S = 18  # the main process polls its workers every 5 s: >= 13 s known blocked


class DataLoaderHangTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        why = torch_missing() or fuse_unavailable()
        if why:
            raise unittest.SkipTest(why)
        cls.tmp = tempfile.mkdtemp(prefix="ct-hang-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.data = os.path.join(cls.tmp, "samples")
        make_samples(cls.data, STEPS * BATCH)

    def hang(self, argv_prefix, env, out_dir, kill_after_s=None):
        """Starts the loop over a mount whose HUNG_FILE never answers, waits for step 5,
        then (kill_after_s) SIGKILLs the process group after that long, or waits for the
        command to end by itself. Returns (returncode, stdout, stderr, mount path)."""
        mount = SlowMount(self, self.data, open_ms=0, hang=[HUNG_FILE])
        self.addCleanup(mount.close)
        with mount:
            argv = [*argv_prefix, SYSTEM_PYTHON, TRAIN, "--steps", str(STEPS), "--batch", str(BATCH),
                    "--workers", "2", "--data", mount.path, "--progress"]
            # stderr to a file: a pipe nobody reads until the end could fill and block it.
            err_path = os.path.join(self.tmp, os.path.basename(out_dir) + ".stderr")
            err_file = open(err_path, "w+", encoding="utf-8")
            self.addCleanup(err_file.close)
            p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=err_file, text=True,
                                 start_new_session=True)

            def kill_group():
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

            self.addCleanup(kill_group)
            got, step5 = read_until(p, re.compile(rb"^step 5$", re.M), timeout=120)
            if step5 is None:
                err_file.seek(0)
                self.fail(f"the loop never reached step 5: {got!r} {err_file.read()[-2000:]}")
            if kill_after_s is not None:
                time.sleep(kill_after_s)
                kill_group()
            rc = p.wait(timeout=120)
            # Worker 0 is blocked in the FUSE read (and holds the pipes): only the daemon's
            # death frees it. Then the SIGKILL it got ends it.
            mount.close()
            kill_group()
            out, _ = p.communicate(timeout=60)
            err_file.seek(0)
            err = err_file.read()
            path = mount.path
        return rc, got.decode() + out, err, path

    def check_hang(self, rep: dict, mnt: str, main_pid: int, python_stacks: bool):
        hangs = findings(rep, "proc.hang")
        self.assertEqual(len(hangs), 1, [f["id"] for f in rep["findings"]])
        h = hangs[0]
        self.assertEqual(h["severity"], "error")
        self.assertEqual(h["pid"], main_pid)
        self.assertEqual(findings(rep, "proc.killed"), [])
        ev = h["evidence"]
        self.assertEqual(ev["last_step"], 6)
        procs = {p["pid"]: p for p in ev["processes"]}
        workers = {p["worker_id"]: p for p in ev["processes"] if p["role"] == "dataloader-worker"}
        self.assertEqual(sorted(workers), [0, 1])
        w0, w1 = workers[0], workers[1]
        self.assertEqual(sorted(ev["stuck_pids"]), sorted([main_pid, w0["pid"]]))
        self.assertTrue(w0["stuck"])
        self.assertFalse(w1["stuck"])
        # Worker 0: blocked in read() of the file on the mount, at least 10 s.
        (read,) = [c for c in w0["in_flight"] if c["level"] == 0]
        self.assertEqual((read["call"], read["api"]), ("read", "read"))
        self.assertEqual(read["path"], os.path.join(mnt, HUNG_FILE))
        self.assertEqual((read["mount"], read["fs_type"]), (mnt, FS_TYPE))
        self.assertGreaterEqual(read["blocked_ns"], 10_000_000_000)
        # The main process: waiting for its batch at the loop's own line.
        main = procs[main_pid]
        self.assertEqual(main["role"], "main")
        (wait,) = main["in_flight"]
        self.assertEqual(wait["call"], "batch_wait")
        self.assertEqual(wait["where"], f"train_loop.py:{NEXT_BATCH_LINE} in main")
        self.assertGreaterEqual(wait["blocked_ns"], 10_000_000_000)
        # The chain, in one line.
        self.assertIn(f"the main process (pid {main_pid}) waited ", h["summary"])
        self.assertIn(f"for the next batch at train_loop.py:{NEXT_BATCH_LINE} in main", h["summary"])
        self.assertRegex(h["summary"], re.escape(f"DataLoader worker 0 (pid {w0['pid']}) was blocked ") +
                         r"\d+\.\d s in read\(\) of " + re.escape(os.path.join(mnt, HUNG_FILE) + f" ({FS_TYPE})"))
        # processes[].in_flight agrees with the evidence.
        rows = by_pid(rep)
        self.assertEqual(rows[w0["pid"]]["in_flight"], w0["in_flight"])
        self.assertEqual(rows[w1["pid"]]["in_flight"], [])
        if python_stacks:
            self.assertIn(f"train_loop.py:{NEXT_BATCH_LINE} in main", "\n".join(wait["python_stack"] or []))
            self.assertIn(f"train_loop.py:{READ_LINE} in __getitem__", "\n".join(read["python_stack"] or []))
        return h

    def main_pid(self, rep: dict) -> int:
        (p,) = [p for p in rep["processes"] if p.get("steps")]
        return p["pid"]

    def test_plain_preload_names_the_worker_the_file_and_the_wait(self):
        out = os.path.join(self.tmp, "preload")
        env = clean_env({"LD_PRELOAD": SHIM, "COLABTRACE_OUT": out + "/", "COLABTRACE_PYTHON": "1"})
        rc, _, err, mnt = self.hang([], env, out, kill_after_s=BLOCKED_S)
        self.assertEqual(rc, -signal.SIGKILL, err[-2000:])
        rep = report(out)
        self.check_hang(rep, mnt, self.main_pid(rep), python_stacks=False)

    def test_under_colabtrace_run(self):
        out = os.path.join(self.tmp, "run")
        rc, _, err, mnt = self.hang([CLI, "run", "-o", out, "--"], clean_env(), out, kill_after_s=BLOCKED_S)
        self.assertEqual(rc, -signal.SIGKILL, err[-2000:])
        rep = report(out)
        h = self.check_hang(rep, mnt, self.main_pid(rep), python_stacks=False)
        # run's samples say when the job was killed: every process's end is known.
        self.assertTrue(all(p["stopped_known"] for p in h["evidence"]["processes"]))

    def test_hang_timeout_ends_the_job_with_every_threads_python_stack(self):
        out = os.path.join(self.tmp, "timeout")
        t0 = time.monotonic()
        rc, _, err, mnt = self.hang([CLI, "run", "-o", out, "--hang-timeout", "12", "--"], clean_env(), out)
        self.assertEqual(rc, 124, err[-2000:])
        self.assertLess(time.monotonic() - t0, 90)
        self.assertEqual(len(re.findall(r"no progress for", err)), 1, err[-2000:])
        rep = report(out)
        h = self.check_hang(rep, mnt, self.main_pid(rep), python_stacks=True)
        self.assertEqual(h["evidence"]["ended_by"], "hang-timeout")
        self.assertEqual(h["evidence"]["hang_timeout_ns"], 12_000_000_000)


if __name__ == "__main__":
    unittest.main(verbosity=2)
