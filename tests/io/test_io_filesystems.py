"""Filesystem classification against real mounts: tmpfs, the root filesystem (ext4 or
overlay), a fresh overlay mount, and a FUSE mount made with bindfs the way Colab's
Drive appears (type fuse.drive), where io.network-filesystem and io.reread must fire."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from ctharness import SYSTEM_PYTHON, TempDirTest, findings, mounted_tmpfs, report, run_traced
from iotest import file_rows, make_files

HERE = os.path.dirname(os.path.abspath(__file__))
EPOCHS = os.path.join(HERE, "py", "epochs.py")
SMALL_FILES = os.path.join(HERE, "py", "small_files.py")


def mount_of(path: str) -> tuple[str, str]:
    """(mount point, fs type) of path from /proc/self/mountinfo: an independent check."""
    path = os.path.realpath(path)
    best = ("", "")
    with open("/proc/self/mountinfo", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    for line in lines:
        f = line.split()
        sep = f.index("-")
        mp = f[4].replace("\\040", " ")
        if path == mp or path.startswith(mp.rstrip("/") + "/") or mp == "/":
            if len(mp) >= len(best[0]):
                best = (mp, f[sep + 1])
    return best


def try_mount(argv) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def unmount(path):
    for cmd in (["fusermount", "-u", path], ["umount", path], ["umount", "-l", path]):
        if subprocess.run(cmd, capture_output=True).returncode == 0:
            return


class FilesystemTest(TempDirTest):
    def run_epochs(self, root, epochs, extra=()):
        run = run_traced([SYSTEM_PYTHON, EPOCHS, root, str(epochs), *extra],
                         out_dir=os.path.join(self.tmp, "out-" + os.path.basename(root)))
        self.assertEqual(run.returncode, 0, run.stderr)
        return run, report(*run.traces)

    def test_tmpfs_and_the_root_filesystem(self):
        shm = tempfile.mkdtemp(prefix="ct-io-", dir="/dev/shm")
        self.addCleanup(shutil.rmtree, shm, True)
        make_files(shm, 5, 100)
        local = os.path.join(self.tmp, "local")
        make_files(local, 5, 100)
        for root in (shm, local):
            run, rep = self.run_epochs(root, 1)
            rows = file_rows(rep, root + "/")
            self.assertEqual(len(rows), 5)
            want = mount_of(root)
            for row in rows.values():
                self.assertEqual(row["fs_type"], want[1], row["path"])
                self.assertEqual(row["mount"], want[0], row["path"])
            self.assertEqual(findings(rep, "io.network-filesystem"), [])
        self.assertEqual(mount_of(shm)[1], "tmpfs")
        mounts = {m["mountpoint"]: m for m in rep["io"]["mounts"]}
        self.assertEqual(mounts[mount_of(shm)[0]]["class"], "memory")

    def test_small_files_in_dev_shm_are_data_as_on_any_tmpfs(self):
        # Samples staged in /dev/shm are regular files on tmpfs, not device nodes: 1,200
        # small files read there are io.small-files exactly as on a tmpfs mounted
        # elsewhere, with advice that does not send them to local disk.
        shm = tempfile.mkdtemp(prefix="ct-io-", dir="/dev/shm")
        self.addCleanup(shutil.rmtree, shm, True)
        with mounted_tmpfs(self, "16m") as mnt:
            for root in (shm, mnt):
                make_files(root, 1200, 700)
                run = run_traced([SYSTEM_PYTHON, SMALL_FILES, root, "1", "4096"],
                                 out_dir=os.path.join(self.tmp, "out-" + os.path.basename(root)))
                self.assertEqual(run.returncode, 0, run.stderr)
                self.assertEqual(json.loads(run.stdout)["files"], 1200)
                rep = report(*run.traces)
                self.assertEqual(mount_of(root)[1], "tmpfs")
                (f,) = findings(rep, "io.small-files")
                ev = f["evidence"]
                self.assertEqual((ev["count"], ev["data_files_read"], ev["median_size"]), (1200, 1200, 700))
                self.assertEqual(ev["bytes_read"], 2 * 1200 * 700)  # open().read() and the os.read loop
                self.assertEqual(ev["directories"], [{"path": root, "files": 1200}])
                self.assertIn("tmpfs already", f["advice"])
                self.assertNotIn("local disk", f["advice"])

    def test_overlay_mount(self):
        base = os.path.join(self.tmp, "ov")
        for d in ("lower", "upper", "work", "merged"):
            os.makedirs(os.path.join(base, d))
        make_files(os.path.join(base, "lower"), 3, 50)
        merged = os.path.join(base, "merged")
        opts = f"lowerdir={base}/lower,upperdir={base}/upper,workdir={base}/work"
        if not try_mount(["mount", "-t", "overlay", "overlay", "-o", opts, merged]):
            self.skipTest("cannot mount an overlay here (needs root and overlayfs)")
        self.addCleanup(unmount, merged)
        _, rep = self.run_epochs(merged, 1)
        rows = file_rows(rep, merged + "/")
        self.assertEqual(len(rows), 3)
        for row in rows.values():
            self.assertEqual(row["fs_type"], "overlay")
            self.assertEqual(row["fs_class"], "local")

    def fuse_mount(self, src, dst):
        if shutil.which("bindfs") is None or not os.path.exists("/dev/fuse"):
            self.skipTest("bindfs or /dev/fuse is missing")
        if not try_mount(["bindfs", "-o", "subtype=drive", src, dst]):
            self.skipTest("bindfs could not mount (FUSE not permitted here)")
        self.addCleanup(unmount, dst)

    def test_fuse_drive_pipeline_gets_network_findings(self):
        src = os.path.join(self.tmp, "src")
        mnt = os.path.join(self.tmp, "drive")
        os.makedirs(mnt)
        make_files(src, 200, 2048)
        self.fuse_mount(src, mnt)
        self.assertEqual(mount_of(mnt)[1], "fuse.drive")
        # A symlink into the mount: the shim asks the kernel which mount holds the
        # directory, so the link's files are still charged to the FUSE mount.
        link = os.path.join(self.tmp, "data-link")
        os.symlink(mnt, link)
        _, rep = self.run_epochs(link, 2)
        rows = file_rows(rep, link + "/")
        self.assertEqual(len(rows), 200)
        for row in rows.values():
            self.assertEqual(row["fs_type"], "fuse.drive", row["path"])
            self.assertEqual(row["fs_class"], "fuse")
            self.assertEqual(row["opens"], 2)
            self.assertEqual(row["reads"], 4)
            self.assertEqual(row["bytes_read"], 4096)
            self.assertEqual(row["passes"], 2)
        net = findings(rep, "io.network-filesystem")
        self.assertEqual(len(net), 1, rep["findings"])
        self.assertEqual(net[0]["severity"], "warning")
        self.assertEqual(net[0]["evidence"]["mounts"][0]["fs_type"], "fuse.drive")
        self.assertIn("local disk", net[0]["advice"])
        reread = findings(rep, "io.reread")
        self.assertEqual(len(reread), 1)
        self.assertEqual(reread[0]["evidence"]["files_read_more_than_once"], 200)

    def test_mount_made_after_the_process_started(self):
        src = os.path.join(self.tmp, "src2")
        mnt = os.path.join(self.tmp, "late")
        os.makedirs(mnt)
        make_files(src, 30, 100)
        if shutil.which("bindfs") is None or not os.path.exists("/dev/fuse"):
            self.skipTest("bindfs or /dev/fuse is missing")
        self.addCleanup(unmount, mnt)
        run = run_traced([SYSTEM_PYTHON, EPOCHS, mnt, "1", f"{src}:{mnt}"],
                         out_dir=os.path.join(self.tmp, "out-late"))
        if run.returncode != 0:
            self.skipTest("bindfs could not mount: " + run.stderr[-200:])
        rep = report(*run.traces)
        rows = file_rows(rep, mnt + "/")
        self.assertEqual(len(rows), 30)
        for row in rows.values():
            self.assertEqual(row["fs_type"], "fuse.drive", row["path"])


if __name__ == "__main__":
    unittest.main()
