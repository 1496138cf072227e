/* A kernel that never finishes, against the simulated CUDA runtime and driver (tests/simcuda),
 * for test_hang_gpu.py. Kernels are registered as nvcc's host code registers them and launched
 * through cudaLaunchKernel with their host stubs.
 *
 * On one stream s: `warm`, then cudaStreamSynchronize(s), which completes; then `fill`, `scale`
 * and `spin`. It prints "blocked pid=P stream=S" (flushed), then calls cudaDeviceSynchronize.
 * With SIMCUDA_HANG_KERNEL=spin that call never returns (the test kills the process); without
 * it, the program prints "done" and exits 0.
 *
 * Every result is checked; the program exits non-zero on a surprise. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <unistd.h>

#include "simcuda_test.h"

static const char kImage[] = "SIMCUBIN sm_80 fn=warm fn=fill fn=scale fn=spin";
static const struct simcuda_fatbin_wrapper kWrap = {0x466243b1, 1, kImage, NULL};
static const dim3 kGrid = {4, 1, 1}, kBlock = {128, 1, 1};

SIMCUDA_STREAM_STUB(warm)
SIMCUDA_STREAM_STUB(fill)
SIMCUDA_STREAM_STUB(scale)
SIMCUDA_STREAM_STUB(spin)

__attribute__((constructor)) static void register_kernels(void) {
  void **h = __cudaRegisterFatBinary((void *)&kWrap);
  __cudaRegisterFunction(h, (const char *)warm, (char *)"warm", "warm", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h, (const char *)fill, (char *)"fill", "fill", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h, (const char *)scale, (char *)"scale", "scale", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFunction(h, (const char *)spin, (char *)"spin", "spin", -1, NULL, NULL, NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h);
}

int main(void) {
  float *x = NULL;
  cudaStream_t s;
  SIM_CHECK_EQ(cudaMalloc((void **)&x, 4096), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  SIM_CHECK_EQ(warm(x, s), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess); /* warm is done: not in flight below */
  SIM_CHECK_EQ(fill(x, s), cudaSuccess);
  SIM_CHECK_EQ(scale(x, s), cudaSuccess);
  SIM_CHECK_EQ(spin(x, s), cudaSuccess);
  printf("blocked pid=%d stream=%p\n", (int)getpid(), (void *)s);
  fflush(stdout);
  SIM_CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  printf("done\n");
  SIM_CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(x), cudaSuccess);
  return 0;
}
