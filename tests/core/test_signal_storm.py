"""A storm of signals landing at random instants in a traced program whose loop and
whose signal handler both make hooked calls: a handler may interrupt the shim in the
middle of a record. ThreadSanitizer delays asynchronous signals to safe points, so this
is tested for real: thousands of signals, and the trace must read whole, with the main
loop's calls counted exactly."""
import os
import random
import signal
import subprocess
import time

from coretest import prog, report, shim_env
from ctharness import TempDirTest

LOOPS = 400000


class SignalStormTest(TempDirTest):
    def storm(self, extra_env, signals=3000):
        main_file = os.path.join(self.tmp, "main.txt")
        handler_file = os.path.join(self.tmp, "handler.txt")
        for path in (main_file, handler_file):
            with open(path, "w") as f:
                f.write("x" * 100)
        out = os.path.join(self.tmp, "traces")
        os.mkdir(out)
        p = subprocess.Popen([prog("ct_signal_storm"), str(LOOPS), main_file, handler_file],
                             env=shim_env(out, extra_env), stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(p.stdout.readline(), "ready\n")
            rng = random.Random(1234)
            sent = 0
            while sent < signals and p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGUSR1)
                except ProcessLookupError:
                    break
                sent += 1
                time.sleep(rng.uniform(0, 0.0004))
            rest, _ = p.communicate(timeout=120)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0)
        main, handled = (int(w.split("=")[1]) for w in rest.split())
        self.assertEqual(main, LOOPS)
        self.assertGreater(handled, 1000, "the storm did not land: the test proves nothing")
        rep = report(out)
        self.assertEqual(rep.get("warnings", []), [])
        (proc,) = rep["processes"]
        self.assertFalse(proc["trace_truncated"])
        self.assertEqual((proc["end"]["kind"], proc["end"]["code"]), ("exited", 0))
        files = {f["path"]: f for f in rep["io"]["files"]}
        m = files[main_file]
        # The loop's calls exactly, however many signals interrupted them.
        self.assertEqual((m["stats"], m["opens"], m["reads"]), (LOOPS, LOOPS, LOOPS))
        # The handler's own calls: recorded when they did not interrupt the shim itself
        # (then they pass through), never more than it made.
        h = files.get(handler_file, {"opens": 0, "reads": 0})
        self.assertLessEqual(h["opens"], handled)
        self.assertGreater(h["opens"], 0)
        self.assertEqual(h["reads"], h["opens"])

    def test_signals_at_random_instants_leave_a_whole_trace(self):
        self.storm({})

    def test_with_a_periodic_sample_due_at_every_call(self):
        # COLABTRACE_SAMPLE_MS=1: samples fall due all the time, and signals land in them.
        self.storm({"COLABTRACE_SAMPLE_MS": "1"})
