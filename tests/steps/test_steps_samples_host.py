"""The samples' CPU times and the host's CPU and GPU facts (issue 27).

* A process that burns 400 ms of CPU: its exit sample carries utime_ns + stime_ns of at
  least 300 ms (/proc/self/stat counts in clock ticks), its start sample less; under
  `colabtrace run` the outside samples (proc_sample) of it grow the same way.
* HostNum cgroup_cpu_quota_millicpus, HostInfo nvidia_gpus and HostNum nvidia_dev_nodes,
  read under COLABTRACE_HOST_ROOT: a fake machine with cgroup v2 (a 1.5-CPU limit under an
  unlimited parent), or v1 (cpu,cpuacct: 0.5 CPU), two NVIDIA GPUs and their device nodes;
  and this machine (no NVIDIA GPU: no nvidia_gpus, no device nodes)."""
import os
import unittest

import ctharness as h

BURN = h.test_bin("steps", "steps_cpu_burn")
BURN_MS = 400


def host(trace):
    facts = {}
    for r in h.records(trace, "host_info") + h.records(trace, "host_num"):
        facts[r["key"]] = r["value"]
    return facts


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


class CpuTimes(h.TempDirTest):
    def test_samples_carry_cpu_time(self):
        run = h.run_traced([BURN, str(BURN_MS)], out_dir=os.path.join(self.tmp, "out"))
        self.assertEqual(run.returncode, 0, run.stderr)
        samples = h.records(run.traces[0], "sample")
        self.assertGreaterEqual(len(samples), 2)
        cpu = [int(s["utime_ns"]) + int(s["stime_ns"]) for s in samples]
        self.assertLess(cpu[0], 200_000_000)  # at start
        self.assertGreaterEqual(cpu[-1], (BURN_MS - 100) * 1_000_000)  # at exit
        self.assertGreaterEqual(int(samples[-1]["utime_ns"]), (BURN_MS - 150) * 1_000_000)
        self.assertEqual(cpu, sorted(cpu))

    def test_run_samples_carry_cpu_time(self):
        out = os.path.join(self.tmp, "run")
        p = h.colabtrace_run(out, [BURN, str(BURN_MS)], env={"COLABTRACE_SAMPLE_MS": "20"})
        self.assertEqual(p.returncode, 0, p.stderr)
        pid = None
        wrapper = None
        for f in sorted(os.listdir(out)):
            path = os.path.join(out, f)
            if h.records(path, "run_info"):
                wrapper = path
            elif f.endswith(".ctrace"):
                pid = int(h.records(path, "process_start")[0]["pid"])
        ps = [r for r in h.records(wrapper, "proc_sample") if int(r["pid"]) == pid]
        self.assertGreaterEqual(len(ps), 3)
        cpu = [int(r["utime_ns"]) + int(r["stime_ns"]) for r in ps]
        self.assertEqual(cpu, sorted(cpu))
        self.assertGreaterEqual(cpu[-1], BURN_MS // 2 * 1_000_000)


class HostFacts(h.TempDirTest):
    def facts_under(self, root):
        run = h.run_traced(["/bin/true"], env={"COLABTRACE_HOST_ROOT": root},
                           out_dir=os.path.join(self.tmp, "out-" + os.path.basename(root)))
        self.assertEqual(run.returncode, 0, run.stderr)
        return host(run.traces[0])

    def fake_gpus(self, root):
        info = "Model: \t\t %s\nIRQ:   \t\t 34\nGPU UUID: \t GPU-0\n"
        write(root, "proc/driver/nvidia/gpus/0000:41:00.0/information", info % "NVIDIA H200")
        write(root, "proc/driver/nvidia/gpus/0000:01:00.0/information", info % "NVIDIA A100-SXM4-80GB")
        for node in ("nvidia0", "nvidia1", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "null"):
            write(root, "dev/" + node, "")
        os.makedirs(os.path.join(root, "dev", "nvidia-caps"))

    def test_cgroup_v2_quota_and_gpus(self):
        root = os.path.join(self.tmp, "v2")
        write(root, "proc/self/cgroup", "0::/job/step\n")
        write(root, "sys/fs/cgroup/cpu.max", "max 100000\n")
        write(root, "sys/fs/cgroup/job/cpu.max", "max 100000\n")
        write(root, "sys/fs/cgroup/job/step/cpu.max", "150000 100000\n")
        self.fake_gpus(root)
        f = self.facts_under(root)
        self.assertEqual(f["cgroup_cpu_quota_millicpus"], "1500")
        self.assertEqual(f["nvidia_gpus"], "NVIDIA A100-SXM4-80GB, NVIDIA H200")  # in bus order
        self.assertEqual(f["nvidia_dev_nodes"], "2")

    def test_cgroup_v2_parent_limit(self):
        root = os.path.join(self.tmp, "v2p")
        write(root, "proc/self/cgroup", "0::/job/step\n")
        write(root, "sys/fs/cgroup/job/cpu.max", "200000 50000\n")  # 4 CPUs, above the step
        write(root, "sys/fs/cgroup/job/step/cpu.max", "max 100000\n")
        os.makedirs(os.path.join(root, "dev"))
        f = self.facts_under(root)
        self.assertEqual(f["cgroup_cpu_quota_millicpus"], "4000")
        self.assertNotIn("nvidia_gpus", f)
        self.assertEqual(f["nvidia_dev_nodes"], "0")

    def test_cgroup_v1_quota(self):
        root = os.path.join(self.tmp, "v1")
        write(root, "proc/self/cgroup", "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n")
        write(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "50000\n")
        write(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n")
        write(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n")
        write(root, "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n")
        f = self.facts_under(root)
        self.assertEqual(f["cgroup_cpu_quota_millicpus"], "500")

    def test_unlimited_and_no_gpu(self):
        root = os.path.join(self.tmp, "none")
        write(root, "proc/self/cgroup", "0::/\n")
        write(root, "sys/fs/cgroup/cgroup.controllers", "cpu memory\n")
        os.makedirs(os.path.join(root, "dev"))
        f = self.facts_under(root)
        self.assertNotIn("cgroup_cpu_quota_millicpus", f)
        self.assertNotIn("nvidia_gpus", f)
        self.assertEqual(f["nvidia_dev_nodes"], "0")

    def test_this_machine_has_no_nvidia_gpu(self):
        if os.path.exists("/proc/driver/nvidia/gpus"):
            self.skipTest("this machine has an NVIDIA driver")
        run = h.run_traced(["/bin/true"], out_dir=os.path.join(self.tmp, "real"))
        f = host(run.traces[0])
        self.assertNotIn("nvidia_gpus", f)
        self.assertEqual(f["nvidia_dev_nodes"], str(sum(
            1 for n in os.listdir("/dev") if n.startswith("nvidia") and n[6:7].isdigit())))


if __name__ == "__main__":
    unittest.main()
