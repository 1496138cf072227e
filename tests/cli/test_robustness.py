"""Untrusted and damaged inputs through the real CLI (issue 9), on traces of real runs.

- A zero-filled or garbage *.ctrace inside a directory is a warning naming it; the rest is
  reported (exit 0). A trace named on the command line that cannot be read is exit 2.
- A trace cut short is reported with a warning saying where reading stopped.
- A sparse 1 TB file is read for the data it holds, quickly.
- argv with newlines, terminal escapes and invalid UTF-8 (a real CPython subprocess) is
  escaped in the text report and valid UTF-8 JSON in the JSON report."""
import json
import os
import shutil
import struct
import subprocess
import time
import unittest

import ctharness as h

PY = h.SYSTEM_PYTHON


def cli_bytes(*args, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    return subprocess.run([h.CLI, *args], capture_output=True, env=env, timeout=timeout)


class RobustnessTest(h.TempDirTest):
    def real_run(self):
        r = h.run_traced(["/bin/sh", "-c", "/bin/true; /bin/echo hi"], out_dir=os.path.join(self.tmp, "run"))
        self.assertEqual((r.returncode, r.stdout), (0, "hi\n"), r.stderr)
        self.assertGreaterEqual(len(r.traces), 2)
        return r

    def test_unreadable_files_in_a_directory_are_warnings(self):
        r = self.real_run()
        zero = os.path.join(r.out_dir, "colabtrace.zero.1.ctrace")
        with open(zero, "wb") as f:
            f.write(b"\0" * 65536)
        garbage = os.path.join(r.out_dir, "colabtrace.garbage.2.ctrace")
        with open(garbage, "wb") as f:
            f.write(b"this is not a trace\n" * 100)
        p = cli_bytes("report", "--format", "json", r.out_dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        self.assertEqual(len(rep["processes"]), len(r.traces))
        skipped = [w for w in rep["warnings"] if w.startswith("skipped unreadable trace: ")]
        self.assertEqual(sorted(skipped), [f"skipped unreadable trace: {garbage}: not a colabtrace trace (bad magic)",
                                           f"skipped unreadable trace: {zero}: not a colabtrace trace (bad magic)"])
        self.assertIn(f"warning: skipped {zero}".encode(), p.stderr)
        # Named on the command line, the same file is an input that cannot be read.
        p = cli_bytes("report", "--format", "json", zero, r.traces[0])
        self.assertEqual(p.returncode, 2)
        self.assertIn(f"{zero}: not a colabtrace trace (bad magic)".encode(), p.stderr)

    def test_a_report_that_cannot_be_written_is_exit_2(self):
        # stdout on a full disk: the streamed JSON report's failed write is an error, not
        # a silent success with a missing report.
        r = self.real_run()
        if not os.path.exists("/dev/full"):
            self.skipTest("no /dev/full here")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        for fmt in ("json", "text", "html"):
            with self.subTest(fmt), open("/dev/full", "wb") as full:
                p = subprocess.run([h.CLI, "report", "--format", fmt, r.out_dir], stdout=full,
                                   stderr=subprocess.PIPE, env=env, timeout=120)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(b"cannot write", p.stderr)
        p = cli_bytes("report", "--format", "json", "-o", os.path.join(self.tmp, "no", "such", "dir.json"),
                      r.out_dir)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"cannot write", p.stderr)

    def test_a_cut_trace_reports_where_reading_stopped(self):
        r = self.real_run()
        src = r.traces[0]
        with open(src, "rb") as f:
            data = f.read()
        chunk = struct.unpack_from("<I", data, 24)[0]  # FileHeader.chunk_size
        cut = os.path.join(self.tmp, "cut.ctrace")
        with open(cut, "wb") as f:
            f.write(data[: chunk + chunk // 2])  # the header's chunk, then half of the first chunk
        with self.subTest("control: the whole trace reads without warnings"):
            self.assertEqual(json.loads(cli_bytes("report", "--format", "json", src).stdout)["warnings"], [])
        p = cli_bytes("report", "--format", "json", cut)
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        self.assertEqual(len(rep["processes"]), 1)
        self.assertEqual(rep["warnings"], [f"{cut}: offset {chunk}: the file ends inside this chunk; records after the end are lost"])

    def test_a_sparse_terabyte_trace_is_read_for_what_it_holds(self):
        r = self.real_run()
        sparse = os.path.join(self.tmp, "sparse.ctrace")
        shutil.copy(r.traces[0], sparse)
        os.truncate(sparse, 1 << 40)  # 1 TiB apparent size, a hole after the data
        if os.stat(sparse).st_blocks * 512 > 64 << 20:
            self.skipTest("this filesystem does not keep holes")
        t0 = time.monotonic()
        p = cli_bytes("report", "--format", "json", sparse, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertLess(time.monotonic() - t0, 30)
        plain = json.loads(cli_bytes("report", "--format", "json", r.traces[0]).stdout)
        rep = json.loads(p.stdout)
        self.assertEqual([(x["pid"], x["argv"]) for x in rep["processes"]],
                         [(x["pid"], x["argv"]) for x in plain["processes"]])

    @unittest.skipUnless(os.path.exists(PY), "needs /usr/bin/python3")
    def test_hostile_argv_is_escaped_in_text_and_valid_in_json(self):
        code = ("import subprocess; subprocess.run([b'/bin/echo', b'line1\\nline2', b'\\x1b[31mred\\x1b[0m', "
                "b'\\r\\x07bell', b'\\xff\\xfebad', b'\\xc2\\x9b2J'], check=True, stdout=subprocess.DEVNULL)")
        r = h.run_traced([PY, "-c", code])
        self.assertEqual(r.returncode, 0, r.stderr)
        text = cli_bytes("report", *r.traces)
        self.assertEqual(text.returncode, 0, text.stderr)
        out = text.stdout
        for raw in (b"\x1b", b"\r", b"\x07", b"\xff", b"\xc2\x9b", b"line1\nline2"):
            self.assertNotIn(raw, out)
        self.assertIn(b"line1\\nline2", out)
        self.assertIn(b"\\x1b[31mred\\x1b[0m", out)
        self.assertIn(b"\\r\\x07bell", out)
        self.assertIn(b"\\xff\\xfebad", out)
        self.assertIn(b"\\x9b2J", out)
        js = cli_bytes("report", "--format", "json", *r.traces)
        rep = json.loads(js.stdout.decode("utf-8"))  # strict: valid UTF-8
        echo = [p for p in rep["processes"] if p["exe"] == "/bin/echo" or (p["argv"] and p["argv"][0] == "/bin/echo")]
        self.assertEqual(len(echo), 1)
        self.assertEqual(echo[0]["argv"], ["/bin/echo", "line1\nline2", "\x1b[31mred\x1b[0m", "\r\x07bell",
                                           "\ufffd\ufffdbad", "\x9b2J"])


if __name__ == "__main__":
    unittest.main()
