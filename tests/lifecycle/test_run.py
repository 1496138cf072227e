"""`colabtrace run`: the command's exact exit status, the outside sampler's own trace
(never a job process), and a clear line when a process could not write its trace."""
import ctypes
import glob
import json
import os
import shutil
import subprocess
import unittest

import lifecycletest as lt
from ctharness import TempDirTest


class Run(TempDirTest):
    def test_exit_code_and_wrapper_trace(self):
        r = lt.colabtrace_run(self.tmp, ["/bin/sh", "-c", "exit 3"])
        self.assertEqual(r.returncode, 3, r.stderr)
        trace = lt.run_trace(self.tmp)
        (info,) = lt.records(trace, "run_info")
        (w,) = [w for w in lt.records(trace, "wait_status") if w["pid"] == info["child_pid"]]
        self.assertEqual(int(w["status"]), 3 << 8)
        self.assertEqual(int(w["api"]), 5)  # WaitApi::kRun
        rep = lt.report(self.tmp)
        (proc,) = rep["processes"]  # the wrapper is not listed as a job process
        self.assertEqual(proc["pid"], int(info["child_pid"]))
        self.assertEqual(proc["end"]["code"], 3)
        self.assertEqual(proc["end"]["reaped_by"], rep["run"][0]["pid"])
        self.assertTrue(proc["end"]["reaped_by_run"])
        text = lt.cli("report", self.tmp).stdout
        self.assertIn("colabtrace run (pid", text)
        # The Libraries section has a line for the job's one process, none for the wrapper.
        libs = text.split("== Libraries ==", 1)[1].split("\n== ", 1)[0]
        lines = [l for l in libs.splitlines() if " objects loaded, " in l]
        self.assertEqual([l.split(":")[0] for l in lines], [f"pid {info['child_pid']}"])

    def test_sampling_off_still_records_the_exit_status(self):
        r = lt.colabtrace_run(self.tmp, ["/bin/sh", "-c", "sleep 0.2; exit 4"], env={"COLABTRACE_SAMPLE_MS": "0"})
        self.assertEqual(r.returncode, 4, r.stderr)
        self.assertNotIn("COLABTRACE_SAMPLE_MS", r.stderr)
        trace = lt.run_trace(self.tmp)
        self.assertEqual(lt.records(trace, "proc_sample"), [])
        (w,) = lt.records(trace, "wait_status")
        self.assertEqual(int(w["status"]), 4 << 8)

    def test_bad_sample_period_says_so_and_uses_the_default(self):
        r = lt.colabtrace_run(self.tmp, ["/bin/sh", "-c", "sleep 0.3"], env={"COLABTRACE_SAMPLE_MS": "fast"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("COLABTRACE_SAMPLE_MS=fast is not a period in milliseconds", r.stderr)
        (info,) = lt.records(lt.run_trace(self.tmp), "run_info")
        self.assertEqual(info["sample_ms"], "100")

    def test_pss_period_is_recorded_and_a_bad_one_says_so(self):
        # COLABTRACE_PSS_MS=50: every sample of the 64 MiB child reads its PSS (rounds every
        # 50 ms); a bad value says so in one line and leaves the cost budget on (pss_ms 0).
        r = lt.colabtrace_run(self.tmp, [lt.PYTHON, "-c", "x = bytearray(64 << 20); import time; time.sleep(0.6)"],
                              env={"COLABTRACE_SAMPLE_MS": "50", "COLABTRACE_PSS_MS": "50"})
        self.assertEqual(r.returncode, 0, r.stderr)
        trace = lt.run_trace(self.tmp)
        (info,) = lt.records(trace, "run_info")
        self.assertEqual(info["pss_ms"], "50")
        samples = lt.records(trace, "proc_sample")
        self.assertGreaterEqual(len(samples), 5)
        self.assertEqual([s for s in samples if int(s["pss_bytes"]) >= 1 << 62], [])
        (run,) = lt.report(self.tmp)["run"]
        self.assertEqual((run["pss_ms"], run["pss_samples"]), (50, run["samples"]))
        bad = os.path.join(self.tmp, "bad")
        os.mkdir(bad)
        r = lt.colabtrace_run(bad, ["/bin/sh", "-c", "sleep 0.3"], env={"COLABTRACE_PSS_MS": "often"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr.count("COLABTRACE_PSS_MS=often is not a period in milliseconds"), 1, r.stderr)
        (info,) = lt.records(lt.run_trace(bad), "run_info")
        self.assertEqual(info["pss_ms"], "0")

    def run_python_with_a_straggler(self, script: str, stdout: str) -> dict:
        """Runs `python3 -c script` under run, whose second process outlives it briefly;
        checks the summary saw both ended cleanly, and returns the report."""
        r = lt.colabtrace_run(self.tmp, [lt.PYTHON, "-c", script])
        self.assertEqual((r.returncode, r.stdout), (0, stdout), r.stderr)
        self.assertIn("2 processes traced; 0 errors", r.stderr)
        self.assertNotIn("still running", r.stderr)
        return lt.report(self.tmp)

    def test_processes_that_end_after_the_command_are_awaited(self):
        # The command exits at once; the child it started ends 0.5 s later. run waits for
        # it (an orphan, handed to run as subreaper) before it summarizes, so its trace is
        # whole: exited 0 and reaped by run, not a trace without an exit record.
        script = ("import subprocess, sys; "
                  "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.5)']); "
                  "print('started')")
        rep = self.run_python_with_a_straggler(script, "started\n")
        ends = sorted((p["end"]["kind"], p["end"]["code"]) for p in rep["processes"])
        self.assertEqual(ends, [("exited", 0), ("exited", 0)])
        run_pid = rep["run"][0]["pid"]
        self.assertEqual(sorted(p["end"]["reaped_by"] for p in rep["processes"]), [run_pid, run_pid])
        self.assertEqual(lt.findings(rep, "proc.killed"), [])

    def test_cpython_resource_tracker_is_not_reported_killed(self):
        # multiprocessing's resource tracker (a separate python3 process) exits only when it
        # sees the command's end; run's summary used to read its trace before it did.
        script = ("from multiprocessing import shared_memory\n"
                  "s = shared_memory.SharedMemory(create=True, size=1 << 20)\n"
                  "s.buf[:2] = b'ok'; print(bytes(s.buf[:2]).decode()); s.close(); s.unlink()\n")
        rep = self.run_python_with_a_straggler(script, "ok\n")
        tracker = [p for p in rep["processes"] if "resource_tracker" in " ".join(p["argv"])]
        self.assertEqual([(p["end"]["kind"], p["end"]["code"]) for p in tracker], [("exited", 0)])
        self.assertEqual(lt.findings(rep, "proc.killed"), [])

    def test_a_daemons_worker_names_the_parent_that_started_it(self):
        # The worker's getppid() is run (its subreaper) by the time its trace starts; its
        # parent is the middle process, whose posix_spawn record names it.
        r = lt.colabtrace_run(self.tmp, [lt.PYTHON, lt.py_script("double_fork_daemon.py")])
        self.assertEqual(r.returncode, 0, r.stderr)
        pids = json.loads(r.stdout)
        self.assertIn("3 processes traced; 0 errors", r.stderr)
        rep = lt.report(self.tmp)
        run_pid = rep["run"][0]["pid"]
        procs = lt.by_pid(rep)
        command = [p for p in rep["processes"] if p["pid"] not in pids.values()]
        self.assertEqual(len(command), 1)
        self.assertEqual(command[0]["ppid"], run_pid)
        self.assertEqual(procs[pids["middle"]]["ppid"], command[0]["pid"])
        worker = procs[pids["worker"]]
        self.assertEqual((worker["argv"][1:], worker["ppid"]), (["-c", "pass"], pids["middle"]))
        # The worker really was handed to run: run reaped it and the middle process.
        for p in (worker, procs[pids["middle"]]):
            self.assertEqual((p["end"]["kind"], p["end"]["code"], p["end"]["reaped_by"]), ("exited", 0, run_pid))
        io_ppid = {p["pid"]: p["ppid"] for p in rep["io"]["processes"]}
        self.assertEqual(io_ppid[pids["worker"]], pids["middle"])
        # The I/O table lists the job's processes, not run's own trace.
        self.assertEqual(sorted(io_ppid), sorted(p["pid"] for p in rep["processes"]))

    def test_a_process_left_running_is_named_and_left_running(self):
        r = lt.colabtrace_run(self.tmp, ["/bin/sh", "-c", "sleep 30 & echo $!"])
        pid = int(r.stdout)
        try:
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(f"were still running 2000 ms after it ended (pids {pid})", r.stderr)
            os.kill(pid, 0)  # still there: run does not end what the command started
        finally:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass

    def test_samples_every_process_of_the_tree_from_outside(self):
        # A parent and two children that live long enough for many 50 ms rounds after
        # their allocation (1.5 s: a loaded 2-core CI machine once went without a round
        # that saw it within 0.6 s, or swapped it out).
        code = ("import subprocess, sys, time\n"
                "ps = [subprocess.Popen([sys.executable, '-c', 'import time; x = bytearray(64 << 20); time.sleep(1.5)'])"
                " for _ in range(2)]\n"
                "print(' '.join(str(p.pid) for p in ps), flush=True)\n"
                "[p.wait() for p in ps]\n")
        r = lt.colabtrace_run(self.tmp, [lt.PYTHON, "-c", code], env={"COLABTRACE_SAMPLE_MS": "50"})
        self.assertEqual(r.returncode, 0, r.stderr)
        kids = [int(x) for x in r.stdout.split()]
        trace = lt.run_trace(self.tmp)
        samples = lt.records(trace, "proc_sample")
        by_pid = {}
        for s in samples:
            by_pid.setdefault(int(s["pid"]), []).append(s)
        rep = lt.report(self.tmp)
        for k in kids:
            self.assertIn(k, by_pid)
            # The samples that read smaps_rollup (as the PSS budget allows; at least the
            # first one of a new process).
            seen = [(int(s["rss_bytes"]), int(s["pss_bytes"]), int(s["uss_bytes"]), int(s["swap_bytes"]))
                    for s in by_pid[k] if int(s["pss_bytes"]) < (1 << 62)]
            self.assertTrue(seen, by_pid[k])
            for rss, pss, uss, _ in seen:
                self.assertLessEqual(uss, pss, seen)
                self.assertLessEqual(pss, rss, seen)
            # The 64 MiB bytearray is private to each child (its pages are written by
            # bytearray's memset): resident or swapped out, it is the child's own.
            self.assertGreaterEqual(max(uss + swap for _, _, uss, swap in seen), 64 << 20, seen)
            # The shim is seen from its first sample after the exec on. A sample taken
            # between subprocess's vfork and the exec says 0: the child still shares its
            # parent's memory, whose maps say nothing of what it will run (a loaded
            # machine takes such samples now and then).
            shims = "".join(s["shim"] for s in by_pid[k])
            self.assertRegex(shims, r"^0*1+$")
            # The report's peak is the highest RSS seen, from outside or by the shim.
            own = [int(s["rss_bytes"]) for f in glob.glob(os.path.join(self.tmp, f"colabtrace.*.{k}.ctrace"))
                   for s in lt.records(f, "sample")]
            self.assertTrue(own)
            self.assertEqual(lt.by_pid(rep)[k]["peak_rss_bytes"], max(own + [int(s["rss_bytes"]) for s in by_pid[k]]))
        self.assertGreaterEqual(len(lt.records(trace, "cgroup_sample")), 1)

    def test_says_when_a_process_could_not_write_its_trace(self):
        # A 16 KiB tmpfs (private mount namespace): no room for any trace.
        if shutil.which("unshare") is None:
            self.skipTest("unshare is not installed")
        probe = subprocess.run(["unshare", "-Urm", "true"], capture_output=True)
        if probe.returncode != 0:
            self.skipTest("no user/mount namespaces here: " + probe.stderr.decode(errors="replace"))
        mnt = os.path.join(self.tmp, "small")
        os.mkdir(mnt)
        script = (f"mount -t tmpfs -o size=16k tmpfs {mnt} && "
                  f"exec {lt.ctharness.CLI} run -o {mnt}/out -- {lt.PYTHON} -c 'import time; time.sleep(0.5)'")
        r = subprocess.run(["unshare", "-Urm", "/bin/sh", "-c", script], env=lt.clean_env(),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"colabtrace run: cannot write its own trace .*No space left on device")
        self.assertRegex(r.stderr, r"colabtrace: pid \d+ \(python3\) loaded the shim but could not write its "
                                   r"trace to .*/out \([^)]* free there\)")


    def test_a_vfork_child_that_never_execs_is_no_missing_trace(self):
        # CPython's subprocess vforks; a tool missing from a long PATH keeps the child
        # trying every directory (~0.1 s) before it _exits(255) on the parent's memory,
        # shim included. By design it writes no trace of its own, yet a sample that caught
        # it alive named it: "pid N (python3) loaded the shim but could not write its
        # trace" (the traced CPython test suite, test_subprocess).
        kcmp = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)
        libc = ctypes.CDLL(None, use_errno=True)
        if kcmp is None or libc.syscall(kcmp, os.getpid(), os.getpid(), 1, 0, 0) != 0:  # KCMP_VM
            self.skipTest("kcmp(KCMP_VM) is not available here (errno %d)" % ctypes.get_errno())
        code = ("import subprocess\n"
                "path = ':'.join('/nonexistent/d%d' % i for i in range(100000))\n"
                "try:\n"
                "    subprocess.run(['no-such-tool'], env={'PATH': path})\n"
                "except FileNotFoundError:\n"
                "    print('not found')\n")
        r = lt.colabtrace_run(self.tmp, [lt.PYTHON, "-c", code], env={"COLABTRACE_SAMPLE_MS": "10"})
        self.assertEqual((r.returncode, r.stdout), (0, "not found\n"), r.stderr)
        self.assertNotIn("could not write", r.stderr)
        # The child existed, was reaped with status 255, and was sampled alive (so the
        # check above had something to judge); only the job wrote a trace.
        (job,) = [t for t in glob.glob(os.path.join(self.tmp, "*.ctrace")) if ".run." not in t]
        (reap,) = lt.records(job, "wait_status")
        self.assertEqual(int(reap["status"]), 255 << 8)
        child = int(reap["pid"])
        self.assertIn(child, {int(s["pid"]) for s in lt.records(lt.run_trace(self.tmp), "proc_sample")})


if __name__ == "__main__":
    unittest.main()
