"""Bad shim settings: one clear line on stderr, defaults used, the program runs as
without the shim. COLABTRACE_DISABLE=1 writes nothing; an unusable COLABTRACE_OUT
changes nothing for the program."""
import glob
import os
import subprocess
import unittest

from coretest import prog, records, report, run_plain, shim_env
from ctharness import TempDirTest


class SettingsTest(TempDirTest):
    ARGV_EXIT = ("exit", "3")

    def run_both(self, extra_env, out_dir=None):
        argv = [prog("ct_exit"), *self.ARGV_EXIT]
        bare = run_plain(argv)
        env = shim_env(out_dir or self.tmp, extra_env)
        traced = subprocess.run(argv, env=env, capture_output=True, timeout=60)
        self.assertEqual(traced.returncode, bare.returncode)
        self.assertEqual(bare.returncode, 3)
        self.assertEqual(traced.stdout, bare.stdout)
        return bare, traced

    def test_bad_values_print_exactly_one_line(self):
        cases = [("COLABTRACE_STACKS", "abc"), ("COLABTRACE_STACKS", "999"),
                 ("COLABTRACE_SAMPLE_MS", "-5"), ("COLABTRACE_IO", "maybe"),
                 ("COLABTRACE_VERBOSE", "loud")]
        for name, value in cases:
            with self.subTest(name=name, value=value):
                out = os.path.join(self.tmp, f"{name}-{value}")
                os.mkdir(out)
                bare, traced = self.run_both({name: value}, out)
                extra = traced.stderr.decode()
                self.assertTrue(extra.endswith(bare.stderr.decode()), extra)
                extra = extra[: len(extra) - len(bare.stderr)]
                lines = extra.splitlines()
                self.assertEqual(len(lines), 1, extra)
                self.assertTrue(lines[0].startswith(f'colabtrace: ignoring {name}="{value}"'), lines[0])
                self.assertIn("using the default", lines[0])
                # The trace is written as usual, and it notes the bad value.
                (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
                notes = records(trace, "shim_note")
                self.assertEqual([n["code"] for n in notes], ["1"])
                self.assertIn(name, notes[0]["text"])
                self.assertEqual(report(trace)["processes"][0]["end"]["code"], 3)

    def test_disable_writes_no_trace(self):
        bare, traced = self.run_both({"COLABTRACE_DISABLE": "1"})
        self.assertEqual(traced.stderr, bare.stderr)
        self.assertEqual(os.listdir(self.tmp), [])

    def test_unusable_out_dir_changes_nothing_for_the_program(self):
        for out in ("/nonexistent/dir/", "/proc/self/nope/", "/dev/null/x"):
            with self.subTest(out=out):
                bare, traced = self.run_both({"COLABTRACE_OUT": out})
                self.assertEqual(traced.stderr, bare.stderr)
        self.assertFalse(os.path.exists("/nonexistent"))

    def test_out_as_a_file_prefix(self):
        prefix = os.path.join(self.tmp, "run1")
        bare, traced = self.run_both({"COLABTRACE_OUT": prefix})
        self.assertEqual(traced.stderr, bare.stderr)
        traces = glob.glob(prefix + ".ct_exit.*.ctrace")
        self.assertEqual(len(traces), 1, os.listdir(self.tmp))


if __name__ == "__main__":
    unittest.main()
