"""Kernels launched from Python through the program's own helper and through an installed
package, against the simulated CUDA runtime and driver (SIMCUDA_DIR), for
test_gpu_device_fault.py and test_hang_gpu.py: each kernel's Python stack must tell them
apart, and name the program's own line first.

    python3 kernel_stacks.py

On one stream: `fill` and `scale` through the helper launch() (the same line launches
both; step()'s lines tell them apart), then `spin` through fastkern.run (a package under
site-packages/). Prints "blocked pid=P stream=S" and calls cudaDeviceSynchronize(): with
SIMCUDA_HANG_KERNEL=spin it never returns; with SIMCUDA_FAULT_KERNEL=spin it returns 700
and the program exits 3; otherwise it prints "done". The comments mark the lines the
tests expect."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
import fastkern  # noqa: E402

sim = os.environ["SIMCUDA_DIR"]
rt = ctypes.CDLL(os.path.join(sim, "libcudart.so.13"))
drv = ctypes.CDLL(os.path.join(sim, "libcuda.so.1"))


def check(rc):
    if rc != 0:
        raise SystemExit(f"CUDA call returned {rc}")


check(rt.cudaFree(None))  # the runtime makes the primary context current
module = ctypes.c_void_p()
check(drv.cuModuleLoadData(ctypes.byref(module), b"SIMCUBIN sm_80 fn=fill fn=scale fn=spin"))
kernels = {}
for name in (b"fill", b"scale", b"spin"):
    kernels[name] = ctypes.c_void_p()
    check(drv.cuModuleGetFunction(ctypes.byref(kernels[name]), module, name))
stream = ctypes.c_void_p()
check(rt.cudaStreamCreate(ctypes.byref(stream)))


def launch(name):
    check(drv.cuLaunchKernel(kernels[name], 4, 1, 1, 128, 1, 1, 0, stream, None, None))  # LAUNCH


def step():
    launch(b"fill")  # STEP fill
    launch(b"scale")  # STEP scale
    check(fastkern.run(drv, kernels[b"spin"], stream))  # STEP spin


step()  # MAIN
print(f"blocked pid={os.getpid()} stream={stream.value:#x}", flush=True)
rc = rt.cudaDeviceSynchronize()  # SYNC
if rc != 0:
    print(f"cudaDeviceSynchronize returned {rc}", file=sys.stderr)
    sys.exit(3)
print("done")
