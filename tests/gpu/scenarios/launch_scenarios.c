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
#include <stdlib.h>

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

/* nvcc 13's launch path (crt/host_runtime.h's __cudaLaunch): the stub takes a handle once with
 * __cudaGetKernel and launches it with __cudaLaunchKernel, with the <<<...>>> configuration that
 * __cudaPushCallConfiguration pushed and __cudaPopCallConfiguration pops. */
extern unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st *stream);
extern cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream);
extern cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *stub);
extern cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void **args, size_t shmem,
                                      cudaStream_t stream);

static const char kImageSm90[] = "SIMCUBIN sm_90 fn=scale_sm90_only fn=nvcc_style_sm90";
static const char kImageSm80[] = "SIMCUBIN sm_80 fn=scale_everywhere fn=fill fn=gather fn=reduce";
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

/* A stub as nvcc 13 writes it (the <<<>>> expression and the __device_stub__ in one). */
__attribute__((noinline)) void nvcc_style_sm90(float *x, cudaStream_t s) {
  static cudaKernel_t handle;
  static int got;
  if (!got) got = __cudaGetKernel(&handle, (const void *)nvcc_style_sm90) == cudaSuccess;
  if (__cudaPushCallConfiguration(kGrid, kBlock, 0, s) != 0) return;
  dim3 grid, block;
  size_t shmem;
  cudaStream_t stream;
  if (__cudaPopCallConfiguration(&grid, &block, &shmem, &stream) != cudaSuccess) return;
  void *args[] = {&x};
  (void)__cudaLaunchKernel(handle, grid, block, args, shmem, stream);
}

/* Three kernels of one image, for the device-fault scenarios: each stub launches on a stream. */
#define STREAM_STUB(name)                                                                \
  __attribute__((noinline)) cudaError_t name(float *x, cudaStream_t s) {                \
    void *args[] = {&x};                                                                  \
    return cudaLaunchKernel((const void *)name, kGrid, kBlock, args, 0, s);               \
  }
STREAM_STUB(fill)
STREAM_STUB(gather)
STREAM_STUB(reduce)

__attribute__((constructor)) static void register_kernels(void) {
  void **h90 = __cudaRegisterFatBinary((void *)&kWrapSm90);
  __cudaRegisterFunction(h90, (const char *)scale_sm90_only, (char *)"scale_sm90_only",
                         "scale_sm90_only", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h90, (const char *)nvcc_style_sm90, (char *)"nvcc_style_sm90",
                         "nvcc_style_sm90", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h90);
  void **h80 = __cudaRegisterFatBinary((void *)&kWrapSm80);
  __cudaRegisterFunction(h80, (const char *)scale_everywhere, (char *)"scale_everywhere",
                         "scale_everywhere", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h80, (const char *)fill, (char *)"fill", "fill", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h80, (const char *)gather, (char *)"gather", "gather", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h80, (const char *)reduce, (char *)"reduce", "reduce", -1, NULL, NULL, NULL, NULL, NULL);
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

/* nvcc 13's launch path by hand: 4 launches of a kernel without an image for sm_80 (each 209 at
 * __cudaLaunchKernel, the stub ignores it as nvcc's does; cudaGetLastError reports it). */
static void runtime_nvcc_stub(void) {
  float *x = NULL;
  SIM_CHECK_EQ(cudaMalloc((void **)&x, 4096), cudaSuccess);
  for (int i = 0; i < 4; i++) {
    nvcc_style_sm90(x, NULL);
    SIM_CHECK_EQ(cudaGetLastError(), cudaErrorNoKernelImageForDevice);
  }
}

/* ---- device faults (SIMCUDA_FAULT_KERNEL=gather: gather's launch faults its stream) -------------
 * fill and gather on stream s1, reduce on s2, then s1 is synchronised: 700 there (under the fault),
 * and the next allocation fails with it too. Clean (no fault), every call succeeds. */
static cudaStream_t s1, s2;
static float *buf;
static void launch_three(void) {
  SIM_CHECK_EQ(cudaMalloc((void **)&buf, 4096), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamCreate(&s1), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamCreate(&s2), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess); /* nothing in flight yet */
  SIM_CHECK_EQ(fill(buf, s1), cudaSuccess);
  SIM_CHECK_EQ(gather(buf, s1), cudaSuccess);
  SIM_CHECK_EQ(reduce(buf, s2), cudaSuccess);
}
static void device_fault(void) {
  launch_three();
  SIM_CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess); /* the other stream: not yet */
  SIM_CHECK_EQ(cudaStreamSynchronize(s1), cudaErrorIllegalAddress);
  float *more = NULL;
  SIM_CHECK_EQ(cudaMalloc((void **)&more, 4096), cudaErrorIllegalAddress);
  SIM_CHECK_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  SIM_CHECK_EQ(fill(buf, s1), cudaErrorIllegalAddress); /* later launches fail: the fault's */
  SIM_CHECK_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
}
static void device_fault_clean(void) {
  launch_three();
  SIM_CHECK_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  float *more = NULL;
  SIM_CHECK_EQ(cudaMalloc((void **)&more, 4096), cudaSuccess);
  SIM_CHECK_EQ(cudaGetLastError(), cudaSuccess);
  SIM_CHECK_EQ(fill(buf, s1), cudaSuccess);
  SIM_CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
}
/* As PyTorch does in some paths: the error is seen, then the process aborts (SIGABRT). */
static void device_fault_abort(void) {
  launch_three();
  SIM_CHECK_EQ(cudaStreamSynchronize(s1), cudaErrorIllegalAddress);
  abort();
}
/* No error is ever seen by a hooked call: the process aborts with the kernels in flight. */
static void abort_in_flight(void) {
  launch_three();
  abort();
}

/* ---- driver scenarios ---------------------------------------------------------------------------- */

/* A module whose kernel "saxpy_fails" fails every launch with CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
 * (701, too many registers for the block: a launch-time error, not a sticky one): 4 through the linked cuLaunchKernel, 2 through a cuLaunchKernelEx pointer from
 * cuGetProcAddress_v2. A library whose kernel "lib_no_image" fails with
 * CUDA_ERROR_NO_BINARY_FOR_GPU (209): 3 cuLaunchKernel calls with the CUkernel. A module
 * kernel that works: 10 launches, nothing recorded. */
static void driver_failures(void) {
  scenario_driver_context();
  CUmodule bad, good;
  CUfunction f_bad, f_good;
  SIM_CHECK_EQ(cuModuleLoadData(&bad, "SIMCUBIN sm_80 fn=saxpy_fails launch_error=701"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&f_bad, bad, "saxpy_fails"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleLoadData(&good, "SIMCUBIN sm_80 fn=saxpy_ok"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&f_good, good, "saxpy_ok"), CUDA_SUCCESS);
  for (int i = 0; i < 10; i++)
    SIM_CHECK_EQ(cuLaunchKernel(f_good, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
  for (int i = 0; i < 4; i++)
    SIM_CHECK_EQ(cuLaunchKernel(f_bad, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  PFN_cuLaunchKernelEx_v11060 launch_ex = NULL;
  CUdriverProcAddressQueryResult st;
  SIM_CHECK_EQ(cuGetProcAddress("cuLaunchKernelEx", (void **)&launch_ex, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st),
               CUDA_SUCCESS);
  SIM_CHECK(launch_ex != NULL);
  CUlaunchConfig cfg = {1, 1, 1, 32, 1, 1, 0, NULL, NULL, 0};
  for (int i = 0; i < 2; i++) SIM_CHECK_EQ(launch_ex(&cfg, f_bad, NULL, NULL), CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
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

/* A library built only for sm_90 (its image lives in this program): cuLibraryLoadData succeeds,
 * each cuLibraryGetKernel of its kernel fails with 209 (3 times). A library that runs here,
 * asked for a name it lacks: 500, twice (a probe, not a launch failure). */
static const char kLookupImage[] = "SIMCUBIN sm_90 fn=_Z6lookupPf";
static void driver_lookup_no_image(void) {
  scenario_driver_context();
  CUlibrary lib, other;
  CUkernel k;
  SIM_CHECK_EQ(cuLibraryLoadData(&lib, kLookupImage, NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
  for (int i = 0; i < 3; i++) SIM_CHECK_EQ(cuLibraryGetKernel(&k, lib, "_Z6lookupPf"), CUDA_ERROR_NO_BINARY_FOR_GPU);
  SIM_CHECK_EQ(cuLibraryLoadData(&other, "SIMCUBIN sm_80 fn=present", NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
  for (int i = 0; i < 2; i++) SIM_CHECK_EQ(cuLibraryGetKernel(&k, other, "absent"), CUDA_ERROR_NOT_FOUND);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"runtime_no_image", runtime_no_image},
      {"runtime_ok", runtime_ok},
      {"runtime_variants", runtime_variants},
      {"runtime_many_sites", runtime_many_sites},
      {"runtime_nvcc_stub", runtime_nvcc_stub},
      {"device_fault", device_fault},
      {"device_fault_clean", device_fault_clean},
      {"device_fault_abort", device_fault_abort},
      {"abort_in_flight", abort_in_flight},
      {"driver_failures", driver_failures},
      {"driver_lookup_no_image", driver_lookup_no_image},
  };
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
