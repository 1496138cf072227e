"""Signals under the shim (issues 8 and 9): every default-fatal signal is recorded as the
process's death, dispositions read back exactly as bare, SIG_IGN crosses exec, and a
vfork child can neither change its parent's signal handling nor signal its parent."""
import glob
import os
import resource
import signal
import subprocess
import unittest

from coretest import prog, python, report, run_plain, shim_env
from ctharness import TempDirTest, by_pid


def no_core_files():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class GuestSignalTest(TempDirTest):
    def same_as_bare(self, argv, timeout=60, **kw):
        bare = run_plain(argv, timeout=timeout, **kw)
        traced = subprocess.run(argv, env=shim_env(self.tmp), capture_output=True,
                                timeout=timeout, **kw)
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.stderr, bare.stderr)
        self.assertEqual(traced.returncode, bare.returncode)
        return traced

    def only_process(self):
        traces = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertEqual(len(traces), 1, traces)
        (proc,) = report(*traces)["processes"]
        return proc

    def test_yes_into_head_dies_of_sigpipe_and_says_so(self):
        p = self.same_as_bare(["bash", "-c", "yes | head -1"])
        self.assertEqual(p.stdout, b"y\n")
        procs = report(*glob.glob(os.path.join(self.tmp, "*.ctrace")))["processes"]
        yes = [q for q in procs if q.get("exe", "").endswith("/yes")
               or any(a == "yes" for a in q.get("argv", []))]
        self.assertEqual(len(yes), 1, [(q.get("exe"), q["end"]) for q in procs])
        self.assertEqual(yes[0]["end"]["kind"], "signaled")
        self.assertEqual(yes[0]["end"]["signal"], signal.SIGPIPE)

    def test_every_default_fatal_signal_is_recorded(self):
        sigs = [signal.SIGUSR1, signal.SIGUSR2, signal.SIGALRM, signal.SIGVTALRM,
                signal.SIGPROF, signal.SIGXCPU, signal.SIGXFSZ, signal.SIGSYS, signal.SIGTRAP,
                signal.SIGIO, signal.SIGPWR, 16 if hasattr(signal, "SIGSTKFLT") else None,
                signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE,
                signal.SIGRTMIN, signal.SIGRTMIN + 5, signal.SIGRTMAX]
        for sig in [s for s in sigs if s is not None]:
            with self.subTest(sig=int(sig)):
                for f in glob.glob(os.path.join(self.tmp, "*")):
                    os.unlink(f)
                p = self.same_as_bare([prog("ct_guest"), "raise", str(int(sig))],
                                      preexec_fn=no_core_files)
                self.assertEqual(p.returncode, -int(sig))
                end = self.only_process()["end"]
                self.assertEqual((end["kind"], end["signal"]), ("signaled", int(sig)))

    def test_a_kernel_sent_sigalrm_is_recorded_and_still_kills(self):
        # alarm() sends SIGALRM with si_code SI_KERNEL: no re-fault will happen, the
        # shim must send it again itself.
        p = self.same_as_bare([prog("ct_guest"), "alarm"], timeout=30)
        self.assertEqual(p.returncode, -signal.SIGALRM)
        end = self.only_process()["end"]
        self.assertEqual((end["kind"], end["signal"]), ("signaled", signal.SIGALRM))

    def test_dispositions_read_back_as_bare(self):
        p = self.same_as_bare([prog("ct_guest"), "sigaction-view"])
        self.assertIn(b"sig 2 initial: dfl", p.stdout)

    def test_sig_ign_crosses_exec(self):
        for sig in (signal.SIGINT, signal.SIGUSR1, signal.SIGPIPE):
            with self.subTest(sig=int(sig)):
                p = self.same_as_bare([prog("ct_guest"), "ignore-then-exec", str(int(sig))])
                self.assertEqual(p.stdout, f"{int(sig)}:ign\n".encode())

    def test_a_vfork_child_cannot_reset_its_parents_handler(self):
        # CPython's subprocess resets handlers to SIG_DFL in its vfork child.
        p = self.same_as_bare([prog("ct_guest"), "vfork-sigaction"])
        self.assertEqual(p.stdout, b"handled 2\n")

    def test_python_keeps_keyboardinterrupt_after_subprocess(self):
        # CPython's test_signal test_pidfd_send_signal and the multiprocessing workers.
        script = """if 1:
            import os, signal, subprocess
            subprocess.run(["true"])
            try:
                os.kill(os.getpid(), signal.SIGINT)
                signal.sigtimedwait([], 0.1)
                print("no KeyboardInterrupt")
            except KeyboardInterrupt:
                print("KeyboardInterrupt")
            """
        p = self.same_as_bare([python(), "-c", script])
        self.assertEqual(p.stdout, b"KeyboardInterrupt\n")

    def test_sigterm_in_a_vfork_child_ends_the_child_not_the_parent(self):
        p = self.same_as_bare([prog("ct_guest"), "vfork-sigterm"])
        self.assertEqual(p.stdout, f"signaled {int(signal.SIGTERM)}\n".encode())
        procs = by_pid(report(*glob.glob(os.path.join(self.tmp, "*.ctrace"))))
        self.assertEqual([q["end"]["kind"] for q in procs.values()], ["exited"],
                         "the parent's trace does not carry the child's signal")


if __name__ == "__main__":
    unittest.main()
