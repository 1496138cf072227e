"""The text report past a few dozen processes: grouped by command and role, with counts;
the JSON report keeps every process."""
import re
import unittest

import lifecycletest as lt
from ctharness import TempDirTest


class Scale(TempDirTest):
    def test_sixty_subprocesses_are_grouped_in_text(self):
        code = ("import subprocess\n"
                "for i in range(60):\n"
                "    subprocess.run(['/bin/true'], check=True)\n"
                "subprocess.run(['/bin/sh', '-c', 'exit 4'])\n")
        r = lt.run_traced([lt.PYTHON, "-c", code], out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        rep = lt.report(self.tmp)
        self.assertEqual(len(rep["processes"]), 62)
        text = lt.cli("report", self.tmp).stdout
        section = text.split("== Processes ==")[1].split("==")[0]
        lines = [l for l in section.splitlines() if l.strip()]
        self.assertIn("62 processes in 3 groups", lines[0])
        (true_row,) = [l for l in lines[2:] if re.search(r"\btrue\b", l)]
        self.assertTrue(true_row.startswith("60 "), true_row)
        self.assertIn("60 exited 0", true_row)
        (sh_row,) = [l for l in lines[2:] if "1 exited 4" in l]
        self.assertTrue(sh_row.startswith("1 "), sh_row)
        self.assertEqual(len(lines), 5)  # the count line, the header, three groups

    def test_a_few_processes_keep_one_row_each(self):
        r = lt.run_traced([lt.PYTHON, "-c", "import subprocess; subprocess.run(['/bin/true'])"],
                          out_dir=self.tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        text = lt.cli("report", self.tmp).stdout
        section = text.split("== Processes ==")[1].split("==")[0]
        self.assertIn("pid      ppid", section)
        self.assertEqual(len([l for l in section.splitlines() if l.strip()]), 3)


if __name__ == "__main__":
    unittest.main()
