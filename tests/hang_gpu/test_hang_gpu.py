"""A kernel that never finishes (issue 28): a C program against the simulated CUDA runtime
and driver (tests/simcuda) launches `warm` on a stream s and synchronises s (that completes),
then `fill`, `scale` and `spin` on s, prints "blocked", and calls cudaDeviceSynchronize. With
SIMCUDA_HANG_KERNEL=spin that call never returns: the test lets it sit 12 s (proc.hang needs a
call blocked at least 10 s), then SIGKILLs the job.

- Under `colabtrace run`, with the job SIGKILLed (run records its end) or the whole process
  group, run included: the report's processes[].in_flight names cudaDeviceSynchronize
  (gpu_sync, device-wide) and the kernels still in flight since the last completed
  synchronisation, newest first (spin, scale, fill; not warm), and proc.hang (error) says the
  job was killed while stuck, with no proc.killed for it.
- Under plain LD_PRELOAD: the same in_flight entry (nothing outside the process saw the kill,
  so the report cannot tell how long the call blocked; proc.hang is not asserted).
- Without SIMCUDA_HANG_KERNEL the same program ends 0, nothing is in flight, no proc.hang.
- The same from Python (tests/gpu/py/kernel_stacks.py, on every CPython with a frame layout):
  each kernel in flight carries its whole Python stack, read from the ring the SIGKILL left
  in the trace, and names the program's own line first.

Every process a test starts is SIGKILLed with its process group in cleanup."""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import ctharness as h
from pykernels import KERNEL_STACKS, distinct_pythons, kernel_stacks_expected

PROG_NAME = "gpu_hang"
PROG = h.test_bin("hang_gpu", PROG_NAME)
SIMCUDA_DIR = os.path.join(h.BUILD, "simcuda")
HANG = {"SIMCUDA_HANG_KERNEL": "spin"}
BLOCKED_S = 12  # proc.hang's floor is 10 s blocked in one call
BLOCKED = re.compile(rb"^blocked pid=(\d+) stream=(0x[0-9a-f]+)$", re.M)


def sim_env(extra: dict | None = None) -> dict:
    """The simulated CUDA libraries first on the library path, no SIMCUDA_* but `extra`."""
    e = {k: "" for k in os.environ if k.startswith("SIMCUDA_")}
    e["LD_LIBRARY_PATH"] = SIMCUDA_DIR
    e.update(extra or {})
    return e


@unittest.skipUnless(os.path.exists(PROG), f"{PROG_NAME} was not built (no simulated CUDA)")
class KernelThatNeverFinishes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ct-hang-gpu-")
        if not os.environ.get("KEEP_TEST_DIRS"):
            self.addCleanup(shutil.rmtree, self.tmp, True)
        self.out = os.path.join(self.tmp, "traces")

    # ---- processes -------------------------------------------------------------------
    def start(self, argv, env) -> subprocess.Popen:
        """Starts argv in a session (and process group) of its own, killed with its whole
        group in cleanup whatever happens."""
        p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             start_new_session=True)
        self.addCleanup(self.kill_group, p)
        return p

    @staticmethod
    def kill_group(p: subprocess.Popen):
        h.kill_process_group(p)

    @staticmethod
    def kill_pid(pid: int):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait_blocked(self, p: subprocess.Popen, timeout: float = 60) -> tuple[int, int]:
        """Reads p's stdout until the program's "blocked" line; returns its pid and stream."""
        got, m = h.read_until(p, BLOCKED, timeout)
        if m is None:  # timed out, or the program ended without blocking
            self.kill_group(p)
            self.fail(f"no 'blocked' line: stdout {got!r}, exit {p.returncode}, "
                      f"stderr {p.stderr.read()[-2000:] if p.stderr else b''!r}")
        return int(m.group(1)), int(m.group(2), 16)

    def sit_blocked(self, p: subprocess.Popen, pid: int):
        """Lets the program sit in its synchronisation BLOCKED_S seconds; it must still be
        there (alive, not exited: the call did not return)."""
        time.sleep(BLOCKED_S)
        self.assertIsNone(p.poll(), "the program ended while its kernel hung")
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        self.assertEqual(state, "S", "the blocked program should sleep, not spin")

    # ---- the report ------------------------------------------------------------------
    def process(self, rep: dict, pid: int) -> dict:
        rows = h.by_pid(rep)
        self.assertIn(pid, rows, sorted(rows))
        return rows[pid]

    def assert_in_flight(self, proc: dict, pid: int, stream: int, read_from_outside: bool = False):
        """proc's one call in flight: cudaDeviceSynchronize, with the kernels launched on
        stream since its last completed synchronisation, newest first. read_from_outside:
        `colabtrace run --hang-timeout` read the thread (its comm) before it ended the job."""
        self.assertEqual(len(proc["in_flight"]), 1, proc["in_flight"])
        (call,) = proc["in_flight"]
        self.assertEqual((call["tid"], call["call"], call["api"], call["level"], call["device_wide"]),
                         (pid, "gpu_sync", "cudaDeviceSynchronize", 0, True), call)
        self.assertEqual(call["stream"], "0x0", call)  # device-wide: no stream of its own
        for none in ("path", "fd", "mount", "fs_type", "python_stack"):
            self.assertIsNone(call[none], (none, call))
        self.assertEqual(call["comm"], PROG_NAME if read_from_outside else None, call)
        kernels = call["kernels"]
        self.assertEqual([k["kernel"] for k in kernels], ["spin", "scale", "fill"], kernels)
        for k in kernels:
            self.assertEqual((k["library"], k["api"], k["python_line"], k["grid"], k["block"], k["tid"]),
                             (PROG_NAME, "cudaLaunchKernel", None, [4, 1, 1], [128, 1, 1], pid), k)
            self.assertEqual(int(k["stream"], 16), stream, k)
        return call

    # ---- tests -----------------------------------------------------------------------
    def test_colabtrace_run_job_killed(self):
        # Someone kills the stuck job; run stays to record its end and summarise.
        self.check_colabtrace_run(kill_whole_group=False)

    def test_colabtrace_run_whole_group_killed(self):
        # The whole process group, run included, is SIGKILLed (a runtime or time limit that
        # ends everything): the traces as they are tell the same.
        self.check_colabtrace_run(kill_whole_group=True)

    def check_colabtrace_run(self, kill_whole_group: bool):
        p = self.start([h.CLI, "run", "-o", self.out, "--", PROG], h.clean_env(sim_env(HANG)))
        pid, stream = self.wait_blocked(p)
        self.addCleanup(self.kill_pid, pid)  # should run ever put the job in a group of its own
        self.assertEqual(os.getpgid(pid), p.pid)  # the job is in run's process group
        self.sit_blocked(p, pid)
        if kill_whole_group:
            os.killpg(p.pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        _, stderr = p.communicate(timeout=120)
        self.assertEqual(p.returncode, -signal.SIGKILL if kill_whole_group else 128 + signal.SIGKILL,
                         stderr.decode(errors="replace"))

        rep = h.report(self.out)
        proc = self.process(rep, pid)
        call = self.assert_in_flight(proc, pid, stream)
        self.assertGreaterEqual(call["blocked_ns"], 10_000_000_000, call)  # it sat BLOCKED_S s
        self.assertEqual(proc["end"]["kind"], "killed", proc["end"])

        hangs = h.findings(rep, "proc.hang")
        self.assertEqual(len(hangs), 1, [f["id"] for f in rep["findings"]])
        hang = hangs[0]
        self.assertEqual((hang["severity"], hang["pid"]), ("error", pid), hang)
        ev = hang["evidence"]
        self.assertEqual(ev["ended_by"], "killed", ev)
        self.assertEqual(ev["stuck_pids"], [pid], ev)
        self.assertEqual(len(ev["processes"]), 1, ev["processes"])
        (ep,) = ev["processes"]
        self.assertEqual((ep["pid"], ep["stuck"]), (pid, True), ep)
        self.assertEqual(len(ep["in_flight"]), 1, ep["in_flight"])
        self.assertEqual((ep["in_flight"][0]["call"], ep["in_flight"][0]["api"]),
                         ("gpu_sync", "cudaDeviceSynchronize"), ep["in_flight"])
        self.assertEqual([k["kernel"] for k in ep["in_flight"][0]["kernels"]], ["spin", "scale", "fill"])
        self.assertIn("cudaDeviceSynchronize", hang["summary"])
        self.assertIn("spin", hang["summary"])
        self.assertEqual([f for f in h.findings(rep, "proc.killed") if f.get("pid") == pid], [])

    def test_hang_timeout_names_the_kernels_in_flight(self):
        # `colabtrace run --hang-timeout` ends the job with SIGTERM: the shim writes the
        # launch ring at that fatal signal (why 2), and the kernels still in flight come
        # from it (found on the H200: they were left out, the rule read only a SIGKILL's).
        p = self.start([h.CLI, "run", "-o", self.out, "--hang-timeout", "3", "--", PROG],
                       h.clean_env(sim_env(HANG)))
        stdout, stderr = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 124, stderr.decode(errors="replace"))
        m = BLOCKED.search(stdout)
        self.assertIsNotNone(m, stdout)
        pid, stream = int(m.group(1)), int(m.group(2), 16)
        rep = h.report(self.out)
        proc = self.process(rep, pid)
        self.assertEqual(proc["end"]["kind"], "signaled", proc["end"])
        call = self.assert_in_flight(proc, pid, stream, read_from_outside=True)
        self.assertGreaterEqual(call["blocked_ns"], 1_500_000_000, call)  # half the timeout, at least
        (hang,) = h.findings(rep, "proc.hang")
        self.assertEqual((hang["pid"], hang["evidence"]["ended_by"]), (pid, "hang-timeout"), hang)
        self.assertIn("in cudaDeviceSynchronize() waiting for kernel spin (and 2 more launched before it)",
                      hang["summary"])

    def test_plain_preload_names_the_sync_and_the_kernels_in_flight(self):
        env = h.clean_env(sim_env({**HANG, "LD_PRELOAD": h.SHIM, "COLABTRACE_OUT": self.out + "/"}))
        p = self.start([PROG], env)
        pid, stream = self.wait_blocked(p)
        self.assertEqual(pid, p.pid)
        self.sit_blocked(p, pid)
        self.kill_group(p)
        self.assertEqual(p.returncode, -signal.SIGKILL)

        rep = h.report(self.out)
        self.assert_in_flight(self.process(rep, pid), pid, stream)
        # Nothing saw when the kill came, so how long it sat there is unknown and the job is
        # not called hung; but proc.killed says what it was killed in (found on the H200:
        # the finding spoke of memory alone).
        (killed,) = h.findings(rep, "proc.killed")
        self.assertEqual(killed["pid"], pid)
        self.assertIn("it was killed inside cudaDeviceSynchronize() waiting for kernel spin (and 2 more "
                      "launched before it)", killed["summary"])
        self.assertEqual([(c["api"], [k["kernel"] for k in c["kernels"]]) for c in killed["evidence"]["in_flight"]],
                         [("cudaDeviceSynchronize", ["spin", "scale", "fill"])])
        self.assertIn("--hang-timeout", killed["advice"])

    def test_kernel_names_travel_with_the_trace(self):
        # The program's file is gone when the report is made (a report on another machine):
        # the kernels are still named, from what the shim recorded at each first launch.
        copy = os.path.join(self.tmp, "gone_" + PROG_NAME)
        shutil.copy2(PROG, copy)
        env = h.clean_env(sim_env({**HANG, "LD_PRELOAD": h.SHIM, "COLABTRACE_OUT": self.out + "/"}))
        p = self.start([copy], env)
        pid, _ = self.wait_blocked(p)
        time.sleep(1)  # from its "blocked" line into the call
        self.assertIsNone(p.poll())
        self.kill_group(p)
        os.unlink(copy)
        rep = h.report(self.out)
        (call,) = self.process(rep, pid)["in_flight"]
        self.assertEqual([k["kernel"] for k in call["kernels"]], ["spin", "scale", "fill"], call["kernels"])
        self.assertEqual({k["library"] for k in call["kernels"]}, {"gone_" + PROG_NAME}, call["kernels"])
        # One name record per host stub, at its first launch (warm was launched too): api
        # cudaLaunchKernel (17), handle and stub the stub. (The simulated runtime's own
        # driver lookups underneath are recorded too, as the real driver's would be.)
        trace = [os.path.join(self.out, f) for f in os.listdir(self.out) if f.endswith(f".{pid}.ctrace")]
        records = h.records(trace[0], "gpu_function")
        at_launch = [r for r in records if r["api"] == "17"]
        self.assertEqual(sorted(r["name"] for r in at_launch), ["fill", "scale", "spin", "warm"], records)
        for r in at_launch:
            self.assertEqual(r["handle"], r["stub"], r)

    def test_python_kernels_in_flight_carry_their_whole_stacks(self):
        pythons = distinct_pythons()
        if not pythons:
            self.skipTest("no CPython with a known frame layout")
        want = kernel_stacks_expected()
        for python in pythons:
            with self.subTest(python=python):
                out = os.path.join(self.tmp, os.path.basename(python))
                env = h.clean_env(sim_env({**HANG, "SIMCUDA_DIR": SIMCUDA_DIR, "LD_PRELOAD": h.SHIM,
                                           "COLABTRACE_OUT": out + "/"}))
                p = self.start([python, KERNEL_STACKS], env)
                pid, stream = self.wait_blocked(p)
                time.sleep(1)  # from its "blocked" line into the call
                self.assertIsNone(p.poll())
                self.kill_group(p)
                self.assertEqual(p.returncode, -signal.SIGKILL)
                (call,) = self.process(h.report(out), pid)["in_flight"]
                self.assertEqual((call["call"], call["api"]), ("gpu_sync", "cudaDeviceSynchronize"), call)
                self.assertEqual([(k["kernel"], k["python_line"], k["python_stack"]) for k in call["kernels"]],
                                 want)
                self.assertEqual({int(k["stream"], 16) for k in call["kernels"]}, {stream})

    def test_healthy_run_has_nothing_in_flight(self):
        for how in ("run", "preload"):
            with self.subTest(how=how):
                out = os.path.join(self.tmp, "healthy-" + how)
                if how == "run":
                    argv, env = [h.CLI, "run", "-o", out, "--", PROG], sim_env()
                else:
                    argv, env = [PROG], sim_env({"LD_PRELOAD": h.SHIM, "COLABTRACE_OUT": out + "/"})
                p = self.start(argv, h.clean_env(env))
                stdout, stderr = p.communicate(timeout=120)
                self.assertEqual(p.returncode, 0, stderr.decode(errors="replace"))
                self.assertTrue(stdout.decode().endswith("done\n"), stdout)
                pid, _ = (int(g, 0) for g in BLOCKED.search(stdout).groups())
                rep = h.report(out)
                self.assertEqual(self.process(rep, pid)["in_flight"], [])
                self.assertEqual(h.findings(rep, "proc.hang"), [])
                self.assertEqual(h.findings(rep, "proc.killed"), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
