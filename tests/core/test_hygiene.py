"""The shim is a good guest: no dynamic dependency on libstdc++, libgcc_s, abseil, fmt
or CUDA; no exported C++ symbol; and every exported symbol is listed in a hook table
(shim/**/*.def, parsed as tools/gen_version_script.py does)."""
import glob
import os
import re
import subprocess
import unittest

import ctharness

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FORBIDDEN = re.compile(r"libstdc\+\+|libgcc_s|libabsl|absl|libfmt|libcuda|libcudart|libcupti|"
                       r"libnv|libcublas|libcudnn")


def hook_table_names():
    """Every X(name) in shim/**/*.def: the same regex as tools/gen_version_script.py."""
    names = set()
    for path in glob.glob(os.path.join(ROOT, "shim", "**", "*.def"), recursive=True):
        with open(path, encoding="utf-8") as f:
            for line in f:
                line = line.split("//", 1)[0]
                names.update(re.findall(r"\bX\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", line))
    return names


class HygieneTest(unittest.TestCase):
    def readelf(self, *args):
        return subprocess.run(["readelf", "--wide", *args, ctharness.SHIM], capture_output=True,
                              text=True, check=True).stdout

    def test_needed_libraries(self):
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", self.readelf("-d"))
        self.assertIn("libc.so.6", needed)
        bad = [n for n in needed if FORBIDDEN.search(n)]
        self.assertEqual(bad, [], f"DT_NEEDED: {needed}")

    def exported(self):
        out = []
        for line in self.readelf("--dyn-syms").splitlines():
            w = line.split()
            # Num: Value Size Type Bind Vis Ndx Name
            if len(w) < 8 or not w[0].endswith(":") or w[6] == "UND":
                continue
            if w[4] not in ("GLOBAL", "WEAK") or w[5] != "DEFAULT":
                continue
            out.append(w[7].split("@")[0])
        return out

    def test_no_cxx_symbols_exported(self):
        exported = self.exported()
        self.assertTrue(exported)
        self.assertEqual([s for s in exported if s.startswith("_Z")], [])

    def test_exports_only_hook_table_symbols(self):
        tables = hook_table_names()
        self.assertIn("fork", tables)
        exported = set(self.exported())
        self.assertEqual(sorted(exported - tables), [], "exported but not in any hook table")
        # And the core hooks really are exported.
        for name in ("fork", "execve", "_exit", "sigaction", "setenv", "vfork", "__libc_start_main"):
            self.assertIn(name, exported)


if __name__ == "__main__":
    unittest.main()
