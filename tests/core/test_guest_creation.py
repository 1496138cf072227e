"""Creating a trace (issue 8): a *.ctrace file is never visible without its header, even
for processes killed while they start; a disk with less than one extent free still gets
the header, the fingerprint and the first events, marked truncated."""
import errno
import os
import random
import resource
import signal
import struct
import subprocess
import time
import unittest

from coretest import prog, run_steps_until_truncated, shim_env
import ctharness as h
from ctharness import TempDirTest

MAGIC = b"CTRACE\r\n"


class TraceCreationTest(TempDirTest):
    def test_no_trace_is_ever_visible_without_its_header(self):
        # Many processes, each SIGKILLed a random moment into its start-up. Whatever
        # moment the kill lands, a *.ctrace that exists has its header, and nothing
        # else (no temporary name) is left.
        rng = random.Random(8)
        env = shim_env(self.tmp)
        for _ in range(150):
            p = subprocess.Popen([prog("ct_steps"), "5", "0"], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, 0.004))
            p.send_signal(signal.SIGKILL)
            p.wait()
        names = os.listdir(self.tmp)
        traces = [n for n in names if n.endswith(".ctrace")]
        self.assertEqual(sorted(names), sorted(traces), "only traces in the directory")
        self.assertGreater(len(traces), 0)
        for name in traces:
            with open(os.path.join(self.tmp, name), "rb") as f:
                head = f.read(64)
            self.assertEqual(head[:8], MAGIC, f"{name}: {len(head)} bytes, no header")
            self.assertNotEqual(struct.unpack_from("<I", head, 28)[0], 0, name)

    def check_small_disk(self, out_dir, preexec=None, want_errno=errno.ENOSPC):
        steps = 20000  # far more than fits
        _, trace, _, proc, values = run_steps_until_truncated(self, out_dir, steps, preexec, want_errno)
        self.assertTrue(proc["exe"].endswith("/ct_steps"), proc.get("exe"))
        self.assertGreater(len(values), 10)
        return trace

    def test_a_tmpfs_smaller_than_one_extent(self):
        with h.mounted_tmpfs(self, "128k", prefix="ct-tiny-") as mnt:
            self.check_small_disk(mnt)

    def test_a_file_size_limit_smaller_than_one_extent(self):
        limit = 200 << 10

        def small_fsize():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

        trace = self.check_small_disk(self.tmp, preexec=small_fsize, want_errno=errno.EFBIG)
        self.assertLessEqual(os.path.getsize(trace), limit)


if __name__ == "__main__":
    unittest.main()
