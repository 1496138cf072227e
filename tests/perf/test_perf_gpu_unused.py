"""perf.gpu-unused end to end (issue 27): a real PyTorch loop (Debian's python3-torch, a
build without CUDA) that steps on the CPU. This machine has no GPU, so the report must
stay silent; with the shim's host facts read under a fake root (COLABTRACE_HOST_ROOT)
that holds an NVIDIA driver's /proc/driver/nvidia/gpus entry and a /dev/nvidia0 node, and
CUDA_VISIBLE_DEVICES set empty, the same loop gets the warning, naming the GPU, torch and
the empty CUDA_VISIBLE_DEVICES."""
import os
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest, report, run_traced
from perftest import TRAIN, findings_of, perf_findings, torch_missing


def fake_gpu_root(root: str, model: str) -> str:
    """A root with one NVIDIA GPU as the driver shows it: its information file (the
    driver's layout: "Model: \\t\\t <name>") and its device node (a plain file will do)."""
    info = os.path.join(root, "proc", "driver", "nvidia", "gpus", "0000:00:04.0")
    os.makedirs(info)
    with open(os.path.join(info, "information"), "w") as f:
        f.write(f"Model: \t\t {model}\nIRQ:   \t\t 35\nGPU UUID: \t GPU-0\n")
    os.makedirs(os.path.join(root, "dev"))
    open(os.path.join(root, "dev", "nvidia0"), "w").close()
    open(os.path.join(root, "dev", "nvidiactl"), "w").close()
    return root


class GpuUnusedTest(TempDirTest):
    def setUp(self):
        super().setUp()
        why = torch_missing()
        if why:
            self.skipTest(why)

    def loop(self, name, env):
        out = os.path.join(self.tmp, name)
        argv = [SYSTEM_PYTHON, TRAIN, "--steps", "6", "--batch", "4", "--workers", "0", "--in-memory"]
        r = run_traced(argv, env={"COLABTRACE_PYTHON": "1", **env}, out_dir=out, timeout=240)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return report(out)

    def test_silent_without_a_gpu_on_the_machine(self):
        rep = self.loop("bare-machine", {})
        main = [p for p in rep["processes"] if "steps" in p]
        self.assertEqual(len(main), 1)
        self.assertEqual(main[0]["steps"]["count"], 6)
        self.assertEqual([f for f in perf_findings(rep) if f["id"] == "perf.gpu-unused"], [])

    def test_a_cpu_loop_next_to_a_gpu_is_named(self):
        root = fake_gpu_root(os.path.join(self.tmp, "root"), "Tesla T4")
        rep = self.loop("gpu-machine", {"COLABTRACE_HOST_ROOT": root, "CUDA_VISIBLE_DEVICES": ""})
        main = [p for p in rep["processes"] if "steps" in p]
        self.assertEqual(len(main), 1)
        found = findings_of(rep, "perf.gpu-unused", main[0]["pid"])
        self.assertEqual(len(found), 1, rep["findings"])
        f = found[0]
        self.assertEqual(f["severity"], "warning")
        self.assertEqual(f["evidence"]["gpus"], "Tesla T4")
        self.assertEqual(f["evidence"]["nvidia_dev_nodes"], 1)
        self.assertEqual(f["evidence"]["steps"], 6)
        self.assertEqual([x["name"] for x in f["evidence"]["frameworks"]], ["torch"])
        self.assertIn("CUDA_VISIBLE_DEVICES= hides every GPU", f["evidence"]["causes"])
        self.assertIn("Tesla T4", f["summary"])


if __name__ == "__main__":
    unittest.main()
