"""Many processes that map one shared region: each one's RSS counts all of it, their PSS
counts it once. The parent writes a shared anonymous mapping, forks `procs` children that
each read every page of it, and all hold it for `hold_s` seconds.

argv: size_mib procs hold_s; prints "ok N" when every child ended well.
"""
import mmap
import os
import sys
import time

size_mib, procs, hold_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
size = size_mib << 20
region = mmap.mmap(-1, size, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
chunk = b"\1" * (64 << 20)
for off in range(0, size, len(chunk)):
    region[off:off + len(chunk)] = chunk[:size - off]
ready_r, ready_w = os.pipe()
pids = []
for _ in range(procs):
    pid = os.fork()
    if pid == 0:
        # One byte of every page, read through a strided view: maps all of it, copies none.
        touched = bytes(memoryview(region)[::mmap.PAGESIZE])
        os.write(ready_w, b"r")
        time.sleep(hold_s)
        os._exit(0 if touched.count(1) == len(touched) else 1)
    pids.append(pid)
for _ in range(procs):
    os.read(ready_r, 1)
time.sleep(hold_s)
bad = 0
for pid in pids:
    _, status = os.waitpid(pid, 0)
    bad += os.waitstatus_to_exitcode(status) != 0
print("ok", procs - bad, flush=True)
