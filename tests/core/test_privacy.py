"""Privacy: trace files are 0600 and created without following symlinks; the values of
secret-looking environment variables never reach the trace."""
import glob
import os
import stat
import subprocess
import unittest

import ctharness
from coretest import clean_env, env_values, prog, python, records, report, shim_env
from ctharness import TempDirTest


class PrivacyTest(TempDirTest):
    def test_trace_mode_is_0600_whatever_the_umask(self):
        for mask in (0o022, 0o000):
            with self.subTest(umask=oct(mask)):
                out = os.path.join(self.tmp, f"m{mask}")
                os.mkdir(out)
                p = subprocess.run([prog("ct_exit"), "exit", "0"], env=shim_env(out),
                                   capture_output=True, timeout=60,
                                   preexec_fn=lambda: os.umask(mask))
                self.assertEqual(p.returncode, 0)
                (trace,) = glob.glob(os.path.join(out, "*.ctrace"))
                self.assertEqual(stat.S_IMODE(os.lstat(trace).st_mode), 0o600)

    def symlink_run(self, link_target):
        """Runs ct_exit under the shim in a pid whose default trace name is taken by a
        symlink to link_target (sh creates it with $$, then execs the program)."""
        out = os.path.join(self.tmp, "out")
        os.mkdir(out)
        script = ('ln -s "$1" "$2/colabtrace.ct_exit.$$.ctrace" || exit 99; '
                  'echo "$$"; export LD_PRELOAD="$3" COLABTRACE_OUT="$2/"; exec "$4" exit 0')
        p = subprocess.run(["/bin/sh", "-c", script, "sh", link_target, out, ctharness.SHIM,
                            prog("ct_exit")], env=clean_env(), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        pid = int(p.stdout.splitlines()[0])
        link = os.path.join(out, f"colabtrace.ct_exit.{pid}.ctrace")
        self.assertTrue(os.path.islink(link))
        self.assertEqual(os.readlink(link), link_target)
        # The shim picked the next free name instead.
        traces = sorted(glob.glob(os.path.join(out, "*.ctrace")))
        self.assertEqual(traces, sorted([link, os.path.join(out, f"colabtrace.ct_exit.{pid}.1.ctrace")]))
        rep = report(traces[0] if traces[0] != link else traces[1])
        self.assertEqual(rep["processes"][0]["pid"], pid)
        self.assertEqual(rep["processes"][0]["end"]["code"], 0)

    def test_symlink_to_an_existing_file_is_not_followed(self):
        victim = os.path.join(self.tmp, "victim.txt")
        with open(victim, "w") as f:
            f.write("precious\n")
        os.chmod(victim, 0o644)
        before = os.stat(victim)
        self.symlink_run(victim)
        with open(victim) as f:
            self.assertEqual(f.read(), "precious\n")
        after = os.stat(victim)
        self.assertEqual((after.st_size, after.st_mtime_ns, stat.S_IMODE(after.st_mode)),
                         (before.st_size, before.st_mtime_ns, 0o644))

    def test_dangling_symlink_is_not_followed(self):
        victim = os.path.join(self.tmp, "never-created")
        self.symlink_run(victim)
        self.assertFalse(os.path.lexists(victim))

    def test_secret_values_are_never_stored(self):
        secrets = {
            "CUDA_API_TOKEN": "tok-startup-7d3f9a",       # in the environment at start
            "PYTORCH_SECRET_KEY": "key-startup-51c0e2",
            "TF_SECRET_PASSWORD": "pw-setenv-0b6e44",      # set at run time (setenv)
            "NCCL_CREDENTIAL_FILE_KEY": "cred-putenv-99a1c7",  # putenv
        }
        script = os.path.join(self.tmp, "secrets.py")
        with open(script, "w") as f:
            f.write(
                "import ctypes, os\n"
                f"os.environ['TF_SECRET_PASSWORD'] = {secrets['TF_SECRET_PASSWORD']!r}\n"
                "buf = ctypes.create_string_buffer("
                f"b'NCCL_CREDENTIAL_FILE_KEY={secrets['NCCL_CREDENTIAL_FILE_KEY']}')\n"
                "assert ctypes.CDLL(None).putenv(buf) == 0\n"
                "os.environ['CUDA_VISIBLE_DEVICES'] = '3'\n"
                "print('ok')\n")
        env = shim_env(self.tmp, {"CUDA_API_TOKEN": secrets["CUDA_API_TOKEN"],
                                  "PYTORCH_SECRET_KEY": secrets["PYTORCH_SECRET_KEY"],
                                  "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
        p = subprocess.run([python(), script], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "ok\n")
        (trace,) = glob.glob(os.path.join(self.tmp, "*.ctrace"))
        with open(trace, "rb") as f:
            data = f.read()
        for name, value in secrets.items():
            self.assertNotIn(value.encode(), data, name)
            self.assertIn(name.encode(), data, "the name itself is recorded")
        envs = records(trace, "env")
        for name in secrets:
            recs = [r for r in envs if r["name"] == name]
            self.assertTrue(recs, name)
            for r in recs:
                self.assertEqual((r["redacted"], r["value"]), ("1", "-"), name)
        # Ordinary variables are recorded in clear, at start and at run time.
        self.assertEqual(env_values(trace, "CUDA_DEVICE_ORDER"), ["PCI_BUS_ID"])
        self.assertEqual(env_values(trace, "CUDA_VISIBLE_DEVICES"), ["3"])
        proc_env = report(trace)["processes"][0]["env"]
        for name in secrets:
            self.assertEqual(proc_env[name], "<redacted>")
        self.assertEqual(proc_env["CUDA_VISIBLE_DEVICES"], "3")


if __name__ == "__main__":
    unittest.main()
