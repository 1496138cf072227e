/* A driver program for the CUPTI tests (tests/gpu/test_gpu_cupti.py), linked against the
 * simulated libcuda.so.1; the simulated libcupti.so is in SIMCUDA_DIR.
 *
 * `gpu_cupti_scenarios allocs`: cuInit, the primary context, one module (a CUDA ELF cubin for
 * sm_80), cuMemAlloc_v2 of 4, 8 and 16 MiB, cuMemFree_v2 of the 8 MiB block, and one 32 MiB
 * allocation made the way a statically linked cudart makes it (simcuda_debug_internal_alloc:
 * the driver's internal entry, which no LD_PRELOAD hook sees but CUPTI does). It prints
 * CUDA_INJECTION64_PATH as the process sees it at the end ("(unset)" when unset) and
 * whether a libcupti is loaded.
 *
 * `allocs_with_cupti`: the program dlopen()s the libcupti at $CUPTI_COPY itself first (a copy of
 * its own, as PyTorch loads its wheel's libcupti.so.13), then runs allocs.
 * `allocs_with_cudart`: the program dlopen()s libcudart.so.13 first (found by its RUNPATH), then
 * runs allocs.
 * `lookup`: prints whether dlsym(RTLD_DEFAULT) finds cuptiSubscribe and
 * cuptiActivityRegisterCallbacks ("subscribe=0 register=0" without a libcupti). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_test.h"
#include "driver_context.h"

#define MiB (1024ull * 1024ull)

extern CUresult simcuda_debug_internal_alloc(CUdeviceptr *dptr, size_t bytesize);

static int cupti_loaded(void) {
  void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (h) dlclose(h);
  return h != NULL;
}

static void allocs(void) {
  scenario_driver_context();
  scenario_load_sm80_cubin();
  CUdeviceptr a, b, c, d;
  SIM_CHECK_EQ(cuMemAlloc(&a, 4 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&b, 8 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&c, 16 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(b), CUDA_SUCCESS);
  SIM_CHECK_EQ(simcuda_debug_internal_alloc(&d, 32 * MiB), CUDA_SUCCESS);
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  printf("injection=%s cupti_loaded=%d\n", inj ? inj : "(unset)", cupti_loaded());
}

static void allocs_with_cupti(void) {
  const char *copy = getenv("CUPTI_COPY");
  SIM_CHECK(copy != NULL);
  SIM_CHECK(dlopen(copy, RTLD_NOW) != NULL);
  allocs();
}

static void allocs_with_cudart(void) {
  SIM_CHECK(dlopen("libcudart.so.13", RTLD_NOW) != NULL);
  allocs();
}

static void lookup(void) {
  printf("subscribe=%d register=%d\n", dlsym(RTLD_DEFAULT, "cuptiSubscribe") != NULL,
         dlsym(RTLD_DEFAULT, "cuptiActivityRegisterCallbacks") != NULL);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {{"allocs", allocs},
                                          {"allocs_with_cupti", allocs_with_cupti},
                                          {"allocs_with_cudart", allocs_with_cudart},
                                          {"lookup", lookup}};
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
