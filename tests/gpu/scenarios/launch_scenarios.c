/* Kernel launches through the CUDA runtime and the driver (simulated libcudart.so.13 and
 * libcuda.so.1), for the launch-failure tests (tests/gpu/test_gpu_launch.py).
 *
 * The runtime part does what nvcc's host code does for a .cu file: a constructor registers
 * the object's device image (__cudaRegisterFatBinary with nvcc's wrapper) and each kernel's
 * host stub under the kernel's name (__cudaRegisterFunction); the stub, which nvcc names
 * like the kernel, launches by passing its own address to cudaLaunchKernel. The images are
 * simulated cubins (tests/simcuda/README.md): the device is sm_80 (SIMCUDA_CC default 8.0),
 * so an image built only for sm_90 has no kernel image for it (209), as a wheel without
 * code for the GPU's architecture has.
 *
 * Every scenario checks each result and exits non-zero on a surprise, so the counts the
 * tests expect are exactly what happened. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "simcuda_test.h"
#include "driver_context.h"

/* ---- what nvcc generates ---------------------------------------------------------------------- */
struct fatbin_wrapper { int magic, version; const void *data; void *filename_or_fatbins; };
extern void **__cudaRegisterFatBinary(void *wrapper);
extern void __cudaRegisterFatBinaryEnd(void **handle);
extern void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, void *tid, void *bid,
                                   void *bDim, void *gDim, int *wSize);

/* The per-thread-default-stream variants (what -default-stream per-thread compiles to); the
 * headers declare them only under CUDA_API_PER_THREAD_DEFAULT_STREAM. */
extern cudaError_t cudaLaunchKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);
extern cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *, const void *, void **);
extern cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *, dim3, dim3, void **, size_t, cudaStream_t);

static const char kImageSm90[] = "SIMCUBIN sm_90 fn=scale_sm90_only";
static const char kImageSm80[] = "SIMCUBIN sm_80 fn=scale_everywhere";
static const struct fatbin_wrapper kWrapSm90 = {0x466243b1, 1, kImageSm90, NULL};
static const struct fatbin_wrapper kWrapSm80 = {0x466243b1, 1, kImageSm80, NULL};

static const dim3 kGrid = {4, 1, 1}, kBlock = {128, 1, 1};

/* Host stubs. */
__attribute__((noinline)) cudaError_t scale_sm90_only(float *x) {
  void *args[] = {&x};
  return cudaLaunchKernel((const void *)scale_sm90_only, kGrid, kBlock, args, 0, NULL);
}
__attribute__((noinline)) cudaError_t scale_everywhere(float *x) {
  void *args[] = {&x};
  return cudaLaunchKernel((const void *)scale_everywhere, kGrid, kBlock, args, 0, NULL);
}
/* A stub whose kernel was never registered (a .cu file whose registration did not run). */
__attribute__((noinline)) cudaError_t never_registered(float *x) {
  void *args[] = {&x};
  return cudaLaunchKernel((const void *)never_registered, kGrid, kBlock, args, 0, NULL);
}

__attribute__((constructor)) static void register_kernels(void) {
  void **h90 = __cudaRegisterFatBinary((void *)&kWrapSm90);
  __cudaRegisterFunction(h90, (const char *)scale_sm90_only, (char *)"scale_sm90_only",
                         "scale_sm90_only", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h90);
  void **h80 = __cudaRegisterFatBinary((void *)&kWrapSm80);
  __cudaRegisterFunction(h80, (const char *)scale_everywhere, (char *)"scale_everywhere",
                         "scale_everywhere", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h80);
}

/* ---- runtime scenarios ------------------------------------------------------------------------- */

/* 7 launches of a kernel without an image for sm_80 (each 209), 5 of one with (success). */
static void runtime_no_image(void) {
  float *x = NULL;
  SIM_CHECK_EQ(cudaMalloc((void **)&x, 4096), cudaSuccess);
  for (int i = 0; i < 5; i++) SIM_CHECK_EQ(scale_everywhere(x), cudaSuccess);
  for (int i = 0; i < 7; i++) SIM_CHECK_EQ(scale_sm90_only(x), cudaErrorNoKernelImageForDevice);
  SIM_CHECK_EQ(cudaFree(x), cudaSuccess);
}

/* Every launch entry point succeeds: 6 x 100 launches, nothing to record. */
static void runtime_ok(void) {
  float *x = NULL;
  void *args[] = {&x};
  cudaLaunchConfig_t cfg = {kGrid, kBlock, 0, NULL, NULL, 0};
  const void *k = (const void *)scale_everywhere;
  for (int i = 0; i < 100; i++) {
    SIM_CHECK_EQ(cudaLaunchKernel(k, kGrid, kBlock, args, 0, NULL), cudaSuccess);
    SIM_CHECK_EQ(cudaLaunchKernel_ptsz(k, kGrid, kBlock, args, 0, NULL), cudaSuccess);
    SIM_CHECK_EQ(cudaLaunchKernelExC(&cfg, k, args), cudaSuccess);
    SIM_CHECK_EQ(cudaLaunchKernelExC_ptsz(&cfg, k, args), cudaSuccess);
    SIM_CHECK_EQ(cudaLaunchCooperativeKernel(k, kGrid, kBlock, args, 0, NULL), cudaSuccess);
    SIM_CHECK_EQ(cudaLaunchCooperativeKernel_ptsz(k, kGrid, kBlock, args, 0, NULL), cudaSuccess);
  }
}

/* The other entry points: cudaLaunchKernelExC x 2 and cudaLaunchCooperativeKernel x 3 of
 * the sm_90-only kernel (209), and 4 launches of an unregistered stub (98). */
static void runtime_variants(void) {
  float *x = NULL;
  void *args[] = {&x};
  cudaLaunchConfig_t cfg = {kGrid, kBlock, 0, NULL, NULL, 0};
  const void *k = (const void *)scale_sm90_only;
  for (int i = 0; i < 2; i++) SIM_CHECK_EQ(cudaLaunchKernelExC(&cfg, k, args), cudaErrorNoKernelImageForDevice);
  for (int i = 0; i < 3; i++)
    SIM_CHECK_EQ(cudaLaunchCooperativeKernel(k, kGrid, kBlock, args, 0, NULL), cudaErrorNoKernelImageForDevice);
  for (int i = 0; i < 4; i++) SIM_CHECK_EQ(never_registered(x), cudaErrorInvalidDeviceFunction);
}

/* More call sites of cudaLaunchKernel than the shim's call-site cache holds (4096), as a
 * framework with thousands of kernel stubs has: 5120 distinct sites, each launching the good
 * kernel once, then one launch of the sm_90-only kernel (209). Past the cache, the shim
 * resolves the real function per calling object. */
#define L1 SIM_CHECK_EQ(cudaLaunchKernel(k, kGrid, kBlock, args, 0, NULL), cudaSuccess);
#define L8 L1 L1 L1 L1 L1 L1 L1 L1
#define L64 L8 L8 L8 L8 L8 L8 L8 L8
#define L512 L64 L64 L64 L64 L64 L64 L64 L64
static void runtime_many_sites(void) {
  float *x = NULL;
  void *args[] = {&x};
  const void *k = (const void *)scale_everywhere;
  L512 L512 L512 L512 L512 L512 L512 L512 L512 L512
  SIM_CHECK_EQ(scale_sm90_only(x), cudaErrorNoKernelImageForDevice);
}

/* ---- driver scenarios ---------------------------------------------------------------------------- */

/* A module whose kernel "saxpy_fails" fails every launch with CUDA_ERROR_LAUNCH_FAILED
 * (719): 4 through the linked cuLaunchKernel, 2 through a cuLaunchKernelEx pointer from
 * cuGetProcAddress_v2. A library whose kernel "lib_no_image" fails with
 * CUDA_ERROR_NO_BINARY_FOR_GPU (209): 3 cuLaunchKernel calls with the CUkernel. A module
 * kernel that works: 10 launches, nothing recorded. */
static void driver_failures(void) {
  scenario_driver_context();
  CUmodule bad, good;
  CUfunction f_bad, f_good;
  SIM_CHECK_EQ(cuModuleLoadData(&bad, "SIMCUBIN sm_80 fn=saxpy_fails launch_error=719"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&f_bad, bad, "saxpy_fails"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleLoadData(&good, "SIMCUBIN sm_80 fn=saxpy_ok"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&f_good, good, "saxpy_ok"), CUDA_SUCCESS);
  for (int i = 0; i < 10; i++)
    SIM_CHECK_EQ(cuLaunchKernel(f_good, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
  for (int i = 0; i < 4; i++)
    SIM_CHECK_EQ(cuLaunchKernel(f_bad, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_LAUNCH_FAILED);
  PFN_cuLaunchKernelEx_v11060 launch_ex = NULL;
  CUdriverProcAddressQueryResult st;
  SIM_CHECK_EQ(cuGetProcAddress("cuLaunchKernelEx", (void **)&launch_ex, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st),
               CUDA_SUCCESS);
  SIM_CHECK(launch_ex != NULL);
  CUlaunchConfig cfg = {1, 1, 1, 32, 1, 1, 0, NULL, NULL, 0};
  for (int i = 0; i < 2; i++) SIM_CHECK_EQ(launch_ex(&cfg, f_bad, NULL, NULL), CUDA_ERROR_LAUNCH_FAILED);
  CUlibrary lib;
  CUkernel k;
  SIM_CHECK_EQ(cuLibraryLoadData(&lib, "SIMCUBIN sm_80 fn=lib_no_image launch_error=209", NULL, NULL, 0, NULL,
                                 NULL, 0),
               CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLibraryGetKernel(&k, lib, "lib_no_image"), CUDA_SUCCESS);
  for (int i = 0; i < 3; i++)
    SIM_CHECK_EQ(cuLaunchKernel((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL),
                 CUDA_ERROR_NO_BINARY_FOR_GPU);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"runtime_no_image", runtime_no_image},
      {"runtime_ok", runtime_ok},
      {"runtime_variants", runtime_variants},
      {"runtime_many_sites", runtime_many_sites},
      {"driver_failures", driver_failures},
  };
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
