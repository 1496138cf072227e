"""The slow FUSE mount of tests/harness/slowfs.py on its own (no shim): it serves the
source folder's files under type fuse.slowfs, its opens take at least the latency it is
set to, the latency changes while mounted, a read of a "hang" file blocks until the
daemon is killed, and teardown leaves no daemon and no mount, also when the test fails."""
import os
import signal
import subprocess
import sys
import time
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest
from slowfs import FS_TYPE, SlowMount, mount_type

TIMED_OPEN = (
    "import sys, time\n"
    "t = time.monotonic()\n"
    "with open(sys.argv[1], 'rb') as f: n = len(f.read())\n"
    "print(n, time.monotonic() - t)\n")


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has exited: read its state.
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class SlowMountTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.src = os.path.join(self.tmp, "src")
        os.makedirs(os.path.join(self.src, "sub"))
        for name in ("a.bin", "b.bin", "sub/c.bin"):
            with open(os.path.join(self.src, name), "wb") as f:
                f.write(name.encode() * 100)

    def timed_open(self, path):
        """(bytes read, seconds the open and read took), in a fresh process."""
        p = subprocess.run([sys.executable, "-c", TIMED_OPEN, path], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        n, secs = p.stdout.split()
        return int(n), float(secs)

    def test_latency_type_and_contents(self):
        with SlowMount(self, self.src, open_ms=30) as m:
            self.assertEqual(mount_type(m.path), FS_TYPE)
            self.assertEqual(sorted(os.listdir(m.path)), ["a.bin", "b.bin", "sub"])
            n, secs = self.timed_open(os.path.join(m.path, "a.bin"))
            self.assertEqual(n, 500)
            self.assertGreaterEqual(secs, 0.030)  # a lower bound: the daemon sleeps first
            with open(os.path.join(m.path, "sub", "c.bin"), "rb") as f:
                self.assertEqual(f.read(), b"sub/c.bin" * 100)
            with self.assertRaises(OSError):  # read-only
                open(os.path.join(m.path, "new.bin"), "wb")
            # Slower while mounted, through the control file.
            m.set(open_ms=250)
            n, secs = self.timed_open(os.path.join(m.path, "b.bin"))
            self.assertEqual(n, 500)
            self.assertGreaterEqual(secs, 0.250)
            # Reads can be slowed too.
            m.set(open_ms=0, read_ms=200)
            _, secs = self.timed_open(os.path.join(m.path, "a.bin"))
            self.assertGreaterEqual(secs, 0.200)
            path, pid = m.path, m.pid
        self.assertIsNone(mount_type(path))
        self.assertFalse(pid_alive(pid))

    def test_hang_blocks_a_read_until_the_daemon_is_killed(self):
        with SlowMount(self, self.src, open_ms=0, hang=["sub/*.bin"]) as m:
            # Files that do not match answer at once.
            self.assertEqual(self.timed_open(os.path.join(m.path, "a.bin"))[0], 500)
            reader = subprocess.Popen([SYSTEM_PYTHON, "-c", TIMED_OPEN,
                                       os.path.join(m.path, "sub", "c.bin")],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            self.addCleanup(lambda: reader.poll() is None and reader.kill())
            with self.assertRaises(subprocess.TimeoutExpired):
                reader.wait(timeout=1.5)
            with open(f"/proc/{reader.pid}/stat", encoding="utf-8") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
            self.assertIn(state, ("S", "D"))  # asleep in the kernel, waiting for the daemon
            path, pid = m.path, m.pid
        # Teardown killed the daemon: the blocked read fails instead of hanging for ever.
        _, err = reader.communicate(timeout=15)
        self.assertNotEqual(reader.returncode, 0)
        self.assertIn("Transport endpoint is not connected", err)
        self.assertIsNone(mount_type(path))
        self.assertFalse(pid_alive(pid))

    def test_a_failing_test_leaves_no_mount_and_no_daemon(self):
        seen = {}

        class Failing(unittest.TestCase):
            def runTest(inner):
                m = SlowMount(inner, self.src, open_ms=0).__enter__()  # never exited
                seen.update(path=m.path, pid=m.pid, mounted=mount_type(m.path))
                inner.fail("on purpose")

        result = unittest.TestResult()
        Failing().run(result)
        self.assertEqual(len(result.failures), 1)
        self.assertEqual(seen["mounted"], FS_TYPE)
        self.assertIsNone(mount_type(seen["path"]))
        self.assertFalse(pid_alive(seen["pid"]))

    def test_a_daemon_that_died_is_still_unmounted(self):
        with SlowMount(self, self.src) as m:
            os.kill(m.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while m.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.assertFalse(m.alive())
            with self.assertRaises(OSError):
                os.listdir(m.path)  # ENOTCONN: the mount outlives its daemon until teardown
            path = m.path
        self.assertIsNone(mount_type(path))


if __name__ == "__main__":
    unittest.main()
