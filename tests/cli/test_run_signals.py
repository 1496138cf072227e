"""Signals sent to `colabtrace run` itself (a real CPython job under the real CLI).

- SIGTERM/SIGHUP/SIGUSR1/SIGUSR2 sent to run from outside its process group reach the
  job, once; run waits for the job to end, records it and exits with its status
  (`docker stop` signals PID 1 only, and `kill PID` from another terminal meant the job).
  Before, run died and left the job running, orphaned.
- Sent to the whole process group by a process of that group (what `timeout` does), the
  job gets it once, and run ends by it as before: it does not pass on what the job
  received already.
- Ctrl-C's SIGINT (the terminal signals the foreground group) is left to the job; run
  stays to summarize."""
import json
import os
import signal
import subprocess
import time
import unittest

import ctharness as h

# Counts the signals it gets; the first SIGTERM ends it with 7 after 0.3 s (more would
# be counted meanwhile), SIGUSR1 is counted and goes on.
JOB = r"""
import os, signal, sys, time
got = []
def on(sig, frame):
    got.append(signal.Signals(sig).name)
    if sig == signal.SIGTERM:
        time.sleep(0.3)
        print("got", " ".join(got), flush=True)
        sys.exit(7)
signal.signal(signal.SIGTERM, on)
signal.signal(signal.SIGUSR1, on)
print("ready", os.getpid(), flush=True)
time.sleep(30)
print("not signalled", flush=True)
"""


class RunSignalsTest(h.TempDirTest):
    def start(self, **popen):
        out = os.path.join(self.tmp, "run")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        p = subprocess.Popen([h.CLI, "run", "-o", out, "--", h.SYSTEM_PYTHON, "-c", JOB], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)
        line = p.stdout.readline()
        self.assertTrue(line.startswith("ready "), line + p.stderr.read() if not line else line)
        return p, out, int(line.split()[1])

    def finish(self, p):
        try:
            stdout, stderr = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            raise
        return stdout, stderr

    def job_end(self, out, job_pid):
        rep = h.report(out)
        (proc,) = [q for q in rep["processes"] if q["pid"] == job_pid]
        return proc["end"]

    def test_sigterm_to_run_alone_reaches_the_job_once_and_run_waits(self):
        p, out, job = self.start(process_group=0)  # this test is outside its group
        os.kill(p.pid, signal.SIGUSR1)
        time.sleep(0.2)
        os.kill(p.pid, signal.SIGTERM)
        stdout, stderr = self.finish(p)
        self.assertEqual(p.returncode, 7, stderr)
        self.assertEqual(stdout, "got SIGUSR1 SIGTERM\n")
        self.assertIn("colabtrace: full report:", stderr)
        end = self.job_end(out, job)
        self.assertEqual((end["kind"], end["code"], end["reaped_by"]), ("exited", 7, p.pid))

    def test_a_group_signal_from_inside_the_group_is_not_passed_on_again(self):
        # run in a process group of its own, as `timeout` puts it; a process of that group
        # signals the whole group: the job gets SIGTERM once, from the group signal, and
        # run ends by it. The job's output (it holds run's stdout) ends when it does.
        # The sender ignores the signal and stays a moment: run tells where a signal came
        # from by the sender's process group, which it can no longer read once a sender
        # that died of its own group signal has been reaped (a loaded machine runs run's
        # handler late).
        p, out, job = self.start(process_group=0)
        sender = subprocess.run([h.SYSTEM_PYTHON, "-c",
                                 f"import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                                 f"os.setpgid(0, {p.pid}); os.killpg({p.pid}, signal.SIGTERM); time.sleep(2)"],
                                capture_output=True, text=True, timeout=30)
        self.assertEqual(sender.returncode, 0, sender.stderr)
        stdout, stderr = self.finish(p)
        self.assertEqual(p.returncode, -signal.SIGTERM, stderr)
        self.assertEqual(stdout, "got SIGTERM\n")

    def test_sigint_is_left_to_the_job_and_run_stays(self):
        # The terminal's Ctrl-C: SIGINT to the whole group. The job (CPython's default
        # handler) ends with KeyboardInterrupt; run, ignoring it, summarizes.
        p, out, job = self.start(process_group=0)
        os.killpg(p.pid, signal.SIGINT)
        stdout, stderr = self.finish(p)
        # CPython ends an uncaught KeyboardInterrupt by SIGINT; run exits 128+2.
        self.assertEqual(p.returncode, 128 + signal.SIGINT, stderr)
        self.assertIn("KeyboardInterrupt", stderr)
        self.assertIn("colabtrace: full report:", stderr)
        end = self.job_end(out, job)
        self.assertEqual((end["kind"], end["signal"]), ("signaled", signal.SIGINT))


if __name__ == "__main__":
    unittest.main()
