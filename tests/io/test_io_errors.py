"""io.errors on real programs: missing data files are reported with exact counts; the
failed opens healthy programs make all the time (a cache looked up before it is filled,
per-directory dotfiles, a compiler's include search, git's optional files) are not."""
import json
import os
import shutil
import subprocess
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest, findings, records, report, run_traced

HERE = os.path.dirname(os.path.abspath(__file__))


def failed_opens(traces, prefix=""):
    """Failed open-family records (fd < 0) whose path starts with prefix, over traces."""
    n = 0
    for t in traces:
        n += sum(1 for r in records(t, "io_open")
                 if int(r["fd"]) < 0 and r.get("path", "").startswith(prefix))
    return n


class IoErrorsTest(TempDirTest):
    def test_missing_data_files_counted_exactly_and_probes_not(self):
        data = os.path.join(self.tmp, "data")
        run = run_traced([SYSTEM_PYTHON, os.path.join(HERE, "py", "missing_files.py"), data, "20", "12"])
        self.assertEqual(run.returncode, 0, run.stderr)
        out = json.loads(run.stdout)
        self.assertEqual(out, {"read": 20, "skipped": 12, "cache_misses": 15, "dotfile_misses": 12})
        # The trace holds every failed open the program made under data/: 12 + 15 + 12.
        self.assertEqual(failed_opens(run.traces, data + "/"), 39)
        rep = report(*run.traces)
        (f,) = findings(rep, "io.errors")
        ev = f["evidence"]
        self.assertEqual(ev["lookup_errors"], 12)
        self.assertEqual(ev["storage_errors"], 0)
        self.assertEqual(ev["by_errno"], {"ENOENT": 12})
        self.assertEqual(sorted(p["path"] for p in ev["paths"]),
                         [os.path.join(data, f"sample_{i:04d}.bin") for i in range(20, 32)])

    def test_probes_alone_are_no_finding(self):
        data = os.path.join(self.tmp, "data")
        run = run_traced([SYSTEM_PYTHON, os.path.join(HERE, "py", "missing_files.py"), data, "20", "0"])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(failed_opens(run.traces, data + "/"), 27)
        self.assertEqual(findings(report(*run.traces), "io.errors"), [])

    @unittest.skipUnless(shutil.which("cc") and shutil.which("c++"), "needs cc and c++")
    def test_compiler_include_search_is_no_finding(self):
        src_c = os.path.join(self.tmp, "hello.c")
        src_cc = os.path.join(self.tmp, "hello.cc")
        with open(src_c, "w") as f:
            f.write('#include <stdio.h>\n#include <stdlib.h>\nint main(void){puts("hi");return 0;}\n')
        with open(src_cc, "w") as f:
            f.write("#include <iostream>\n#include <map>\n#include <vector>\n"
                    'int main(){std::map<int,int> m; m[1]=2; std::cout << m[1] << "\\n";}\n')
        for cmd in (["cc", "-O1", src_c, "-o", os.path.join(self.tmp, "a")],
                    ["c++", "-O1", src_cc, "-o", os.path.join(self.tmp, "b")]):
            run = run_traced(cmd, out_dir=os.path.join(self.tmp, "out-" + cmd[0].replace("+", "x")),
                             timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr)
            # The include search really failed opens (one per directory tried)...
            self.assertGreater(failed_opens(run.traces), 20)
            # ...and none of it is an error.
            self.assertEqual(findings(report(*run.traces), "io.errors"), [], cmd)

    @unittest.skipUnless(shutil.which("git"), "needs git")
    def test_git_commit_status_gc_is_no_finding(self):
        repo = os.path.join(self.tmp, "repo")
        os.makedirs(os.path.join(repo, "src"))
        for i in range(30):
            with open(os.path.join(repo, "src", f"f{i}.txt"), "w") as f:
                f.write(f"file {i}\n" * 50)
        script = ("git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm one"
                  " && git status --porcelain && git log --stat >/dev/null && git gc -q")
        run = run_traced(["sh", "-c", script], cwd=repo, out_dir=os.path.join(self.tmp, "out"),
                         timeout=300)
        self.assertEqual((run.returncode, run.stdout), (0, ""), run.stderr)
        self.assertGreater(failed_opens(run.traces, repo + "/"), 30)
        self.assertEqual(findings(report(*run.traces), "io.errors"), [])

    def test_tool_searches_are_no_finding_and_missing_samples_still_are(self):
        # A config file looked for from the working directory up to /, optional package
        # metadata tried by importlib.metadata (pip does both on a healthy install, the
        # first through rustc's rustup proxy), a compiled-in default config: 45 failed
        # opens outside system directories, none of them an error; the 12 missing samples
        # are.
        root = os.path.join(self.tmp, "w")
        run = run_traced([SYSTEM_PYTHON, os.path.join(HERE, "py", "tool_probes.py"), root, "6", "12", "12"])
        self.assertEqual(run.returncode, 0, run.stderr)
        out = json.loads(run.stdout)
        depth = len([p for p in os.path.join(root, "d1", "d2", "d3", "d4", "d5", "d6").split("/") if p])
        self.assertEqual(out, {"search_misses": 2 * (depth + 1), "metadata_misses": 24,
                               "config_misses": 1, "read": 20, "skipped": 12})
        self.assertEqual(failed_opens(run.traces, root + "/"), 24 + 1 + 12 + 2 * 7)
        (f,) = findings(report(*run.traces), "io.errors")
        ev = f["evidence"]
        self.assertEqual((ev["lookup_errors"], ev["storage_errors"], ev["by_errno"]), (12, 0, {"ENOENT": 12}))
        self.assertEqual(sorted(p["path"] for p in ev["paths"]),
                         [os.path.join(root, "data", f"sample_{i:04d}.bin") for i in range(20, 32)])
        # Without the missing samples: no finding at all.
        run = run_traced([SYSTEM_PYTHON, os.path.join(HERE, "py", "tool_probes.py"), root + "2", "6", "12", "0"])
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(findings(report(*run.traces), "io.errors"), [])

    def io_errors_of(self, script, arg, stdout):
        """Runs `python -c script arg` traced: the run (printing stdout) and its one io.errors."""
        run = run_traced([SYSTEM_PYTHON, "-c", script, arg])
        self.assertEqual((run.returncode, run.stdout), (0, stdout), run.stderr)
        (f,) = findings(report(*run.traces), "io.errors")
        return run, f

    def test_syntax_errors_of_code_from_no_file_are_no_missing_files(self):
        # CPython fopen()s the file name of a SyntaxError to quote its line, even "<unknown>"
        # (ast.parse) or "<string>" (compile): numpy's suite made 12 such opens in its
        # working directory, an io.errors warning with the 5 other misses of its tests.
        # 12 missing data files next to them still count, exactly.
        root = os.path.join(self.tmp, "syn")
        os.makedirs(root)
        script = ("import ast, os, sys\n"
                  "bad = 0\n"
                  "for i in range(12):\n"
                  "    for parse in (ast.parse, lambda s: compile(s, '<string>', 'exec')):\n"
                  "        try: parse('x = (')\n"
                  "        except SyntaxError: bad += 1\n"
                  "missing = 0\n"
                  "for i in range(int(sys.argv[1])):\n"
                  "    try: open('sample_%d.bin' % i, 'rb')\n"
                  "    except FileNotFoundError: missing += 1\n"
                  "print(bad, missing)\n")
        for samples in (0, 12):
            run = run_traced([SYSTEM_PYTHON, "-c", script, str(samples)], cwd=root)
            self.assertEqual((run.returncode, run.stdout), (0, f"24 {samples}\n"), run.stderr)
            self.assertEqual(failed_opens(run.traces, os.path.join(root, "<")), 24)
            got = [(f["evidence"]["lookup_errors"], sorted(p["path"] for p in f["evidence"]["paths"]))
                   for f in findings(report(*run.traces), "io.errors")]
            want = [(12, sorted(os.path.join(root, "sample_%d.bin" % i) for i in range(12)))] if samples else []
            self.assertEqual(got, want)

    def test_names_found_in_another_directory_earlier_still_count(self):
        # A search-path step is a failed open whose name opens fine in another directory
        # right after (a compiler's -I directories). A split whose files share names with
        # another split read before it is not one: val/ misses 12 of train/'s 20 names.
        root = os.path.join(self.tmp, "ds")
        script = ("import os, sys\n"
                  "root = sys.argv[1]\n"
                  "names = ['sample_%04d.bin' % i for i in range(20)]\n"
                  "for split, present in (('train', names), ('val', names[:8])):\n"
                  "    os.makedirs(os.path.join(root, split))\n"
                  "    for n in present:\n"
                  "        with open(os.path.join(root, split, n), 'wb') as f: f.write(b'x' * 500)\n"
                  "read = missing = 0\n"
                  "for split in ('train', 'val'):\n"
                  "    for n in names:\n"
                  "        try:\n"
                  "            with open(os.path.join(root, split, n), 'rb') as f: read += len(f.read())\n"
                  "        except FileNotFoundError:\n"
                  "            missing += 1\n"
                  "print(read, missing)\n")
        run, f = self.io_errors_of(script, root, "14000 12\n")
        self.assertEqual(failed_opens(run.traces, root + "/"), 12)
        ev = f["evidence"]
        self.assertEqual((ev["lookup_errors"], ev["storage_errors"], ev["by_errno"]), (12, 0, {"ENOENT": 12}))
        self.assertEqual(sorted(p["path"] for p in ev["paths"]),
                         [os.path.join(root, "val", "sample_%04d.bin" % i) for i in range(8, 20)])

    def test_file_size_limit_is_a_space_error_not_a_dropped_mount(self):
        # EFBIG past RLIMIT_FSIZE (SIGXFSZ ignored, as CPython's test_resource does): the
        # storage works, so the advice is about room and limits, not about remounting.
        out = os.path.join(self.tmp, "out.bin")
        script = ("import os, resource, signal, sys\n"
                  "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                  "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))\n"
                  "fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)\n"
                  "n = os.write(fd, b'x' * 4096)\n"
                  "try:\n"
                  "    os.write(fd, b'y')\n"
                  "except OSError as e:\n"
                  "    print(n, e.strerror)\n")
        _, f = self.io_errors_of(script, out, "4096 File too large\n")
        ev = f["evidence"]
        self.assertEqual((ev["by_errno"], ev["storage_errors"], ev["space_errors"], ev["lookup_errors"]),
                         ({"EFBIG": 1}, 1, 1, 0))
        self.assertEqual([(p["path"], p["errors"]) for p in ev["paths"]], [(out, ["write EFBIG"])])
        self.assertIn("RLIMIT_FSIZE", f["advice"])
        self.assertNotIn("emount", f["advice"])

    def test_descriptor_limit_is_an_error_on_any_path(self):
        # EMFILE is the process's limit, not the file's: reported although the file that
        # could not be opened is the interpreter's own os.py.
        run = run_traced([SYSTEM_PYTHON, os.path.join(HERE, "py", "fd_leak.py"), "64", "2"])
        self.assertEqual(run.returncode, 0, run.stderr)
        out = json.loads(run.stdout)
        self.assertEqual(out["emfile"], 3)
        (f,) = findings(report(*run.traces), "io.errors")
        ev = f["evidence"]
        self.assertEqual(ev["by_errno"], {"EMFILE": 3})
        self.assertEqual((ev["storage_errors"], ev["limit_errors"], ev["lookup_errors"]), (3, 3, 0))
        (row,) = ev["paths"]
        self.assertTrue(row["path"].endswith("/os.py"), row)
        self.assertEqual((row["open_errors"], row["errors"]), (3, ["open EMFILE"]))
        self.assertIn("ulimit -n", f["advice"])


if __name__ == "__main__":
    unittest.main()
