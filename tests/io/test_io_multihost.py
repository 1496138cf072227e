"""A directory of traces from two machines (issue 9, multi-host): one path on two hosts is
two files in io.files[] (each with its `host`), and the traces from the other machine get
no disk-based library checks. The second machine is this one seen through a mount
namespace whose /etc/machine-id and boot_id are other files (needs root for unshare)."""
import os
import shutil
import subprocess
import unittest

import ctharness as h

OTHER_MACHINE = "0123456789abcdef0123456789abcdef"
OTHER_BOOT = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"


def can_fake_host():
    if not shutil.which("unshare") or os.geteuid() != 0 or not os.path.exists("/etc/machine-id"):
        return False
    p = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return p.returncode == 0


class MultiHostTest(h.TempDirTest):
    @unittest.skipUnless(can_fake_host(), "needs root and unshare -m")
    def test_one_path_on_two_hosts_is_two_files(self):
        data = os.path.join(self.tmp, "data.bin")
        with open(data, "wb") as f:
            f.write(b"x" * 10000)
        out = os.path.join(self.tmp, "traces")
        os.makedirs(out)
        here = h.run_traced(["/bin/cat", data], out_dir=out)
        self.assertEqual((here.returncode, len(here.stdout)), (0, 10000), here.stderr)
        ids = os.path.join(self.tmp, "ids")
        os.makedirs(ids)
        with open(os.path.join(ids, "machine-id"), "w") as f:
            f.write(OTHER_MACHINE + "\n")
        with open(os.path.join(ids, "boot_id"), "w") as f:
            f.write(OTHER_BOOT + "\n")
        script = (f"mount --bind {ids}/machine-id /etc/machine-id && "
                  f"mount --bind {ids}/boot_id /proc/sys/kernel/random/boot_id && "
                  f"LD_PRELOAD={h.SHIM} COLABTRACE_OUT={out}/ /bin/cat {data} > /dev/null")
        p = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        traces = sorted(os.listdir(out))
        self.assertEqual(len(traces), 2)
        rep = h.report(out)
        rows = [f for f in rep["io"]["files"] if f["path"] == data]
        self.assertEqual(len(rows), 2, rows)
        with open("/etc/machine-id") as f:
            mine = f.read().strip()
        self.assertEqual(sorted(r["host"] for r in rows),
                         sorted([f"machine:{OTHER_MACHINE}", f"machine:{mine}"]))
        self.assertEqual([(r["opens"], r["bytes_read"]) for r in rows], [(1, 10000), (1, 10000)])
        labels = sorted(p["libraries"].get("disk_checks", "") for p in rep["processes"])
        self.assertEqual(labels, ["", "skipped: trace from another host (boot_id differs)"])
        # One host: one row, no host field.
        single = [f for f in h.report(*here.traces)["io"]["files"] if f["path"] == data]
        self.assertEqual([("host" in r, r["opens"]) for r in single], [(False, 1)])


if __name__ == "__main__":
    unittest.main()
