"""The clean-run corpus: healthy real workloads, run under the shim, must give reports a
maintainer would call true. Each workload asserts what the program really did, then that
`colabtrace report --format json` over its traces has no `error` finding and exactly the
allowed set of warnings (each allowed one says why it is legitimately expected).

Workloads: a torch DataLoader with 2 workers, numpy file I/O of many arrays, many
subprocesses plus a shell pipeline, `import torch`, pyenv's `python3 -c pass` (a bash
script), and `yes | head`. Debian's CPython (/usr/bin/python3) runs the Python ones; those
that need torch or numpy skip where they are not installed.

Language runtimes and tools (programs in tests/parity/programs, also run for parity by
tests/parity/runtimes.py): the JVM (thousands of SIGSEGVs and SIGFPEs its own handlers
turn into exceptions, 8 threads, a child), Node.js (libuv's pool, worker threads, fork),
cargo (rustc, cc and the linker as children), perl (fork, %SIG, alarm, a child it kills),
make -j2, a C++ build with its own -I and -L directories, git and sqlite3. Each skips
where its tool is missing."""
import os
import shutil
import subprocess
import unittest

import ctharness as h

PY = h.SYSTEM_PYTHON
SH = os.path.basename(os.path.realpath(shutil.which("sh") or "/bin/sh"))  # dash on Debian
PROGRAMS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "parity", "programs")


def has_module(name):
    return subprocess.run([PY, "-c", f"import {name}"], capture_output=True).returncode == 0


HAVE_TORCH = os.path.exists(PY) and has_module("torch")
HAVE_NUMPY = os.path.exists(PY) and has_module("numpy")


def have(*tools):
    return all(shutil.which(t) for t in tools)


def exe_of(p):
    return os.path.basename(p["exe"] or "")


def ends(rep, exe):
    """Sorted (kind, code, signal) of the processes of one executable."""
    return sorted((p["end"]["kind"], p["end"]["code"] or 0, p["end"]["signal"] or 0)
                  for p in rep["processes"] if exe_of(p) == exe)


def pyenv_shim():
    p = shutil.which("python3")
    if not p:
        return None
    with open(p, "rb") as f:
        head = f.read(4096)
    return p if head.startswith(b"#!") and b"pyenv" in head else None


DATALOADER = """
import torch
from torch.utils.data import DataLoader, Dataset

class Squares(Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.full((4,), float(i))

if __name__ == "__main__":
    total = sum(int(b.sum().item()) for b in DataLoader(Squares(), batch_size=8, num_workers=2))
    print(total)
"""

NUMPY_IO = """
import os, sys
import numpy as np
d = sys.argv[1]
for i in range(40):
    np.save(os.path.join(d, f"a{i}.npy"), np.full(32768, i, dtype=np.float64))  # 256 KiB each
total = sum(float(np.load(os.path.join(d, f"a{i}.npy")).sum()) for i in range(40))
print(int(total))
"""

SUBPROCESSES = """
import subprocess
for _ in range(30):
    subprocess.run(["true"], check=True)
out = subprocess.run("seq 1 1000 | sort -rn | head -n 1", shell=True, check=True,
                     capture_output=True, text=True).stdout
print(out.strip())
"""


class CleanRunsTest(h.TempDirTest):
    def check_clean(self, r, allowed_warnings=()):
        """No error finding; warnings exactly the allowed ids (a set)."""
        rep = h.report(*r.traces)
        errors = [(f["id"], f["pid"], f["summary"]) for f in rep["findings"] if f["severity"] == "error"]
        self.assertEqual(errors, [])
        warnings = {f["id"] for f in rep["findings"] if f["severity"] == "warning"}
        self.assertEqual(warnings, set(allowed_warnings),
                         [(f["id"], f["summary"]) for f in rep["findings"] if f["severity"] == "warning"])
        self.assertEqual(rep["warnings"], [])  # every trace read whole
        return rep

    @unittest.skipUnless(HAVE_TORCH, "needs Debian's python3-torch")
    def test_torch_dataloader_with_two_workers(self):
        script = os.path.join(self.tmp, "loader.py")
        with open(script, "w") as f:
            f.write(DATALOADER)
        r = h.run_traced([PY, script], timeout=180)
        self.assertEqual((r.returncode, r.stdout), (0, f"{4 * sum(range(64))}\n"), r.stderr)
        rep = self.check_clean(r)
        # The parent and its two workers, each exited 0.
        ends = sorted((p["end"]["kind"], p["end"]["code"]) for p in rep["processes"])
        self.assertGreaterEqual(len(ends), 3)
        self.assertTrue(all(e == ("exited", 0) for e in ends), ends)

    @unittest.skipUnless(HAVE_NUMPY, "needs Debian's python3-numpy")
    def test_numpy_file_io(self):
        data = os.path.join(self.tmp, "arrays")
        os.makedirs(data)
        r = h.run_traced([PY, "-c", NUMPY_IO, data])
        self.assertEqual((r.returncode, r.stdout), (0, f"{32768 * sum(range(40))}\n"), r.stderr)
        rep = self.check_clean(r)
        files = {f["path"]: f for f in rep["io"]["files"] if f["path"].startswith(data + "/")}
        self.assertEqual(len(files), 40)
        self.assertTrue(all(f["bytes_read"] >= 32768 * 8 for f in files.values()))

    def test_many_subprocesses_and_a_pipeline(self):
        r = h.run_traced([PY, "-c", SUBPROCESSES])
        self.assertEqual((r.returncode, r.stdout), (0, "1000\n"), r.stderr)
        rep = self.check_clean(r)
        exes = [os.path.basename(p["exe"] or "") for p in rep["processes"]]
        self.assertEqual(exes.count("true"), 30)
        for prog in ("seq", "sort", "head"):
            self.assertEqual(exes.count(prog), 1, exes)

    @unittest.skipUnless(HAVE_TORCH, "needs Debian's python3-torch")
    def test_import_torch(self):
        r = h.run_traced([PY, "-c", "import torch; print(torch.tensor([2, 3]).prod().item())"], timeout=180)
        self.assertEqual((r.returncode, r.stdout), (0, "6\n"), r.stderr)
        self.check_clean(r)

    @unittest.skipUnless(pyenv_shim(), "needs pyenv's python3 shim on PATH")
    def test_pyenv_python3_c_pass(self):
        r = h.run_traced(["python3", "-c", "pass"])
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        self.check_clean(r)

    def test_yes_into_head(self):
        # yes dies of SIGPIPE once head has its lines: the shell pipeline's normal end.
        r = h.run_traced(["sh", "-c", "yes | head -n 3"])
        self.assertEqual((r.returncode, r.stdout), (0, "y\ny\ny\n"), r.stderr)
        rep = self.check_clean(r)
        yes = [p for p in rep["processes"] if os.path.basename(p["exe"] or "") == "yes"]
        self.assertEqual([(p["end"]["kind"], p["end"]["signal"]) for p in yes], [("signaled", 13)])

    def assert_all_exited_0(self, rep):
        self.assertTrue(all(p["end"]["kind"] == "exited" and p["end"]["code"] == 0 for p in rep["processes"]),
                        [(exe_of(p), p["end"]) for p in rep["processes"]])

    def run_clean(self, argv, cwd, stdout_has, timeout=120):
        """Runs argv traced in cwd: exit 0, stdout holding stdout_has, a clean report."""
        r = h.run_traced(argv, cwd=cwd, timeout=timeout)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(stdout_has, r.stdout)
        return self.check_clean(r)

    def out_files(self, rep):
        """The report's rows for the files under tmp/out."""
        return [f for f in rep["io"]["files"] if f["path"].startswith(os.path.join(self.tmp, "out") + "/")]

    def copy_program(self, name):
        src = os.path.join(PROGRAMS, name)
        dst = os.path.join(self.tmp, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, dst)
        return dst

    @unittest.skipUnless(have("strace"), "needs strace")
    def test_handled_signals_past_the_budget_cost_no_system_call(self):
        # The JVM takes a SIGSEGV per NullPointerException. The shim records the first 16
        # handled crash signals (each on its own stack: two sigprocmask calls); past that a
        # handled one must cost no system call at all (it cost two each: 2,002 here).
        script = ("import os, signal\n"
                  "signal.signal(signal.SIGABRT, lambda s, f: None)\n"
                  "for _ in range(1000): os.kill(os.getpid(), signal.SIGABRT)\n"
                  "print('ok')\n")
        counts = []
        for preload in (False, True):
            out = os.path.join(self.tmp, "strace-%d.txt" % preload)
            r = h.run_traced(["strace", "-f", "-qq", "-c", "-o", out, "-e", "trace=rt_sigprocmask", PY, "-c", script],
                             preload=preload, out_dir=os.path.join(self.tmp, "traces"), check_traces=False)
            self.assertEqual((r.returncode, r.stdout), (0, "ok\n"), r.stderr)
            with open(out) as f:
                rows = [l.split() for l in f if l.strip().endswith("rt_sigprocmask")]
            counts.append(int(rows[0][3]) if rows else 0)
        # Start-up blocks signals once while installing the handlers (2 calls), and each
        # of the 16 recorded signals takes 2.
        self.assertLessEqual(counts[1] - counts[0], 2 + 2 * 16, counts)

    @unittest.skipUnless(have("java", "javac"), "needs java and javac")
    def test_jvm_null_checks_threads_and_a_child(self):
        # 20,000 NullPointerExceptions and 20,000 divisions by zero reach the JVM as
        # SIGSEGV and SIGFPE, which its own handlers take: the process exited 0.
        src = self.copy_program("Probe.java")
        subprocess.run(["javac", "-d", self.tmp, src], check=True, capture_output=True)
        rep = self.run_clean(["java", "-cp", self.tmp, "Probe"], self.tmp,
                             "null checks 20000\nstack overflow caught, deep: true\ndivisions by zero 20000\n")
        self.assertEqual(ends(rep, "java"), [("exited", 0, 0)])
        self.assertEqual(ends(rep, SH), [("exited", 3, 0)])  # sh -c 'exit 3', via jspawnhelper
        self.assertEqual(len(rep["processes"]), 2)
        out = self.out_files(rep)
        self.assertEqual(len(out), 50)
        self.assertEqual(sum(f["opens"] for f in out), 100)  # written, then read back
        self.assertEqual(sum(f["bytes_read"] for f in out), sum(len("line %d\n" % i) for i in range(50)))

    @unittest.skipUnless(have("node"), "needs node")
    def test_node_pool_workers_and_children(self):
        self.copy_program("probe.js")
        rep = self.run_clean(["node", "probe.js"], self.tmp, "workers 999999,1500000,2000000,2499996\n")
        # The main process and its fork()ed child; sh three times: exit 4, killed by its
        # own SIGTERM, and exec's pipeline.
        self.assertEqual(ends(rep, "node"), [("exited", 0, 0)] * 2)
        self.assertEqual(ends(rep, SH), [("exited", 0, 0), ("exited", 4, 0), ("signaled", 0, 15)])
        self.assertEqual((ends(rep, "seq"), ends(rep, "tail")), ([("exited", 0, 0)], [("exited", 0, 0)]))
        out = self.out_files(rep)
        self.assertEqual((len(out), sum(f["opens"] for f in out)), (100, 200))

    @unittest.skipUnless(have("cargo", "rustc", "cc"), "needs cargo, rustc and cc")
    def test_cargo_build_offline(self):
        crate = self.copy_program("rust")
        rep = self.run_clean(["cargo", "build", "--offline", "-j2"], crate, "", timeout=180)
        self.assertTrue(os.path.exists(os.path.join(crate, "target", "debug", "probe")))
        self.assertEqual(ends(rep, "cargo"), [("exited", 0, 0)])
        self.assertGreaterEqual(len(ends(rep, "rustc")), 2)  # version probes and the build
        self.assert_all_exited_0(rep)

    @unittest.skipUnless(have("perl"), "needs perl")
    def test_perl_fork_signals_and_pipes(self):
        self.copy_program("probe.pl")
        rep = self.run_clean(["perl", "probe.pl"], self.tmp,
                             "alarm handled 1\neval: timeout\nfork exit codes sum 15\nchild signal 15\nusr1 2\n")
        # The script, 5 children exiting 1..5, one it kills with SIGTERM (reaped: exact),
        # 3 reaped by its SIGCHLD handler; sh for the backticks (and its fork) and system.
        self.assertEqual(ends(rep, "perl"), sorted([("exited", 0, 0)] * 4 + [("exited", i, 0) for i in range(1, 6)] +
                                                   [("signaled", 0, 15)]))
        self.assertEqual(ends(rep, SH), [("exited", 0, 0), ("exited", 0, 0), ("exited", 3, 0)])

    @unittest.skipUnless(have("make", "cc"), "needs make and cc")
    def test_make_j2_build(self):
        self.copy_program("Makefile")
        rep = self.run_clean(["make", "-j2"], self.tmp, "\nsum 78\n")
        self.assertEqual(ends(rep, "make"), [("exited", 0, 0)])
        self.assertEqual(ends(rep, "prog"), [("exited", 0, 0)])
        self.assert_all_exited_0(rep)

    @unittest.skipUnless(have("c++", "ar"), "needs c++ and ar")
    def test_cxx_build_with_include_and_library_dirs(self):
        # A C++ build with its own -I and -L directories (every pip build of an extension,
        # torch's cpp_extension): the compiler tries each standard header in every -I
        # directory before the system one, the linker libproj.so/.a in every -L directory
        # before the one that has it. Those failed opens are a search path, not missing
        # files (they were an io.errors warning: "64 ENOENT; e.g. .../empty/cstdlib").
        for d in ("empty", "inc", "lib"):
            os.makedirs(os.path.join(self.tmp, d))
        with open(os.path.join(self.tmp, "inc", "proj.h"), "w") as f:
            f.write("#pragma once\n#include <string>\nint proj_twice(int);\n")
        with open(os.path.join(self.tmp, "proj.cc"), "w") as f:
            f.write('#include <cstdlib>\n#include "proj.h"\nint proj_twice(int x) { return std::abs(2 * x); }\n')
        with open(os.path.join(self.tmp, "main.cc"), "w") as f:
            f.write("#include <cmath>\n#include <cstdio>\n#include <map>\n#include <vector>\n#include <proj.h>\n"
                    "int main() { std::map<int, std::vector<int>> m; m[1].push_back(proj_twice(-21));\n"
                    '  std::printf("%d %.0f\\n", m[1][0], std::sqrt(49.0)); }\n')
        script = ("set -e\nc++ -Iempty -Iinc -c proj.cc -o proj.o\nar rcs lib/libproj.a proj.o\n"
                  "c++ -Iempty -Iinc main.cc -Lempty -Llib -lproj -o prog\n./prog\n")
        r = h.run_traced(["sh", "-c", script], cwd=self.tmp, timeout=180)
        self.assertEqual((r.returncode, r.stdout), (0, "42 7\n"), r.stderr)
        rep = self.check_clean(r)
        self.assert_all_exited_0(rep)
        self.assertEqual(ends(rep, "prog"), [("exited", 0, 0)])
        # The search really failed opens in the empty directories (each header, libproj.*).
        empty = os.path.join(self.tmp, "empty") + "/"
        missed = {os.path.basename(f["path"]) for f in rep["io"]["files"]
                  if f["path"].startswith(empty) and f["open_errors"] > 0}
        self.assertTrue({"cstdlib", "cmath", "map", "vector", "string", "libproj.a"} <= missed, sorted(missed))

    @unittest.skipUnless(have("git", "sqlite3"), "needs git and sqlite3")
    def test_git_and_sqlite3(self):
        script = """set -e
export GIT_AUTHOR_NAME=c GIT_AUTHOR_EMAIL=c@example.com GIT_COMMITTER_NAME=c GIT_COMMITTER_EMAIL=c@example.com HOME=$PWD
git init -q -b main repo && cd repo
for i in 1 2 3 4 5; do echo $i > f$i; git add f$i; git commit -q -m c$i; done
git gc -q && git log --oneline | wc -l
sqlite3 db "create table t(i); insert into t values (1), (2), (3);" && sqlite3 db "select sum(i) from t;"
"""
        r = h.run_traced(["sh", "-c", script], cwd=self.tmp)
        self.assertEqual((r.returncode, r.stdout), (0, "5\n6\n"), r.stderr)
        rep = self.check_clean(r)
        self.assertEqual(ends(rep, "sqlite3"), [("exited", 0, 0)] * 2)
        self.assert_all_exited_0(rep)


if __name__ == "__main__":
    unittest.main()
