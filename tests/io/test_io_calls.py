"""Every hooked C entry point, called by tests/io/progs/io_calls.c: the records the shim
wrote match what the program did (api, descriptor, result, offset, size, errno), and the
program sees the same results and errno with and without the shim."""
import os
import shutil
import subprocess
import unittest

from ctharness import TempDirTest, run_traced, test_bin
from iotest import API, io_records

PROG = test_bin("io", "io_calls")


def behaviour(stdout: str) -> list[str]:
    return [l for l in stdout.splitlines() if l.startswith("R ")]


class IoCallsTest(TempDirTest):
    def run_prog(self, traced: bool):
        d = os.path.join(self.tmp, "d")
        shutil.rmtree(d, ignore_errors=True)
        os.mkdir(d)
        if traced:
            run = run_traced([PROG, d], out_dir=os.path.join(self.tmp, "out"))
            return d, run.returncode, run.stdout, run.stderr, run.traces
        p = subprocess.run([PROG, d], capture_output=True, text=True)
        return d, p.returncode, p.stdout, p.stderr, []

    def test_same_results_and_errno_with_and_without_the_shim(self):
        _, rc0, out0, err0, _ = self.run_prog(False)
        _, rc1, out1, err1, _ = self.run_prog(True)
        self.assertEqual(rc0, 0, err0)
        self.assertEqual(rc1, 0, err1)
        self.assertGreater(len(behaviour(out0)), 100)
        self.assertEqual(behaviour(out0), behaviour(out1))
        self.assertEqual(err0, err1)

    def test_records_match_the_calls(self):
        d, rc, out, err, traces = self.run_prog(True)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(traces), 1)
        base = int(next(l for l in out.splitlines() if l.startswith("BASE ")).split()[1])

        def fd_value(s: str) -> str:
            return str(base + int(s[1:])) if s.startswith("+") else s

        expected = []
        for line in out.splitlines():
            if not line.startswith("EXPECT "):
                continue
            parts = line.split()
            rec = {"rec": parts[1]}
            for kv in parts[2:]:
                k, v = kv.split("=", 1)
                if k in ("fd", "oldfd", "newfd"):
                    v = fd_value(v)
                if k == "api":
                    v = str(API[v])
                if rec["rec"] == "io_copy" and k == "fd":
                    k = "in_fd"
                rec[k] = v
            expected.append(rec)
        self.assertGreater(len(expected), 100)

        got = [r for r in io_records(traces[0]) if r["rec"] != "mount"]
        # Only what the program did on its own files (the shim also records the
        # descriptors it inherited at start, which are outside d).
        mine = []
        for r in got:
            if r.get("api") == str(API["inherited"]) or r.get("api") == str(API["position"]):
                continue
            if r["rec"] == "io_open" and not r.get("path", "").startswith(d):
                continue
            mine.append(r)

        remaining = list(mine)
        for e in expected:
            for i, r in enumerate(remaining):
                if r["rec"] == e["rec"] and all(r.get(k) == v for k, v in e.items()):
                    del remaining[i]
                    break
            else:
                near = [r for r in remaining if r["rec"] == e["rec"]][:5]
                self.fail(f"no record for {e}\nsame type left: {near}")
        self.assertEqual(remaining, [], "records the program did not make")


if __name__ == "__main__":
    unittest.main()
