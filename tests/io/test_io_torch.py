"""Debian's python3-torch: a real torch.utils.data.DataLoader with num_workers=2 over
small files. Every file is read by a worker process, exactly once, and the report
charges each read to that worker."""
import json
import os
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest, by_pid, report, run_traced, torch_missing
from iotest import file_rows, make_files

HERE = os.path.dirname(os.path.abspath(__file__))


class TorchDataLoaderTest(TempDirTest):
    def test_dataloader_workers_read_every_file_once(self):
        why = torch_missing()
        if why:
            self.skipTest(why)
        data = os.path.join(self.tmp, "samples")
        files = make_files(data, 64, 1500)
        run = run_traced([SYSTEM_PYTHON, os.path.join(HERE, "py", "loader.py"), data],
                         out_dir=os.path.join(self.tmp, "out"), timeout=300)
        self.assertEqual(run.returncode, 0, run.stderr[-2000:])
        out = json.loads(run.stdout.strip().splitlines()[-1])
        self.assertEqual(out["samples"], len(files))
        workers = set(out["pids"])
        self.assertEqual(len(workers), 2)
        rep = report(*run.traces)
        procs = by_pid(rep)
        self.assertTrue(workers <= set(procs), (workers, list(procs)))
        rows = file_rows(rep, data + "/")
        self.assertEqual(sorted(rows), files)
        per_worker = {w: 0 for w in workers}
        for p, row in rows.items():
            self.assertEqual(row["opens"], 1, p)
            self.assertEqual(row["reads"], 2, p)
            self.assertEqual(row["bytes_read"], 1500, p)
            self.assertEqual(len(row["pids"]), 1, p)
            self.assertIn(row["pids"][0], workers, p)
            per_worker[row["pids"][0]] += 1
        self.assertEqual(sum(per_worker.values()), len(files))
        for w in workers:
            self.assertGreaterEqual(procs[w]["io"]["opens"], per_worker[w])
            self.assertGreaterEqual(procs[w]["io"]["bytes_read"], 1500 * per_worker[w])
            self.assertEqual([r for r in rep["io"]["processes"] if r["pid"] == w][0]["role"], "forked worker")
        # The main process read none of the samples.
        main = [p["pid"] for p in rep["processes"] if p["pid"] not in workers]
        for row in rows.values():
            self.assertFalse(set(row["pids"]) & set(main))


if __name__ == "__main__":
    unittest.main()
