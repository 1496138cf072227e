"""A healthy DataLoader shape: the parent holds a big numpy array, forked workers read a
little of it. Copy-on-write keeps one copy in memory; each worker's RSS still counts the
pages it shares with the parent.

argv: size_mib workers hold_s
"""
import os
import sys
import time

import numpy as np

size_mib, workers, hold_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
data = np.ones(size_mib * (1 << 20) // 8, dtype=np.float64)  # touched: all pages resident
pids = []
for w in range(workers):
    pid = os.fork()
    if pid == 0:
        # Read a little (one page in 64) and the whole array once: shared, never copied.
        total = float(data[:: 64 * 512].sum()) + float(data.sum())
        time.sleep(hold_s)
        os._exit(0 if total > 0 else 1)
    pids.append(pid)
time.sleep(hold_s / 2)
for pid in pids:
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
print("ok", len(pids))
