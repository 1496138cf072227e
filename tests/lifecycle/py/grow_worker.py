"""The DataLoader memory blow-up in miniature: a forked worker whose private memory keeps
growing (it builds new objects batch after batch) while its parent holds a modest array.

argv: parent_mib worker_total_mib step_mib step_s
"""
import os
import sys
import time

parent_mib, total_mib, step_mib, step_s = (int(sys.argv[1]), int(sys.argv[2]),
                                           int(sys.argv[3]), float(sys.argv[4]))
held = bytearray(parent_mib << 20)  # resident: bytearray zero-fills
pid = os.fork()
if pid == 0:
    grown = []
    while sum(len(b) for b in grown) < (total_mib << 20):
        grown.append(bytearray(step_mib << 20))
        time.sleep(step_s)
    time.sleep(0.5)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("worker", pid, os.waitstatus_to_exitcode(status), flush=True)
