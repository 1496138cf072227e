"""``python -m colabtrace`` and the ``colabtrace`` console script: the bundled
``colabtrace`` program, run in place of this Python process (same arguments, exit status,
stdin/stdout/stderr and signals)."""

import os
import sys

from . import cli_path


def main():
    try:
        program = cli_path()
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    if sys.argv[1:2] == ["kernel"]:
        # `colabtrace kernel install`: the kernel runs the Python that installed it.
        os.environ["COLABTRACE_INVOKING_PYTHON"] = sys.executable
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(program, ["colabtrace", *sys.argv[1:]])
    return 2  # not reached


if __name__ == "__main__":
    sys.exit(main())
