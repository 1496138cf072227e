"""The text report at scale (issue 22): a job of 301 short processes (cli_workload and
300 forked children) gives a short text report, every per-process section grouped by role
as the process table is, while the JSON report still lists each process."""
from __future__ import annotations

import unittest

import ctharness as h
from cli_runs import HAVE_IO_HOOKS, workload

CHILDREN = 300
PARENT_ROLE = "cli_workload"
CHILD_ROLE = "cli_workload (fork)"


def pid_sample(pids: list[int]) -> str:
    """The text report's pids of a group: the first three, then '...'."""
    return " ".join(str(p) for p in pids[:3]) + (" ..." if len(pids) > 3 else "")


def sections(text: str) -> dict[str, list[str]]:
    """The text report's sections by title, each its lines (blank lines dropped)."""
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("== ") and line.endswith(" =="):
            current = out.setdefault(line[3:-3], [])
        elif current is not None and line:
            current.append(line)
    return out


class TextAtScaleTest(h.TempDirTest):
    def test_301_processes_give_a_short_grouped_text_report(self):
        run = workload(self.tmp, "fleet", reads=2, fork=CHILDREN, child_reads=1)
        self.assertEqual(len(run.traces), 1 + CHILDREN)
        p = h.cli("report", "--format", "text", run.out_dir)
        self.assertEqual(p.returncode, 0, p.stderr)
        text = p.stdout
        rep = h.report(run.out_dir)

        # The JSON still lists every process and every process's libraries.
        procs = rep["processes"]
        self.assertEqual(len(procs), 1 + CHILDREN)
        pids = [q["pid"] for q in procs]
        self.assertEqual({r["pid"] for r in rep["libraries"]}, set(pids))
        children = [q for q in procs if q["origin"] == "fork"]
        parent = [q for q in procs if q["origin"] != "fork"]
        self.assertEqual(len(children), CHILDREN)
        self.assertEqual(len(parent), 1)
        child_pids = [q["pid"] for q in children]

        lines = text.splitlines()
        self.assertLess(len(lines), 120, text)
        for pid in child_pids[3:]:  # no line names a single child beyond the sample
            self.assertNotIn(f"pid {pid}:", text)
        s = sections(text)

        # Processes: the table groups by role.
        self.assertEqual(s["Processes"][0], f"{1 + CHILDREN} processes in 2 groups (by command and role; "
                                            "`report --format json` lists each process)")
        child_row = s["Processes"][2]
        self.assertTrue(child_row.startswith(f"{CHILDREN:<6} "), child_row)
        self.assertIn(f" {CHILD_ROLE:<32} {str(CHILDREN) + ' exited 0':<22} {pid_sample(child_pids)}", child_row)

        # Libraries: one paragraph per role, counts as a range where they differ.
        def loaded(group):
            counts = [q["libraries"]["loaded"] for q in group]
            lo, hi = min(counts), max(counts)
            return str(lo) if lo == hi else f"{lo}-{hi}"

        libs = s["Libraries"]
        self.assertTrue(libs[0].startswith("library files: "), libs)
        self.assertEqual(libs[1], f"{1 + CHILDREN} processes in 2 groups (by command and role; "
                                  "`report --format json` lists each process's libraries)")
        self.assertEqual(libs[2], f"{CHILD_ROLE}: {CHILDREN} processes (pids {pid_sample(child_pids)}), "
                                  f"{loaded(children)} objects loaded, 0 CUDA-related, 0 failed loads")
        self.assertEqual(libs[3], f"{PARENT_ROLE}: 1 process (pid {parent[0]['pid']}), "
                                  f"{loaded(parent)} objects loaded, 0 CUDA-related, 0 failed loads")
        self.assertEqual(len(libs), 4, libs)

        if HAVE_IO_HOOKS:
            io = s["File I/O"]
            header = io.index(next(l for l in io if l.startswith("count ")))
            self.assertEqual(io[header - 1], f"{1 + CHILDREN} processes in 2 groups (by command and role, summed; "
                                             "`report --format json` lists each process)")
            row = io[header + 1]
            opens = sum(q["io"]["opens"] for q in children)
            reads = sum(q["io"]["reads"] for q in children)
            self.assertTrue(row.startswith(f"{CHILDREN:<6} {CHILD_ROLE:<32} {opens:>8} {reads:>9} "), row)
            self.assertTrue(row.endswith(f"  {pid_sample(child_pids)}"), row)
            self.assertEqual(len(io), header + 3, io)


if __name__ == "__main__":
    unittest.main()
