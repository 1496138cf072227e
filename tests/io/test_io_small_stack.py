"""The I/O hooks fit on a small thread stack: a thread with a 32 KiB stack opens files
and closes them with close_range and closefrom, bare and traced, with the same result,
and the trace has one close record per descriptor. The close_range/closefrom hook kept
a bitset of every traceable descriptor (16 KiB) on the stack, and writing the first
close record could extend the trace on top of that: the thread overflowed its stack
(SIGSEGV) where bare it had room to spare."""
import os
import subprocess
import unittest

from ctharness import TempDirTest, run_traced, test_bin
from iotest import API, io_records

PROG = test_bin("io", "io_small_stack")


class SmallStackTest(TempDirTest):
    def check(self, kib):
        d = os.path.join(self.tmp, f"d{kib}")
        os.mkdir(d)
        bare = subprocess.run([PROG, str(kib), d], capture_output=True, text=True, timeout=60)
        self.assertEqual(bare.returncode, 0, bare.stderr)
        run = run_traced([PROG, str(kib), d], out_dir=os.path.join(self.tmp, f"out{kib}"))
        self.assertEqual(run.returncode, bare.returncode, run.stderr)
        self.assertEqual(run.stdout, bare.stdout)
        self.assertTrue(run.stdout.endswith("closed 16\n"))
        (trace,) = run.traces
        closes = [r for r in io_records(trace) if r["rec"] == "io_close"]
        for line in run.stdout.splitlines():
            if not line.startswith("FD "):
                continue
            _, api, first, last = line.split()
            got = sorted(int(r["fd"]) for r in closes if r.get("api") == str(API[api]))
            self.assertEqual(got, list(range(int(first), int(last) + 1)), api)

    def test_close_range_and_closefrom_on_a_32_kib_stack(self):
        self.check(32)

    def test_extending_the_trace_on_a_24_kib_stack(self):
        # The thread's first record takes a chunk, and reserving its space wrote zeros
        # through a 16 KiB vector on that thread's stack.
        self.check(24)


if __name__ == "__main__":
    unittest.main()
