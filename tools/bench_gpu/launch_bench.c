/* Benchmark: the cost of a successful kernel launch, runtime (cudaLaunchKernel of a registered
 * host stub) and driver (cuLaunchKernel of a module function), against the simulated CUDA
 * libraries (tests/simcuda), to compare a bare run, an empty LD_PRELOAD library and the shim.
 * The shim's launch hooks record nothing on success: what they add is a lookup of the real
 * function and one comparison (budget: <= 10 ns per launch).
 *
 *   launch_bench [LAUNCHES [ROUNDS]]
 *
 * Built with -DLAUNCH_BENCH_LIBRARY -shared, it is a library whose launch_bench_main(argc,
 * argv) does the same: py_launch.py calls it from a Python stack of a chosen depth, so the
 * launches pay for the Python stack the shim notes with each one.
 *
 * Times with the thread's CPU clock like malloc_bench.c and prints one JSON object with the
 * median ns per launch of each layer. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

struct fatbin_wrapper { int magic, version; const void *data; void *filename_or_fatbins; };
extern void **__cudaRegisterFatBinary(void *wrapper);
extern void __cudaRegisterFatBinaryEnd(void **handle);
extern void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, void *tid, void *bid,
                                   void *bDim, void *gDim, int *wSize);
static const struct fatbin_wrapper kWrap = {0x466243b1, 1, "SIMCUBIN sm_80 fn=bench_kernel", NULL};
void bench_kernel(void) {}

static int bench(int argc, char **argv) {
  const long n = argc > 1 ? atol(argv[1]) : 200000;
  const int rounds = argc > 2 ? atoi(argv[2]) : 15;
  if (n <= 0 || rounds <= 0 || rounds > 1000) return 2;
  void **h = __cudaRegisterFatBinary((void *)&kWrap);
  __cudaRegisterFunction(h, (const char *)bench_kernel, (char *)"bench_kernel", "bench_kernel", -1, NULL, NULL,
                         NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h);
  const dim3 grid = {1, 1, 1}, block = {32, 1, 1};
  const void *stub = (const void *)bench_kernel;
  for (int i = 0; i < 1000; i++)
    if (cudaLaunchKernel(stub, grid, block, NULL, 0, NULL) != cudaSuccess) return 1;
  CUmodule mod;
  CUfunction f;
  if (cuModuleLoadData(&mod, "SIMCUBIN sm_80 fn=bench_driver_kernel") != CUDA_SUCCESS ||
      cuModuleGetFunction(&f, mod, "bench_driver_kernel") != CUDA_SUCCESS)
    return 1;
  double rt[1000], drv[1000];
  for (int r = 0; r < rounds; r++) {
    double t0 = bench_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < n; i++) cudaLaunchKernel(stub, grid, block, NULL, 0, NULL);
    rt[r] = (bench_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n;
    t0 = bench_ns(CLOCK_THREAD_CPUTIME_ID);
    for (long i = 0; i < n; i++) cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    drv[r] = (bench_ns(CLOCK_THREAD_CPUTIME_ID) - t0) / (double)n;
  }
  printf("{\"launches\": %ld, \"rounds\": %d, \"runtime_median_ns\": %.2f, \"driver_median_ns\": %.2f}\n", n,
         rounds, bench_median(rt, rounds), bench_median(drv, rounds));
  return 0;
}

#ifdef LAUNCH_BENCH_LIBRARY
__attribute__((visibility("default"))) int launch_bench_main(int argc, char **argv) {
  const int rc = bench(argc, argv);
  fflush(stdout);
  return rc;
}
#else
int main(int argc, char **argv) { return bench(argc, argv); }
#endif
