"""`colabtrace baseline` and `colabtrace check`: budgets of real runs, regressions,
hand-edited limits, JUnit output and exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import unittest
import xml.etree.ElementTree as ET

import ctharness as h
from cli_runs import (CHUNK, HAVE_GPU_HOOKS, HAVE_IO_HOOKS, HAVE_SIMCUDA, MIB, NO_SIMCUDA,
                      WAITS_ON_GPU, WAITS_ON_GPU_ANALYSIS, WAITS_ON_IO, check_table, gpu_workload,
                      has_gpu_analysis, load_json, report_findings, save_json, workload)

METRICS = ["processes", "duration_ns", "peak_rss_bytes", "gpu.allocations", "gpu.frees",
           "gpu.failed_allocations", "gpu.peak_bytes", "gpu.leak_growth_bytes", "io.opens", "io.reads",
           "io.bytes_read", "steps.count", "steps.median_ns", "steps.input_wait_percent",
           "steps.gpu_allocations_per_step"]
ROLE = "cli_workload"
SECOND = 10**9


def plus10(v: int) -> int:
    return v + v // 10


class BudgetTest(h.TempDirTest):
    def baseline(self, *inputs, extra=(), name="budget.json"):
        path = os.path.join(self.tmp, name)
        p = h.cli("baseline", *extra, "-o", path, *inputs, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        return path, load_json(path)

    def check(self, budget, *inputs, extra=(), rc=None):
        p = h.cli("check", "--baseline", budget, *extra, *inputs, check=False)
        if rc is not None:
            self.assertEqual(p.returncode, rc, p.stdout + p.stderr)
        return p

    def regressions(self, metrics: dict) -> list:
        return sorted(k for k, r in metrics.items() if r["verdict"].startswith("REGRESSION"))


class BaselineTest(BudgetTest):
    def test_budget_holds_every_metric_with_default_limits(self):
        run = workload(self.tmp, "good", reads=10, setenv=3)
        proc = h.report(run.out_dir)["processes"][0]
        _, b = self.baseline(run.out_dir)
        self.assertEqual(b["schema"], "colabtrace.budget.v1")
        self.assertEqual(b["tolerance_percent"], 10)
        self.assertEqual(b["time_slack_ns"], SECOND)
        self.assertEqual(b["rss_slack_bytes"], MIB)
        self.assertNotIn("gpu_arch", b)
        self.assertEqual(list(b["roles"]), [ROLE])
        # Every finding of the run, exactly as `report` has it; none above info here.
        self.assertEqual(b["findings"], report_findings(run.out_dir))
        self.assertEqual([s for s in b["findings"].values() if s != "info"], [])
        rss, dur = proc["peak_rss_bytes"], proc["duration_ns"]
        self.assertGreater(rss, 0)
        for scope in (b["total"], b["roles"][ROLE]):
            self.assertEqual(list(scope), METRICS)
            self.assertEqual(scope["processes"], {"value": 1, "max": 1})
            # Sampled RSS moves with timing: 1 MiB more (rss_slack_bytes).
            self.assertEqual(scope["peak_rss_bytes"], {"value": rss, "max": plus10(rss) + MIB})
            self.assertEqual(scope["duration_ns"], {"value": dur, "max": plus10(dur) + SECOND})
            # No GPU calls: zero, and exact limits stay zero.
            for m in ("gpu.allocations", "gpu.frees", "gpu.failed_allocations", "gpu.peak_bytes",
                      "gpu.leak_growth_bytes"):
                self.assertEqual(scope[m], {"value": 0, "max": 0}, m)

    @unittest.skipUnless(HAVE_IO_HOOKS, WAITS_ON_IO)
    def test_budget_io_metrics(self):
        run = workload(self.tmp, "good", reads=10, setenv=3)
        _, b = self.baseline(run.out_dir)
        for scope in (b["total"], b["roles"][ROLE]):
            self.assertEqual(scope["io.opens"], {"value": 1, "max": 1})
            self.assertEqual(scope["io.reads"], {"value": 10, "max": 11})
            self.assertEqual(scope["io.bytes_read"], {"value": 10 * CHUNK, "max": 11 * CHUNK})

    def test_tolerance_and_time_slack_override_the_defaults(self):
        run = workload(self.tmp, "good", reads=4)
        proc = h.report(run.out_dir)["processes"][0]
        rss, dur = proc["peak_rss_bytes"], proc["duration_ns"]
        _, b = self.baseline(run.out_dir, extra=("--tolerance", "50", "--time-slack", "0", "--rss-slack", "0"),
                             name="b50.json")
        self.assertEqual(b["tolerance_percent"], 50)
        self.assertEqual((b["time_slack_ns"], b["rss_slack_bytes"]), (0, 0))
        self.assertEqual(b["total"]["peak_rss_bytes"], {"value": rss, "max": rss + rss // 2})
        self.assertEqual(b["total"]["duration_ns"], {"value": dur, "max": dur + dur // 2})
        self.assertEqual(b["total"]["processes"], {"value": 1, "max": 1})  # exact stays exact
        _, b = self.baseline(run.out_dir, extra=("--tolerance=12.5%",), name="b125.json")
        self.assertEqual(b["tolerance_percent"], 12.5)
        self.assertEqual(b["total"]["peak_rss_bytes"]["max"], rss + rss * 125 // 1000 + MIB)
        _, b = self.baseline(run.out_dir, extra=("--tolerance", "0", "--time-slack", "0.5", "--rss-slack", "0.5"),
                             name="b0.json")
        self.assertEqual(b["rss_slack_bytes"], MIB // 2)
        self.assertEqual(b["total"]["peak_rss_bytes"], {"value": rss, "max": rss + MIB // 2})
        self.assertEqual(b["total"]["duration_ns"], {"value": dur, "max": dur + SECOND // 2})

    def test_forked_children_form_their_own_role(self):
        run = workload(self.tmp, "good", fork=3)
        _, b = self.baseline(run.out_dir)
        self.assertEqual(list(b["roles"]), [ROLE, ROLE + " (fork)"])
        self.assertEqual(b["total"]["processes"], {"value": 4, "max": 4})
        self.assertEqual(b["roles"][ROLE]["processes"], {"value": 1, "max": 1})
        self.assertEqual(b["roles"][ROLE + " (fork)"]["processes"], {"value": 3, "max": 3})

    def test_findings_of_the_good_run_are_allowed(self):
        run = workload(self.tmp, "killed", kill=True)
        _, b = self.baseline(run.out_dir)
        self.assertEqual(b["findings"], report_findings(run.out_dir))
        self.assertEqual({i: s for i, s in b["findings"].items() if s != "info"}, {"proc.killed": "error"})
        self.check(os.path.join(self.tmp, "budget.json"), run.out_dir, rc=0)


class CheckTest(BudgetTest):
    def setUp(self):
        super().setUp()
        self.good = workload(self.tmp, "good", reads=10, setenv=3)
        self.budget, self.doc = self.baseline(self.good.out_dir)
        # Info findings of the good run (allowed, and present again in every variant).
        self.allowed = {i: {"allowed": s, "now": s, "verdict": "ok"}
                        for i, s in report_findings(self.good.out_dir).items()}
        self.checks = 2 * len(METRICS) + len(self.allowed)

    def test_same_program_passes(self):
        again = workload(self.tmp, "again", reads=10, setenv=3)
        p = self.check(self.budget, again.out_dir, rc=0)
        metrics, findings = check_table(p.stdout)
        self.assertEqual(len(metrics), 2 * len(METRICS))
        self.assertEqual(self.regressions(metrics), [])
        self.assertEqual(findings, self.allowed)
        proc = h.report(again.out_dir)["processes"][0]
        row = metrics[(ROLE, "peak_rss_bytes")]
        self.assertEqual(row["baseline"], self.doc["roles"][ROLE]["peak_rss_bytes"]["value"])
        self.assertEqual(row["limit"], self.doc["roles"][ROLE]["peak_rss_bytes"]["max"])
        self.assertEqual(row["now"], proc["peak_rss_bytes"])
        self.assertEqual(metrics[("total", "processes")], {"baseline": 1, "limit": 1, "now": 1, "verdict": "ok"})
        self.assertIn(f"PASS: {self.checks} checks, no regression", p.stdout)

    def test_more_memory_is_a_regression_naming_the_metric(self):
        bigger = workload(self.tmp, "bigger", reads=10, setenv=3, alloc_mib=64)
        rss = h.report(bigger.out_dir)["processes"][0]["peak_rss_bytes"]
        p = self.check(self.budget, bigger.out_dir, rc=1)
        metrics, _ = check_table(p.stdout)
        self.assertEqual(self.regressions(metrics), [("cli_workload", "peak_rss_bytes"), ("total", "peak_rss_bytes")])
        base = self.doc["total"]["peak_rss_bytes"]
        row = metrics[("total", "peak_rss_bytes")]
        self.assertEqual((row["baseline"], row["limit"], row["now"]), (base["value"], base["max"], rss))
        self.assertGreaterEqual(rss, base["value"] + 60 * MIB)
        self.assertIn(f"FAIL: 2 regressions in {self.checks} checks", p.stdout)
        self.assertIn(f"peak_rss_bytes of total is {rss}, over its limit {base['max']}", p.stdout)

    @unittest.skipUnless(HAVE_IO_HOOKS, WAITS_ON_IO)
    def test_twice_the_reads_is_a_regression(self):
        more = workload(self.tmp, "more", reads=20, setenv=3)
        p = self.check(self.budget, more.out_dir, rc=1)
        metrics, _ = check_table(p.stdout)
        self.assertEqual(self.regressions(metrics), [(ROLE, "io.bytes_read"), (ROLE, "io.reads"),
                                                     ("total", "io.bytes_read"), ("total", "io.reads")])
        self.assertEqual(metrics[("total", "io.reads")],
                         {"baseline": 10, "limit": 11, "now": 20, "verdict": "REGRESSION (+100.0%)"})
        self.assertEqual(metrics[(ROLE, "io.bytes_read")]["now"], 20 * CHUNK)
        self.assertIn("io.reads of cli_workload is 20, over its limit 11 (baseline 10, +100.0%)", p.stdout)

    def test_hand_loosened_budget_passes(self):
        bigger = workload(self.tmp, "bigger", reads=10, setenv=3, alloc_mib=64)
        rss = h.report(bigger.out_dir)["processes"][0]["peak_rss_bytes"]
        self.check(self.budget, bigger.out_dir, rc=1)
        doc = load_json(self.budget)
        doc["total"]["peak_rss_bytes"]["max"] = rss         # exactly at the limit passes
        doc["roles"][ROLE]["peak_rss_bytes"]["max"] = None  # not checked
        save_json(self.budget, doc)
        p = self.check(self.budget, bigger.out_dir, rc=0)
        metrics, _ = check_table(p.stdout)
        self.assertEqual(metrics[("total", "peak_rss_bytes")]["verdict"], "ok")
        self.assertEqual(metrics[("total", "peak_rss_bytes")]["limit"], rss)
        self.assertEqual(metrics[(ROLE, "peak_rss_bytes")]["verdict"], "no limit")
        # A bare number is a max; a deleted metric is not checked.
        doc["roles"][ROLE]["peak_rss_bytes"] = rss - 1
        del doc["total"]["peak_rss_bytes"]
        save_json(self.budget, doc)
        p = self.check(self.budget, bigger.out_dir, rc=1)
        metrics, _ = check_table(p.stdout)
        self.assertEqual(self.regressions(metrics), [(ROLE, "peak_rss_bytes")])
        self.assertNotIn(("total", "peak_rss_bytes"), metrics)

    def test_new_finding_is_a_regression_until_allowed(self):
        killed = workload(self.tmp, "killed", reads=10, setenv=3, kill=True)
        p = self.check(self.budget, killed.out_dir, rc=1)
        metrics, findings = check_table(p.stdout)
        self.assertEqual(self.regressions(metrics), [])
        self.assertEqual(findings, dict(self.allowed, **{
            "proc.killed": {"allowed": "-", "now": "error", "verdict": "REGRESSION"}}))
        self.assertIn("new error finding proc.killed", p.stdout)
        self.assertIn("FAIL: 1 regression in", p.stdout)
        # Listing its id in the budget allows it, as a user would after triage.
        doc = load_json(self.budget)
        doc["findings"]["proc.killed"] = "error"
        save_json(self.budget, doc)
        p = self.check(self.budget, killed.out_dir, rc=0)
        _, findings = check_table(p.stdout)
        self.assertEqual(findings["proc.killed"]["verdict"], "ok")
        # An allowed finding that went away is reported, and passes.
        p = self.check(self.budget, self.good.out_dir, rc=0)
        _, findings = check_table(p.stdout)
        self.assertEqual(findings, dict(self.allowed, **{
            "proc.killed": {"allowed": "error", "now": "-", "verdict": "gone"}}))

    def test_more_processes_is_a_regression(self):
        forked = workload(self.tmp, "forked", reads=10, setenv=3, fork=2)
        p = self.check(self.budget, forked.out_dir, rc=1)
        metrics, _ = check_table(p.stdout)
        self.assertEqual(self.regressions(metrics), [("total", "processes")])
        self.assertEqual(metrics[("total", "processes")]["now"], 3)
        new_role = metrics[(ROLE + " (fork)", "processes")]
        self.assertEqual(new_role, {"baseline": None, "limit": None, "now": 2, "verdict": "new role"})

    def test_junit_is_well_formed_with_one_failure_per_regression(self):
        bigger = workload(self.tmp, "bigger", reads=10, setenv=3, alloc_mib=64)
        junit = os.path.join(self.tmp, "check.xml")
        self.check(self.budget, bigger.out_dir, extra=("--junit", junit), rc=1)
        root = ET.parse(junit).getroot()
        self.assertEqual(root.tag, "testsuites")
        self.assertEqual((root.get("tests"), root.get("failures")), (str(self.checks), "2"))
        suite = root.find("testsuite")
        cases = suite.findall("testcase")
        self.assertEqual(len(cases), self.checks)
        self.assertEqual(suite.get("failures"), "2")
        failed = [c for c in cases if c.find("failure") is not None]
        self.assertEqual([c.get("name") for c in failed], ["total: peak_rss_bytes", ROLE + ": peak_rss_bytes"])
        self.assertIn("over its limit", failed[0].find("failure").get("message"))
        self.assertEqual(len([c for c in cases if c.get("classname") == "colabtrace.metrics"]), 2 * len(METRICS))
        self.assertEqual(sorted(c.get("name") for c in cases if c.get("classname") == "colabtrace.findings"),
                         sorted(self.allowed))
        # A killed variant adds a finding testcase that fails; a good run fails nothing.
        killed = workload(self.tmp, "killed", reads=10, setenv=3, kill=True)
        self.check(self.budget, killed.out_dir, extra=("--junit=" + junit,), rc=1)
        root = ET.parse(junit).getroot()
        finding_cases = [c for c in root.iter("testcase") if c.get("classname") == "colabtrace.findings"]
        self.assertEqual([c.get("name") for c in finding_cases], sorted([*self.allowed, "proc.killed"]))
        self.assertEqual([c.get("name") for c in finding_cases if c.find("failure") is not None], ["proc.killed"])
        self.assertEqual(root.get("failures"), "1")
        self.check(self.budget, self.good.out_dir, extra=("--junit", junit), rc=0)
        root = ET.parse(junit).getroot()
        self.assertEqual(root.get("failures"), "0")
        self.assertEqual(len(list(root.iter("failure"))), 0)

    def test_github_step_summary_gets_a_markdown_table(self):
        bigger = workload(self.tmp, "bigger", reads=10, setenv=3, alloc_mib=64)
        summary = os.path.join(self.tmp, "step-summary.md")
        with open(summary, "w") as f:
            f.write("an earlier step's summary\n")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        env["GITHUB_STEP_SUMMARY"] = summary
        p = subprocess.run([h.CLI, "check", "--baseline", self.budget, bigger.out_dir], env=env,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 1, p.stderr)
        metrics, _ = check_table(p.stdout)
        with open(summary) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], "an earlier step's summary")  # appended, not replaced
        self.assertEqual(lines[1], f"### colabtrace check: FAIL, 2 regressions in {self.checks} checks")
        header = lines.index("| metric | baseline | value | band | verdict |")
        rows = {}
        for line in lines[header + 2:header + 2 + self.checks]:
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            self.assertEqual(len(cells), 5, line)
            rows[cells[0]] = cells[1:]
        self.assertEqual(len(rows), self.checks)
        self.assertEqual(lines[header + 2 + self.checks], "")
        # Each metric row says what the text table says; the band is the budget's limit.
        def md(text):  # Markdown-escaped as the summary writes names from the run
            return text.replace("_", "\\_")

        def cell(v):
            return "-" if v is None else str(v)

        for (scope, metric), row in metrics.items():
            base, value, band, verdict = rows[md(metric if scope == "total" else f"{scope}: {metric}")]
            self.assertEqual((base, value), (cell(row["baseline"]), cell(row["now"])))
            self.assertEqual(band, "not checked" if row["limit"] is None else f"\u2264 {row['limit']}")
            self.assertEqual(verdict.split(" ", 1)[-1], row["verdict"])
        self.assertTrue(rows[md("peak_rss_bytes")][3].startswith("\u274c REGRESSION (+"))
        for fid, f in self.allowed.items():
            self.assertEqual(rows["finding " + md(fid)], [f["allowed"], f["now"], "\u2264 " + f["allowed"], "\u2705 ok"])
        # Without the variable nothing else is written.
        del env["GITHUB_STEP_SUMMARY"]
        before = os.path.getsize(summary)
        p = subprocess.run([h.CLI, "check", "--baseline", self.budget, self.good.out_dir], env=env,
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(os.path.getsize(summary), before)

    def test_malformed_budget_exits_2(self):
        cases = {
            "not json": ("{\"schema\": ", "it is not valid JSON"),
            "array": ("[]", "the top level is not a JSON object"),
            "no schema": ("{\"total\": {}}", "it has no \"schema\" field; a budget starts with"),
            "other schema": ("{\"schema\": \"colabtrace.report.v1\", \"total\": {}}",
                             "\"schema\" is \"colabtrace.report.v1\", expected \"colabtrace.budget.v1\""),
        }
        doc = load_json(self.budget)
        bad_max = dict(doc, total=dict(doc["total"], **{"io.reads": {"value": 1, "max": "many"}}))
        negative = dict(doc, roles={ROLE: {"processes": {"value": 1, "max": -1}}})
        no_max = dict(doc, total={"processes": {"value": 1}})
        bad_sev = dict(doc, findings={"proc.killed": "fatal"})
        no_total = {k: v for k, v in doc.items() if k != "total"}
        cases["bad max"] = (json.dumps(bad_max), 'total."io.reads".max must be a number >= 0 or null')
        cases["negative"] = (json.dumps(negative), f'roles."{ROLE}"."processes".max must be a number >= 0 or null')
        cases["no max"] = (json.dumps(no_max), 'total."processes" has no "max"')
        cases["bad severity"] = (json.dumps(bad_sev), 'findings."proc.killed" must be "error", "warning" or "info"')
        cases["no total"] = (json.dumps(no_total), 'it has no "total" object')
        for name, (text, message) in cases.items():
            with self.subTest(name):
                path = os.path.join(self.tmp, "bad.json")
                with open(path, "w") as f:
                    f.write(text)
                p = self.check(path, self.good.out_dir, rc=2)
                self.assertIn(f"colabtrace check: {path} is not a valid budget: {message}", p.stderr)
                self.assertEqual(p.stdout, "")
        p = self.check(os.path.join(self.tmp, "missing.json"), self.good.out_dir, rc=2)
        self.assertIn("cannot read the budget", p.stderr)
        # Unknown metrics (from a newer colabtrace) are skipped with a warning.
        doc["total"]["gpu.future_metric"] = {"value": 1, "max": 1}
        save_json(self.budget, doc)
        p = self.check(self.budget, self.good.out_dir, rc=0)
        self.assertIn('unknown metric total."gpu.future_metric" ignored', p.stderr)


class PythonCacheTest(BudgetTest):
    def test_second_run_reading_pycache_is_no_io_regression(self):
        # The same script twice in one directory: the first run compiles its 200 KB local
        # module and writes __pycache__/bigmod.*.pyc, the second reads that instead
        # (bytes_read of the process differs by far more than 10%). The data it reads, 10
        # reads of 1 KiB from data.bin, is the same, and that is what the budget holds.
        work = os.path.join(self.tmp, "work")
        os.makedirs(work)
        with open(os.path.join(work, "bigmod.py"), "w") as f:
            f.write("".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(6000)))
        with open(os.path.join(work, "data.bin"), "wb") as f:
            f.write(b"d" * 10240)
        with open(os.path.join(work, "main.py"), "w") as f:
            f.write("import bigmod\nwith open('data.bin', 'rb', buffering=0) as f:\n"
                    "    n = sum(len(f.read(1024)) for _ in range(10))\nprint(bigmod.f5(n))\n")
        outs = []
        for name in ("first", "second"):
            out = os.path.join(self.tmp, name)
            r = h.colabtrace_run(out, [h.SYSTEM_PYTHON, "main.py"], wrap=("env", "-C", work, "-u", "PYTHONDONTWRITEBYTECODE"))
            self.assertEqual((r.returncode, r.stdout), (0, "10245\n"), r.stderr)
            outs.append(out)
        self.assertTrue(os.listdir(os.path.join(work, "__pycache__")))
        (a,), (b,) = (h.report(o)["processes"] for o in outs)
        self.assertGreater(b["io"]["bytes_read"], a["io"]["bytes_read"] * 11 // 10)
        self.assertEqual([(p["io"]["data_opens"], p["io"]["data_reads"], p["io"]["data_bytes_read"]) for p in (a, b)],
                         [(1, 10, 10240)] * 2)
        budget, doc = self.baseline(outs[0])
        self.assertEqual(doc["total"]["io.bytes_read"], {"value": 10240, "max": 11264})
        p = self.check(budget, outs[1], rc=0)
        self.assertEqual(self.regressions(check_table(p.stdout)[0]), [])


class GpuBudgetTest(BudgetTest):
    ROLE = "cli_gpu_workload"

    @unittest.skipUnless(HAVE_SIMCUDA, NO_SIMCUDA)
    @unittest.skipUnless(HAVE_GPU_HOOKS, WAITS_ON_GPU)
    def test_gpu_metrics_and_regressions(self):
        good = gpu_workload(self.tmp, "good", allocs=4, size=4 * MIB)
        if not has_gpu_analysis(good.out_dir):
            self.skipTest(WAITS_ON_GPU_ANALYSIS)
        budget, b = self.baseline(good.out_dir)
        role = b["roles"][self.ROLE]
        for scope in (b["total"], role):
            self.assertEqual(scope["gpu.allocations"], {"value": 4, "max": 4})
            self.assertEqual(scope["gpu.frees"], {"value": 4, "max": 4})
            self.assertEqual(scope["gpu.failed_allocations"], {"value": 0, "max": 0})
            self.assertEqual(scope["gpu.peak_bytes"], {"value": 16 * MIB, "max": plus10(16 * MIB)})
            self.assertEqual(scope["gpu.leak_growth_bytes"], {"value": 0, "max": 0})
        self.check(budget, gpu_workload(self.tmp, "again", allocs=4, size=4 * MIB).out_dir, rc=0)

        more = gpu_workload(self.tmp, "more", allocs=8, size=4 * MIB)
        metrics, _ = check_table(self.check(budget, more.out_dir, rc=1).stdout)
        self.assertEqual(self.regressions(metrics), sorted(
            (s, m) for s in ("total", self.ROLE) for m in ("gpu.allocations", "gpu.frees", "gpu.peak_bytes")))
        self.assertEqual(metrics[("total", "gpu.peak_bytes")]["now"], 32 * MIB)

        # One buffer still held at exit is not a leak (issue 9: gpu.leak and the check's
        # gpu.leak_growth_bytes need growth after warm-up; tests/gpu/test_gpu_runtime.py
        # checks a growing leak regresses): the check passes.
        leak = gpu_workload(self.tmp, "leak", allocs=4, size=4 * MIB, leak=1)
        metrics, findings = check_table(self.check(budget, leak.out_dir, rc=0).stdout)
        self.assertEqual(self.regressions(metrics), [])
        self.assertEqual(metrics[("total", "gpu.leak_growth_bytes")]["now"], 0)
        self.assertNotIn("gpu.leak", findings)

        oom = gpu_workload(self.tmp, "oom", allocs=4, size=4 * MIB, fail=1)
        metrics, findings = check_table(self.check(budget, oom.out_dir, rc=1).stdout)
        self.assertIn(("total", "gpu.failed_allocations"), self.regressions(metrics))
        self.assertEqual(metrics[("total", "gpu.failed_allocations")]["now"], 1)
        self.assertEqual(findings["gpu.oom"]["verdict"], "REGRESSION")


class UsageTest(BudgetTest):
    def test_bad_flags_exit_2(self):
        run = workload(self.tmp, "good", reads=2)
        budget, _ = self.baseline(run.out_dir)
        out = os.path.join(self.tmp, "new.json")
        cases = [
            ("check", run.out_dir),
            ("check", "--baseline"),
            ("check", "--baseline", budget),
            ("check", "--baseline", budget, "--fail-on", "fatal", run.out_dir),
            ("check", "--baseline", budget, "--junit", run.out_dir),
            ("check", "--baseline", budget, "--frobnicate", run.out_dir),
            ("baseline", run.out_dir),
            ("baseline", "-o", out),
            ("baseline", "-o", out, "--tolerance", "ten", run.out_dir),
            ("baseline", "-o", out, "--tolerance", "-5", run.out_dir),
            ("baseline", "-o", out, "--time-slack", "soon", run.out_dir),
            ("baseline", "-o", out, "--rss-slack", "-1", run.out_dir),
            ("baseline", "-o", out, "--gpu-arch", "volta", run.out_dir),
            ("baseline", "-o", out, "--frobnicate", run.out_dir),
        ]
        for args in cases:
            with self.subTest(args=args):
                p = h.cli(*args, check=False)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(f"Try 'colabtrace {args[0]} --help'", p.stderr)
                self.assertFalse(os.path.exists(out))

    def test_report_flags_are_checked_alike_by_baseline_check_and_diff(self):
        run = workload(self.tmp, "good", reads=2)
        budget, _ = self.baseline(run.out_dir)
        out = os.path.join(self.tmp, "new.json")
        commands = {
            "baseline": ("baseline", "-o", out),
            "check": ("check", "--baseline", budget),
            "diff": ("diff",),
        }
        inputs = {"baseline": (run.out_dir,), "check": (run.out_dir,), "diff": (run.out_dir, run.out_dir)}
        bad = [
            (("--gpu-arch", "volta"), "--gpu-arch takes an architecture like sm_75, sm_80 or sm_90a"),
            (("--gpu-arch",), "--gpu-arch takes an architecture like sm_75, sm_80 or sm_90a"),
            (("--sysroot", os.path.join(self.tmp, "no-such-dir")), "--sysroot takes an existing directory"),
            (("--sysroot=" + budget,), "--sysroot takes an existing directory"),  # a file
        ]
        for name, cmd in commands.items():
            for flag, message in bad:
                with self.subTest(command=name, flag=flag):
                    # A flag with its value missing ends the command line.
                    args = (*cmd, *inputs[name], *flag) if flag == ("--gpu-arch",) else (*cmd, *flag, *inputs[name])
                    p = h.cli(*args, check=False)
                    self.assertEqual(p.returncode, 2, p.stderr)
                    self.assertIn(f"colabtrace {name}: {message}", p.stderr)
                    self.assertFalse(os.path.exists(out))
            with self.subTest(command=name, flag="good values"):
                p = h.cli(*cmd, "--gpu-arch", "sm_90", "--sysroot=" + self.tmp, *inputs[name], check=False)
                self.assertEqual(p.returncode, 0, p.stderr)
                if name == "baseline":
                    self.assertEqual(load_json(out)["gpu_arch"], "sm_90")
                    os.unlink(out)

    def test_unreadable_inputs_exit_2(self):
        run = workload(self.tmp, "good", reads=2)
        budget, _ = self.baseline(run.out_dir)
        garbage = os.path.join(self.tmp, "garbage.ctrace")
        with open(garbage, "wb") as f:
            f.write(b"not a trace at all" * 100)
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(empty)
        out = os.path.join(self.tmp, "new.json")
        for bad in (os.path.join(self.tmp, "missing"), garbage, empty):
            with self.subTest(bad=bad):
                p = h.cli("baseline", "-o", out, bad, check=False)
                self.assertEqual(p.returncode, 2)
                self.assertIn("colabtrace baseline: ", p.stderr)
                self.assertFalse(os.path.exists(out))
                p = h.cli("check", "--baseline", budget, bad, check=False)
                self.assertEqual(p.returncode, 2)
                self.assertEqual(p.stdout, "")
                # A good trace next to a bad one is not enough: part of a run would mislead.
                p = h.cli("check", "--baseline", budget, run.out_dir, bad, check=False)
                self.assertEqual(p.returncode, 2)

    def test_help(self):
        p = h.cli("baseline", "--help")
        self.assertEqual(p.returncode, 0)
        for text in ("--tolerance PCT", "--time-slack SECONDS", "--rss-slack MIB", "exact", "gpu.failed_allocations",
                     "set it to null"):
            self.assertIn(text, p.stdout)
        p = h.cli("check", "--help")
        self.assertEqual(p.returncode, 0)
        for text in ("--baseline FILE", "--junit FILE", "--fail-on SEVERITY", "Exit codes"):
            self.assertIn(text, p.stdout)


if __name__ == "__main__":
    unittest.main()
