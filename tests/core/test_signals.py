"""Fatal signals: each is recorded with a native stack that reaches the crashing
function of the test program, and the process still dies of the same signal. A program
with its own SIGSEGV handler keeps it (and its exit code)."""
import glob
import os
import re
import signal
import subprocess
import unittest
import uuid

from coretest import prog, report, run_plain, shim_env
from ctharness import TempDirTest, findings


def symbol_range(binary, name):
    """(start, end) of a function in a PIE executable, relative to its load base."""
    out = subprocess.run(["nm", "-S", "--defined-only", binary], capture_output=True,
                         text=True, check=True).stdout
    for line in out.splitlines():
        w = line.split()
        if len(w) == 4 and w[3] == name:
            start, size = int(w[0], 16), int(w[1], 16)
            return start, start + size
    raise AssertionError(f"{name} not in {binary}")


class FatalSignalTest(TempDirTest):
    def crash(self, mode, signo, function, extra=()):
        argv = [prog("ct_crash"), mode, *extra]
        bare = run_plain(argv)
        traced = subprocess.run(argv, env=shim_env(self.tmp), capture_output=True, timeout=60)
        self.assertEqual(bare.returncode, -signo)
        self.assertEqual(traced.returncode, -signo, traced.stderr)
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.stdout, b"ready\n")
        self.assertEqual(traced.stderr, bare.stderr)
        traces = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertEqual(len(traces), 1)
        rep = report(traces[0])
        (proc,) = rep["processes"]
        self.assertEqual(proc["end"]["kind"], "signaled")
        self.assertEqual(proc["end"]["signal"], signo)
        self.assertEqual(proc["end"]["signal_name"], signal.Signals(signo).name)
        (fatal,) = findings(rep, "proc.fatal-signal")
        self.assertEqual(fatal["severity"], "error")
        self.assertEqual(fatal["pid"], proc["pid"])
        self.assertEqual(fatal["evidence"]["signal"], signo)
        stack = fatal["evidence"]["stack"]
        self.assertTrue(stack, "a native stack was recorded")
        # A frame inside the crashing function of ct_crash (module+offset).
        lo, hi = symbol_range(prog("ct_crash"), function)
        # Frames read "module+0xOFF" or "function+0xN (module+0xOFF)".
        offsets = [int(m.group(1), 16) for m in
                   (re.search(r"(?:^|\()ct_crash\+0x([0-9a-f]+)\)?$", f) for f in stack) if m]
        self.assertTrue(any(lo <= off <= hi for off in offsets),
                        f"{function} [{lo:#x},{hi:#x}] not in {stack}")
        # main called it: the walk went on past the crashing frame.
        mlo, mhi = symbol_range(prog("ct_crash"), "main")
        self.assertTrue(any(mlo < off <= mhi for off in offsets), f"main not in {stack}")
        self.assertFalse(findings(rep, "proc.killed"))
        return fatal

    def test_sigsegv_null_write(self):
        fatal = self.crash("segv", signal.SIGSEGV, "crash_segv")
        self.assertEqual(fatal["evidence"]["fault_address"], "0x0")

    def test_sigabrt(self):
        self.crash("abort", signal.SIGABRT, "crash_abort")

    def test_sigfpe(self):
        self.crash("fpe", signal.SIGFPE, "crash_fpe")

    def test_sigbus_in_dev_shm_names_the_mapping(self):
        path = f"/dev/shm/ct-test-bus-{uuid.uuid4().hex}"
        try:
            fatal = self.crash("bus", signal.SIGBUS, "crash_bus", extra=(path,))
        finally:
            if os.path.exists(path):
                os.unlink(path)
        ev = fatal["evidence"]
        self.assertEqual(ev["shm_mapping"], path)
        self.assertIn(f"inside the /dev/shm mapping {path}", fatal["summary"])
        # ct_crash truncated the file to 0 bytes under its 8 KiB mapping and stored at
        # 4096: past the file's end, with /dev/shm far from full. That is not "shared
        # memory ran out", and no host.shm-small either.
        self.assertEqual(ev["shm_offset"], 4096)
        self.assertEqual(ev["shm_file_size"], 0)
        self.assertGreater(ev["shm_free_bytes"], 1 << 20)
        self.assertEqual(ev["shm_cause"], "past-end-of-file")
        self.assertIn("past the end of the file (offset 4096, file size 0)", fatal["summary"])
        self.assertNotIn("ran out", fatal["advice"])
        (trace,) = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertFalse(findings(report(trace), "host.shm-small"))

    def test_sigbus_with_dev_shm_full_says_so(self):
        # /dev/shm as a 64 KiB tmpfs in a mount namespace of its own: ct_crash sizes a file
        # to 1 MiB and stores into its pages until tmpfs has none left to give.
        if os.geteuid() == 0:
            unshare = ["unshare", "-m"]
        else:
            unshare = ["unshare", "-r", "-m"]
        probe = subprocess.run([*unshare, "sh", "-c", "mount -t tmpfs -o size=64k none /dev/shm"],
                               capture_output=True, timeout=30)
        if probe.returncode != 0:
            self.skipTest(f"no mount namespace here: {probe.stderr.decode(errors='replace').strip()}")
        env = shim_env(self.tmp)
        preload = env.pop("LD_PRELOAD")
        script = 'mount -t tmpfs -o size=64k none /dev/shm && exec env LD_PRELOAD="$0" "$@"'
        argv = [*unshare, "sh", "-c", script, preload, prog("ct_crash"), "bus-full", "/dev/shm/full"]
        traced = subprocess.run(argv, env=env, capture_output=True, timeout=60)
        self.assertEqual(traced.returncode, -signal.SIGBUS, traced.stderr)
        (trace,) = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        rep = report(trace)
        (fatal,) = findings(rep, "proc.fatal-signal")
        ev = fatal["evidence"]
        self.assertEqual(ev["shm_mapping"], "/dev/shm/full")
        self.assertEqual(ev["shm_file_size"], 1 << 20)
        # 64 KiB of tmpfs hold 16 pages: a store that far in faults, inside the file.
        self.assertEqual(ev["shm_offset"] % 4096, 0)
        self.assertLessEqual(ev["shm_offset"], 64 << 10)
        self.assertEqual(ev["shm_free_bytes"], 0)
        self.assertEqual(ev["shm_cause"], "shm-full")
        self.assertIn("inside the /dev/shm mapping /dev/shm/full with /dev/shm full", fatal["summary"])
        self.assertIn("ran out", fatal["advice"])
        (small,) = findings(rep, "host.shm-small")
        self.assertIn("SIGBUS in /dev/shm/full", str(small["evidence"]))

    def test_program_handler_is_kept_and_its_exit_code_too(self):
        argv = [prog("ct_crash"), "handler"]
        bare = run_plain(argv)
        traced = subprocess.run(argv, env=shim_env(self.tmp), capture_output=True, timeout=60)
        self.assertEqual(bare.returncode, 42)
        self.assertEqual(traced.returncode, 42, traced.stderr)
        # "handler ok": sigaction(SIGSEGV, NULL, &old) gave back the program's handler.
        self.assertEqual(traced.stdout, b"handler ok\nready\n")
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.stderr, bare.stderr)
        traces = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        rep = report(traces[0])
        (proc,) = rep["processes"]
        self.assertEqual(proc["end"], {"kind": "exited", "code": 42, "signal": None, "reaped_by": None})
        self.assertFalse(findings(rep, "proc.fatal-signal"))

    def overflow(self, mode):
        argv = [prog("ct_crash"), mode]
        bare = run_plain(argv)
        traced = subprocess.run(argv, env=shim_env(self.tmp), capture_output=True, timeout=60)
        self.assertEqual(traced.returncode, bare.returncode, traced.stderr)
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.stdout, b"ready\nstack overflow\n")
        self.assertEqual(traced.stderr, bare.stderr)
        traces = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertEqual(len(traces), 1)
        return traced, report(traces[0])

    def test_stack_overflow_caught_on_a_small_alternate_stack(self):
        # Rust's runtime catches a stack overflow with a SIGSEGV handler on an 8 KiB
        # alternate stack. The shim's recording of the crash must not overflow that stack
        # (it did: the process died of SIGSEGV instead of running the handler).
        traced, rep = self.overflow("overflow")
        self.assertEqual(traced.returncode, 43)
        (proc,) = rep["processes"]
        self.assertEqual(proc["end"]["kind"], "exited")
        self.assertEqual(proc["end"]["code"], 43)

    def test_a_periodic_sample_due_on_a_small_alternate_stack_waits(self):
        # The same, with a periodic sample due when the handler's write() is recorded (a
        # slow or loaded machine), and stdout a regular file (a write the shim records in
        # full): the sample reads /proc and the cgroup with KiB-sized buffers, too much
        # for 8 KiB. Found when Rust's stack-overflow report died of SIGSEGV under a
        # loaded `./tools/test` (parity_runtimes_rust).
        argv = [prog("ct_crash"), "overflow-late"]
        for i in range(3):
            out = os.path.join(self.tmp, f"run{i}")
            os.makedirs(out)
            with open(os.path.join(out, "stdout"), "w+b") as f:
                p = subprocess.run(argv, env=shim_env(out, extra={"COLABTRACE_SAMPLE_MS": "1"}), stdout=f,
                                   stderr=subprocess.PIPE, timeout=60)
                f.seek(0)
                self.assertEqual(f.read(), b"ready\nstack overflow\n")
            self.assertEqual(p.returncode, 43, p.stderr)
            (proc,) = report(glob.glob(os.path.join(out, "*.ctrace"))[0])["processes"]
            self.assertEqual((proc["end"]["kind"], proc["end"]["code"]), ("exited", 43))

    def test_stack_overflow_handler_that_aborts_is_recorded_with_its_stack(self):
        traced, rep = self.overflow("overflow-abort")
        self.assertEqual(traced.returncode, -signal.SIGABRT)
        (proc,) = rep["processes"]
        self.assertEqual((proc["end"]["kind"], proc["end"]["signal"]), ("signaled", signal.SIGABRT))
        (fatal,) = findings(rep, "proc.fatal-signal")
        self.assertEqual(fatal["evidence"]["signal"], signal.SIGABRT)
        # The walk goes from abort() through the handler and the signal frame into the
        # overflowing function.
        offsets = [int(m.group(1), 16) for m in
                   (re.search(r"(?:^|\()ct_crash\+0x([0-9a-f]+)\)?$", f) for f in fatal["evidence"]["stack"]) if m]
        for function in ("on_overflow", "crash_overflow"):
            lo, hi = symbol_range(prog("ct_crash"), function)
            self.assertTrue(any(lo <= off <= hi for off in offsets),
                            f"{function} [{lo:#x},{hi:#x}] not in {fatal['evidence']['stack']}")


if __name__ == "__main__":
    unittest.main()
