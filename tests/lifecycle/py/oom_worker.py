"""A worker that allocates until the OOM killer takes it; the parent survives, reaps it
and reports how it ended.

argv: step_mib
"""
import os
import sys
import time

step = int(sys.argv[1]) << 20
pid = os.fork()
if pid == 0:
    hoard = []
    while True:
        hoard.append(bytearray(step))  # zero-filled: resident at once
        time.sleep(0.02)
time.sleep(0.2)
_, status = os.waitpid(pid, 0)
time.sleep(0.3)  # outlive it by a few samples
print("worker", pid, os.waitstatus_to_exitcode(status), flush=True)
