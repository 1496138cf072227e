/* GPU memory scenarios through the CUDA driver API, linked against the simulated
 * libcuda.so.1: the program binds cuMemAlloc_v2 & co. directly, so it reaches the shim's
 * exported driver entry points (no runtime layer, as with a statically linked cudart).
 * `gpu_driver_scenarios NAME`; sizes in each scenario's comment. */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdio.h>
#include <string.h>

#include "simcuda_test.h"

#define MiB (1024ull * 1024ull)

static CUcontext setup(void) {
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CUdevice dev;
  SIM_CHECK_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  CUcontext ctx;
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  return ctx;
}

/* 3 x cuMemAlloc (8, 16, 32 MiB), 2 freed; managed 4 MiB freed; pitched 2000 x 10 (pitch
 * 2048) freed; pinned host 1 MiB freed; a memory query. 32 MiB stay allocated. */
static void direct(void) {
  setup();
  CUdeviceptr a, b, c, m, p;
  SIM_CHECK_EQ(cuMemAlloc(&a, 8 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&b, 16 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&c, 32 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(a), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(b), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAllocManaged(&m, 4 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(m), CUDA_SUCCESS);
  size_t pitch = 0;
  SIM_CHECK_EQ(cuMemAllocPitch(&p, &pitch, 2000, 10, 4), CUDA_SUCCESS);
  SIM_CHECK_EQ(pitch, 2048);
  SIM_CHECK_EQ(cuMemFree(p), CUDA_SUCCESS);
  void *h = NULL;
  SIM_CHECK_EQ(cuMemAllocHost(&h, 1 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeHost(h), CUDA_SUCCESS);
  size_t f = 0, t = 0;
  SIM_CHECK_EQ(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
  /* NULL arguments reach the driver as given. */
  SIM_CHECK_EQ(cuMemAlloc(NULL, 1 * MiB), CUDA_ERROR_INVALID_VALUE);
  (void)c;
}

/* PyTorch's expandable segments: one 1 GiB VA reservation grown by 20 MiB physical pages
 * (5 created and mapped), shrunk by 2 pages, then everything unmapped, released and the
 * reservation freed. 5 physical allocations, peak 100 MiB, nothing left. */
static void vmm_expandable(void) {
  setup();
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t gran = 0;
  SIM_CHECK_EQ(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
               CUDA_SUCCESS);
  const size_t page = 20 * MiB, reserve = 1024 * MiB;
  CUdeviceptr base;
  SIM_CHECK_EQ(cuMemAddressReserve(&base, reserve, 0, 0, 0), CUDA_SUCCESS);
  CUmemGenericAllocationHandle h[5];
  CUmemAccessDesc access;
  memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int i = 0; i < 5; i++) {
    SIM_CHECK_EQ(cuMemCreate(&h[i], page, &prop, 0), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuMemMap(base + i * page, page, 0, h[i], 0), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuMemSetAccess(base + i * page, page, &access, 1), CUDA_SUCCESS);
  }
  /* shrink: unmap and release the last two pages */
  for (int i = 4; i >= 3; i--) {
    SIM_CHECK_EQ(cuMemUnmap(base + i * page, page), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuMemRelease(h[i]), CUDA_SUCCESS);
  }
  /* release while still mapped: the memory stays until the unmap */
  for (int i = 0; i < 3; i++) SIM_CHECK_EQ(cuMemRelease(h[i]), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemUnmap(base, 3 * page), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAddressFree(base, reserve), CUDA_SUCCESS);
}

/* SIMCUDA_MEM_BYTES=256M SIMCUDA_CONTEXT_BYTES=0: VMM physical memory runs out: 6 x 40 MiB
 * pages fit (240 MiB), the seventh does not. Everything released afterwards. */
static void vmm_oom(void) {
  setup();
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle h[7];
  for (int i = 0; i < 6; i++) SIM_CHECK_EQ(cuMemCreate(&h[i], 40 * MiB, &prop, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemCreate(&h[6], 40 * MiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  for (int i = 0; i < 6; i++) SIM_CHECK_EQ(cuMemRelease(h[i]), CUDA_SUCCESS);
}

/* Modules loaded at run time: one good image, one for an architecture the device lacks. */
static void modules(void) {
  setup();
  CUmodule m;
  static const char good[] = "SIMCUBIN sm_80 fn=kernel";
  static const char bad[] = "SIMCUBIN sm_90";
  SIM_CHECK_EQ(cuModuleLoadData(&m, good), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleLoadData(&m, bad), CUDA_ERROR_NO_BINARY_FOR_GPU);
}

/* SIMCUDA_INIT_ERROR=999 (or SIMCUDA_DEVICES=0): cuInit fails; prints the code. */
static void init_error(void) {
  CUresult r = cuInit(0);
  CUdeviceptr d = 0;
  CUresult a = cuMemAlloc(&d, MiB);
  printf("cuInit=%d cuMemAlloc=%d\n", (int)r, (int)a);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"direct", direct},
      {"vmm_expandable", vmm_expandable},
      {"vmm_oom", vmm_oom},
      {"modules", modules},
      {"init_error", init_error},
  };
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
