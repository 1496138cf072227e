"""Start-up work (issue 12): what every traced process pays before main.

- The tick source is decided from CPUID (no /proc/cpuinfo read at all), once per
  process tree branch: a fork child keeps its parent's decision and an exec'd image takes
  it from the trace it adopts, the decision is the one /proc/cpuinfo's flags imply, and
  the exec'd image's times still line up with its clock records.
- The fingerprint and the library inventory are written before main runs: a process
  SIGKILLed as soon as its main has started still has them in its trace.
- A short process leaves a trace whose reserved tail is bounded (the exit trims only the
  sparse part of the file, never blocks the process for a journal transaction).
"""
import glob
import os
import platform
import shutil
import signal
import struct
import subprocess
import unittest

import ctharness
from coretest import clean_env, prog, records, report, shim_env
from ctharness import TempDirTest, by_pid, findings

CHUNK = 32 * 1024


class StartupTest(TempDirTest):
    @unittest.skipUnless(shutil.which("strace"), "strace is not installed")
    def test_fork_and_exec_reuse_the_tick_decision(self):
        log = os.path.join(self.tmp, "strace.log")
        out = os.path.join(self.tmp, "traces")
        os.mkdir(out)
        # The parent starts a trace, its fork child starts another, and the child's exec
        # into ct_steps hands that trace over.
        # strace itself runs without the shim (-E gives it to the traced command only).
        env = shim_env(out)
        p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat", "-o", log,
                            "-E", "LD_PRELOAD=" + env["LD_PRELOAD"],
                            "-E", "COLABTRACE_OUT=" + env["COLABTRACE_OUT"],
                            prog("ct_procs"), "forkexec", prog("ct_steps"), "3", "0"],
                           env=clean_env(), capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(log, encoding="utf-8", errors="replace") as f:
            cpuinfo = [l for l in f if '"/proc/cpuinfo"' in l]
        self.assertEqual(cpuinfo, [], "the tick source comes from CPUID, not /proc/cpuinfo")
        traces = glob.glob(os.path.join(out, "*.ctrace"))
        self.assertEqual(len(traces), 2, traces)
        # The decision is the one the kernel's flags imply: TSC ticks exactly when
        # /proc/cpuinfo lists both constant_tsc and nonstop_tsc.
        expected_tsc = self.cpuinfo_says_invariant_tsc()
        for t in traces:
            with open(t, "rb") as f:
                (features,) = struct.unpack_from("<Q", f.read(24), 16)
            self.assertEqual(bool(features & 1), expected_tsc, t)
        rep = report(*traces)
        procs = by_pid(rep)
        self.assertEqual(len(procs), 2)
        child = next(pr for pr in procs.values() if pr["exe"].endswith("/ct_steps"))
        self.assertEqual(child["end"]["kind"], "exited")
        (child_trace,) = [t for t in traces if f".{child['pid']}." in os.path.basename(t)]
        # The exec'd image's clock records, converted with the trace's tick unit, sit at
        # the times they name: a wrong unit in the second image would put them off by
        # orders of magnitude.
        clocks = records(child_trace, "clock")
        self.assertGreaterEqual(len(clocks), 3, "fork child start, exec'd image start, exit")
        base = None
        for line in self.dump_times(child_trace, "clock"):
            t_rel, mono = line
            if base is None:
                base = (t_rel, mono)
                continue
            expected = (mono - base[1]) / 1e9
            self.assertAlmostEqual(t_rel - base[0], expected, delta=0.002 + expected * 0.01)
        steps = [r["value"] for r in records(child_trace, "env") if r.get("name") == "CUDA_STEP"]
        self.assertEqual(steps, ["0", "1", "2"])

    @staticmethod
    def cpuinfo_says_invariant_tsc():
        if platform.machine() not in ("x86_64", "AMD64"):
            return False
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
        return "constant_tsc" in flags and "nonstop_tsc" in flags

    def dump_times(self, trace, name):
        """(seconds since the trace's start as the reader converts them, mono_ns) of each
        record `name` in dump order."""
        from ctharness import dump, parse_dump_line
        out = []
        for line in dump(trace):
            parsed = parse_dump_line(line)
            if parsed is None or parsed[0] != name:
                continue
            out.append((float(line.split(" ", 1)[0]), int(parsed[1]["mono_ns"])))
        return out

    def test_killed_as_soon_as_main_runs_keeps_fingerprint_and_inventory(self):
        p = subprocess.Popen([prog("ct_steps"), "1000000", "100000"], env=shim_env(self.tmp),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = p.stdout.readline()
            self.assertEqual(first.strip(), "step 0")
            os.kill(p.pid, signal.SIGKILL)
            p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        (trace,) = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        self.assertEqual(len(records(trace, "process_start")), 1)
        keys = {r["key"] for r in records(trace, "host_info")}
        self.assertTrue({"hostname", "kernel", "glibc"} <= keys, keys)
        loads = [r["path"] for r in records(trace, "lib_load")]
        self.assertTrue(any(os.path.basename(x).startswith("libc.so") for x in loads), loads)
        self.assertTrue(records(trace, "module"), "the module map for symbolization")
        rep = report(trace)
        (proc,) = rep["processes"]
        self.assertEqual(proc["end"]["kind"], "killed")
        self.assertTrue(findings(rep, "proc.killed"))
        self.assertTrue(any(os.path.basename(lib["path"] or "").startswith("libc.so")
                            for lib in rep["libraries"]), rep["libraries"])

    @unittest.skipUnless(shutil.which("nm"), "nm (binutils) is not installed")
    def test_loading_the_shim_runs_no_static_initializer(self):
        # Every process pays for what runs when the library is loaded: the constructor
        # only, not a C++ static initializer (one zeroed a 72 KiB table at every load)
        # and not libstdc++'s exception runtime (its pool mallocs at every load; a
        # string_view::substr linked it in).
        syms = subprocess.run(["nm", "-C", ctharness.SHIM], capture_output=True, text=True,
                              check=True).stdout
        if "ShimInit" not in syms:
            self.skipTest("the shim's symbol table is stripped")
        names = [l.split(None, 2)[-1] for l in syms.splitlines() if l.strip()]
        self.assertEqual([n for n in names if n.startswith("_GLOBAL__sub_I")], [])
        self.assertEqual([n for n in names if n in ("__cxa_allocate_exception", "__cxa_throw")], [])

    def test_a_short_process_trace_is_small_and_whole(self):
        subprocess.run([prog("ct_steps"), "5", "0"], env=shim_env(self.tmp), check=True,
                       capture_output=True, timeout=60)
        (trace,) = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        # The header slot and one chunk: reserved as used, nothing left to trim.
        self.assertEqual(os.path.getsize(trace), 2 * CHUNK)
        (proc,) = report(trace)["processes"]
        self.assertEqual(proc["end"]["kind"], "exited")
        self.assertFalse(proc["trace_truncated"])


if __name__ == "__main__":
    unittest.main()
