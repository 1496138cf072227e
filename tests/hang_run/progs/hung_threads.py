"""Steps 5 times, then hangs in three threads: a worker blocked opening a FIFO that nobody
opens for writing (in a function whose name is not ASCII), one that only ever waits for a
lock that is never released (it makes no call the shim notes), and the main thread
waiting on an Event that nobody sets. Prints its pid and the native thread ids (JSON)
first."""
import json
import os
import sys
import threading

import colabtrace


def öffne_fifo(path, started):
    started.set()
    with open(path, "rb") as f:  # OPEN_FIFO: blocks, nobody writes
        f.read()


def waits_only(lock, started):
    started.set()
    lock.acquire()  # ACQUIRE: never released


def main():
    for n in range(5):
        colabtrace.step(n)
    started = threading.Event()
    worker = threading.Thread(target=öffne_fifo, args=(sys.argv[1], started), daemon=True)
    worker.start()
    started.wait()
    lock, waiting = threading.Lock(), threading.Event()
    lock.acquire()
    waiter = threading.Thread(target=waits_only, args=(lock, waiting), daemon=True)
    waiter.start()
    waiting.wait()
    print(json.dumps({"pid": os.getpid(), "main": threading.get_native_id(),
                      "worker": worker.native_id, "waiter": waiter.native_id}), flush=True)
    threading.Event().wait()  # WAIT_EVENT: nobody sets it


if __name__ == "__main__":
    main()  # CALL_MAIN
