"""Darshan as a benchmark peer of tools/bench: find (or build, once) a Darshan install with
build.sh next to this file, give the environment of a run under it, and count what its
log kept with darshan-parser.

Two modes: "darshan" is Darshan as installed (its default keeps 1,024 file records per
module, so a run that touches more files loses the rest); "darshan-full" raises the
record and memory limits with a config file so that the log is complete, which is the
fair comparison with colabtrace (which records every event)."""
from __future__ import annotations

import os
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "build.sh")
# Enough for the benchmark workloads (5,000 files plus the interpreter's own); Darshan
# preallocates these records, so the limits are not free (part of what "full" costs).
FULL_CONFIG = "MAX_RECORDS 65536 POSIX,STDIO\nMODMEM 256\nNAMEMEM 64\n"
MODES = ("darshan", "darshan-full")


def locate() -> tuple[str | None, str]:
    """(install prefix, "") or (None, why not). Builds on first use (a few minutes)."""
    if os.environ.get("COLABTRACE_BENCH_DARSHAN") == "0":
        return None, "COLABTRACE_BENCH_DARSHAN=0"
    p = subprocess.run(["bash", BUILD], capture_output=True, text=True)
    if p.returncode == 0 and p.stdout.strip():
        return p.stdout.strip().splitlines()[-1], ""
    why = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"build.sh exited {p.returncode}"
    return None, why


def env(prefix: str, base: dict, mode: str, work: str, log_dir: str | None) -> dict:
    """The environment of one run under Darshan: its log goes to LOG_DIR/darshan.log."""
    e = dict(base)
    e["LD_PRELOAD"] = os.path.join(prefix, "lib", "libdarshan.so")
    e["DARSHAN_ENABLE_NONMPI"] = "1"
    e["DARSHAN_LOGFILE"] = os.path.join(log_dir or tempfile.mkdtemp(dir=work), "darshan.log")
    if mode == "darshan-full":
        conf = os.path.join(work, "darshan-full.conf")
        if not os.path.exists(conf):
            with open(conf, "w") as f:
                f.write(FULL_CONFIG)
        e["DARSHAN_CONFIG_PATH"] = conf
    return e


def log_summary(prefix: str, log: str, under: str) -> dict:
    """What a Darshan log kept of the files below UNDER: {"files", "opens", "stats",
    "reads", "complete"} from darshan-parser (POSIX module; --show-incomplete, so a log
    that ran out of records still shows what it kept)."""
    p = subprocess.run([os.path.join(prefix, "bin", "darshan-parser"), "--show-incomplete", log],
                       capture_output=True, text=True, check=True)
    files, sums = set(), {"POSIX_OPENS": 0, "POSIX_STATS": 0, "POSIX_READS": 0}
    complete = True
    root = under.rstrip("/") + "/"
    for line in p.stdout.splitlines():
        if line.startswith("#"):
            complete &= "incomplete data" not in line
            continue
        f = line.split("\t")
        if len(f) < 6 or f[0] != "POSIX" or not f[5].startswith(root):
            continue
        files.add(f[2])
        if f[3] in sums:
            sums[f[3]] += int(f[4])
    return {"files": len(files), "opens": sums["POSIX_OPENS"], "stats": sums["POSIX_STATS"],
            "reads": sums["POSIX_READS"], "complete": complete}
