"""`colabtrace kernel install`: the kernelspec it writes, and (with Debian's
python3-ipykernel, python3-nbclient and python3-nbformat) a notebook run on that kernel
whose second cell SIGKILLs the kernel: the report shows the ipykernel process killed by
signal 9, known from `colabtrace run`'s wait status."""
import json
import os
import subprocess
import sys
import unittest

from ctharness import CLI, SYSTEM_PYTHON, TempDirTest, report


def kernel_install(*args, env=None):
    e = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("COLABTRACE_")}
    e.update(env or {})
    return subprocess.run([CLI, "kernel", "install", *args], capture_output=True, text=True, env=e, timeout=60)


def have_notebook_stack():
    p = subprocess.run([SYSTEM_PYTHON, "-c", "import ipykernel, nbclient, nbformat"], capture_output=True)
    return p.returncode == 0


class KernelInstall(TempDirTest):
    def test_prefix_install_writes_the_kernelspec(self):
        prefix = os.path.join(self.tmp, "prefix")
        traces = os.path.join(self.tmp, "traces")
        p = kernel_install("--prefix", prefix, "-o", traces, "--python", SYSTEM_PYTHON)
        self.assertEqual(p.returncode, 0, p.stderr)
        spec_dir = os.path.join(prefix, "share", "jupyter", "kernels", "colabtrace")
        self.assertEqual(p.stdout, spec_dir + "\n")
        with open(os.path.join(spec_dir, "kernel.json")) as f:
            spec = json.load(f)
        self.assertEqual(spec["display_name"], "Python 3 (colabtrace)")
        self.assertEqual(spec["language"], "python")
        self.assertEqual(spec["argv"], [os.path.realpath(CLI), "run", "-o", traces, "--", SYSTEM_PYTHON,
                                        "-m", "ipykernel_launcher", "-f", "{connection_file}"])

    def test_name_user_folder_and_default_python(self):
        data = os.path.join(self.tmp, "data")
        p = kernel_install("--name", "ct-2", env={"JUPYTER_DATA_DIR": data})
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(data, "kernels", "ct-2", "kernel.json")) as f:
            argv = json.load(f)["argv"]
        self.assertEqual(argv[1:6], ["run", "-o", "colabtrace-traces", "--", "/usr/bin/python3"])
        # The Python package's `python -m colabtrace` passes its interpreter along.
        p = kernel_install("--name", "ct-3", env={"JUPYTER_DATA_DIR": data,
                                                  "COLABTRACE_INVOKING_PYTHON": "/opt/venv/bin/python"})
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(os.path.join(data, "kernels", "ct-3", "kernel.json")) as f:
            self.assertEqual(json.load(f)["argv"][5], "/opt/venv/bin/python")

    def test_usage_errors(self):
        for args in ([], ["remove"], ["install", "--name", "a b"], ["install", "--user", "--prefix", "/x"],
                     ["install", "--bogus"], ["install", "extra"]):
            p = subprocess.run([CLI, "kernel", *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, (args, p.stdout, p.stderr))
            self.assertIn("colabtrace kernel:", p.stderr)


NOTEBOOK_RUN = r"""
import sys, nbformat
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell("x = 6 * 7\nprint(x)"),
            nbformat.v4.new_code_cell("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")]
client = NotebookClient(nb, kernel_name="colabtrace", timeout=120, startup_timeout=120)
try:
    client.execute()
except DeadKernelError:
    print("first cell:", nb.cells[0].outputs[0]["text"].strip())
    print("kernel died")
    sys.exit(0)
print("kernel survived")
sys.exit(1)
"""


@unittest.skipUnless(have_notebook_stack(), f"{SYSTEM_PYTHON} lacks ipykernel, nbclient or nbformat "
                     "(python3-ipykernel, python3-nbclient, python3-nbformat)")
class NotebookKill(TempDirTest):
    def test_kernel_killed_mid_notebook_is_in_the_report(self):
        prefix = os.path.join(self.tmp, "prefix")
        traces = os.path.join(self.tmp, "traces")
        p = kernel_install("--prefix", prefix, "-o", traces, "--python", SYSTEM_PYTHON)
        self.assertEqual(p.returncode, 0, p.stderr)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("COLABTRACE_")}
        env.update(JUPYTER_PATH=os.path.join(prefix, "share", "jupyter"),
                   JUPYTER_RUNTIME_DIR=os.path.join(self.tmp, "runtime"), PYTHONPATH="")
        run = subprocess.run([SYSTEM_PYTHON, "-c", NOTEBOOK_RUN], capture_output=True, text=True,
                             env=env, cwd=self.tmp, timeout=300)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertEqual(run.stdout, "first cell: 42\nkernel died\n")
        rep = report(traces)
        kernels = [p for p in rep["processes"] if "ipykernel_launcher" in p["argv"]]
        self.assertEqual(len(kernels), 1, [p["argv"] for p in rep["processes"]])
        kernel = kernels[0]
        self.assertEqual(len(rep["run"]), 1)
        self.assertEqual(kernel["end"]["signal"], 9)
        self.assertEqual(kernel["end"]["reaped_by"], rep["run"][0]["pid"])
        self.assertTrue(kernel["end"]["reaped_by_run"])
        self.assertIn(kernel["end"]["kind"], ("killed",))
        killed = [f for f in rep["findings"] if f["id"] == "proc.killed" and f["pid"] == kernel["pid"]]
        self.assertEqual(len(killed), 1, [f["id"] for f in rep["findings"]])


if __name__ == "__main__":
    unittest.main()
