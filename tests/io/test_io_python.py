"""Real CPython under the shim: exact per-file opens/reads/bytes for a stat-open-read
loop, directory scans from os.walk and glob, and a multiprocessing fork pool whose
workers' reads are charged to the workers."""
import json
import os
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest, by_pid, cli, colabtrace_run, findings, report, run_traced
from iotest import API, file_rows, io_records, make_files

HERE = os.path.dirname(os.path.abspath(__file__))


def py(name):
    return os.path.join(HERE, "py", name)


class PythonIoTest(TempDirTest):
    def test_stat_open_read_loop_exact_counts(self):
        data = os.path.join(self.tmp, "data")
        sizes = [0, 1, 4095, 4096, 4097, 100000]
        for i, n in enumerate(sizes):
            with open(os.path.join(data if os.path.isdir(data) else (os.makedirs(data) or data), f"s{i}"), "wb") as f:
                f.write(b"a" * n)
        make_files(data, 200, 4096)
        passes, chunk = 3, 1000
        run = run_traced([SYSTEM_PYTHON, py("small_files.py"), data, str(passes), str(chunk)],
                         out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        out = json.loads(run.stdout)
        self.assertEqual(len(run.traces), 1)
        rep = report(*run.traces)
        rows = file_rows(rep, data + "/")
        files = sorted(os.path.join(data, n) for n in os.listdir(data))
        self.assertEqual(sorted(rows), files)
        total_bytes = 0
        for p in files:
            size = os.path.getsize(p)
            row = rows[p]
            raw = -(-size // chunk) + 1  # os.read until it returns b""
            # builtin open().read(): one read of the whole file and one at EOF (an empty
            # file: just the EOF read), per pass; plus the os.read loop.
            builtin = 2 if size else 1
            self.assertEqual(row["opens"], passes + 1, p)
            self.assertEqual(row["reads"], passes * builtin + raw, p)
            self.assertEqual(row["bytes_read"], (passes + 1) * size, p)
            self.assertGreaterEqual(row["stats"], passes, p)  # os.stat per pass (+ fstat)
            self.assertEqual(row["size"], size, p)
            self.assertEqual(row["passes"], passes + 1 if size else 0, p)
            self.assertEqual(row["random_reads"], 0, p)
            self.assertGreater(row["read_ns"], 0, p)
            total_bytes += (passes + 1) * size
        self.assertEqual(total_bytes, out["bytes"])
        # The process totals include these reads (and the interpreter's own).
        p = rep["processes"][0]["io"]
        self.assertGreaterEqual(p["opens"], len(files) * (passes + 1))
        self.assertGreaterEqual(p["bytes_read"], total_bytes)
        # The path stats: exactly one stat64 per file per pass.
        recs = io_records(run.traces[0])
        stats = [r for r in recs if r["rec"] == "io_stat" and r.get("path", "").startswith(data + "/")
                 and r["api"] == str(API["stat64"])]
        self.assertEqual(len(stats), len(files) * passes)

    def test_colabtrace_io_0_records_no_file_io(self):
        data = os.path.join(self.tmp, "data")
        make_files(data, 10, 100)
        run = run_traced([SYSTEM_PYTHON, py("small_files.py"), data, "1", "100"],
                         env={"COLABTRACE_IO": "0"}, out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(len(run.traces), 1)
        self.assertEqual(io_records(run.traces[0]), [])
        rep = report(*run.traces)
        self.assertEqual(rep["processes"][0]["io"]["opens"], 0)
        self.assertEqual(rep["io"]["files"], [])

    def test_walk_and_glob_are_directory_scans(self):
        root = os.path.join(self.tmp, "tree")
        for d in ("a", "b", "c"):
            make_files(os.path.join(root, d), 20, 10)
        os.makedirs(os.path.join(root, "a", "deeper"))
        run = run_traced([SYSTEM_PYTHON, py("scans.py"), root], out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        out = json.loads(run.stdout)
        self.assertEqual(out["glob"], 60)
        recs = io_records(run.traces[0])
        opendirs = [r for r in recs if r["rec"] == "io_dir" and r["api"] == str(API["opendir"])]
        scanned = {}
        for r in opendirs:
            scanned[r["path"]] = scanned.get(r["path"], 0) + 1
        # os.walk opens every directory once; glob scans root and each of a, b, c again.
        self.assertEqual(scanned[root], 2)
        for d in ("a", "b", "c"):
            self.assertEqual(scanned[os.path.join(root, d)], 2, d)
        self.assertEqual(scanned[os.path.join(root, "a", "deeper")], 1)
        # Each scan is one summary record with the entries readdir returned (. and ..
        # included), not one record per entry.
        summaries = [r for r in recs if r["rec"] == "io_dir" and r["api"] == str(API["readdir64"])]
        self.assertEqual(len(summaries), len(opendirs))
        rep = report(*run.traces)
        rows = file_rows(rep, root)
        self.assertEqual(rows[root]["kind"], "directory")
        self.assertEqual(rows[root]["dir_scans"], 2)
        self.assertEqual(rows[root]["dir_entries"], 2 * (3 + 2))
        self.assertEqual(rows[os.path.join(root, "a")]["dir_entries"], 2 * (20 + 1 + 2))

    def test_fork_pool_workers_own_their_reads(self):
        data = os.path.join(self.tmp, "data")
        files = make_files(data, 60, 3000)
        run = run_traced([SYSTEM_PYTHON, py("pool.py"), data], out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        got = {int(k): v for k, v in json.loads(run.stdout).items()}
        rep = report(*run.traces)
        procs = by_pid(rep)
        self.assertEqual(sum(len(v) for v in got.values()), len(files))
        main = [p for p in rep["processes"] if p["pid"] not in got]
        for pid, paths in got.items():
            self.assertIn(pid, procs)
            io = procs[pid]["io"]
            # multiprocessing also points each worker's stdin at /dev/null: one open.
            self.assertEqual(io["opens"], len(paths) + 1, pid)
            self.assertEqual(io["reads"], 2 * len(paths), pid)
            self.assertEqual(io["bytes_read"], 3000 * len(paths), pid)
        rows = file_rows(rep, data + "/")
        for pid, paths in got.items():
            for p in paths:
                self.assertEqual(rows[p]["pids"], [pid], p)
                self.assertEqual(rows[p]["opens"], 1)
                self.assertEqual(rows[p]["reads"], 2)
        devnull = file_rows(rep, "/dev/null")["/dev/null"]
        self.assertTrue(set(got) <= set(devnull["pids"]))
        # The parent read none of them.
        for p in main:
            self.assertFalse(any(p["pid"] in r["pids"] for r in rows.values()))

    def test_copying_a_tree_is_not_metadata_heavy(self):
        # shutil.copytree (sendfile) and cp -r (copy_file_range, or read/write) of 1,000
        # small files: the data moves by copy calls, and the destination is checked for
        # existence before each file is created. Neither is a lookup storm.
        src = os.path.join(self.tmp, "src")
        for d in range(10):
            make_files(os.path.join(src, f"d{d}"), 100, 100 + d)
        code = "import shutil, sys; shutil.copytree(sys.argv[1], sys.argv[2])"
        for name, argv in (("copytree", [SYSTEM_PYTHON, "-c", code]), ("cp", ["cp", "-r"])):
            dst = os.path.join(self.tmp, name)
            run = run_traced([*argv, src, dst], out_dir=os.path.join(self.tmp, "out-" + name))
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(sum(len(fs) for _, _, fs in os.walk(dst)), 1000)
            rep = report(*run.traces)
            self.assertEqual(findings(rep, "io.metadata-heavy"), [], name)
            rows = file_rows(rep, src + "/")
            self.assertEqual(len([r for r in rows.values() if r["kind"] == "file"]), 1000, name)
            for r in rows.values():
                if r["kind"] != "file":
                    continue
                size = 100 + int(os.path.basename(os.path.dirname(r["path"]))[1:])
                self.assertEqual((r["opens"], r["bytes_read"] + r.get("bytes_copied", 0)), (1, size), r)
                if name == "copytree":  # os.sendfile until it returns 0
                    self.assertEqual((r["copies"], r["bytes_copied"], r["reads"]), (2, size, 0), r)
            out = file_rows(rep, dst + "/")
            self.assertEqual(len([r for r in out.values() if r["kind"] == "file"]), 1000, name)

    def test_small_reads_are_system_calls_not_buffered_stdio_reads(self):
        # dd bs=4k reads a 4 MiB file in 1,024 read() calls of 4 KiB: io.small-reads, exact.
        # sort with a 1 MiB buffer reads a 2.6 MB file through fread_unlocked in 1,500-odd
        # small pieces served from its FILE buffer (the refills, 4 KiB and more, are not
        # traced): no finding.
        big = os.path.join(self.tmp, "big.bin")
        with open(big, "wb") as f:
            f.write(os.urandom(4 << 20))
        run = run_traced(["dd", f"if={big}", "of=/dev/null", "bs=4k"], out_dir=os.path.join(self.tmp, "out-dd"))
        self.assertEqual(run.returncode, 0, run.stderr)
        rep = report(*run.traces)
        (f,) = findings(rep, "io.small-reads")
        ev = f["evidence"]
        self.assertEqual((ev["small_reads"], ev["reads_on_large_files"]), (1024, 1024))
        self.assertEqual([(x["path"], x["reads"], x["size"]) for x in ev["files"]], [(big, 1025, 4 << 20)])

        nums = os.path.join(self.tmp, "nums.txt")
        with open(nums, "w") as f:
            f.write("".join(f"{(i * 7919) % 400000}\n" for i in range(400000)))
        run = run_traced(["sort", "-n", "-S", "1M", "-T", self.tmp, "-o", os.path.join(self.tmp, "sorted.txt"), nums],
                         out_dir=os.path.join(self.tmp, "out-sort"))
        self.assertEqual(run.returncode, 0, run.stderr)
        freads = [r for r in io_records(run.traces[0])
                  if r["rec"] == "io_read" and r["api_name"] in ("fread", "fread_unlocked")]
        if len(freads) < 1000:
            self.skipTest(f"this sort reads its input with {len(freads)} freads")
        rep = report(*run.traces)
        self.assertEqual(file_rows(rep, nums)[nums]["bytes_read"], os.path.getsize(nums))
        self.assertEqual(findings(rep, "io.small-reads"), [])

    def test_lookup_storm_is_metadata_heavy_with_exact_counts(self):
        data = os.path.join(self.tmp, "data")
        make_files(data, 1000, 200)
        run = run_traced([SYSTEM_PYTHON, py("lookup_storm.py"), data, "3", "10"],
                         out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout), {"samples": 1000, "read": 30, "bytes": 6000})
        rep = report(*run.traces)
        (f,) = findings(rep, "io.metadata-heavy")
        ev = f["evidence"]
        # Per epoch: exists and stat on 1,000 samples; 10 opens, each one read of 200
        # bytes (and one at end of file, which moves no data); one scan of data/. The
        # interpreter's own start-up lookups are not counted.
        self.assertEqual((ev["path_stats"], ev["open_attempts"], ev["data_reads"]), (6000, 30, 30))
        self.assertEqual(ev["directories"][0], {"path": data, "metadata_calls": 6030})
        self.assertEqual(file_rows(rep, data)[data]["dir_scans"], 3)

    def test_reading_back_files_the_run_wrote_counts_as_data_reads(self):
        # A loader caching decoded samples on local disk: epoch 1 reads 1,000 sources and
        # writes 1,000 cache files, epochs 2 and 3 read the cache files. Each epoch stats
        # every source twice and checks its cache file: 6,000 lookups of sources (the
        # cache files' lookups are the output's, not counted) against 3,000 data reads.
        # The reads of the files the run wrote are data reads too: no lookup storm.
        data, cache = os.path.join(self.tmp, "data"), os.path.join(self.tmp, "cache")
        make_files(data, 1000, 200)
        run = run_traced([SYSTEM_PYTHON, py("cache_epochs.py"), data, cache, "3"],
                         out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(json.loads(run.stdout),
                         {"samples": 1000, "source_reads": 1000, "cache_reads": 2000, "bytes": 600000})
        rep = report(*run.traces)
        self.assertEqual(findings(rep, "io.metadata-heavy"), [])
        sources, cached = file_rows(rep, data + "/"), file_rows(rep, cache + "/")
        # 6,000 path lookups, and Python's open() fstats each source it reads twice.
        self.assertEqual(sum(r["stats"] for r in sources.values() if r["kind"] == "file"), 6000 + 2 * 1000)
        self.assertEqual(sum(r["bytes_read"] for r in sources.values()), 200000)
        self.assertEqual(len([r for r in cached.values() if r["kind"] == "file"]), 1000)
        self.assertEqual(sum(r["bytes_read"] for r in cached.values()), 400000)

    @unittest.skipUnless(os.path.exists("/usr/lib/python3.11/test/test_tarfile.py"), "needs CPython's test suite")
    def test_cpython_test_tarfile_under_run_is_not_metadata_heavy(self):
        # 29 interpreters (tarfile's CLI tests) each stat their sys.path directories (the
        # working directory, colabtrace's start-up hook) on import after import, and
        # tarfile's uid/gid lookups go through NSS, which opens "/", "/etc", "/run"...
        # one component at a time. None of it is a loader looking its data up.
        out = os.path.join(self.tmp, "out")
        r = colabtrace_run(out, [SYSTEM_PYTHON, "-m", "test", "test_tarfile", "-q"], timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rep = report(out)
        self.assertGreater(len(rep["processes"]), 20)
        dir_stats = sum(x["stats"] for x in rep["io"]["files"] if x["kind"] == "directory" and not x["data"])
        self.assertGreater(dir_stats, 1000)
        self.assertEqual(findings(rep, "io.metadata-heavy"), [])

    def child_writes_into(self, name, open_fd):
        """Runs, traced, a parent that makes fd with the code open_fd (in directory
        self.tmp/name), writes a line, has a subprocess write one to it as its stdout, and
        reads both back. Returns the directory, the run and its io.files rows there as
        (path, opens, writes, bytes_written, reads, bytes_read)."""
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        script = ("import os, subprocess, sys\n" + open_fd +
                  "os.write(fd, b'parent\\n')\n"
                  "subprocess.run([sys.executable, '-c', 'import os; os.write(1, b\"child\\\\n\")'], stdout=fd, check=True)\n"
                  "os.lseek(fd, 0, 0)\n"
                  "print(os.read(fd, 100).decode(), end='')\n")
        run = run_traced([SYSTEM_PYTHON, "-c", script, d], out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual((run.returncode, run.stdout), (0, "parent\nchild\n"), run.stderr)
        rows = [f for f in report(*run.traces)["io"]["files"] if f["path"].startswith(d)]
        return d, run, [(f["path"], f["opens"], f["writes"], f["bytes_written"], f["reads"], f["bytes_read"])
                        for f in rows]

    def test_an_inherited_o_tmpfile_is_its_directorys_o_tmpfile_row(self):
        # pytest captures a test's output in an O_TMPFILE file, which a subprocess of the
        # test inherits as fd 1 or 2; /proc names it "<dir>/#<inode> (deleted)". numpy's
        # suite got a row "<dir>/#11453203 (deleted)/<O_TMPFILE>" from it.
        d, run, rows = self.child_writes_into("cap", "fd = os.open(sys.argv[1], os.O_TMPFILE | os.O_RDWR, 0o600)\n")
        self.assertEqual(len(run.traces), 2)
        self.assertEqual(rows, [(d + "/<O_TMPFILE>", 1, 2, 13, 1, 13)])

    def test_an_inherited_unlinked_file_is_its_paths_row(self):
        # A temporary file unlinked while open and handed to a subprocess as its stdout:
        # /proc names the child's descriptor "<path> (deleted)" (numpy's suite had two such
        # rows); the child's write goes to the parent's row of the file.
        d, run, rows = self.child_writes_into("del", "p = os.path.join(sys.argv[1], 'out.txt')\n"
                                                     "fd = os.open(p, os.O_CREAT | os.O_RDWR, 0o600)\n"
                                                     "os.unlink(p)\n")
        self.assertEqual(rows, [(d + "/out.txt", 1, 2, 13, 1, 13)])

    def test_numpy_load_through_an_fdopened_dup_keeps_the_files_size(self):
        # np.load reads the header through Python's buffered file (one 4 KiB read), then
        # numpy.fromfile dups the descriptor, fdopens it and fseeks (untraced) back to the
        # end of the header before one fread of the data. The fread's offset is unknown:
        # the file's size stays its real size, and the re-read is the header block read
        # twice, not the whole fread.
        npy = os.path.join(self.tmp, "arr.npy")
        code = ("import numpy as np, sys; np.save(sys.argv[1], np.arange(1000, dtype=np.int64)); "
                "print(int(np.load(sys.argv[1]).sum()))")
        run = run_traced([SYSTEM_PYTHON, "-c", code, npy], out_dir=os.path.join(self.tmp, "out"))
        if run.returncode != 0 and "No module named 'numpy'" in run.stderr:
            self.skipTest("needs numpy")
        self.assertEqual((run.returncode, run.stdout), (0, "499500\n"), run.stderr)
        size = os.path.getsize(npy)
        self.assertEqual(size, 128 + 8000)
        fopens = [r for r in io_records(run.traces[0])
                  if r["rec"] == "io_open" and r.get("path") == npy and r["api_name"] == "fdopen"]
        self.assertEqual(len(fopens), 2)  # tofile in np.save, fromfile in np.load
        row = file_rows(report(*run.traces), npy)[npy]
        self.assertEqual((row["opens"], row["reads"], row["writes"], row["bytes_written"]), (2, 2, 2, size))
        header_block = row["bytes_read"] - (size - 128)  # what Python's buffered read took
        self.assertEqual(header_block, 4096)
        self.assertEqual((row["size"], row["size_source"]), (size, "stat"))
        self.assertEqual(row["reread_bytes"], header_block - 128)

    def test_hotspots_are_data_files_read_not_code_or_stats(self):
        # A training run's I/O is mostly code and metadata: the interpreter and
        # site-packages directories stat'ed, modules read. Only a data file read is a
        # hotspot (the H200 report listed bin/python3 and three dist-packages directories,
        # 0 bytes read). First a run that reads no data file, then one that reads one.
        data = os.path.join(self.tmp, "data")
        make_files(data, 1, 10000)
        code = ("import os, sys, json, email.parser, decimal\n"
                "for p in (sys.executable, os.path.dirname(json.__file__), sys.prefix): os.stat(p)\n"
                "if len(sys.argv) > 1: open(sys.argv[1], 'rb').read()\n")
        for argv, want in (([], []), ([os.path.join(data, "f00000.bin")], [os.path.join(data, "f00000.bin")])):
            run = run_traced([SYSTEM_PYTHON, "-c", code, *argv], out_dir=os.path.join(self.tmp, f"out{len(argv)}"))
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual([h["path"] for h in report(*run.traces)["io"]["hotspots"]], want)
            text = cli("report", *run.traces).stdout
            section = text[text.index("== File I/O: hotspots (data files) =="):]
            section = section[:section.index("\n== ", 1)] if "\n== " in section[1:] else section
            if not want:
                self.assertIn("No data file was read", section)
                continue
            rows = [line.split()[0] for line in section.splitlines()[2:] if line.startswith("/")]
            self.assertEqual(rows, [want[0], data], section)  # the file, then its directory


if __name__ == "__main__":
    unittest.main()
