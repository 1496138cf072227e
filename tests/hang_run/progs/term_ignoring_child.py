"""Forks a child that ignores SIGTERM and sleeps for ever, steps twice, then sleeps for
ever itself. Prints both pids (JSON) once the child ignores SIGTERM."""
import json
import os
import signal
import time

import colabtrace

r, w = os.pipe()
child = os.fork()
if child == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open(os.devnull, "rb").close()  # a noted call: the shim learns this thread's Python state
    os.write(w, b"x")
    while True:
        time.sleep(60)  # CHILD_SLEEP
os.read(r, 1)
print(json.dumps({"parent": os.getpid(), "child": child}), flush=True)
colabtrace.step(0)
colabtrace.step(1)
while True:
    time.sleep(60)  # PARENT_SLEEP
