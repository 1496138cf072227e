/* A driver program for the CUPTI tests (tests/gpu/test_gpu_cupti.py), linked against the
 * simulated libcuda.so.1; the simulated libcupti.so is in SIMCUDA_DIR.
 *
 * `gpu_cupti_scenarios allocs`: cuInit, the primary context, one module (a CUDA ELF cubin for
 * sm_80), cuMemAlloc_v2 of 4, 8 and 16 MiB, cuMemFree_v2 of the 8 MiB block, and one 32 MiB
 * allocation made the way a statically linked cudart makes it (simcuda_debug_internal_alloc:
 * the driver's internal entry, which no LD_PRELOAD hook sees but CUPTI does). It prints
 * CUDA_INJECTION64_PATH as the process sees it at the end ("(unset)" when unset) and
 * whether a libcupti is loaded. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_test.h"

#define MiB (1024ull * 1024ull)

extern CUresult simcuda_debug_internal_alloc(CUdeviceptr *dptr, size_t bytesize);

static int cupti_loaded(void) {
  void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

static void allocs(void) {
  CUdevice dev;
  CUcontext ctx;
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  /* A 64-byte CUDA ELF header: 64-bit, EM_CUDA (190), ABI version 8, SM 80 in flags bits 8..15. */
  static unsigned char cubin[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 8};
  cubin[0x12] = 190;
  cubin[0x31] = 80;
  CUmodule mod;
  SIM_CHECK_EQ(cuModuleLoadData(&mod, cubin), CUDA_SUCCESS);
  CUdeviceptr a, b, c, d;
  SIM_CHECK_EQ(cuMemAlloc(&a, 4 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&b, 8 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&c, 16 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(b), CUDA_SUCCESS);
  SIM_CHECK_EQ(simcuda_debug_internal_alloc(&d, 32 * MiB), CUDA_SUCCESS);
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  printf("injection=%s cupti_loaded=%d\n", inj ? inj : "(unset)", cupti_loaded());
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {{"allocs", allocs}};
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
