"""Garbage, truncated and zero-length traces through the real CLI: never a crash or a
hang; either exit 2 with one clear line on stderr, or (exit 0) a partial report with a
warning that names where reading stopped."""
import glob
import json
import os
import random
import signal
import subprocess
import unittest

from coretest import prog, shim_env
from ctharness import CLI, TempDirTest

HEADER = 256
CHUNK = 32 * 1024


def run_cli(*args):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=30)


class DamagedTraceTest(TempDirTest):
    @classmethod
    def setUpClass(cls):
        # Two real traces: a closed one spanning several chunks, and a killed one (full
        # 2 MiB extent, mostly zeros).
        cls.src = __import__("tempfile").mkdtemp(prefix="ct-damaged-")
        closed = os.path.join(cls.src, "closed")
        killed = os.path.join(cls.src, "killed")
        os.mkdir(closed)
        os.mkdir(killed)
        subprocess.run([prog("ct_steps"), "4000", "0"], env=shim_env(closed), check=True,
                       capture_output=True, timeout=60)
        p = subprocess.Popen([prog("ct_steps"), "1000000", "1000"], env=shim_env(killed),
                             stdout=subprocess.PIPE, text=True)
        for n, line in enumerate(p.stdout):
            if n >= 10:
                break
        p.send_signal(signal.SIGKILL)
        p.communicate()
        (cls.closed,) = glob.glob(os.path.join(closed, "*.ctrace"))
        (cls.killed,) = glob.glob(os.path.join(killed, "*.ctrace"))
        with open(cls.closed, "rb") as f:
            cls.closed_bytes = f.read()
        with open(cls.killed, "rb") as f:
            cls.killed_bytes = f.read()

    @classmethod
    def tearDownClass(cls):
        __import__("shutil").rmtree(cls.src, ignore_errors=True)

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def assert_unreadable(self, path, why):
        for args in (("report", "--format", "json", path), ("report", path), ("dump", path)):
            p = run_cli(*args)
            self.assertEqual(p.returncode, 2, f"{args}: {p.stdout[:200]} {p.stderr}")
            lines = p.stderr.splitlines()
            self.assertEqual(len(lines), 1, f"{args}: one line: {p.stderr!r}")
            self.assertIn(path, lines[0])
            self.assertIn(why, lines[0])
            self.assertEqual(p.stdout, "")

    def assert_readable(self, path, expect_warning):
        p = run_cli("report", "--format", "json", path)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        self.assertEqual(len(rep["processes"]), 1)
        if expect_warning:
            self.assertTrue(any(w.startswith(f"{path}: offset ") for w in rep["warnings"]),
                            rep["warnings"])
        d = run_cli("dump", path)
        self.assertEqual(d.returncode, 0, d.stderr)
        self.assertTrue(d.stdout.startswith(f"# {path}: colabtrace trace v1."))
        if expect_warning:
            self.assertIn(f"colabtrace dump: warning: {path}: offset ", d.stderr)
        t = run_cli("report", path)
        self.assertEqual(t.returncode, 0, t.stderr)
        return rep

    def test_zero_length(self):
        self.assert_unreadable(self.write("empty.ctrace", b""), "empty file")

    def test_random_bytes(self):
        rng = random.Random(3)
        data = bytes(rng.randrange(256) for _ in range(70000))
        self.assert_unreadable(self.write("random.ctrace", data), "not a colabtrace trace")

    def test_magic_then_garbage(self):
        rng = random.Random(4)
        data = self.closed_bytes[:8] + bytes(rng.randrange(256) for _ in range(3 * CHUNK))
        path = self.write("magic.ctrace", data)
        p = run_cli("report", "--format", "json", path)
        self.assertIn(p.returncode, (0, 2))
        if p.returncode == 2:
            self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
        else:
            json.loads(p.stdout)

    def test_cut_inside_the_header(self):
        for cut in (1, 7, 8, 100, HEADER - 1):
            with self.subTest(cut=cut):
                path = self.write(f"cut{cut}.ctrace", self.closed_bytes[:cut])
                self.assert_unreadable(path, "bad magic" if cut < 8 else "cut short")

    def test_cut_at_many_offsets(self):
        data = self.closed_bytes
        self.assertGreaterEqual(len(data), 4 * CHUNK, "several chunks")
        cuts = {HEADER, CHUNK, CHUNK + 16, CHUNK + 31, CHUNK + 32, CHUNK + 33, CHUNK + 1000,
                2 * CHUNK - 1, 2 * CHUNK + 500, 3 * CHUNK + 12345, len(data) - 1}
        cuts |= set(range(CHUNK + 40, len(data), 7919))
        for cut in sorted(cuts):
            with self.subTest(cut=cut):
                in_chunk = cut % CHUNK
                path = self.write(f"cut{cut}.ctrace", data[:cut])
                self.assert_readable(path, expect_warning=cut > CHUNK and in_chunk > 32)

    def test_killed_trace_cut_mid_chunk(self):
        data = self.killed_bytes
        # A killed trace is as long as what it had reserved: the header slot and at
        # least one chunk (no sparse rest of an extent).
        self.assertGreaterEqual(len(data), 2 * CHUNK)
        self.assertEqual(len(data) % CHUNK, 0)
        for cut in (CHUNK + 100, CHUNK + 2000, 2 * CHUNK - 77):
            with self.subTest(cut=cut):
                path = self.write(f"kcut{cut}.ctrace", data[:cut])
                rep = self.assert_readable(path, expect_warning=False)
                self.assertEqual(rep["processes"][0]["end"]["kind"], "killed")

    def test_flipped_bytes(self):
        rng = random.Random(5)
        for i in range(40):
            data = bytearray(self.closed_bytes)
            for _ in range(rng.randrange(1, 24)):
                at = rng.randrange(HEADER) if rng.random() < 0.2 else rng.randrange(len(data))
                data[at] ^= 1 << rng.randrange(8)
            path = self.write(f"flip{i}.ctrace", bytes(data))
            with self.subTest(i=i):
                p = run_cli("report", "--format", "json", path)
                self.assertIn(p.returncode, (0, 2), p.stderr)
                if p.returncode == 0:
                    json.loads(p.stdout)
                else:
                    self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)
                d = run_cli("dump", path)
                self.assertIn(d.returncode, (0, 2), d.stderr)


if __name__ == "__main__":
    unittest.main()
