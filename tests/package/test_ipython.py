"""The IPython extension (`%load_ext colabtrace`) in a real InteractiveShell (Debian's
python3-ipython): `%colabtrace report DIR` and `--last` show exactly `colabtrace report
--format html` of the right traces; `%%colabtrace` runs the cell in a traced process and
shows that run's report."""
import os
import subprocess
import time
import unittest

from ctharness import BUILD, CLI, SYSTEM_PYTHON, TempDirTest, run_traced

PYTHON_PACKAGE = os.path.join(BUILD, "python")  # the build tree's copy of python/colabtrace


def have_ipython():
    return subprocess.run([SYSTEM_PYTHON, "-c", "import IPython"], capture_output=True).returncode == 0


SHELL = r"""
import os, subprocess, sys
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "colabtrace")

def html_of(run):
    with capture_output() as cap:
        run()
    sys.stderr.write(cap.stderr)
    return cap.stdout, [o.data["text/html"] for o in cap.outputs if "text/html" in o.data]

mode = sys.argv[1]
if mode == "dir":
    out, htmls = html_of(lambda: shell.run_line_magic("colabtrace", "report " + sys.argv[2]))
elif mode == "last":
    os.environ["COLABTRACE_OUT"] = sys.argv[2] + "/"
    # A trace written after this kernel started: --last leaves it out.
    subprocess.run([sys.argv[3], "5", "0"], env=dict(os.environ, LD_PRELOAD=sys.argv[4]), check=True,
                   stdout=subprocess.DEVNULL)
    out, htmls = html_of(lambda: shell.run_line_magic("colabtrace", "report --last"))
else:
    cell = "import os\nprint('cell pid', os.getpid())\nwith open('/etc/hostname') as f: f.read()\n"
    out, htmls = html_of(lambda: shell.run_cell_magic("colabtrace", "", cell))
sys.stdout.write(out)
assert len(htmls) == 1, htmls
with open(os.environ["HTML_OUT"], "w") as f:
    f.write(htmls[0])
"""


@unittest.skipUnless(have_ipython(), f"{SYSTEM_PYTHON} lacks IPython (python3-ipython)")
class Magics(TempDirTest):
    def shell(self, *args):
        html_out = os.path.join(self.tmp, "shown.html")
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("COLABTRACE_")}
        env.update(PYTHONPATH=PYTHON_PACKAGE, HTML_OUT=html_out, IPYTHONDIR=os.path.join(self.tmp, "ipython"))
        p = subprocess.run([SYSTEM_PYTHON, "-c", SHELL, *args], env=env, capture_output=True, text=True,
                           timeout=300, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(html_out) as f:
            return p.stdout, f.read()

    def html_report(self, *paths):
        p = subprocess.run([CLI, "report", "--format", "html", *paths], capture_output=True, text=True, timeout=120)
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return p.stdout

    def test_report_of_a_folder(self):
        run = run_traced([steps_prog(), "3", "0"], out_dir=os.path.join(self.tmp, "traces"))
        self.assertEqual(run.returncode, 0, run.stderr)
        _, html = self.shell("dir", run.out_dir)
        self.assertEqual(html, self.html_report(run.out_dir))
        self.assertIn("ct_step_markers", html)

    def test_report_last_is_the_previous_kernel(self):
        from ctharness import SHIM
        traces = os.path.join(self.tmp, "traces")
        old = run_traced([steps_prog(), "2", "0"], out_dir=traces)
        self.assertEqual(len(old.traces), 1)
        time.sleep(0.3)
        _, html = self.shell("last", traces, steps_prog(), SHIM)
        self.assertEqual(len([t for t in os.listdir(traces) if t.endswith(".ctrace")]), 2)
        self.assertEqual(html, self.html_report(old.traces[0]))

    def test_cell_magic_runs_the_cell_traced(self):
        out, html = self.shell("cell")
        pid = int(out.split("cell pid ")[1].split()[0])
        self.assertIn(str(pid), html)
        self.assertIn("<html", html.lower())


def steps_prog():
    return os.path.join(BUILD, "tests", "package", "ct_step_markers")


if __name__ == "__main__":
    unittest.main()
