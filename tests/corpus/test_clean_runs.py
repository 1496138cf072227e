"""The clean-run corpus: healthy real workloads, run under the shim, must give reports a
maintainer would call true. Each workload asserts what the program really did, then that
`colabtrace report --format json` over its traces has no `error` finding and exactly the
allowed set of warnings (each allowed one says why it is legitimately expected), and that
the report from the I/O aggregates alone (as a rolled window leaves a trace, issue 39) has
the same findings and file rows.

Workloads: a torch DataLoader with 2 workers, numpy file I/O of many arrays, many
subprocesses plus a shell pipeline, `import torch`, pyenv's `python3 -c pass` (a bash
script), `yes | head`, a notebook executed by nbclient on ipykernel under `colabtrace run`,
`python -m venv` + `pip install` of a local package, `python -m pytest` with tmp_path, and
1,500 small CSV files on a Drive-like FUSE mount (bindfs) read by DataLoader workers.
Debian's CPython (/usr/bin/python3) runs the Python ones; those that need a module or tool
skip where it is not installed. A job that SIGKILLs its own children (subprocess timeouts,
Process.kill()) gets proc.killed naming the job's process that sent the signal.

Language runtimes and tools (programs in tests/parity/programs, also run for parity by
tests/parity/runtimes.py): the JVM (thousands of SIGSEGVs and SIGFPEs its own handlers
turn into exceptions, 8 threads, a child), Node.js (libuv's pool, worker threads, fork),
cargo (rustc, cc and the linker as children), perl (fork, %SIG, alarm, a child it kills),
make -j2, a C++ build with its own -I and -L directories, git and sqlite3. Each skips
where its tool is missing."""
import glob
import json
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

NOTEBOOK = r"""
import json, nbformat
from nbclient import NotebookClient
cells = [
    "import csv, glob\nrows = []\nfor p in sorted(glob.glob('data/*.csv')):\n    with open(p, newline='') as f:\n"
    "        rows += [tuple(map(int, r)) for r in csv.reader(f)]\nprint(len(rows))",
    "import numpy as np\na = np.array(rows)\nnp.save('a.npy', a)\nprint(int(np.load('a.npy')[:, 2].sum()))",
    "import torch\nx = torch.tensor(a, dtype=torch.float32)\nm = torch.nn.Linear(3, 1)\n"
    "opt = torch.optim.SGD(m.parameters(), lr=1e-6)\nfor _ in range(20):\n"
    "    l = m(x).pow(2).mean(); opt.zero_grad(); l.backward(); opt.step()\ntorch.save(m.state_dict(), 'm.pt')\n"
    "print('trained')",
    "import subprocess\nprint(subprocess.run(['wc', '-l', 'data/r0.csv'], capture_output=True, text=True).stdout.split()[0])",
]
nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
NotebookClient(nb, timeout=120, kernel_name="python3").execute()
for c in nb.cells:
    for o in c.outputs:
        print(o.get("text", "").strip())
"""

CSV_LOADER = """
import csv, os, sqlite3, sys
import torch
from torch.utils.data import DataLoader, Dataset
d, db = sys.argv[1], sys.argv[2]

class Rows(Dataset):
    def __init__(self, root):
        self.files = sorted(os.path.join(root, n) for n in os.listdir(root) if n.endswith(".csv"))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        with open(self.files[i], newline="") as f:
            r = list(csv.reader(f))
        return torch.tensor([[float(x) for x in row] for row in r[1:]]).sum()

if __name__ == "__main__":
    for epoch in range(2):
        total = sum(float(b.sum()) for b in DataLoader(Rows(d), batch_size=32, num_workers=2))
    con = sqlite3.connect(db)
    con.execute("create table t(f int, a real, b real)")
    for n in sorted(os.listdir(d))[:200]:
        with open(os.path.join(d, n), newline="") as f:
            rows = list(csv.reader(f))[1:]
        con.executemany("insert into t values (?, ?, ?)", [(int(n[1:5]), float(a), float(b)) for a, b in rows])
    con.commit()
    print(int(total), con.execute("select count(*), sum(a) from t").fetchone())
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
        self.same_from_aggregates(r, rep)
        return rep

    def same_from_aggregates(self, r, rep):
        """Issue 39: the report from the I/O aggregates alone (as a rolled window leaves it:
        COLABTRACE_ANALYZER_IGNORE_IO_EVENTS=1) gives the same findings, and each file row
        the same opens, reads, bytes read and stats."""
        env = dict(os.environ, COLABTRACE_ANALYZER_IGNORE_IO_EVENTS="1")
        env.pop("LD_PRELOAD", None)
        p = subprocess.run([h.CLI, "report", "--format", "json", *r.traces], capture_output=True, text=True,
                           env=env, timeout=300)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        agg = json.loads(p.stdout)
        key = lambda f: (f["id"], f["severity"], f.get("pid"))  # noqa: E731
        self.assertEqual(sorted(map(key, agg["findings"])), sorted(map(key, rep["findings"])))
        fields = ("kind", "opens", "reads", "bytes_read", "stats")
        rows = lambda j: {(f.get("pid"), f["path"]): tuple(f.get(k) for k in fields) for f in j["io"]["files"]}  # noqa: E731
        a, e = rows(agg), rows(rep)
        self.assertEqual({k: a[k] for k in a.keys() - e.keys() | {k for k in a.keys() & e.keys() if a[k] != e[k]}},
                         {k: e[k] for k in e.keys() - a.keys() | {k for k in a.keys() & e.keys() if a[k] != e[k]}})

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


    def run_job(self, argv, cwd, timeout=120):
        """`colabtrace run` of argv in cwd (traces in tmp/traces), as a notebook user would."""
        out = os.path.join(self.tmp, "traces")
        r = subprocess.run([h.CLI, "run", "-o", out, "--", *argv], cwd=cwd, env=h.clean_env(),
                           capture_output=True, text=True, timeout=timeout)
        self.assertEqual(r.returncode, 0, r.stderr)
        return h.TracedRun(r.returncode, r.stdout, r.stderr, out, sorted(glob.glob(os.path.join(out, "*.ctrace"))))

    @unittest.skipUnless(HAVE_TORCH and has_module("nbclient") and has_module("ipykernel"),
                         "needs Debian's python3-torch, python3-nbclient and python3-ipykernel")
    def test_notebook_run_by_nbclient(self):
        # A notebook read 40 CSV files, saves and loads a numpy array, trains a model and
        # runs a shell command, on an ipykernel that nbclient starts: the kernel, its
        # children and nbclient are all traced, and all of it is healthy.
        data = os.path.join(self.tmp, "data")
        os.makedirs(data)
        for i in range(40):
            with open(os.path.join(data, f"r{i}.csv"), "w") as f:
                f.write("".join(f"{i},{j},{i * j}\n" for j in range(50)))
        with open(os.path.join(self.tmp, "runnb.py"), "w") as f:
            f.write(NOTEBOOK)
        r = self.run_job([PY, "runnb.py"], self.tmp, timeout=180)
        self.assertEqual(r.stdout.split(), ["2000", str(sum(i * j for i in range(40) for j in range(50))), "trained",
                                            "50"])
        rep = self.check_clean(r)
        kernel = [p for p in rep["processes"] if "ipykernel_launcher" in p["argv"]]
        self.assertEqual([p["end"]["kind"] for p in kernel], ["exited"])
        # Each file read once by the kernel; r0.csv once more by wc.
        rows = {f["path"]: (f["opens"], f["bytes_read"]) for f in rep["io"]["files"] if f["path"].startswith(data + "/")}
        sizes = [os.path.getsize(os.path.join(data, f"r{i}.csv")) for i in range(40)]
        self.assertEqual(rows, {os.path.join(data, f"r{i}.csv"): (1 + (i == 0), sizes[i] * (1 + (i == 0)))
                                for i in range(40)})

    @unittest.skipUnless(has_module("venv") and has_module("pip"), "needs python3-venv and python3-pip")
    def test_venv_and_pip_install_of_a_local_package(self):
        pkg = os.path.join(self.tmp, "mypkg")
        os.makedirs(os.path.join(pkg, "src", "mypkg"))
        with open(os.path.join(pkg, "pyproject.toml"), "w") as f:
            f.write('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                    '[project]\nname = "mypkg"\nversion = "0.1"\n')
        with open(os.path.join(pkg, "src", "mypkg", "__init__.py"), "w") as f:
            f.write("VALUE = 42\n")
        script = (f"{PY} -m venv --system-site-packages venv && "
                  "venv/bin/python -m pip install -q --no-index --no-build-isolation ./mypkg && "
                  "venv/bin/python -c 'import mypkg; print(mypkg.VALUE)'")
        r = self.run_job(["sh", "-c", script], self.tmp, timeout=180)
        self.assertEqual(r.stdout, "42\n")
        rep = self.check_clean(r)
        self.assert_all_exited_0(rep)

    @unittest.skipUnless(has_module("pytest"), "needs python3-pytest")
    def test_pytest_project_with_tmp_path(self):
        # pytest captures each test's output in O_TMPFILE files of TMPDIR: they are files of
        # their own ("<dir>/<O_TMPFILE>"), not I/O of the directory.
        proj = os.path.join(self.tmp, "proj")
        os.makedirs(os.path.join(proj, "tests"))
        os.makedirs(os.path.join(self.tmp, "tmp"))
        for i in range(20):
            with open(os.path.join(proj, "tests", f"test_{i}.py"), "w") as f:
                f.write(f"def test_{i}(tmp_path):\n    (tmp_path / 'x').write_text('{i}')\n"
                        f"    print('captured')\n    assert (tmp_path / 'x').read_text() == '{i}'\n")
        r = h.run_traced([PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=proj,
                         env={"TMPDIR": os.path.join(self.tmp, "tmp")})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("20 passed", r.stdout)
        rep = self.check_clean(r)
        files = {f["path"]: f for f in rep["io"]["files"]}
        made = files[os.path.join(self.tmp, "tmp", "<O_TMPFILE>")]
        self.assertEqual(made["kind"], "file")
        self.assertGreater(made["reads"], 0)
        d = files.get(os.path.join(self.tmp, "tmp"), {})
        self.assertEqual((d.get("opens", 0), d.get("reads", 0)), (0, 0))

    @unittest.skipUnless(HAVE_TORCH and have("bindfs") and os.path.exists("/dev/fuse"),
                         "needs python3-torch, bindfs and /dev/fuse")
    def test_csv_dataset_on_a_drive_like_fuse_mount(self):
        # 1,500 small CSV files on a FUSE mount (bindfs, subtype drive: how Colab mounts
        # Drive), read by 2 DataLoader workers for 2 epochs, 200 of them then loaded into
        # sqlite3 on local disk. Both I/O warnings are true here, and nothing else.
        src, mnt = os.path.join(self.tmp, "src"), os.path.join(self.tmp, "drive")
        os.makedirs(src)
        os.makedirs(mnt)
        for i in range(1500):
            with open(os.path.join(src, f"f{i:04d}.csv"), "w") as f:
                f.write("a,b\n" + "".join(f"{j},{i % 10}\n" for j in range(20)))
        if subprocess.run(["bindfs", "-o", "subtype=drive", src, mnt], capture_output=True).returncode != 0:
            self.skipTest("bindfs could not mount (FUSE not permitted here)")
        self.addCleanup(subprocess.run, ["fusermount", "-u", mnt], capture_output=True)
        with open(os.path.join(self.tmp, "csvload.py"), "w") as f:
            f.write(CSV_LOADER)
        r = h.run_traced([PY, "csvload.py", mnt, os.path.join(self.tmp, "db.sqlite")], cwd=self.tmp, timeout=180)
        self.assertEqual((r.returncode, r.stdout), (0, "420000 (4000, 38000.0)\n"), r.stderr)
        rep = self.check_clean(r, {"io.network-filesystem", "io.small-files"})
        net = h.findings(rep, "io.network-filesystem")[0]["evidence"]
        self.assertEqual([(m["mountpoint"], m["fs_type"], m["files_read"]) for m in net["mounts"]],
                         [(mnt, "fuse.drive", 1500)])
        small = h.findings(rep, "io.small-files")[0]["evidence"]
        self.assertEqual(small["directories"][0], {"path": mnt, "files": 1500})
        rows = [f for f in rep["io"]["files"] if f["path"].startswith(mnt + "/")]
        # Two epochs, and the first 200 files once more for sqlite3.
        self.assertEqual(sorted({f["opens"] for f in rows}), [2, 3])
        self.assertEqual(sum(f["opens"] for f in rows), 2 * 1500 + 200)

    def test_subprocess_timeout_and_process_kill(self):
        # A healthy script: subprocess.run(timeout=) kills its child with SIGKILL when the
        # time is up, and multiprocessing's Process.kill() does the same. proc.killed stays
        # (the contract: no end record), with the true cause: each names the job's python,
        # which sent the SIGKILL with kill(), and no OOM kill. Nothing else is raised.
        script = ("import subprocess, multiprocessing as mp, time\n"
                  "try:\n    subprocess.run(['sleep', '10'], timeout=0.3)\n"
                  "except subprocess.TimeoutExpired:\n    print('timed out')\n"
                  "if __name__ == '__main__':\n"
                  "    p = mp.Process(target=time.sleep, args=(10,)); p.start(); time.sleep(0.3); p.kill(); p.join()\n"
                  "    print(p.exitcode)\n")
        r = h.run_traced([PY, "-c", script])
        self.assertEqual((r.returncode, r.stdout), (0, "timed out\n-9\n"), r.stderr)
        rep = h.report(*r.traces)
        main = next(p["pid"] for p in rep["processes"] if p["argv"][:2] == [PY, "-c"] and p["ppid"] == os.getpid())
        killed = {p["pid"] for p in rep["processes"] if p["end"]["signal"] == 9}
        self.assertEqual(len(killed), 2, rep["processes"])
        self.assertEqual(sorted((f["id"], f["pid"]) for f in rep["findings"] if f["severity"] != "info"),
                         sorted(("proc.killed", pid) for pid in killed))
        for f in h.findings(rep, "proc.killed"):
            self.assertEqual((f["evidence"]["sender"]["pid"], f["evidence"]["sender"]["api"]), (main, "kill"), f)
            self.assertIn(f"pid {main} (", f["summary"])
            self.assertIs(f["evidence"]["oom_kill_rose"], False)

    def test_timeout_s_kill_names_the_sender_of_both_kills(self):
        # coreutils `timeout -s KILL` sends SIGKILL to its child, then to its own process
        # group, itself included: kill(0, SIGKILL) does not return to it, so the shim
        # writes kill_sent before a call whose target includes the caller (it wrote it
        # after, and timeout's own proc.killed named no sender). The sleep names timeout,
        # timeout names itself.
        r = h.run_traced(["sh", "-c", "timeout -s KILL 0.2 sleep 5; echo $?"])
        self.assertEqual((r.returncode, r.stdout), (0, "137\n"), r.stderr)
        rep = h.report(*r.traces)
        killed = h.findings(rep, "proc.killed")
        self.assertEqual(len(killed), 2, [f["summary"] for f in killed])
        self.assertTrue(all(f["evidence"].get("sender") for f in killed), [f["summary"] for f in killed])
        (timeout,) = [p["pid"] for p in rep["processes"] if p["argv"][:1] == ["timeout"]]
        self.assertEqual(sorted(f["evidence"]["sender"]["pid"] for f in killed), [timeout, timeout])

if __name__ == "__main__":
    unittest.main()
