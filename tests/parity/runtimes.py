#!/usr/bin/env python3
"""Runtime parity: language runtimes and tools nobody here wrote, bare and under the shim.

parity.py runs test suites inside one interpreter; this runs whole programs: the JVM
(which takes SIGSEGV and SIGFPE for null checks and divisions by zero and lives on many
threads), Node.js (libuv's thread pool, worker threads, fork), cargo and rustc (jobserver
pipes, many processes), perl (%SIG, alarm, fork), gfortran programs, make -j2, git and
sqlite3. Each scenario runs three ways in directories of its own: bare, with
LD_PRELOAD=libcolabtrace.so, and as `colabtrace run` (scenarios that send a signal: the
first two). It fails when

  - the exit status, stdout or stderr differ from the bare run (after normalising pids,
    thread ids, addresses and timings), or the files the program wrote differ (names
    and sizes);
  - the traced side's report disagrees with what happened: `colabtrace report` must read
    every trace whole, the program's own process must end as its real wait status says
    (exited with the code, or signaled with the signal), the processes named in the
    scenario must appear exactly that many times, and the warning and error findings
    must be exactly those the scenario expects (none for a healthy run).

  runtimes.py --build BUILD_DIR GROUP [GROUP...]      (groups: see GROUPS; 'list' lists)

A scenario whose tools are missing (java, node, cargo, gfortran, sqlite3 ... are not on
every machine) is skipped with a message; a group with nothing left to run exits 77.
Exit status: 0 parity, 1 differences, 77 skipped.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAMS = os.path.join(HERE, "programs")
SKIP_RC = 77
SCENARIO_TIMEOUT = 60


class Scenario:
    """One program run. argv may name {prep} (the group's prepared build directory) and
    {programs}; it runs in a fresh directory holding copies of `copy` (from programs/)."""

    def __init__(self, name, argv, needs=(), copy=(), env=None, rc=0, findings=(), procs=None,
                 send=None, sort_output=False, ignore_files=None, run_side=True, says=None):
        self.name = name
        self.argv = argv
        self.needs = list(needs)
        self.copy = list(copy)
        self.env = env or {}
        self.rc = rc                    # the bare exit status we expect (-N: signal N)
        self.findings = set(findings)   # warning/error finding ids the report must hold
        self.says = says or {}          # finding id -> a regex its summary must match
        self.procs = procs or {}        # exe basename -> processes in the report
        self.send = send                # (signal, delay s): sent once ./ready exists
        self.sort_output = sort_output  # make -j2 echoes its recipes in either order
        self.ignore_files = re.compile(ignore_files) if ignore_files else None
        self.run_side = run_side and send is None


CARGO_ARGS = ["--offline", "-j2", "--manifest-path", "rust/Cargo.toml"]
# What cargo names after the time or a hash of it, or rewrites on every build.
CARGO_VARYING = r"/incremental/|\.lock$|/\.fingerprint/|/deps/probe-"
# The shell's executable as the report names it (dash on Debian, where /bin/sh links to it).
SH = os.path.basename(os.path.realpath(shutil.which("sh") or "/bin/sh"))
JAVA = ["java", "-XX:ErrorFile=hs_err.log", "-cp", "{prep}"]
JAVA_NEEDS = ["java", "javac"]
# posix_spawn of jspawnhelper, which execs sh.
JAVA_CHILD = {"java": 1, SH: 1}
PY_ABORT_AFTER_HANDLED = """
import os, signal
handled = 0
def on_abrt(signo, frame):
    global handled
    handled += 1
signal.signal(signal.SIGABRT, on_abrt)
for _ in range(40):
    os.kill(os.getpid(), signal.SIGABRT)
print("handled", handled, flush=True)
signal.signal(signal.SIGABRT, signal.SIG_DFL)
os.abort()
"""
GIT_SCRIPT = """set -e
export GIT_AUTHOR_NAME=p GIT_AUTHOR_EMAIL=p@example.com GIT_COMMITTER_NAME=p GIT_COMMITTER_EMAIL=p@example.com
export GIT_AUTHOR_DATE='2020-01-01T00:00:00Z' GIT_COMMITTER_DATE='2020-01-01T00:00:00Z' HOME=$PWD
git init -q -b main repo && cd repo
for i in 1 2 3 4 5 6 7 8; do echo "line $i" > f$i.txt; git add f$i.txt; git commit -q -m "c$i"; done
git checkout -q -b side HEAD~3 && echo side > s.txt && git add s.txt && git commit -q -m side
git checkout -q main && git merge -q --no-edit side
git log --oneline | wc -l && git rev-parse HEAD && git gc -q && git fsck 2>&1 | wc -l
git status --porcelain | wc -l
"""
SQLITE_SCRIPT = """set -e
sqlite3 db.sqlite "create table t(i integer primary key, v text); \
  with recursive c(x) as (select 1 union all select x+1 from c where x < 20000) \
  insert into t select x, hex(randomblob(16)) from c; create index iv on t(v);"
sqlite3 db.sqlite "select count(*), sum(i) from t; pragma integrity_check;"
"""

GROUPS = {
    # javac compiles Probe.java once bare into {prep}; the javac scenario compiles it again
    # on each side and the class files must be the same bytes.
    "jvm": {
        "prepare": [(JAVA_NEEDS, ["javac", "-d", "{prep}", os.path.join(PROGRAMS, "Probe.java")])],
        "scenarios": [
            Scenario("javac", ["javac", "-d", "classes", "Probe.java"], JAVA_NEEDS, copy=["Probe.java"],
                     procs={"javac": 1}),
            Scenario("java-all", JAVA + ["Probe"], JAVA_NEEDS, procs=JAVA_CHILD),
            Scenario("java-xint", ["java", "-Xint", "-cp", "{prep}", "Probe"], JAVA_NEEDS, procs=JAVA_CHILD),
            Scenario("java-xcheck-jni", ["java", "-Xcheck:jni", "-cp", "{prep}", "Probe"], JAVA_NEEDS,
                     procs=JAVA_CHILD),
            Scenario("java-xrs-serial", ["java", "-Xrs", "-XX:+UseSerialGC", "-Xss512k", "-cp", "{prep}", "Probe"],
                     JAVA_NEEDS, procs=JAVA_CHILD),
            Scenario("java-spawn-vfork", ["java", "-Djdk.lang.Process.launchMechanism=VFORK", "-cp", "{prep}",
                                          "Probe", "spawn"], JAVA_NEEDS, procs={"java": 1, "true": 100}),
            Scenario("java-spawn-fork", ["java", "-Djdk.lang.Process.launchMechanism=FORK", "-cp", "{prep}",
                                         "Probe", "spawn"], JAVA_NEEDS, procs={"java": 1, "true": 100}),
            Scenario("java-uncaught", JAVA + ["Probe", "uncaught"], JAVA_NEEDS, rc=1),
            Scenario("java-exit", JAVA + ["Probe", "exit"], JAVA_NEEDS, rc=3),
            # SIGQUIT: the JVM prints a thread dump and goes on. SIGTERM: shutdown hooks,
            # then exit 143 (the JVM's own handler, not the signal's default action).
            Scenario("java-sigquit", JAVA + ["Probe", "wait", "1500"], JAVA_NEEDS, send=(signal.SIGQUIT, 0.2),
                     sort_output=True),
            Scenario("java-sigterm", JAVA + ["Probe", "wait", "20000"], JAVA_NEEDS, rc=143,
                     send=(signal.SIGTERM, 0.2)),
            Scenario("java-sigint", JAVA + ["Probe", "wait", "20000"], JAVA_NEEDS, rc=130,
                     send=(signal.SIGINT, 0.2)),
            # 100,000 NullPointerExceptions (SIGSEGVs the JVM handles), then a real crash:
            # hs_err, then SIGABRT. The report must say signaled (SIGABRT), not killed.
            # Writing hs_err, the JVM may try to load its disassembler plugin (hsdis),
            # absent here: an info, not an error (a load inside its signal handler).
            # The fault is named, or (past the shim's budget) the frame the handler interrupted.
            Scenario("java-crash", JAVA + ["Probe", "crash"], JAVA_NEEDS, rc=-signal.SIGABRT,
                     findings={"proc.fatal-signal"}, ignore_files=r"^(core|hs_err)",
                     says={"proc.fatal-signal": r"after its own handler took a SIGSEGV \(fault address 0x10\)|"
                                                r"from inside a signal handler that interrupted Unsafe_"}),
        ],
    },
    "node": {
        "scenarios": [
            Scenario("node-all", ["node", "probe.js"], ["node"], copy=["probe.js"],
                     procs={"node": 2, SH: 3, "seq": 1, "tail": 1}),
            Scenario("node-sigint", ["node", "probe.js", "sigint"], ["node"], copy=["probe.js"], rc=7),
            # Node's own one-shot SIGTERM handler raises it again: signaled, no finding.
            # SIGINT from outside with no listener: node's one-shot handler raises it again.
            Scenario("node-sigint-outside",
                     ["node", "-e", "require('fs').writeFileSync('ready', ''); setTimeout(() => {}, 20000)"],
                     ["node"], rc=-signal.SIGINT, send=(signal.SIGINT, 0.2)),
            Scenario("node-sigterm", ["node", "probe.js", "sigterm"], ["node"], copy=["probe.js"],
                     rc=-signal.SIGTERM),
            Scenario("node-overflow", ["node", "probe.js", "overflow"], ["node"], copy=["probe.js"]),
            Scenario("node-uncaught", ["node", "probe.js", "uncaught"], ["node"], copy=["probe.js"], rc=1),
            Scenario("node-abort", ["node", "probe.js", "abort"], ["node"], copy=["probe.js"],
                     rc=-signal.SIGABRT, findings={"proc.fatal-signal"}, ignore_files=r"^core"),
        ],
    },
    # cargo builds the crate once bare into {prep} (the runtime scenarios run that binary).
    "rust": {
        "prepare": [(["cargo", "rustc", "cc"], ["cp", "-r", os.path.join(PROGRAMS, "rust"), "{prep}/crate"]),
                    (["cargo", "rustc", "cc"], ["cargo", "build", "--offline", "-q", "--manifest-path",
                                                "{prep}/crate/Cargo.toml", "--target-dir", "{prep}"])],
        "scenarios": [
            # Incremental-compilation directories are named after the time.
            Scenario("cargo-build", ["cargo", "build"] + CARGO_ARGS, ["cargo", "rustc", "cc"], copy=["rust"],
                     ignore_files=CARGO_VARYING),
            # libtest runs the tests on threads: their result lines come in either order.
            Scenario("cargo-test", ["cargo", "test"] + CARGO_ARGS, ["cargo", "rustc", "cc"], copy=["rust"],
                     ignore_files=CARGO_VARYING, sort_output=True),
            Scenario("rustc", ["rustc", "-O", "-o", "probe", os.path.join("rust", "src", "main.rs")],
                     ["rustc", "cc"], copy=["rust"]),
            Scenario("rust-run", ["{prep}/debug/probe"], ["cargo"], procs={"probe": 1, SH: 1}),
            Scenario("rust-panic", ["{prep}/debug/probe", "panic"], ["cargo"], rc=101,
                     env={"RUST_BACKTRACE": "1"}),
            Scenario("rust-thread-panic", ["{prep}/debug/probe", "thread-panic"], ["cargo"]),
            # The runtime's guard-page handler prints "has overflowed its stack", aborts.
            Scenario("rust-overflow", ["{prep}/debug/probe", "overflow"], ["cargo"], rc=-signal.SIGABRT,
                     findings={"proc.fatal-signal"}, ignore_files=r"^core",
                     says={"proc.fatal-signal": "after its own handler took a SIGSEGV"}),
            Scenario("rust-abort", ["{prep}/debug/probe", "abort"], ["cargo"], rc=-signal.SIGABRT,
                     findings={"proc.fatal-signal"}, ignore_files=r"^core"),
        ],
    },
    # Tools of a plain Debian machine (perl-base, python3, make and a C compiler are on
    # CI's); gfortran, git and sqlite3 scenarios skip where those are missing.
    "tools": {
        "prepare": [(["gfortran"], ["gfortran", "-g", "-fcheck=bounds", "-o", "{prep}/probe",
                                    os.path.join(PROGRAMS, "probe.f90")]),
                    (["gfortran"], ["gfortran", "-g", "-ffpe-trap=zero", "-o", "{prep}/probe-fpe",
                                    os.path.join(PROGRAMS, "probe.f90")]),
                    (["cc"], ["cc", "-g", "-o", "{prep}/crash_plugin", os.path.join(PROGRAMS, "crash_plugin.c"),
                              "-ldl"])],
        "scenarios": [
            Scenario("perl-all", ["perl", "probe.pl"], ["perl"], copy=["probe.pl"],
                     procs={"perl": 10, SH: 3, "tr": 1, "seq": 1}),
            Scenario("perl-die", ["perl", "probe.pl", "die"], ["perl"], copy=["probe.pl"], rc=255),
            Scenario("perl-exit", ["perl", "probe.pl", "exit"], ["perl"], copy=["probe.pl"], rc=42),
            Scenario("perl-alarm", ["perl", "probe.pl", "alarm"], ["perl"], copy=["probe.pl"], rc=-signal.SIGALRM),
            # A one-shot (SA_RESETHAND) handler that raises the signal again: the process
            # dies of SIGTERM, which the report must say (it said killed).
            Scenario("perl-resethand", ["perl", "probe.pl", "resethand"], ["perl"], copy=["probe.pl"],
                     rc=-signal.SIGTERM),
            # 40 SIGABRTs a Python handler takes (each recorded as a crash signal, up to
            # the shim's budget), then abort(): signaled, not killed.
            Scenario("python-abort-after-handled", ["/usr/bin/python3", "-c", PY_ABORT_AFTER_HANDLED],
                     ["/usr/bin/python3"], rc=-signal.SIGABRT, findings={"proc.fatal-signal"},
                     ignore_files=r"^core"),
            # faulthandler takes the SIGSEGV, prints the Python traceback and raises it
            # again (its handler is the shim's wrapped one).
            Scenario("python-faulthandler-segv", ["/usr/bin/python3", "-X", "faulthandler", "-c",
                                                  "import ctypes; ctypes.string_at(0)"],
                     ["/usr/bin/python3"], rc=-signal.SIGSEGV, findings={"proc.fatal-signal"}, ignore_files=r"^core",
                     says={"proc.fatal-signal": r"after its own handler took a SIGSEGV \(fault address 0x0\)"}),
            # A SIGSEGV handler that tries an absent plugin, then raises the signal again:
            # abi.load-failed is info (made inside the handler), the fault is named.
            Scenario("c-crash-plugin", ["{prep}/crash_plugin"], ["cc"], rc=-signal.SIGSEGV,
                     findings={"proc.fatal-signal"}, ignore_files=r"^core",
                     says={"proc.fatal-signal": r"after its own handler took a SIGSEGV \(fault address 0x10\)"}),
            # The same after 20 handled SIGSEGVs (past the shim's budget), ending in abort()
            # inside the handler: the finding names the frame the handler interrupted.
            Scenario("c-crash-abort-after-handled", ["{prep}/crash_plugin", "abort"], ["cc"], rc=-signal.SIGABRT,
                     findings={"proc.fatal-signal"}, ignore_files=r"^core",
                     says={"proc.fatal-signal": r"from inside a signal handler that interrupted main\+"}),
            Scenario("make-j2", ["make", "-j2", "-f", "Makefile"], ["make", "cc"], copy=["Makefile"],
                     sort_output=True, procs={"make": 1}),
            Scenario("gfortran-run", ["{prep}/probe"], ["gfortran"], procs={"probe": 1, SH: 1}),
            Scenario("gfortran-stop", ["{prep}/probe", "stop"], ["gfortran"], rc=3),
            Scenario("gfortran-error-stop", ["{prep}/probe", "error"], ["gfortran"], rc=1),
            Scenario("gfortran-bounds", ["{prep}/probe", "bounds"], ["gfortran"], rc=2),
            # libgfortran's handler prints a backtrace (which must not show the shim's
            # frame) and raises the signal again; the finding names the fault before.
            Scenario("gfortran-segv", ["{prep}/probe", "segv"], ["gfortran"], rc=-signal.SIGSEGV,
                     findings={"proc.fatal-signal"}, ignore_files=r"^core",
                     says={"proc.fatal-signal": r"after its own handler took a SIGSEGV \(fault address 0x0\)"}),
            Scenario("gfortran-fpe", ["{prep}/probe-fpe", "fpe"], ["gfortran"], rc=-signal.SIGFPE,
                     findings={"proc.fatal-signal"}, ignore_files=r"^core",
                     says={"proc.fatal-signal": "after its own handler took a SIGFPE"}),
            Scenario("git", ["sh", "-c", GIT_SCRIPT], ["git"], ignore_files=r"^repo/\.git/"),
            Scenario("sqlite3", ["sh", "-c", SQLITE_SCRIPT], ["sqlite3"], procs={"sqlite3": 2}),
        ],
    },
}

def have(tool):
    return os.path.exists(tool) if tool.startswith("/") else shutil.which(tool) is not None


# Normalising output: what legitimately differs between two runs of the same program.
NORMALISE = [
    (re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d"), "DATE"),  # the JVM's thread dump
    (re.compile(r"\b\d+[KM]\b"), "nK"),                             # ... and its heap summary
    (re.compile(r"0x[0-9a-fA-F]+"), "0xX"),               # addresses, JVM tid/nid
    (re.compile(r"\b\d+(\.\d+)?(ms|us|µs|ns|s)\b"), "T"),  # timings
    (re.compile(r"\d+\.\d+"), "F"),                        # other fractions (elapsed=)
    (re.compile(r"\b\d{3,}\b"), "N"),                      # pids, thread ids, sizes of maps
]


def normalise(text, side_dir, sort_lines):
    text = text.replace(side_dir, "<DIR>")
    lines = [l for l in text.splitlines()]
    out = []
    for l in lines:
        for rx, rep in NORMALISE:
            l = rx.sub(rep, l)
        out.append(l)
    return sorted(out) if sort_lines else out


def file_tree(root, ignore):
    """relative path -> size (content hash for small files)."""
    tree = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            rel = os.path.relpath(p, root)
            if rel.startswith("traces/") or (ignore and ignore.search(rel)):
                continue
            st = os.lstat(p)
            tree[rel] = st.st_size
    return tree


class Side:
    def __init__(self, how):
        self.how = how  # bare | preload | run
        self.rc = None
        self.stdout = self.stderr = ""
        self.files = {}
        self.pid = None
        self.dir = None
        self.seconds = 0.0


def run_side(sc, how, build, base, prep):
    side = Side(how)
    # Names of one length: a build embeds its directory (debug info, dependency files),
    # and the sizes of what it wrote must compare equal.
    d = os.path.join(base, sc.name, {"bare": "bare", "preload": "ldpr", "run": "runc"}[how])
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    side.dir = d
    for c in sc.copy:
        src = os.path.join(PROGRAMS, c)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(d, c))
    trace_dir = os.path.join(d, "traces")
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("COLABTRACE_")}
    env.update(sc.env)
    argv = [a.replace("{prep}", prep).replace("{programs}", PROGRAMS) for a in sc.argv]
    if how == "preload":
        env["LD_PRELOAD"] = os.path.join(build, "lib", "libcolabtrace.so")
        env["COLABTRACE_OUT"] = trace_dir + "/"
        os.makedirs(trace_dir)
    elif how == "run":
        argv = [os.path.join(build, "bin", "colabtrace"), "run", "-o", trace_dir, "--"] + argv
    start = time.monotonic()
    out_path, err_path = os.path.join(d, ".stdout"), os.path.join(d, ".stderr")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        # Signals as an interactive start has them (a background job of a
        # non-interactive shell inherits SIGINT and SIGQUIT ignored).
        def preexec():
            os.setsid()
            for s in (signal.SIGINT, signal.SIGQUIT):
                signal.signal(s, signal.SIG_DFL)
        p = subprocess.Popen(argv, cwd=d, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             preexec_fn=preexec)
        side.pid = p.pid
        try:
            if sc.send:
                ready = os.path.join(d, "ready")
                deadline = time.monotonic() + 30
                while not os.path.exists(ready) and p.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.02)
                time.sleep(sc.send[1])
                if p.poll() is None:
                    os.kill(p.pid, sc.send[0])
            side.rc = p.wait(timeout=SCENARIO_TIMEOUT)
        except subprocess.TimeoutExpired:
            side.rc = "timeout"
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
    side.seconds = time.monotonic() - start
    with open(out_path, errors="replace") as f:
        side.stdout = f.read()
    with open(err_path, errors="replace") as f:
        side.stderr = f.read()
    os.remove(out_path)
    os.remove(err_path)
    if how == "run":
        # colabtrace run's own summary lines, and its 128+N for a death by signal N.
        side.stderr = "".join(l for l in side.stderr.splitlines(True) if not RUN_SUMMARY.match(l))
        if isinstance(side.rc, int) and side.rc > 128 and sc.rc < 0:
            side.rc = 128 - side.rc
    side.files = file_tree(d, sc.ignore_files)
    side.trace_dir = trace_dir
    return side


# colabtrace run's summary on stderr: its own lines and the findings it lists.
RUN_SUMMARY = re.compile(r"colabtrace: |  (error|warning) [a-z]+\.[a-z-]+: ")


def end_of(rc):
    if rc == -signal.SIGKILL:
        return ("killed", None, None)
    if rc < 0:
        return ("signaled", None, -rc)
    return ("exited", rc, None)


def check_report(sc, side, build):
    """What the traced side's report says against what happened."""
    problems = []
    if not os.path.isdir(side.trace_dir) or not any(f.endswith(".ctrace") for f in os.listdir(side.trace_dir)):
        return ["no trace written"]
    r = subprocess.run([os.path.join(build, "bin", "colabtrace"), "report", "--format", "json", side.trace_dir],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return ["colabtrace report exited %d: %s" % (r.returncode, r.stderr[-300:])]
    rep = json.loads(r.stdout)
    if rep.get("warnings"):
        problems.append("report warnings: %s" % rep["warnings"])
    procs = rep.get("processes", [])
    if side.how == "preload":
        mine = [p for p in procs if p.get("pid") == side.pid]
    else:  # the run's child: the process whose parent is colabtrace run
        runner = [p for p in procs if os.path.basename(p.get("exe") or "") == "colabtrace"]
        mine = [p for p in procs if runner and p.get("ppid") == runner[0]["pid"]] if runner else []
        if not runner:
            mine = [p for p in procs if p.get("ppid") not in {q.get("pid") for q in procs}][:1]
    if len(mine) != 1:
        problems.append("the program's own process (pid %s) is %d times in the report" % (side.pid, len(mine)))
    elif isinstance(side.rc, int):
        e = mine[0]["end"]
        got = (e.get("kind"), e.get("code"), e.get("signal"))
        want = end_of(side.rc)
        if got != want:
            problems.append("its end is %s in the report, %s in truth" % (got, want))
    counts = {}
    for p in procs:
        if os.path.basename(p.get("exe") or "") == "colabtrace":
            continue
        exe = os.path.basename(p.get("exe") or "")
        counts[exe] = counts.get(exe, 0) + 1
    for exe, n in sc.procs.items():
        if counts.get(exe, 0) != n:
            problems.append("%d %s process(es) in the report, expected %d (all: %s)" % (counts.get(exe, 0), exe,
                                                                                   n, counts))
    findings = {f["id"] for f in rep.get("findings", []) if f.get("severity") in ("warning", "error")}
    if findings != sc.findings:
        detail = [(f["id"], f["summary"][:150]) for f in rep.get("findings", []) if f["id"] in findings ^ sc.findings]
        problems.append("findings %s, expected %s: %s" % (sorted(findings), sorted(sc.findings), detail))
    for fid, text in sc.says.items():
        summaries = [f["summary"] for f in rep.get("findings", []) if f["id"] == fid]
        if not any(re.search(text, x) for x in summaries):
            problems.append("no %s finding says %r: %s" % (fid, text, summaries))
    return problems


def compare(sc, bare, other):
    diffs = []
    if bare.rc != other.rc:
        diffs.append("exit status %s bare, %s %s" % (bare.rc, other.rc, other.how))
    for what in ("stdout", "stderr"):
        a = normalise(getattr(bare, what), bare.dir, sc.sort_output)
        b = normalise(getattr(other, what), other.dir, sc.sort_output)
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            diffs.append("%s differs at line %d: bare %r, %s %r" % (
                what, first + 1, a[first] if first < len(a) else "<end>", other.how,
                b[first] if first < len(b) else "<end>"))
    if bare.files != other.files:
        only_b = sorted(set(bare.files) - set(other.files))[:5]
        only_o = sorted(set(other.files) - set(bare.files))[:5]
        sized = sorted(k for k in set(bare.files) & set(other.files) if bare.files[k] != other.files[k])[:5]
        diffs.append("files differ: only bare %s, only %s %s, sizes differ %s" % (only_b, other.how, only_o, sized))
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("COLABTRACE_BUILD_DIR"), help="build directory")
    ap.add_argument("--workdir", help="keep results here (default: a temporary directory)")
    ap.add_argument("--scenario", action="append", help="run only these scenarios")
    ap.add_argument("groups", nargs="+")
    a = ap.parse_args()
    if a.groups == ["list"]:
        for g, d in GROUPS.items():
            print(g, " ".join(s.name for s in d["scenarios"]))
        return 0
    if not a.build or not os.path.exists(os.path.join(a.build, "lib", "libcolabtrace.so")):
        print("runtimes: no shim under %s (pass --build)" % a.build)
        return 1
    a.build = os.path.abspath(a.build)
    workdir = a.workdir or tempfile.mkdtemp(prefix="colabtrace-runtimes-")
    os.makedirs(workdir, exist_ok=True)
    failed, ran = False, 0
    rows = []
    for g in a.groups:
        group = GROUPS[g]
        prep = os.path.join(workdir, g + "-prep")
        os.makedirs(prep, exist_ok=True)
        for needs, cmd in group.get("prepare", []):
            if not all(have(t) for t in needs):
                continue  # the scenarios that need it skip
            r = subprocess.run([c.replace("{prep}", prep) for c in cmd], capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                print("runtimes: %s: preparing with %s failed (%d): %s" % (g, cmd[0], r.returncode, r.stderr[-500:]))
                return 1
        for sc in group["scenarios"]:
            if a.scenario and sc.name not in a.scenario:
                continue
            missing = [t for t in sc.needs if not have(t)]
            if missing:
                print("runtimes: SKIP %s: %s not installed" % (sc.name, ", ".join(missing)))
                continue
            ran += 1
            sides = [run_side(sc, how, a.build, workdir, prep)
                     for how in (["bare", "preload"] + (["run"] if sc.run_side else []))]
            bare = sides[0]
            problems = []
            if bare.rc != sc.rc:
                problems.append("bare exit status %s, the scenario expects %s (is the tool as expected?)" % (
                    bare.rc, sc.rc))
            for other in sides[1:]:
                problems += compare(sc, bare, other)
                problems += ["%s report: %s" % (other.how, p) for p in check_report(sc, other, a.build)]
            rows.append((g, sc.name, bare.rc, "  ".join("%s %.1fs" % (s.how, s.seconds) for s in sides), problems))
            print("runtimes: %-28s %-6s %s" % (sc.name, "ok" if not problems else "DIFF",
                                               "  ".join("%s %.1fs" % (s.how, s.seconds) for s in sides)), flush=True)
            for p in problems:
                print("    " + p, flush=True)
            failed |= bool(problems)
    if not ran:
        print("runtimes: nothing to run here")
        shutil.rmtree(workdir, ignore_errors=True) if not a.workdir else None
        return SKIP_RC
    print("\nruntimes: %s: %d scenario(s), %d with differences (work dir %s)" % (
        "FAIL" if failed else "OK", len(rows), sum(1 for r in rows if r[4]), workdir))
    if not failed and not a.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
