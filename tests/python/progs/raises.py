"""Ends on an uncaught exception, for tests/python/test_python_exceptions.py. Prints its
pid on stdout first. Modes:
  value      the main thread raises ValueError("bad value 42") in inner()
  long       the main thread raises a ValueError whose message is 801 bytes of UTF-8
  thread     a thread raises RuntimeError; the main thread joins it and exits 2
  thread-ok  a thread raises RuntimeError; the main thread joins it and exits 0
  interrupt  the main thread raises KeyboardInterrupt
  exit3      raise SystemExit(3)
"""
import os
import sys

print(os.getpid(), flush=True)
mode = sys.argv[1]


def inner():
    raise ValueError("bad value 42")  # RAISE LINE


def thread_body():
    raise RuntimeError("worker thread failed")  # THREAD LINE


if mode == "value":
    inner()  # CALL LINE
elif mode == "long":
    raise ValueError("a" + "\u00e9" * 400)  # LONG LINE
elif mode in ("thread", "thread-ok"):
    import threading

    t = threading.Thread(target=thread_body)
    t.start()
    t.join()
    sys.exit(2 if mode == "thread" else 0)
elif mode == "interrupt":
    raise KeyboardInterrupt  # INTERRUPT LINE
elif mode == "exit3":
    raise SystemExit(3)
