"""Host memory: PSS-based host.memory-pressure (never a sum of RSS), the worker whose
private memory keeps growing, host.shm-small, and hosts never merged."""
import glob
import json
import os
import shutil
import subprocess
import unittest

import lifecycletest as lt
from ctharness import TempDirTest


# Reads argv[1] in 1 MiB unbuffered reads and prints the bytes read.
STREAM = ("import sys\nn = 0\nwith open(sys.argv[1], 'rb', buffering=0) as f:\n"
          "    while (b := f.read(1 << 20)):\n        n += len(b)\nprint(n)\n")


def numpy_available() -> bool:
    return subprocess.run([lt.PYTHON, "-c", "import numpy"], capture_output=True).returncode == 0


def namespaces_available() -> str:
    """'' when `unshare -Urm` works here, else why not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    p = subprocess.run(["unshare", "-Urm", "true"], capture_output=True, text=True)
    return "" if p.returncode == 0 else "no user/mount namespaces: " + p.stderr.strip()


class MemoryPressure(TempDirTest):
    @unittest.skipUnless(numpy_available(), "Debian's python3-numpy is not installed")
    def test_shared_array_and_forked_workers_count_once(self):
        # 1 GiB array in the parent, 4 forked workers that read all of it (sharing, not
        # copying). RSS would count it 5 times; PSS counts it once.
        r = lt.colabtrace_run(self.tmp, [lt.PYTHON, lt.py_script("shared_array_workers.py"), "1024", "4", "1.5"],
                              env={"COLABTRACE_SAMPLE_MS": "50"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ok 4", r.stdout)
        rep = lt.report(self.tmp)
        (mem,) = rep["memory"]["hosts"]
        parent = [p for p in rep["processes"] if p["ppid"] == rep["run"][0]["pid"]][0]
        self.assertGreaterEqual(parent["peak_rss_bytes"], 1 << 30)
        # A sum of RSS counts the array once per process (five times), and stays below 90%
        # of this machine's memory: the verdict needs no PSS (it is at most RSS), and the
        # sampler reads it only as its cost budget allows, not in every round.
        self.assertEqual(mem["basis"], "pss")
        self.assertGreaterEqual(mem["rss_sum_peak_bytes"], 5 * (1 << 30))
        self.assertEqual(mem["pss_needed"], mem["rss_sum_peak_bytes"] >= 0.9 * mem["limit_bytes"])
        self.assertLessEqual(mem["peak_bytes"], mem["rss_sum_peak_bytes"])
        self.assertEqual(lt.findings(rep, "host.memory-pressure"), [])

    def test_processes_sharing_one_mapping_over_the_limit_in_rss_count_it_once(self):
        # Enough processes map one shared region that their summed RSS crosses 90% of
        # this machine's memory (8 x 3 GiB on a 24 GiB machine): the verdict needs PSS,
        # and PSS counts the region once (about 3 GiB): no host.memory-pressure.
        with open("/proc/meminfo") as f:
            info = {l.split(":")[0]: int(l.split()[1]) << 10 for l in f}
        size = 3 << 30
        if info["MemAvailable"] < 2 * size:
            self.skipTest(f"needs {2 * size >> 30} GiB of available memory, has {info['MemAvailable'] >> 30}")
        procs = -(-int(0.95 * info["MemTotal"]) // size)  # the parent and its children
        r = lt.colabtrace_run(self.tmp, [lt.PYTHON, lt.py_script("shared_mapping.py"), str(size >> 20),
                                         str(procs - 1), "8"])
        self.assertEqual((r.returncode, r.stdout), (0, f"ok {procs - 1}\n"), r.stderr)
        rep = lt.report(self.tmp)
        (mem,) = rep["memory"]["hosts"]
        if mem["limit_bytes"] < info["MemTotal"]:
            self.skipTest(f"the tests run in a cgroup limited to {mem['limit_bytes']} bytes")
        self.assertEqual((mem["basis"], mem["limit_source"], mem["pss_needed"]), ("pss", "MemTotal", True))
        self.assertGreaterEqual(mem["rss_sum_peak_bytes"], 0.9 * mem["limit_bytes"])
        # The region once, the interpreters, and readings a little behind (a parent read
        # before its children mapped the region counts it whole until read again): far
        # below the RSS sum, and below the threshold.
        self.assertLess(mem["peak_bytes"], 0.5 * mem["limit_bytes"])
        self.assertEqual(lt.findings(rep, "host.memory-pressure"), [])
        # PSS was read for every process (each at first sight at least), not in every sample.
        samples = lt.records(lt.run_trace(self.tmp), "proc_sample")
        read = {int(s["pid"]) for s in samples if int(s["pss_bytes"]) < (1 << 62)}
        self.assertEqual(len(read & {int(s["pid"]) for s in samples}), procs)
        (run,) = rep["run"]
        self.assertLess(run["pss_samples"], run["samples"])
        self.assertEqual(run["pss_ms"], 0)

    def _cgroup_v1_child(self, limit_bytes: int) -> str:
        """A memory cgroup (v1) with a limit, removed after the test; skips if not allowed."""
        base = "/sys/fs/cgroup/memory"
        if not os.path.exists(os.path.join(base, "memory.limit_in_bytes")):
            self.skipTest("no cgroup v1 memory controller at " + base)
        path = os.path.join(base, f"ct-lifecycle-{os.getpid()}")
        try:
            os.mkdir(path)
            with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
                f.write(str(limit_bytes))
        except OSError as e:
            self.skipTest(f"cannot create a memory cgroup here: {e}")
        self.addCleanup(lambda: os.path.isdir(path) and os.rmdir(path))
        return path

    def test_growing_worker_under_a_cgroup_limit(self):
        limit = 512 << 20
        cg = self._cgroup_v1_child(limit)
        # The worker's private memory grows by 20 MiB every 50 ms up to 420 MiB: the
        # cgroup's usage reaches > 90% of 512 MiB.
        script = (f"echo $$ > {cg}/cgroup.procs && exec {lt.ctharness.CLI} run -o {self.tmp} -- "
                  f"{lt.PYTHON} {lt.py_script('grow_worker.py')} 48 420 20 0.05")
        r = subprocess.run(["/bin/sh", "-c", script], env=lt.clean_env({"COLABTRACE_SAMPLE_MS": "50"}),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        worker = int(r.stdout.split()[1])
        self.assertEqual(r.stdout.split()[2], "0", "the worker was killed: the cgroup limit is too tight")
        rep = lt.report(self.tmp)
        (f,) = lt.findings(rep, "host.memory-pressure")
        ev = f["evidence"]
        self.assertEqual(ev["limit_source"], "cgroup memory.max")
        self.assertEqual(ev["limit_bytes"], limit)
        self.assertIn(ev["basis"], ("cgroup working set", "cgroup memory.current"))
        self.assertGreaterEqual(ev["percent_of_limit"], 90)
        (grown,) = ev["growing_workers"]
        self.assertEqual(grown["pid"], worker)
        self.assertGreaterEqual(grown["uss_last_bytes"] - grown["uss_first_bytes"], 300 << 20)
        self.assertIn(f"worker {worker}", f["summary"])
        self.assertIn("private memory keeps growing", f["summary"])

    def test_streaming_a_file_through_a_small_cgroup_is_no_pressure(self):
        # A 256 MiB cgroup; the job reads a 640 MiB file (not in the page cache) in 1 MiB
        # reads. The page cache fills the cgroup's memory.current to its limit and the
        # kernel drops it as it goes: the working set (current less inactive_file) stays
        # small, and the job's own memory is a few MiB. No memory pressure.
        limit = 256 << 20
        cg = self._cgroup_v1_child(limit)
        data = self._uncached_file(640)
        out = os.path.join(self.tmp, "out")
        script = (f"echo $$ > {cg}/cgroup.procs && exec {lt.ctharness.CLI} run -o {out} -- "
                  f"{lt.PYTHON} -c \"$0\" {data}")
        r = subprocess.run(["/bin/sh", "-c", script, STREAM], env=lt.clean_env({"COLABTRACE_SAMPLE_MS": "20"}),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual((r.returncode, r.stdout), (0, f"{640 << 20}\n"), r.stderr)
        cgs = [c for c in lt.records(lt.run_trace(out), "cgroup_sample") if c["path"] == cg]
        self.assertTrue(cgs)
        # The cache really filled the cgroup: memory.current alone would say > 90%.
        self.assertGreaterEqual(max(int(c["current"]) for c in cgs), limit * 9 // 10)
        self._assert_working_set_below_half(out, limit)

    def _assert_working_set_below_half(self, out, limit):
        rep = lt.report(out)
        (mem,) = rep["memory"]["hosts"]
        self.assertEqual((mem["basis"], mem["limit_bytes"]), ("cgroup working set", limit))
        self.assertLess(mem["percent_of_limit"], 50)
        self.assertEqual(lt.findings(rep, "host.memory-pressure"), [])

    def _uncached_file(self, mib):
        data = os.path.join(self.tmp, f"stream{mib}.bin")
        with open(data, "wb") as f:
            for _ in range(mib):
                f.write(os.urandom(1 << 20))
            f.flush()
            os.fsync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        return data

    def _preloaded_in_cgroup(self, limit, shell, args=(), sample_ms="100"):
        """Runs `sh -c SHELL ARGS...` in a new memory cgroup of LIMIT bytes; SHELL's
        "$PRELOAD" is the LD_PRELOAD assignment for the traced command (the shell itself
        joins the cgroup untraced). Returns the trace directory and the result."""
        cg = self._cgroup_v1_child(limit)
        out = os.path.join(self.tmp, "out")
        os.mkdir(out)
        script = f"echo $$ > {cg}/cgroup.procs && PRELOAD=LD_PRELOAD={lt.ctharness.SHIM} && " + shell
        env = lt.clean_env({"COLABTRACE_OUT": out, "COLABTRACE_SAMPLE_MS": sample_ms})
        return out, subprocess.run(["/bin/sh", "-c", script, *args], env=env, capture_output=True, text=True,
                                   timeout=120)

    def test_streaming_under_ld_preload_alone_is_no_pressure(self):
        # The same stream as above with LD_PRELOAD alone (no colabtrace run): the shim's
        # periodic samples read memory.stat too, so the working set is judged, not the
        # page cache that fills memory.current.
        limit = 256 << 20
        data = self._uncached_file(640)
        out, r = self._preloaded_in_cgroup(limit, f'env "$PRELOAD" {lt.PYTHON} -c "$0" {data}', [STREAM], "20")
        self.assertEqual((r.returncode, r.stdout), (0, f"{640 << 20}\n"), r.stderr)
        (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
        samples = lt.records(trace, "sample")
        periodic = [s for s in samples if int(s["cgroup_inactive_file"]) != (1 << 64) - 1]
        self.assertGreater(max(int(s["cgroup_inactive_file"]) for s in periodic), 100 << 20)
        # The start and exit samples go without memory.stat (a periodic sample falling
        # due during the exit's own records may follow the exit sample).
        self.assertEqual(len(samples) - len(periodic), 2, samples)
        self.assertEqual(int(samples[0]["cgroup_inactive_file"]), (1 << 64) - 1)
        # The cache really filled the cgroup: memory.current alone would say > 90%.
        self.assertGreaterEqual(max(int(s["cgroup_current"]) for s in samples), limit * 9 // 10)
        self._assert_working_set_below_half(out, limit)

    def test_short_process_in_a_cgroup_full_of_cache_is_no_pressure(self):
        # Page cache another job left fills a 256 MiB cgroup; then a short traced process
        # (no periodic sample, so no memory.stat reading) starts and exits there. Its
        # samples see memory.current near the limit; the tree's own memory is its RSS.
        limit = 256 << 20
        data = self._uncached_file(400)
        out, r = self._preloaded_in_cgroup(limit, f'cat {data} > /dev/null && env "$PRELOAD" {lt.PYTHON} -c pass',
                                           sample_ms="0")  # samples at start and exit only
        self.assertEqual(r.returncode, 0, r.stderr)
        (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
        samples = lt.records(trace, "sample")
        self.assertEqual(len(samples), 2)
        self.assertGreaterEqual(max(int(s["cgroup_current"]) for s in samples), limit * 8 // 10)
        rep = lt.report(out)
        (mem,) = rep["memory"]["hosts"]
        self.assertEqual(mem["basis"], "cgroup memory.current, capped at the processes' rss")
        self.assertEqual(mem["peak_bytes"], max(int(s["rss_bytes"]) for s in samples))
        self.assertEqual(lt.findings(rep, "host.memory-pressure"), [])

    def test_growing_worker_under_ld_preload_alone_is_pressure(self):
        # The growing worker again, LD_PRELOAD alone: its private memory is no page cache,
        # so the working set from the shim's periodic samples passes 90% of the limit.
        limit = 512 << 20
        out, r = self._preloaded_in_cgroup(
            limit, f'env "$PRELOAD" {lt.PYTHON} {lt.py_script("grow_worker.py")} 48 420 20 0.05', sample_ms="50")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split()[2], "0", "the worker was killed: the cgroup limit is too tight")
        rep = lt.report(out)
        (f,) = lt.findings(rep, "host.memory-pressure")
        ev = f["evidence"]
        # The working set where a periodic sample saw inactive page cache; without any,
        # memory.current, capped at the summed RSS (the worker's 420 MiB is in it).
        self.assertIn(ev["basis"], ("cgroup working set", "cgroup memory.current",
                                    "cgroup memory.current, capped at the processes' rss"))
        self.assertEqual(ev["limit_bytes"], limit)
        self.assertGreaterEqual(ev["percent_of_limit"], 90)

    def test_oom_killed_worker_cites_the_rising_oom_kill_count(self):
        # A 160 MiB cgroup; a forked worker allocates until the kernel's OOM killer takes
        # it. The parent and colabtrace run survive and see the cgroup's oom_kill rise.
        cg = self._cgroup_v1_child(160 << 20)
        script = (f"echo $$ > {cg}/cgroup.procs && exec {lt.ctharness.CLI} run -o {self.tmp} -- "
                  f"{lt.PYTHON} {lt.py_script('oom_worker.py')} 16")
        r = subprocess.run(["/bin/sh", "-c", script], env=lt.clean_env({"COLABTRACE_SAMPLE_MS": "50"}),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, worker, code = r.stdout.split()
        worker = int(worker)
        self.assertEqual(int(code), -9)
        rep = lt.report(self.tmp)
        proc = lt.by_pid(rep)[worker]
        self.assertEqual(proc["end"]["kind"], "killed")
        self.assertEqual(proc["end"]["signal"], 9)
        self.assertEqual(proc["end"]["reaped_by"], proc["ppid"])
        (f,) = [f for f in lt.findings(rep, "proc.killed") if f["pid"] == worker]
        ev = f["evidence"]
        self.assertTrue(ev["oom_kill_rose"], ev)
        self.assertGreater(ev["oom_kill_after"], ev["oom_kill_before"])
        self.assertEqual(ev["cgroup_memory_max"], 160 << 20)
        self.assertGreaterEqual(ev["last_rss_bytes"], 64 << 20)
        self.assertIn("the OOM killer took it", f["summary"])
        # Seen by a process that outlived it: its parent, or colabtrace run itself.
        self.assertIn(ev["oom_kill_seen_by"],
                      (f"the samples of pid {proc['ppid']}, which outlived it",
                       f"colabtrace run's cgroup samples (pid {rep['run'][0]['pid']})"))

    def test_hosts_are_never_merged(self):
        # Two runs on two "hosts" (UTS namespaces with their own hostnames) in one
        # directory: one memory summary per host, each with its own peak.
        why = namespaces_available()
        if why:
            self.skipTest(why)
        # Each holds its array 1.5 s: many 100 ms outside rounds even on a loaded machine.
        for name, mib in (("hosta", 64), ("hostb", 192)):
            script = (f"hostname {name} && exec {lt.ctharness.CLI} run -o {self.tmp} -- "
                      f"{lt.PYTHON} -c 'import time; x = bytearray({mib} << 20); time.sleep(1.5)'")
            r = subprocess.run(["unshare", "-Uru", "/bin/sh", "-c", script], env=lt.clean_env(),
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
        rep = lt.report(self.tmp)
        hosts = {h["host"]: h for h in rep["memory"]["hosts"]}
        self.assertEqual(sorted(hosts), ["hosta", "hostb"])
        self.assertGreaterEqual(hosts["hosta"]["peak_bytes"], 64 << 20)
        self.assertLess(hosts["hosta"]["peak_bytes"], 192 << 20)
        self.assertGreaterEqual(hosts["hostb"]["peak_bytes"], 192 << 20)
        self.assertEqual(hosts["hosta"]["processes_at_peak"], 1)


class ShmSmall(TempDirTest):
    WRITER = ("import os, sys\n"
              "pid = os.fork()\n"
              "name = '/dev/shm/ct-batch-%d' % os.getpid()\n"
              "fd = os.open(name, os.O_CREAT | os.O_WRONLY, 0o600)\n"
              "try:\n"
              "    for _ in range(4):\n"
              "        os.write(fd, b'x' * (1 << 20))\n"
              "    os.write(1, b'wrote\\n')\n"
              "except OSError as e:\n"
              "    os.write(1, b'failed %d\\n' % e.errno)\n"
              "os.close(fd); os.unlink(name)\n"
              "if pid: os.waitpid(pid, 0)\n")

    def _run_with_dev_shm(self, size: str) -> subprocess.CompletedProcess:
        """Runs WRITER traced, with a /dev/shm of `size` in a private mount namespace."""
        why = namespaces_available()
        if why:
            self.skipTest(why)
        script = (f"mount -t tmpfs -o size={size} tmpfs /dev/shm && "
                  f"LD_PRELOAD={lt.ctharness.SHIM} COLABTRACE_OUT={self.tmp}/ exec {lt.PYTHON} -c \"$0\"")
        r = subprocess.run(["unshare", "-Urm", "/bin/sh", "-c", script, self.WRITER], env=lt.clean_env(),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_writes_to_a_small_dev_shm_fail(self):
        # A 1 MiB /dev/shm; two processes each write 4 MiB.
        r = self._run_with_dev_shm("1m")
        self.assertEqual(sorted(r.stdout.split("\n")[:2]), ["failed 28", "failed 28"])
        rep = lt.report(self.tmp)
        (f,) = lt.findings(rep, "host.shm-small")
        self.assertEqual(f["evidence"]["shm_size_bytes"], 1 << 20)
        self.assertEqual(f["evidence"]["processes_using_shm"], 2)
        self.assertEqual(len(f["evidence"]["failures"]), 2)
        for line in f["evidence"]["failures"]:
            self.assertIn("a write to /dev/shm failed with ENOSPC", line)

    def test_roomy_dev_shm_is_quiet(self):
        # The same program with a 64 MiB /dev/shm (Docker's default): 8 MiB written, no
        # failure, no finding.
        r = self._run_with_dev_shm("64m")
        self.assertEqual(r.stdout.split(), ["wrote", "wrote"])
        self.assertEqual(lt.findings(lt.report(self.tmp), "host.shm-small"), [])


if __name__ == "__main__":
    unittest.main()
