#!/usr/bin/env python3
"""Regenerates ../real_cudart13_requests.txt: every cuGetProcAddress request the REAL
libcudart.so.13 makes (in order) when its first API call runs against the simulated driver.

Usage: tools/record_real_cudart_requests.py BUILD_DIR [/usr/local/cuda]
(BUILD_DIR is the CMake build tree, e.g. /work/main/build-sim, with simcuda_test built.)
"""
import os, re, subprocess, sys, tempfile

build = os.path.abspath(sys.argv[1])
cuda = sys.argv[2] if len(sys.argv) > 2 else "/usr/local/cuda"
here = os.path.dirname(os.path.abspath(__file__))
probe = os.path.join(build, "tests", "simcuda", "sim_real_cudart_probe")
with tempfile.TemporaryDirectory() as d:
    log = os.path.join(d, "log")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SIMCUDA_", "LD_"))}
    env.update(LD_LIBRARY_PATH=os.path.join(build, "simcuda"), SIMCUDA_LOG_FILE=log)
    out = subprocess.run([probe, f"{cuda}/lib64/libcudart.so.13"], env=env, capture_output=True, text=True).stdout
    lines = open(log).read().splitlines()

req, found, tables = [], 0, []
for l in lines:
    m = re.match(r"\[simcuda\] cuGetProcAddress (\S*) version=(\d+) flags=(\d+) -> (\d+)", l)
    if m:
        req.append(f"{m.group(1) or chr(34) * 2} {m.group(2)} {m.group(3)}")
        found += m.group(4) == "0"
    m = re.match(r"\[simcuda\] cuGetExportTable uuid=(\w+) -> (\d+)", l)
    if m:
        tables.append(m.group(1))
names = {r.split()[0] for r in req}
hdr = f"""# Every cuGetProcAddress_v2 request of the REAL libcudart.so.13 (CUDA 13.0) during its lazy
# initialization (first API call), in order: "base-name cudaVersion flags" (flags 2 =
# CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM; "" is an empty-symbol probe made first).
# Recorded against the simulated driver by tools/record_real_cudart_requests.py; checked by
# simcuda_test RealCudart13.AgainstSimDriver.
# {len(req)} requests, {len(names)} distinct names; the simulated driver resolves {found} of them.
# Then cuGetExportTable is called for {', '.join(tables)}; the runtime needs the last one and
# returns the driver's error for it (the sim answers CUDA_ERROR_NOT_SUPPORTED -> cudaMalloc = 801).
# Probe output against the sim:
""" + "".join(f"#   {o}\n" for o in out.splitlines())
open(os.path.join(here, "..", "real_cudart13_requests.txt"), "w").write(hdr + "\n".join(req) + "\n")
print(f"{len(req)} requests, {len(names)} names, {found} resolved, tables {tables}")
