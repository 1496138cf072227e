/* Synchronising CUDA calls that block, and calls that do not, against the simulated runtime and
 * driver (tests/simcuda), for test_steps_gpu_sync.py. SIMCUDA_SLOW_KERNEL=crunch:MS makes each
 * launch of the kernel `crunch` run MS milliseconds on its stream, so the synchronisation after
 * it blocks that long; the kernel `tick` is quick.
 *
 *   runtime  per round (3 rounds): crunch on s + cudaStreamSynchronize(s); crunch on the default
 *            stream + cudaDeviceSynchronize; crunch + a cudaMemcpy to the host. In between, calls
 *            that are never timed: cudaStreamQuery of the busy stream, cudaGetLastError,
 *            cudaPeekAtLastError, a cudaMemcpyAsync; and a synchronisation of another stream, q,
 *            with nothing to wait for (tick alone ran on it).
 *   driver   the same through the driver API: cuStreamSynchronize, cuCtxSynchronize,
 *            cuMemcpyDtoH_v2 (3 rounds), with cuStreamQuery in between and q's quick
 *            synchronisation.
 *
 * Prints s and q.
 *
 * Every result is checked; the program exits non-zero on a surprise. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#include "simcuda_test.h"

static const char kImage[] = "SIMCUBIN sm_80 fn=crunch fn=tick";
static const struct simcuda_fatbin_wrapper kWrap = {0x466243b1, 1, kImage, NULL};
static const dim3 kGrid = {4, 1, 1}, kBlock = {128, 1, 1};

SIMCUDA_STREAM_STUB(crunch)
SIMCUDA_STREAM_STUB(tick)

__attribute__((constructor)) static void register_kernels(void) {
  void **h = __cudaRegisterFatBinary((void *)&kWrap);
  __cudaRegisterFunction(h, (const char *)crunch, (char *)"crunch", "crunch", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h, (const char *)tick, (char *)"tick", "tick", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h);
}

/* Calls that return at once: never timed (queries, copies on a stream), or a synchronisation
 * of q that has nothing to wait for. */
static void quick_calls(float *x, cudaStream_t s, cudaStream_t q, char *host) {
  SIM_CHECK_EQ(tick(x, q), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamSynchronize(q), cudaSuccess);
  SIM_CHECK_EQ(cudaGetLastError(), cudaSuccess);
  SIM_CHECK_EQ(cudaPeekAtLastError(), cudaSuccess);
  SIM_CHECK_EQ(cudaMemcpyAsync(host, x, 256, cudaMemcpyDeviceToHost, s), cudaSuccess);
}

static void runtime_rounds(void) {
  float *x = NULL;
  cudaStream_t s, q;
  static char host[4096];
  SIM_CHECK_EQ(cudaMalloc((void **)&x, 4096), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamCreate(&q), cudaSuccess);
  for (int round = 0; round < 3; round++) {
    SIM_CHECK_EQ(crunch(x, s), cudaSuccess);
    SIM_CHECK_EQ(cudaStreamQuery(s), cudaErrorNotReady); /* still running: a query, not a wait */
    SIM_CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
    quick_calls(x, s, q, host);
    SIM_CHECK_EQ(crunch(x, NULL), cudaSuccess);
    SIM_CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
    quick_calls(x, s, q, host);
    SIM_CHECK_EQ(crunch(x, NULL), cudaSuccess);
    SIM_CHECK_EQ(cudaMemcpy(host, x, 256, cudaMemcpyDeviceToHost), cudaSuccess);
    quick_calls(x, s, q, host);
  }
  printf("stream=%p quiet=%p\n", (void *)s, (void *)q);
  SIM_CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamDestroy(q), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(x), cudaSuccess);
}

static void driver_rounds(void) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction crunch_fn, tick_fn;
  CUstream s, q;
  CUdeviceptr d;
  static char host[4096];
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDeviceGet(&dev, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleLoadData(&mod, kImage), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&crunch_fn, mod, "crunch"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&tick_fn, mod, "tick"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamCreate(&q, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&d, 4096), CUDA_SUCCESS);
  void *args[] = {&d};
  for (int round = 0; round < 3; round++) {
    SIM_CHECK_EQ(cuLaunchKernel(crunch_fn, 4, 1, 1, 128, 1, 1, 0, s, args, NULL), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    SIM_CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuLaunchKernel(tick_fn, 4, 1, 1, 128, 1, 1, 0, q, args, NULL), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuStreamSynchronize(q), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuLaunchKernel(crunch_fn, 4, 1, 1, 128, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuLaunchKernel(crunch_fn, 4, 1, 1, 128, 1, 1, 0, NULL, args, NULL), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuMemcpyDtoH(host, d, 256), CUDA_SUCCESS);
    SIM_CHECK_EQ(cuStreamQuery(s), CUDA_SUCCESS);
  }
  SIM_CHECK_EQ(cuMemFree(d), CUDA_SUCCESS);
  printf("stream=%p quiet=%p\n", (void *)s, (void *)q);
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  if (strcmp(argv[1], "runtime") == 0) {
    runtime_rounds();
  } else if (strcmp(argv[1], "driver") == 0) {
    driver_rounds();
  } else {
    return 2;
  }
  return 0;
}
