"""tools/check_layers: the analyzer's folders include only the layers below them.

The real tree must pass; a tree with one include that runs back up (core/ including
render/), or a folder the table does not know, must fail, naming the file and line."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "tools", "check_layers")


def run(root):
    return subprocess.run([sys.executable, CHECK, "--root", root], capture_output=True, text=True)


class CheckLayersTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ct-layers-")
        shutil.copytree(os.path.join(ROOT, "analyzer"), os.path.join(self.tmp, "analyzer"),
                        ignore=shutil.ignore_patterns("*.o", "CMakeLists.txt"))

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_this_tree_keeps_its_layers(self):
        p = run(ROOT)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_an_include_that_runs_back_up_fails_naming_its_line(self):
        path = os.path.join(self.tmp, "analyzer", "core", "finding.h")
        with open(path) as f:
            lines = f.read().splitlines()
        at = next(i for i, l in enumerate(lines) if l.startswith("#include \"core/json.h\""))
        lines.insert(at + 1, "#include \"render/render.h\"")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        p = run(self.tmp)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn(f"analyzer/core/finding.h:{at + 2}: includes \"render/render.h\": "
                      "analyzer/core/ may include only nothing else", p.stdout)
        self.assertIn("1 include(s) break the layers", p.stdout)

    def test_an_area_including_a_renderer_fails(self):
        path = os.path.join(self.tmp, "analyzer", "gpu", "rules", "churn.cpp")
        with open(path, "a") as f:
            f.write("#include \"render/html/sections.h\"\n")
        p = run(self.tmp)
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("analyzer/gpu/rules/churn.cpp:", p.stdout)
        self.assertIn("analyzer/gpu/ may include only core, model, report, trace, python", p.stdout)

    def test_a_folder_missing_from_the_table_is_an_error(self):
        os.makedirs(os.path.join(self.tmp, "analyzer", "misc"))
        with open(os.path.join(self.tmp, "analyzer", "misc", "x.h"), "w") as f:
            f.write("#pragma once\n")
        p = run(self.tmp)
        self.assertEqual(p.returncode, 2, p.stdout)
        self.assertIn("analyzer/misc/x.h: folder analyzer/misc/ is not in", p.stdout)


if __name__ == "__main__":
    unittest.main()
