"""A full disk or a file-size limit stops tracing, never the program: the program's
output and exit code are unchanged and the trace says trace_truncated."""
import errno
import glob
import os
import resource
import subprocess
import unittest

from coretest import env_values, prog, report, run_plain, run_steps_until_truncated, shim_env
import ctharness as h
from ctharness import TempDirTest, findings

STEPS = 200000  # ~4 MB of records: more than fits


class FullDiskTest(TempDirTest):
    def check_truncated(self, out_dir, preexec=None, want_errno=None):
        bare, _, rep, proc, values = run_steps_until_truncated(self, out_dir, STEPS, preexec, want_errno)
        self.assertEqual(len(bare.stdout.splitlines()), STEPS + 1)
        # The trace was closed cleanly (the exit record itself may not have fit): the
        # process exited, it was not killed.
        self.assertEqual(proc["end"]["kind"], "exited")
        self.assertIn(proc["end"]["code"], (0, None))
        self.assertFalse(findings(rep, "proc.killed"))
        self.assertGreater(len(values), 1000)
        self.assertLess(len(values), STEPS)

    def test_full_tmpfs(self):
        with h.mounted_tmpfs(self, "3m", prefix="ct-tmpfs-") as mnt:
            self.check_truncated(mnt, want_errno=errno.ENOSPC)

    def test_file_size_limit(self):
        limit = 3 << 20

        def small_fsize():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        self.check_truncated(self.tmp, preexec=small_fsize, want_errno=errno.EFBIG)
        (trace,) = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertLessEqual(os.path.getsize(trace), limit)

    def run_steps_under_fsize(self, limit, steps):
        def small_fsize():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        argv = [prog("ct_steps"), str(steps), "0"]
        bare = run_plain(argv)
        traced = subprocess.run(argv, env=shim_env(self.tmp), capture_output=True, timeout=60,
                                preexec_fn=small_fsize)
        self.assertEqual(traced.returncode, 0)
        self.assertEqual(traced.stdout, bare.stdout)
        self.assertEqual(traced.stderr, b"")

    def test_limit_below_one_extent_still_gives_the_whole_small_trace(self):
        # 1 MiB < one 2 MiB extent: a smaller first reservation holds all 100 steps.
        self.run_steps_under_fsize(1 << 20, 100)
        (trace,) = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertLessEqual(os.path.getsize(trace), 1 << 20)
        self.assertEqual(env_values(trace, "CUDA_STEP"), [str(i) for i in range(100)])
        (proc,) = report(trace)["processes"]
        self.assertFalse(proc["trace_truncated"])
        self.assertEqual(proc["end"]["kind"], "exited")
        self.assertEqual(proc["end"]["code"], 0)

    def test_limit_below_two_chunks_means_no_trace_and_no_litter(self):
        # Not even the header and one 32 KiB chunk fit: no trace, and nothing left behind.
        self.run_steps_under_fsize(48 << 10, 100)
        self.assertEqual(os.listdir(self.tmp), [], "no empty or temporary files left behind")


if __name__ == "__main__":
    unittest.main()
