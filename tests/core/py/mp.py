"""mp.py METHOD N: runs N multiprocessing workers with the METHOD start method (fork,
spawn or forkserver). Worker i exits with code 20+i (via sys.exit in Process.run).
Prints one line per process that ran, for the test to compare with the traces:
  main PID
  worker PID EXITCODE
  helper PID KIND        (the forkserver and the resource tracker, when started)"""
import multiprocessing as mp
import os
import sys


def work(i):
    os.environ["CUDA_WORKER"] = str(i)
    sys.exit(20 + i)


def main():
    method, n = sys.argv[1], int(sys.argv[2])
    ctx = mp.get_context(method)
    print(f"main {os.getpid()}", flush=True)
    procs = [ctx.Process(target=work, args=(i,)) for i in range(n)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        print(f"worker {p.pid} {p.exitcode}", flush=True)
    if method == "forkserver":
        from multiprocessing import forkserver
        pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
        if pid:
            print(f"helper {pid} forkserver", flush=True)
    if method in ("spawn", "forkserver"):
        from multiprocessing import resource_tracker
        pid = getattr(resource_tracker._resource_tracker, "_pid", None)
        if pid:
            print(f"helper {pid} resource_tracker", flush=True)


if __name__ == "__main__":
    main()
