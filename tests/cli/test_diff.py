"""`colabtrace diff A B`: two real runs side by side, text and JSON."""
from __future__ import annotations

import json
import os
import re
import unittest

import ctharness as h
from cli_runs import CHUNK, HAVE_IO_HOOKS, WAITS_ON_IO, report_findings, workload

ROLE = "cli_workload"
FORK_ROLE = ROLE + " (fork)"


def text_sections(stdout: str) -> dict[str, dict[str, tuple]]:
    """{role header: {metric: (a, b, delta)}} from the text output."""
    sections, current = {}, None
    for line in stdout.splitlines():
        m = re.match(r"^(\S.*?)  \(processes: A (\S+), B (\S+)\)$", line)
        if m:
            current = sections.setdefault(m[1], {"processes": (m[2], m[3])})
            continue
        m = re.match(r"^  (\S+)\s+(\S+)\s+(\S+)  ?(.*)$", line)
        if current is not None and m and m[1] != "metric":
            current[m[1]] = (m[2], m[3], m[4])
        if not line.startswith(" ") and not m:
            current = None if line == "findings" else current
    return sections


def delta(a: int, b: int) -> str:
    if a == b:
        return "="
    d = b - a
    return f"{'+' if d > 0 else '-'}{abs(d)} ({d * 100 / a:+.1f}%)"


class DiffTest(h.TempDirTest):
    def setUp(self):
        super().setUp()
        self.a = workload(self.tmp, "a", reads=5, setenv=2)
        self.b = workload(self.tmp, "b", reads=9, setenv=2, alloc_mib=64, fork=1)
        rep_a, rep_b = h.report(self.a.out_dir), h.report(self.b.out_dir)
        self.rss_a = rep_a["processes"][0]["peak_rss_bytes"]
        main_b = next(p for p in rep_b["processes"] if p["origin"] == "start")
        fork_b = next(p for p in rep_b["processes"] if p["origin"] == "fork")
        self.rss_b, self.rss_fork_b = main_b["peak_rss_bytes"], fork_b["peak_rss_bytes"]
        # The plain workload has no finding above info; the info ones are the same in A and B.
        self.common = sorted(report_findings(self.a.out_dir))
        self.assertEqual(self.common, sorted(report_findings(self.b.out_dir)))

    def test_text_shows_metrics_side_by_side(self):
        p = h.cli("diff", self.a.out_dir, self.b.out_dir, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"  A: {self.a.out_dir}\n  B: {self.b.out_dir}\n", p.stdout)
        s = text_sections(p.stdout)
        self.assertEqual(list(s), ["total", ROLE, FORK_ROLE])
        self.assertEqual(s["total"]["processes"], ("1", "2", "+1 (+100.0%)"))
        self.assertEqual(s["total"]["peak_rss_bytes"],
                         (str(self.rss_a), str(max(self.rss_b, self.rss_fork_b)),
                          delta(self.rss_a, max(self.rss_b, self.rss_fork_b))))
        self.assertEqual(s[ROLE]["peak_rss_bytes"],
                         (str(self.rss_a), str(self.rss_b), delta(self.rss_a, self.rss_b)))
        self.assertEqual(s[ROLE]["processes"], ("1", "1", "="))
        self.assertEqual(s[FORK_ROLE]["processes"], ("-", "1", ""))
        self.assertEqual(s[FORK_ROLE]["peak_rss_bytes"], ("-", str(self.rss_fork_b), ""))
        self.assertNotIn("gpu.allocations", s[ROLE])  # zero in both runs: left out
        self.assertIn("(metrics that are 0 in both runs are not shown", p.stdout)
        self.assertIn("findings\n  only in A: none\n  only in B: none\n  in both:", p.stdout)
        in_both = p.stdout.split("  in both:")[1]
        self.assertEqual(re.findall(r"^    (\S+) \(", in_both, re.M), self.common)
        if not self.common:
            self.assertEqual(in_both.split("\n\n")[0], " none")

    @unittest.skipUnless(HAVE_IO_HOOKS, WAITS_ON_IO)
    def test_text_shows_io_deltas(self):
        s = text_sections(h.cli("diff", self.a.out_dir, self.b.out_dir).stdout)
        self.assertEqual(s[ROLE]["io.reads"], ("5", "9", "+4 (+80.0%)"))
        self.assertEqual(s[ROLE]["io.bytes_read"], (str(5 * CHUNK), str(9 * CHUNK), "+16384 (+80.0%)"))
        self.assertEqual(s[ROLE]["io.opens"], ("1", "1", "="))

    def test_json(self):
        out = os.path.join(self.tmp, "diff.json")
        p = h.cli("diff", "--format", "json", "-o", out, self.a.out_dir, self.b.out_dir, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        with open(out) as f:
            doc = json.load(f)
        self.assertEqual(doc["schema"], "colabtrace.diff.v1")
        self.assertEqual((doc["a"], doc["b"]), (self.a.out_dir, self.b.out_dir))
        roles = {r["role"]: {m["metric"]: m for m in r["metrics"]} for r in doc["roles"]}
        self.assertEqual(list(roles), ["total", ROLE, FORK_ROLE])
        self.assertEqual(len(roles[ROLE]), 15)
        rss = roles[ROLE]["peak_rss_bytes"]
        self.assertEqual((rss["a"], rss["b"], rss["delta"]), (self.rss_a, self.rss_b, self.rss_b - self.rss_a))
        pct = (self.rss_b - self.rss_a) * 100 / self.rss_a
        self.assertAlmostEqual(rss["percent"], pct, delta=0.05 + abs(pct) * 1e-5)  # 1 decimal
        self.assertEqual(roles["total"]["processes"]["delta"], 1)
        fork = roles[FORK_ROLE]["processes"]
        self.assertEqual((fork["a"], fork["b"], fork["delta"], fork["percent"]), (None, 1, None, None))
        self.assertEqual((doc["findings"]["only_in_a"], doc["findings"]["only_in_b"]), ([], []))
        self.assertEqual([f["id"] for f in doc["findings"]["in_both"]], self.common)

    def test_findings_only_in_one_run_or_both(self):
        killed = workload(self.tmp, "killed", reads=5, setenv=2, kill=True)
        doc = json.loads(h.cli("diff", "--format=json", self.a.out_dir, killed.out_dir).stdout)
        self.assertEqual(doc["findings"]["only_in_a"], [])
        self.assertEqual([f["id"] for f in doc["findings"]["in_both"]], self.common)
        (only_b,) = doc["findings"]["only_in_b"]
        self.assertEqual((only_b["id"], only_b["severity_a"], only_b["severity_b"], only_b["count_b"]),
                         ("proc.killed", None, "error", 1))
        p = h.cli("diff", killed.out_dir, self.a.out_dir)
        self.assertRegex(p.stdout, r"only in A:\n    proc\.killed \(error x1\): pid \d+ .* was killed")
        self.assertIn("only in B: none\n", p.stdout)
        doc = json.loads(h.cli("diff", "--format", "json", killed.out_dir, killed.traces[0]).stdout)
        self.assertEqual([(f["id"], f["count_a"], f["count_b"]) for f in doc["findings"]["in_both"]],
                         sorted([("proc.killed", 1, 1), *((i, 1, 1) for i in self.common)]))

    def test_usage_errors_and_unreadable_runs_exit_2(self):
        garbage = os.path.join(self.tmp, "garbage.ctrace")
        with open(garbage, "wb") as f:
            f.write(b"CTRACE\r\n" + b"\xff" * 300)
        cases = [
            ((self.a.out_dir,), "expects two runs, A and B"),
            ((self.a.out_dir, self.b.out_dir, self.a.out_dir), "expects two runs, A and B"),
            (("--format", "xml", self.a.out_dir, self.b.out_dir), "--format takes text or json"),
            (("--frobnicate", self.a.out_dir, self.b.out_dir), "unknown option '--frobnicate'"),
            ((self.a.out_dir, os.path.join(self.tmp, "missing")), "colabtrace diff: B: "),
            ((garbage, self.b.out_dir), "colabtrace diff: A: "),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                p = h.cli("diff", *args, check=False)
                self.assertEqual(p.returncode, 2)
                self.assertIn(message, p.stderr)
                self.assertEqual(p.stdout, "")
        self.assertEqual(h.cli("diff", "--help").returncode, 0)



class EnvironmentDiffTest(h.TempDirTest):
    """The environment fingerprint, libraries and Python packages side by side: A runs
    Python importing only the standard library, B imports numpy (Debian's python3-numpy)."""

    def python_run(self, name, code):
        run = h.run_traced([h.SYSTEM_PYTHON, "-c", code], out_dir=os.path.join(self.tmp, name),
                           env={"COLABTRACE_PYTHON": "1"})
        self.assertEqual(run.returncode, 0, run.stderr)
        return run.out_dir, h.report(run.out_dir)

    def test_host_libraries_and_packages_side_by_side(self):
        a_dir, rep_a = self.python_run("a", "import json")
        b_dir, rep_b = self.python_run("b", "import numpy; numpy.ones(3).sum()")
        doc = json.loads(h.cli("diff", "--format", "json", a_dir, b_dir).stdout)
        env = doc["environment"]
        host = {r["key"]: r for r in env["host"]}
        (proc_a,) = rep_a["processes"]
        for key in ("os_release", "kernel", "glibc", "hostname"):
            self.assertEqual(host[key]["a"], [proc_a["host"][key]], key)
            self.assertEqual(host[key]["b"], host[key]["a"], key)
            self.assertTrue(host[key]["same"], key)

        def libraries(rep):
            out = {}
            for lib in rep["libraries"]:
                if lib["path"]:
                    out.setdefault(lib["soname"] or os.path.basename(lib["path"]), set()).add(lib["path"])
            return {k: sorted(v) for k, v in out.items()}

        libs_a, libs_b = libraries(rep_a), libraries(rep_b)
        rows = {r["key"]: r for r in env["libraries"]}
        self.assertEqual(sorted(rows), sorted(set(libs_a) | set(libs_b)))
        for key, r in rows.items():
            self.assertEqual((r["a"], r["b"]), (libs_a.get(key, []), libs_b.get(key, [])), key)
            self.assertEqual(r["same"], r["a"] == r["b"], key)
        only_b = [k for k, r in rows.items() if not r["a"]]
        self.assertTrue(any(k.startswith("_multiarray_umath") for k in only_b), only_b)
        packages = {r["key"]: r for r in env["python_packages"]}
        (numpy_b,) = [p for p in rep_b["python"]["packages"] if p["name"] == "numpy"]
        self.assertEqual((packages["numpy"]["a"], packages["numpy"]["b"]), ([], [numpy_b["version"]]))
        # Text: every host key; only the libraries and packages that differ.
        text = h.cli("diff", a_dir, b_dir).stdout
        self.assertIn(f"\nenvironment\n", text)
        self.assertIn(f"\n  os_release: {proc_a['host']['os_release']}\n", text)
        differ = sum(1 for r in rows.values() if not r["same"])
        self.assertIn(f"\nlibraries  ({differ} differ, {len(rows) - differ} the same)\n", text)
        self.assertIn(f"* numpy\n      A: -\n      B: {numpy_b['version']}\n", text)


if __name__ == "__main__":
    unittest.main()
