"""A job whose child has a short RSS spike early, then is SIGKILLed by its parent late.

argv[1]: seconds the parent waits before it kills the child. The child, after 0.3 s,
fills 64 MiB, holds it 0.4 s, frees it, prints "freed <pid>", then sleeps until killed.
"""
import os
import signal
import sys
import time

pid = os.fork()
if pid == 0:
    time.sleep(0.3)
    b = bytearray(b"\x01") * (64 << 20)
    time.sleep(0.4)
    del b
    print("freed", os.getpid(), flush=True)
    time.sleep(3600)
    os._exit(0)
time.sleep(float(sys.argv[1]))
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
