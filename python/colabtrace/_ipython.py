"""The IPython extension (``%load_ext colabtrace``).

* ``%colabtrace report [DIR|--last]`` shows ``colabtrace report --format html`` inline:
  of DIR; with no argument, of the folder this kernel traces into (``COLABTRACE_OUT``, set
  by ``colabtrace run`` and so by the kernelspec of ``colabtrace kernel install``);
  ``--last``: of the traces in that folder last written before this kernel started, i.e.
  the kernels before a restart (the one that was killed, typically).
* ``%%colabtrace`` runs the cell's code in a fresh ``python -c`` under ``colabtrace run``
  (its own temporary trace folder) and shows the report of that run; the cell's output
  and exit status are printed above it. The cell runs in a separate process: it sees none
  of the notebook's variables.
"""

import os
import shlex
import subprocess
import sys
import tempfile
import time

from . import cli_path


class ColabtraceError(Exception):
    pass


def _env_without_shim():
    return {k: v for k, v in os.environ.items()
            if k not in ("LD_PRELOAD", "COLABTRACE_OUT", "COLABTRACE_PYTHON")}


def report_html(paths):
    """``colabtrace report --format html`` of paths (traces or folders), as text."""
    p = subprocess.run([cli_path(), "report", "--format", "html", *paths], capture_output=True,
                       text=True, env=_env_without_shim())
    if p.returncode not in (0, 1):
        raise ColabtraceError(p.stderr.strip() or f"colabtrace report exited {p.returncode}")
    return p.stdout


def current_trace_dir():
    """The folder this process traces into, or None when it runs without the shim."""
    out = os.environ.get("COLABTRACE_OUT")
    if not out:
        return None
    return out if out.endswith("/") or os.path.isdir(out) else os.path.dirname(out) or "."


def _process_start_time():
    """This process's start as a time.time() value (from /proc)."""
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return time.time() - uptime + start_ticks / os.sysconf("SC_CLK_TCK")


def previous_traces(trace_dir, before=None):
    """Traces in trace_dir last written before `before` (default: this process's start)."""
    before = _process_start_time() if before is None else before
    out = []
    for name in sorted(os.listdir(trace_dir)):
        path = os.path.join(trace_dir, name)
        if name.endswith(".ctrace") and os.path.getmtime(path) < before:
            out.append(path)
    return out


def report_targets(arg):
    """The paths `%colabtrace report ARG` reports on."""
    arg = arg.strip()
    if arg and arg != "--last":
        return [os.path.expanduser(arg)]
    trace_dir = current_trace_dir()
    if trace_dir is None:
        raise ColabtraceError("this kernel runs without colabtrace (no COLABTRACE_OUT): name a "
                              "folder, or install the traced kernel with `colabtrace kernel install`")
    if arg != "--last":
        return [trace_dir]
    paths = previous_traces(trace_dir)
    if not paths:
        raise ColabtraceError(f"no traces in {trace_dir} from before this kernel started")
    return paths


def run_cell_traced(code, out_dir=None):
    """Runs code in `colabtrace run -o DIR -- python -c code`; returns (completed, DIR)."""
    out_dir = out_dir or tempfile.mkdtemp(prefix="colabtrace-cell-")
    p = subprocess.run([cli_path(), "run", "-o", out_dir, "--", sys.executable, "-c", code],
                       capture_output=True, text=True, env=_env_without_shim())
    return p, out_dir


def load(ipython):
    from IPython.core.magic import Magics, line_cell_magic, magics_class
    from IPython.display import HTML, display

    @magics_class
    class ColabtraceMagics(Magics):
        @line_cell_magic
        def colabtrace(self, line, cell=None):
            try:
                if cell is None:
                    words = shlex.split(line)
                    if not words or words[0] != "report" or len(words) > 2:
                        print("usage: %colabtrace report [DIR|--last]   or   %%colabtrace (cell magic)",
                              file=sys.stderr)
                        return
                    display(HTML(report_html(report_targets(words[1] if len(words) > 1 else ""))))
                    return
                p, out_dir = run_cell_traced(cell)
                sys.stdout.write(p.stdout)
                sys.stderr.write(p.stderr)
                if p.returncode != 0:
                    print(f"colabtrace: the cell's process exited {p.returncode}", file=sys.stderr)
                display(HTML(report_html([out_dir])))
            except ColabtraceError as e:
                print(f"colabtrace: {e}", file=sys.stderr)

    ipython.register_magics(ColabtraceMagics)
