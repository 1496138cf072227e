"""A daemon's double fork under `colabtrace run`: the command forks a middle process,
which calls setsid, posix_spawns the worker and exits at once; the command exits 50 ms
later. The worker is a shell without the shim for 0.3 s that then execs a traced
python, so its trace starts long after its parent is gone and getppid() names the reaper.
Prints the middle process's pid and the worker's pid as JSON (from the middle, through
a pipe)."""
import json
import os
import sys
import time

r, w = os.pipe()
middle = os.fork()
if middle == 0:
    os.close(r)
    os.setsid()
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["SHIM"] = os.environ["LD_PRELOAD"]
    worker = os.posix_spawn("/bin/sh", ["sh", "-c", 'sleep 0.3; LD_PRELOAD="$SHIM" exec "$0" -c pass',
                                        sys.executable], env)
    os.write(w, json.dumps({"middle": os.getpid(), "worker": worker}).encode())
    os._exit(0)
os.close(w)
print(os.read(r, 4096).decode())
time.sleep(0.05)
