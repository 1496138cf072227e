"""Descriptors closed with syscall(2), as libuv (Node.js) closes every descriptor: the
shim's syscall stub records SYS_close and SYS_close_range like close() and close_range(),
so a pipe that gets the number next does not have its reads counted as the file's (node
reading 100 files once each was reported as 122 reads and 79,117 B, against 100 and
79,000). Other numbers pass through untouched: the program prints the same bare and
traced (errno of a bad close, getpid, a six-argument mmap). SYS_statx, which libuv makes
for every fs.stat*, is recorded as statx() is: by path (AT_FDCWD), by descriptor, and
failed."""
import os
import platform
import subprocess
import unittest

from ctharness import TempDirTest, report, run_traced, test_bin
from iotest import io_records

PROG = test_bin("io", "io_raw_syscall")


class RawSyscallCloseTest(TempDirTest):
    def test_closes_through_syscall_end_the_file(self):
        if platform.machine() != "x86_64":
            self.skipTest("the syscall(2) stub is x86-64 only (shim/io/syscall_x86_64.S)")
        d = os.path.join(self.tmp, "data")
        os.mkdir(d)
        for name in ("a", "b", "c"):
            with open(os.path.join(d, name), "wb") as f:
                f.write(os.urandom(1000))
        bare = subprocess.run([PROG, d], capture_output=True, text=True, timeout=60)
        self.assertEqual(bare.returncode, 0, bare.stderr)
        run = run_traced([PROG, d], out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout, bare.stdout)
        self.assertIn("a 3 pipe 3\n", run.stdout)  # the pipe took the closed file's number
        self.assertIn("bad closes -1 Bad file descriptor -1 Bad file descriptor\n", run.stdout)
        (trace,) = run.traces
        rep = report(trace)
        rows = {f["path"]: f for f in rep["io"]["files"] if f["path"].startswith(d + "/")}
        self.assertIn("statx sizes 4000 missing -1 No such file or directory\n", run.stdout)
        got = {os.path.basename(p): (r["opens"], r["reads"], r["bytes_read"], r["stats"], r["stat_errors"])
               for p, r in rows.items()}
        # b: opened twice (read, then stat'ed by descriptor); a: 3 stats by path.
        self.assertEqual(got, {"a": (1, 1, 100, 3, 0), "b": (2, 1, 50, 1, 0), "c": (1, 1, 20, 0, 0),
                               "missing": (0, 0, 0, 1, 1)})
        closes = [r for r in io_records(trace) if r["rec"] == "io_close"]
        # a by SYS_close, b by SYS_close_range, c and b's second open by close(): one
        # close record each.
        self.assertEqual(sorted(int(r["fd"]) for r in closes if int(r["fd"]) == 3), [3, 3, 3, 3])


if __name__ == "__main__":
    unittest.main()
