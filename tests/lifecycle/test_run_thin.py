"""`colabtrace run`'s own samples thinned with age (format 1.5): a job whose child has a
short RSS spike early, under a 1 s window and 5 ms samples, so that run's window gives
the spike's samples up; the same job under the default window, which keeps them all.
Both give the same findings; the thinned one keeps the child's exact peak (as a copy of
run's trace taken just after the spike read it) and run's trace stays bounded."""
import os
import re
import shutil
import struct
import subprocess
import unittest

import ctharness
import lifecycletest as lt
from ctharness import TempDirTest

CHUNK = 32768
MAGIC_EV, MAGIC_RW = b"CTEV", b"CTRW"
ENV = {"COLABTRACE_SAMPLE_MS": "5", "COLABTRACE_PSS_MS": "3600000"}


def chunks(path: str) -> dict:
    """Chunk magics of a trace, counted, and its header's dropped_until_ticks and
    recycled_chunks."""
    with open(path, "rb") as f:
        b = f.read()
    out = {}
    for off in range(CHUNK, len(b) - 3, CHUNK):
        m = b[off:off + 4]
        if m != b"\0\0\0\0":
            out[m] = out.get(m, 0) + 1
    return {"magics": out, "dropped_until": struct.unpack_from("<Q", b, 136)[0],
            "recycled": struct.unpack_from("<Q", b, 152)[0], "start_ticks": struct.unpack_from("<Q", b, 32)[0]}


def rss_of(trace: str, pid: int) -> list[tuple[float, int]]:
    """(relative ts, rss) of every proc_sample of pid in run's trace, as the reader gives them."""
    out = []
    for line in lt.ctharness.dump(trace):
        parsed = ctharness.parse_dump_line(line)
        if parsed and parsed[0] == "proc_sample" and int(parsed[1]["pid"]) == pid:
            out.append((float(line.split(" ", 1)[0]), int(parsed[1]["rss_bytes"])))
    return out


class RunThinnedSamples(TempDirTest):
    def run_job(self, out: str, seconds: str, env: dict, snapshot: str | None = None) -> int:
        """Runs the job (its child killed after `seconds`) under `colabtrace run`; with
        snapshot, copies run's trace there as soon as the child said its spike is over.
        Returns the child's pid."""
        p = subprocess.Popen([ctharness.CLI, "run", "-o", out, "--", lt.PYTHON, lt.py_script("early_spike.py"), seconds],
                             env=ctharness.clean_env({**ENV, **env}), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, start_new_session=True)
        try:
            got, m = ctharness.read_until(p, re.compile(rb"freed (\d+)\n"), 60)
            self.assertIsNotNone(m, got)
            if snapshot:
                os.makedirs(snapshot)
                shutil.copy(lt.run_trace(out), snapshot)
            _, err = p.communicate(timeout=60)
        finally:
            ctharness.kill_process_group(p)
        self.assertEqual(p.returncode, 0, err)
        return int(m.group(1))

    def test_a_rolled_window_keeps_the_findings_and_the_exact_peak(self):
        thin, snap, full = (os.path.join(self.tmp, d) for d in ("thin", "snap", "full"))
        # 8 s: an event chunk of this job's samples fills in 1.6 s (3.2 s when rounds take
        # twice as long under load), and the first is given up once the second is full.
        child = self.run_job(thin, "8", {"COLABTRACE_WINDOW_S": "1"}, snapshot=snap)
        child_full = self.run_job(full, "2", {})
        # The snapshot holds every sample of the spike; the peak is the largest of them.
        before = rss_of(lt.run_trace(snap), child)
        peak_ts, peak = max(before, key=lambda s: s[1])
        self.assertGreater(peak, 64 << 20)
        # Run's window gave the spike's samples up: the header says so, past the peak.
        c = chunks(lt.run_trace(thin))
        self.assertGreaterEqual(c["recycled"], 1)
        self.assertGreater(c["dropped_until"], c["start_ticks"] + int(peak_ts * 1e9))
        # Bounded: at most two event chunks (one fills in more than the 1 s window), and one
        # set of tiers per process sampled (parent, child) and per cgroup read (1 or 0).
        self.assertLessEqual(c["magics"][MAGIC_EV], 2)
        self.assertIn(c["magics"].get(MAGIC_RW, 0), (2, 3))
        self.assertLessEqual(os.path.getsize(lt.run_trace(thin)), 8 * CHUNK)
        # The full run kept everything.
        cf = chunks(lt.run_trace(full))
        self.assertEqual((cf["recycled"], cf["magics"].get(MAGIC_RW, 0)), (0, 0))
        # The thinned trace still gives the child's exact peak, where the samples are gone.
        after = sorted(rss_of(lt.run_trace(thin), child))
        self.assertEqual(max(r for _, r in after), peak)
        # The same findings: the child's SIGKILL, with the exact peak and its last RSS.
        rep_thin, rep_full = lt.report(thin), lt.report(full)
        self.assertEqual(sorted(f["id"] for f in rep_thin["findings"]), sorted(f["id"] for f in rep_full["findings"]))
        (k,) = lt.findings(rep_thin, "proc.killed")
        (kf,) = lt.findings(rep_full, "proc.killed")
        self.assertEqual((k["pid"], kf["pid"]), (child, child_full))
        self.assertEqual(k["evidence"]["peak_rss_bytes"], peak)
        self.assertEqual(k["evidence"]["last_rss_bytes"], [r for _, r in after if r != 0][-1])
        self.assertGreater(kf["evidence"]["peak_rss_bytes"], 64 << 20)


if __name__ == "__main__":
    unittest.main()
