"""`colabtrace export --format ndjson -o DIR`: one table per file, each row with its host
and pid, checked against what real programs did (tests/cli's workloads under the shim)."""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import unittest

import ctharness as h

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
from cli_runs import (CHUNK, HAVE_SIMCUDA, MIB, NO_SIMCUDA, WORKLOAD, data_file,  # noqa: E402
                      gpu_workload, workload)

TABLES = ["processes", "findings", "gpu_events", "io_files", "libraries", "samples"]
NODE = shutil.which("node")
# Where tools/lib/setup.sh installs npm's DuckDB engine.
NODE_MODULES = os.path.join(os.environ.get("COLABTRACE_NODE_DIR",
                                           os.path.expanduser("~/.cache/colabtrace/node")),
                            "node_modules")
HAVE_DUCKDB = NODE is not None and os.path.isdir(os.path.join(NODE_MODULES, "@duckdb", "node-api"))
NO_DUCKDB = (f"needs node and npm's @duckdb/node-api in {NODE_MODULES} "
             "(tools/lib/setup.sh installs it; COLABTRACE_NODE_DIR overrides the place)")
OTHER_MACHINE = "0123456789abcdef0123456789abcdef"


class NdjsonExportTest(h.TempDirTest):
    def export(self, *inputs) -> dict[str, list[dict]]:
        """Exports inputs into a fresh directory; returns {table: rows}."""
        out = os.path.join(self.tmp, "tables")
        p = h.cli("export", "--format", "ndjson", "-o", out, *inputs, check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(out)), sorted(t + ".ndjson" for t in TABLES))
        tables = {}
        for t in TABLES:
            with open(os.path.join(out, t + ".ndjson"), encoding="utf-8") as f:
                text = f.read()
            self.assertTrue(text == "" or text.endswith("\n"), t)
            tables[t] = [json.loads(line) for line in text.splitlines()]
            for row in tables[t]:
                self.assertIn("host", row, t)
                self.assertIn("pid", row, t)
        self.out_dir = out
        return tables

    def test_processes_files_samples_and_libraries_of_a_forking_run(self):
        # The parent opens the data file once and reads it 3 times; each of its 2 forked
        # children opens it once and reads it 5 times.
        run = workload(self.tmp, "run", reads=3, fork=2, child_reads=5)
        data = data_file(self.tmp)
        t = self.export(run.out_dir)
        rep = h.report(run.out_dir)

        procs = t["processes"]
        self.assertEqual(len(procs), 3)
        pids = {p["pid"] for p in rep["processes"]}
        self.assertEqual({p["pid"] for p in procs}, pids)
        parent = next(p for p in procs if p["ppid"] not in pids)
        children = [p for p in procs if p is not parent]
        self.assertEqual({c["ppid"] for c in children}, {parent["pid"]})
        self.assertEqual({p["end_kind"] for p in procs}, {"exited"})
        self.assertEqual((parent["opens"], parent["reads"], parent["bytes_read"]), (1, 3, 3 * CHUNK))
        for c in children:
            self.assertEqual((c["opens"], c["reads"], c["bytes_read"]), (1, 5, 5 * CHUNK))
            self.assertEqual(c["reaped_by"], parent["pid"])
        self.assertEqual(len({p["host"] for p in procs}), 1)
        host = procs[0]["host"]
        self.assertTrue(host.startswith(("machine:", "boot:", "host:")), host)

        # io_files: one row per process and file; the data file is one row per process.
        data_rows = [r for r in t["io_files"] if r["path"] == data]
        self.assertEqual(sorted((r["pid"], r["opens"], r["reads"], r["bytes_read"]) for r in data_rows),
                         sorted([(parent["pid"], 1, 3, 3 * CHUNK)] +
                                [(c["pid"], 1, 5, 5 * CHUNK) for c in children]))
        by_trace_pid = {p["trace_file"]: p["pid"] for p in procs}
        for trace in run.traces:
            pid = next(v for k, v in by_trace_pid.items() if os.path.samefile(k, trace))
            # Rows of files this process opened == the distinct paths its successful
            # io_open records name.
            opened = {r["path"] for r in h.records(trace, "io_open") if int(r["fd"]) >= 0}
            self.assertEqual({r["path"] for r in t["io_files"] if r["pid"] == pid and r["opens"] > 0},
                             opened)
            self.assertEqual(sum(r["opens"] for r in t["io_files"] if r["pid"] == pid), len(
                [r for r in h.records(trace, "io_open") if int(r["fd"]) >= 0]))
            # samples: one row per sample record of the trace.
            samples = [s for s in t["samples"] if s["pid"] == pid]
            self.assertEqual([s["rss_bytes"] for s in samples],
                             [int(s["rss_bytes"]) for s in h.records(trace, "sample")])
            self.assertEqual({s["source"] for s in samples}, {"shim"})
        self.assertEqual({r["host"] for r in t["io_files"] + t["samples"] + t["libraries"]}, {host})

        # libraries: the report's libraries[] rows, one per process and object.
        self.assertEqual(sorted((r["pid"], r["path"]) for r in t["libraries"]),
                         sorted((r["pid"], r["path"]) for r in rep["libraries"]))
        self.assertEqual(t["gpu_events"], [])
        self.assertEqual(t["findings"], [])

    def test_a_child_running_a_static_program_has_its_rows(self):
        # CPython's subprocess vforks a child that execs a static program: no trace of its
        # own; the report lists it from its parent's records, and so do the tables.
        static = h.built_test_program("core", "ct_exit_static")
        run = h.run_traced([h.SYSTEM_PYTHON, "-c", f"import subprocess; print(subprocess.run([{static!r}, 'exit', '3'],"
                            " stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode)"],
                           out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.stdout, "3\n")
        t = self.export(run.out_dir)
        (py,) = [p for p in t["processes"] if p["exe"] != static]
        (child,) = [p for p in t["processes"] if p["exe"] == static]
        self.assertEqual((child["ppid"], child["argv"], child["end_kind"], child["exit_code"], child["reaped_by"]),
                         (py["pid"], [static, "exit", "3"], "exited", 3, py["pid"]))
        self.assertEqual((child["host"], child["trace_file"], child["opens"]), (py["host"], "", None))
        self.assertEqual([(r["pid"], r["path"], r["how"]) for r in t["libraries"] if r["pid"] == child["pid"]],
                         [(child["pid"], static, "startup")])

    def test_killed_process_is_a_finding_row(self):
        run = workload(self.tmp, "run", kill=True)
        t = self.export(run.out_dir)
        rep = h.report(run.out_dir)
        (proc,) = t["processes"]
        self.assertEqual((proc["end_kind"], proc["exit_code"]), ("killed", None))
        self.assertEqual(sorted((f["id"], f["pid"], f["severity"]) for f in t["findings"]),
                         sorted((f["id"], f["pid"], f["severity"]) for f in rep["findings"]))
        killed = [f for f in t["findings"] if f["id"] == "proc.killed"]
        self.assertEqual(len(killed), 1)
        self.assertEqual((killed[0]["pid"], killed[0]["host"]), (proc["pid"], proc["host"]))
        self.assertIsInstance(killed[0]["evidence"], dict)

    @unittest.skipUnless(HAVE_SIMCUDA, NO_SIMCUDA)
    def test_one_gpu_event_per_malloc_and_free_call(self):
        # 5 cudaMalloc of 4 MiB, 2 that fail (1 TiB), 4 cudaFree (the last one leaks).
        run = gpu_workload(self.tmp, "gpu", allocs=5, size=4 * MIB, leak=1, fail=2)
        t = self.export(run.out_dir)
        (proc,) = t["processes"]
        events = t["gpu_events"]
        self.assertEqual(len(events), 5 + 2 + 4)
        self.assertEqual({e["pid"] for e in events}, {proc["pid"]})
        self.assertEqual([e["ts_ns"] for e in events], sorted(e["ts_ns"] for e in events))
        allocs = [e for e in events if e["event"] == "alloc"]
        frees = [e for e in events if e["event"] == "free"]
        self.assertEqual({e["api"] for e in allocs}, {"cudaMalloc"})
        self.assertEqual({e["api"] for e in frees}, {"cudaFree"})
        ok = [e for e in allocs if e["rc"] == 0]
        self.assertEqual([e["size"] for e in ok], [4 * MIB] * 5)
        failed = [e for e in allocs if e["rc"] != 0]
        self.assertEqual([(e["size"], e["error"]) for e in failed],
                         [(1 << 40, "cudaErrorMemoryAllocation")] * 2)
        self.assertEqual([e["rc"] for e in frees], [0] * 4)
        self.assertEqual({e["kind"] for e in ok + frees}, {"device"})
        self.assertEqual(sorted(e["addr"] for e in frees), sorted(e["addr"] for e in ok[:4]))
        self.assertEqual((proc["gpu_allocations"], proc["gpu_frees"], proc["gpu_failed_allocations"],
                          proc["gpu_leaked_bytes"]), (5, 4, 2, 4 * MIB))

    def test_samples_of_colabtrace_run_are_source_run(self):
        # colabtrace run samples its command from outside (proc_sample records in its own
        # trace); its trace is not a process of the job.
        out = os.path.join(self.tmp, "run")
        p = h.colabtrace_run(out, [WORKLOAD, "--sleep-ms", "300"], env={"COLABTRACE_SAMPLE_MS": "20"},
                             timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        t = self.export(out)
        wrapper = [tr for tr in glob.glob(os.path.join(out, "*.ctrace")) if h.records(tr, "run_info")]
        self.assertEqual(len(wrapper), 1)
        (proc,) = t["processes"]
        self.assertEqual(proc["argv"][1:], ["--sleep-ms", "300"])
        outside = [s for s in t["samples"] if s["source"] == "run"]
        recorded = h.records(wrapper[0], "proc_sample")
        self.assertGreater(len(recorded), 0)
        self.assertEqual(sorted((s["pid"], s["rss_bytes"]) for s in outside),
                         sorted((int(r["pid"]), int(r["rss_bytes"])) for r in recorded))
        self.assertIn(proc["pid"], {s["pid"] for s in outside})
        self.assertEqual({s["sampler_pid"] for s in outside}, {h.report(out)["run"][0]["pid"]})
        own = [s for s in t["samples"] if s["source"] == "shim"]
        self.assertEqual({s["pid"] for s in own}, {proc["pid"]})

    def test_ndjson_needs_a_directory(self):
        p = h.cli("export", "--format", "ndjson", "-o", "-", self.tmp, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("-o DIR", p.stderr)

    @unittest.skipUnless(h.can_fake_machine(), "needs root and unshare -m (a second machine-id)")
    def test_two_hosts_keep_their_host_column(self):
        # The same file read on this machine (2 reads) and on "another" one (4 reads).
        data = data_file(self.tmp)
        out = os.path.join(self.tmp, "traces")
        os.makedirs(out)
        here = h.run_traced([WORKLOAD, "--file", data, "--reads", "2"], out_dir=out)
        self.assertEqual(here.returncode, 0, here.stderr)
        p = h.run_on_other_machine(f"{WORKLOAD} --file {data} --reads 4", out, OTHER_MACHINE, self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        t = self.export(out)
        with open("/etc/machine-id") as f:
            mine = "machine:" + f.read().strip()
        other = "machine:" + OTHER_MACHINE
        self.assertEqual(sorted(p["host"] for p in t["processes"]), sorted([mine, other]))
        host_of = {p["pid"]: p["host"] for p in t["processes"]}
        rows = [r for r in t["io_files"] if r["path"] == data]
        self.assertEqual(sorted((r["host"], r["opens"], r["bytes_read"]) for r in rows),
                         sorted([(mine, 1, 2 * CHUNK), (other, 1, 4 * CHUNK)]))
        for table in ("io_files", "libraries", "samples"):
            for r in t[table]:
                self.assertEqual(r["host"], host_of[r["pid"]], table)

    @unittest.skipUnless(HAVE_DUCKDB, NO_DUCKDB)
    def test_tables_load_into_duckdb(self):
        run = workload(self.tmp, "run", reads=3, fork=2, child_reads=5)
        data = data_file(self.tmp)
        t = self.export(run.out_dir)
        d = self.out_dir
        # The query README.md shows: read_ndjson_auto over the export directory's tables.
        sql = (f"SELECT p.pid, p.end_kind, f.reads, f.bytes_read "
               f"FROM read_ndjson_auto('{d}/processes.ndjson') p "
               f"JOIN read_ndjson_auto('{d}/io_files.ndjson') f USING (host, pid) "
               f"WHERE f.path = '{data}' ORDER BY p.pid")
        p = subprocess.run([NODE, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                               "duckdb_query.cjs"), NODE_MODULES, sql],
                           capture_output=True, text=True, timeout=120)
        if p.returncode == 3:
            self.skipTest(p.stderr.strip())
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = json.loads(p.stdout)
        expect = sorted((pr["pid"], "exited", pr["reads"], pr["bytes_read"]) for pr in t["processes"])
        self.assertEqual([(int(r["pid"]), r["end_kind"], int(r["reads"]), int(r["bytes_read"]))
                          for r in rows], expect)
        self.assertEqual(sorted(r[2] for r in expect), [3, 5, 5])
        # Every table loads, with its row count.
        counts = " UNION ALL ".join(
            f"SELECT '{name}' AS t, count(*)::INTEGER AS n FROM read_ndjson_auto('{d}/{name}.ndjson')"
            for name in TABLES if t[name])
        p = subprocess.run([NODE, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                               "duckdb_query.cjs"), NODE_MODULES, counts],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual({r["t"]: r["n"] for r in json.loads(p.stdout)},
                         {name: len(rows) for name, rows in t.items() if rows})


if __name__ == "__main__":
    unittest.main()
