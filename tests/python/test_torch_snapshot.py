"""PyTorch allocator snapshots next to a trace (analyzer/python/torch_snapshot.*).

Fixtures follow the schema documented in torch/cuda/memory.py (_snapshot: segments[]
with blocks[] of address, size, requested_size, state, frames[]), plus the "colabtrace"
member the start-up hook adds from PyTorch's OOM observer. Each is placed next to a real
trace, as the hook would write it, and read back through `colabtrace report`.
"""
from __future__ import annotations

import os
import shutil
import unittest

import ctharness as h

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20


class TorchSnapshotTest(h.TempDirTest):
    def trace_with(self, fixture: str | None, text: str | None = None):
        run = h.run_traced(["/bin/true"])
        (trace,) = run.traces
        side = trace[: -len(".ctrace")] + ".torch-snapshot.json"
        if fixture:
            shutil.copy(os.path.join(HERE, "fixtures", fixture), side)
        if text is not None:
            with open(side, "w", encoding="utf-8") as f:
                f.write(text)
        rep = h.report(trace)
        (proc,) = rep["processes"]
        return rep, proc

    def test_fragmentation(self):
        _, proc = self.trace_with("snapshot_fragmented.json")
        ts = proc["python"]["torch_snapshot"]
        self.assertEqual(ts["verdict"], "fragmentation")
        self.assertEqual(ts["device"], 0)
        self.assertEqual(ts["requested_bytes"], 30 * MiB)
        self.assertEqual(ts["segments"], 2)  # device 1's segment is not counted
        self.assertEqual(ts["blocks"], 6)
        self.assertEqual(ts["reserved_bytes"], 60 * MiB)
        self.assertEqual(ts["allocated_bytes"], 30 * MiB)
        self.assertEqual(ts["inactive_bytes"], 30 * MiB)
        self.assertEqual(ts["largest_free_block"], 14 * MiB)
        self.assertEqual(ts["inactive_split_blocks"], 3)
        self.assertEqual(ts["inactive_split_bytes"], 30 * MiB)
        self.assertEqual(ts["device_free_bytes"], 2 * MiB)

    def test_genuine_oom(self):
        _, proc = self.trace_with("snapshot_exhausted.json")
        ts = proc["python"]["torch_snapshot"]
        self.assertEqual(ts["verdict"], "out-of-memory")
        self.assertEqual(ts["allocated_bytes"], 40 * MiB)  # pending-free blocks are in use
        self.assertEqual(ts["inactive_bytes"], 0)
        self.assertEqual(ts["largest_free_block"], 0)

    def test_damaged_snapshots_are_ignored(self):
        for text in ('{"segments": [', '[1, 2]', '{"segments": {"a": 1}}',
                     '{"segments": [{"device": "x", "blocks": [7, {"size": -5, "state": 3}]}]}'):
            with self.subTest(text=text):
                rep, proc = self.trace_with(None, text)
                ts = proc.get("python", {}).get("torch_snapshot")
                if ts is not None:  # readable enough: a segment with no usable numbers
                    self.assertEqual(ts["verdict"], "no-oom")
                    self.assertEqual(ts["reserved_bytes"], 0)

    def test_no_snapshot_no_section(self):
        _, proc = self.trace_with(None)
        self.assertNotIn("python", proc)


SIMCUDA_DIR = os.environ.get("SIMCUDA_DIR", os.path.join(h.BUILD, "simcuda"))
CUDART = os.path.join(SIMCUDA_DIR, "libcudart.so.13")
OOM_PROGRAM = """
import ctypes, sys
rt = ctypes.CDLL(sys.argv[1])
p = ctypes.c_void_p()
for _ in range(3):
    assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(20 << 20)) == 0
assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(40 << 20)) != 0
"""


@unittest.skipUnless(os.path.exists(CUDART) and os.path.exists("/usr/bin/python3.11"),
                     "needs the simulated cudart and CPython 3.11")
class OomVerdictTest(h.TempDirTest):
    """gpu.oom / gpu.oom-fragmentation rest on PyTorch's accounting when a snapshot exists."""

    def oom_finding(self, fixture):
        env = {"LD_LIBRARY_PATH": SIMCUDA_DIR, "SIMCUDA_MEM_BYTES": str(64 << 20),
               "SIMCUDA_CONTEXT_BYTES": "0", "SIMCUDA_OTHER_BYTES": "0"}
        run = h.run_traced(["/usr/bin/python3.11", "-c", OOM_PROGRAM, CUDART], env=env)
        self.assertEqual(run.returncode, 0, run.stderr)
        (trace,) = run.traces
        if fixture:
            shutil.copy(os.path.join(HERE, "fixtures", fixture), trace[: -len(".ctrace")] + ".torch-snapshot.json")
        rep = h.report(trace)
        found = h.findings(rep, "gpu.oom") + h.findings(rep, "gpu.oom-fragmentation")
        self.assertEqual(len(found), 1, found)
        return found[0]

    def test_segment_level_without_snapshot(self):
        f = self.oom_finding(None)
        self.assertEqual(f["id"], "gpu.oom")
        self.assertEqual(f["evidence"]["accounting"], "segments (no PyTorch snapshot)")

    def test_snapshot_says_fragmentation(self):
        f = self.oom_finding("snapshot_fragmented.json")
        self.assertEqual(f["id"], "gpu.oom-fragmentation")
        self.assertEqual(f["evidence"]["accounting"], "pytorch-snapshot")
        self.assertEqual(f["evidence"]["torch_snapshot"]["largest_free_block"], 14 * MiB)
        self.assertIn("expandable_segments:True", f["advice"])

    def test_snapshot_says_out_of_memory(self):
        f = self.oom_finding("snapshot_exhausted.json")
        self.assertEqual(f["id"], "gpu.oom")
        self.assertEqual(f["evidence"]["torch_snapshot"]["verdict"], "out-of-memory")


if __name__ == "__main__":
    unittest.main()
