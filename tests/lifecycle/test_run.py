"""`colabtrace run`: the command's exact exit status, the outside sampler's own trace
(never a job process), and a clear line when a process could not write its trace."""
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

    def test_samples_every_process_of_the_tree_from_outside(self):
        # A parent and two children that live long enough for several 50 ms rounds.
        code = ("import subprocess, sys, time\n"
                "ps = [subprocess.Popen([sys.executable, '-c', 'import time; x = bytearray(64 << 20); time.sleep(0.6)'])"
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
        for k in kids:
            self.assertIn(k, by_pid)
            best = max(by_pid[k], key=lambda s: int(s["rss_bytes"]))
            rss, pss, uss = int(best["rss_bytes"]), int(best["pss_bytes"]), int(best["uss_bytes"])
            # The 64 MiB bytearray is private to each child (zeroed pages are touched by
            # bytearray's memset): USS <= PSS <= RSS and all above 64 MiB.
            self.assertGreaterEqual(uss, 64 << 20)
            self.assertLessEqual(uss, pss)
            self.assertLessEqual(pss, rss)
            self.assertEqual(best["shim"], "1")
        rep = lt.report(self.tmp)
        for k in kids:
            self.assertGreaterEqual(lt.by_pid(rep)[k]["peak_rss_bytes"], 64 << 20)
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


if __name__ == "__main__":
    unittest.main()
