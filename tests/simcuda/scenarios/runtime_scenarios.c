/* Scenarios against the simulated runtime (linked: DT_NEEDED libcudart.so.13). The runtime finds
 * the driver with dlopen("libcuda.so.1"), so the parent puts SIMCUDA_DIR on LD_LIBRARY_PATH
 * (except for no_driver, which runs without it). `sim_runtime_scenarios NAME`. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>

#include "simcuda_test.h"

#define B0 0x200000000000ull
#define MiB SIM_MiB
#define GiB SIM_GiB

static size_t free_mem(void) {
  size_t f = 0, t = 0;
  SIM_CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
  return f;
}

/* Mirrors the real libcudart.so.13 with no libcuda.so.1 at all (measured on this toolkit). Skips
 * where the runtime finds an installed driver anyway. */
static void no_driver(void) {
  int n = -1, v = -1;
  void *p = (void *)1;
  size_t f, t;
  cudaError_t first = cudaGetDeviceCount(&n);
  if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD)) SIM_SKIP("the runtime found an installed libcuda.so.1");
  SIM_CHECK_EQ(first, cudaErrorInsufficientDriver);
  SIM_CHECK_EQ(n, -1); /* untouched */
  SIM_CHECK_EQ(cudaMalloc(&p, 1024), cudaErrorInsufficientDriver);
  SIM_CHECK_EQ(cudaMalloc(NULL, 16), cudaErrorInsufficientDriver); /* init before argument checks */
  SIM_CHECK_EQ(cudaMalloc(&p, 0), cudaErrorInsufficientDriver);
  SIM_CHECK_EQ(cudaFree(NULL), cudaErrorInsufficientDriver);
  SIM_CHECK_EQ(cudaMemGetInfo(&f, &t), cudaErrorInsufficientDriver);
  SIM_CHECK_EQ(cudaGetLastError(), cudaErrorInsufficientDriver);
  SIM_CHECK_EQ(cudaGetLastError(), cudaErrorInsufficientDriver); /* not cleared */
  SIM_CHECK_EQ(cudaPeekAtLastError(), cudaErrorInsufficientDriver);
  SIM_CHECK_EQ(cudaDriverGetVersion(&v), cudaSuccess);
  SIM_CHECK_EQ(v, 0);
  SIM_CHECK_EQ(cudaRuntimeGetVersion(&v), cudaSuccess);
  SIM_CHECK_EQ(v, 13000);
  SIM_CHECK(strcmp(cudaGetErrorString(cudaErrorInsufficientDriver),
                   "CUDA driver version is insufficient for CUDA runtime version") == 0);
  SIM_CHECK(strcmp(cudaGetErrorName((cudaError_t)12345), "unrecognized error code") == 0);
}

static void no_device(void) {
  simcuda_env("SIMCUDA_DEVICES", "0", (const char *)NULL);
  int n = -1;
  void *p;
  SIM_CHECK_EQ(cudaGetDeviceCount(&n), cudaErrorNoDevice);
  SIM_CHECK_EQ(n, -1); /* untouched, like the real runtime */
  SIM_CHECK_EQ(cudaMalloc(&p, 16), cudaErrorNoDevice);
  SIM_CHECK_EQ(cudaGetLastError(), cudaErrorNoDevice);
}

static void old_driver(void) {
  simcuda_env("SIMCUDA_DRIVER_VERSION", "12080", (const char *)NULL);
  int n = -1, v = 0;
  SIM_CHECK_EQ(cudaGetDeviceCount(&n), cudaErrorInsufficientDriver);
  SIM_CHECK_EQ(cudaDriverGetVersion(&v), cudaSuccess);
  SIM_CHECK_EQ(v, 12080);
}

static void basics(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "4608M", "SIMCUDA_CONTEXT_BYTES", "0", "SIMCUDA_NAME", "Sim H100",
              "SIMCUDA_CC", "9.0", (const char *)NULL);
  int n = 0, v = 0, d = -1;
  SIM_CHECK_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  SIM_CHECK_EQ(n, 1);
  SIM_CHECK_EQ(cudaDriverGetVersion(&v), cudaSuccess);
  SIM_CHECK_EQ(v, 13000);
  SIM_CHECK_EQ(cudaGetDevice(&d), cudaSuccess);
  SIM_CHECK_EQ(d, 0);
  SIM_CHECK_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  SIM_CHECK_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
  SIM_CHECK_EQ(cudaGetLastError(), cudaSuccess);
  SIM_CHECK_EQ(cudaSetDevice(0), cudaSuccess);
  struct cudaDeviceProp prop;
  SIM_CHECK_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  SIM_CHECK(strcmp(prop.name, "Sim H100") == 0);
  SIM_CHECK_EQ(prop.totalGlobalMem, 4608 * MiB);
  SIM_CHECK_EQ(prop.major, 9);
  SIM_CHECK_EQ(prop.minor, 0);
  SIM_CHECK_EQ(prop.warpSize, 32);
  SIM_CHECK_EQ(cudaDeviceGetAttribute(&v, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  SIM_CHECK_EQ(v, 9);
  /* allocation */
  void *p = (void *)1, *q;
  SIM_CHECK_EQ(cudaMalloc(&p, 0), cudaSuccess);
  SIM_CHECK(p == NULL);
  SIM_CHECK_EQ(cudaFree(NULL), cudaSuccess);
  SIM_CHECK_EQ(cudaMalloc(NULL, 16), cudaErrorInvalidValue);
  SIM_CHECK_EQ(cudaMalloc(&p, 1), cudaSuccess);
  SIM_CHECK_EQ((uintptr_t)p, B0);
  SIM_CHECK_EQ(free_mem(), 4608 * MiB - 2 * MiB);
  SIM_CHECK_EQ(cudaFree(p), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(p), cudaErrorInvalidValue);
  SIM_CHECK_EQ(cudaFree((void *)0x1234), cudaErrorInvalidValue);
  SIM_CHECK_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  /* the fragmentation case through the runtime */
  void *a, *b, *c, *dd;
  SIM_CHECK_EQ(cudaMalloc(&a, 1 * GiB), cudaSuccess);
  SIM_CHECK_EQ(cudaMalloc(&b, 1 * GiB), cudaSuccess);
  SIM_CHECK_EQ(cudaMalloc(&c, 1 * GiB), cudaSuccess);
  SIM_CHECK_EQ(cudaMalloc(&dd, 1 * GiB), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(a), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(c), cudaSuccess);
  SIM_CHECK_EQ(free_mem(), 2 * GiB + 512 * MiB);
  SIM_CHECK_EQ(cudaMalloc(&p, 2 * GiB), cudaErrorMemoryAllocation);
  SIM_CHECK(p == NULL);
  SIM_CHECK_EQ(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  SIM_CHECK_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  SIM_CHECK_EQ(cudaGetLastError(), cudaSuccess);
  /* managed, pitched, host */
  SIM_CHECK_EQ(cudaMallocManaged(&p, 0, cudaMemAttachGlobal), cudaErrorInvalidValue);
  SIM_CHECK_EQ(cudaMallocManaged(&p, 100, cudaMemAttachGlobal), cudaSuccess);
  SIM_CHECK_EQ((uintptr_t)p, B0);
  size_t pitch = 0;
  SIM_CHECK_EQ(cudaMallocPitch(&q, &pitch, 100, 10), cudaSuccess);
  SIM_CHECK_EQ(pitch, 512);
  SIM_CHECK_EQ((uintptr_t)q, B0 + 2 * MiB);
  SIM_CHECK_EQ(free_mem(), 2 * GiB + 512 * MiB - 4 * MiB);
  void *h;
  SIM_CHECK_EQ(cudaMallocHost(&h, 1 * MiB), cudaSuccess);
  SIM_CHECK_EQ(cudaHostAlloc(&q, 64, cudaHostAllocPortable), cudaSuccess);
  SIM_CHECK_EQ(free_mem(), 2 * GiB + 512 * MiB - 4 * MiB);
  SIM_CHECK_EQ(cudaMemcpy(p, h, 100, cudaMemcpyHostToDevice), cudaSuccess);
  SIM_CHECK_EQ(cudaMemcpy(h, p, 100, cudaMemcpyDeviceToHost), cudaSuccess);
  SIM_CHECK_EQ(cudaMemcpy(h, p, 4 * MiB, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  SIM_CHECK_EQ(cudaMemcpy(p, h, 100, cudaMemcpyDefault), cudaSuccess);
  memcpy(h, "abc", 4);
  SIM_CHECK_EQ(cudaMemcpy(q, h, 4, cudaMemcpyHostToHost), cudaSuccess);
  SIM_CHECK(strcmp(q, "abc") == 0);
  SIM_CHECK_EQ(cudaMemcpy(q, h, 4, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
  SIM_CHECK_EQ(cudaMemset(p, 0, 100), cudaSuccess);
  SIM_CHECK_EQ(cudaFreeHost(h), cudaSuccess);
  SIM_CHECK_EQ(cudaFreeHost(q), cudaSuccess);
  SIM_CHECK_EQ(cudaFreeHost(q), cudaErrorInvalidValue);
  SIM_CHECK_EQ(cudaDeviceSynchronize(), cudaSuccess);
  /* cudaDeviceReset destroys the primary context: everything is freed, the next call re-creates it */
  SIM_CHECK_EQ(cudaDeviceReset(), cudaSuccess);
  SIM_CHECK_EQ(free_mem(), 4608 * MiB);
  SIM_CHECK_EQ(cudaFree(b), cudaErrorInvalidValue);
}

static void pools(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CONTEXT_BYTES", "256M", (const char *)NULL);
  cudaStream_t s;
  SIM_CHECK_EQ(cudaStreamCreate(&s), cudaSuccess);
  SIM_CHECK_EQ(free_mem(), 768 * MiB);
  cudaMemPool_t pool;
  SIM_CHECK_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaSuccess);
  void *p = (void *)1;
  SIM_CHECK_EQ(cudaMallocAsync(&p, 0, s), cudaSuccess);
  SIM_CHECK(p == NULL);
  SIM_CHECK_EQ(cudaMallocAsync(&p, 10 * MiB, s), cudaSuccess);
  SIM_CHECK_EQ((uintptr_t)p, B0);
  unsigned long long v = 0;
  SIM_CHECK_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &v), cudaSuccess);
  SIM_CHECK_EQ(v, 32 * MiB);
  SIM_CHECK_EQ(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &v), cudaSuccess);
  SIM_CHECK_EQ(v, 10 * MiB);
  SIM_CHECK_EQ(free_mem(), 736 * MiB);
  SIM_CHECK_EQ(cudaFreeAsync(p, s), cudaSuccess);
  SIM_CHECK_EQ(free_mem(), 736 * MiB);
  SIM_CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  SIM_CHECK_EQ(free_mem(), 768 * MiB);
  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t mine;
  SIM_CHECK_EQ(cudaMemPoolCreate(&mine, &props), cudaSuccess);
  v = 1 * GiB;
  SIM_CHECK_EQ(cudaMemPoolSetAttribute(mine, cudaMemPoolAttrReleaseThreshold, &v), cudaSuccess);
  SIM_CHECK_EQ(cudaMallocFromPoolAsync(&p, 100 * MiB, mine, s), cudaSuccess);
  SIM_CHECK_EQ(cudaFreeAsync(p, s), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamSynchronize(s), cudaSuccess);
  SIM_CHECK_EQ(free_mem(), 668 * MiB); /* below the threshold: kept */
  SIM_CHECK_EQ(cudaMemPoolTrimTo(mine, 0), cudaSuccess);
  SIM_CHECK_EQ(free_mem(), 768 * MiB);
  SIM_CHECK_EQ(cudaMemPoolDestroy(mine), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamDestroy(s), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
}

/* The runtime reaches the driver only through cuGetProcAddress_v2 (one lookup per entry point). */
static void proc_lookups(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", (const char *)NULL);
  void *p;
  SIM_CHECK_EQ(cudaMalloc(&p, 1), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(p), cudaSuccess);
  unsigned long long n = simcuda_proc_lookups();
  SIM_CHECK_EQ(n, 47); /* SIM_RT_DRIVER_FUNCS in sim_runtime.c, looked up once at init */
  SIM_CHECK_EQ(cudaMalloc(&p, 1), cudaSuccess);
  SIM_CHECK_EQ(simcuda_proc_lookups(), n);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"no_driver", no_driver}, {"no_device", no_device}, {"old_driver", old_driver},
      {"basics", basics},       {"pools", pools},         {"proc_lookups", proc_lookups},
  };
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
