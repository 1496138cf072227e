"""exit.py MODE CODE: CPython ends with CODE: sys.exit, os._exit, or an uncaught
exception (exit 1 with a traceback on stderr)."""
import os
import sys

mode, code = sys.argv[1], int(sys.argv[2])
print(f"out: {mode} {code}", flush=True)
print(f"err: {mode} {code}", file=sys.stderr, flush=True)
if mode == "sys.exit":
    sys.exit(code)
if mode == "os._exit":
    os._exit(code)
if mode == "raise":
    raise RuntimeError("deliberate")
