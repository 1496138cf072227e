/* Scenarios against the simulated driver, linked directly (DT_NEEDED libcuda.so.1, RUNPATH to the
 * sim dir). Each scenario sets its own SIMCUDA_* environment first; run one per process:
 * `sim_driver_scenarios NAME`. Numbers are exact: see README.md for the rules behind them. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "simcuda_test.h"

#define B0 0x200000000000ull /* device 0 heap base */
#define VA0 0x400000000000ull /* first cuMemAddressReserve address */
#define MiB SIM_MiB
#define GiB SIM_GiB

static CUcontext g_ctx;
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev); /* not in cuda.h */

/* cuInit + retain and make current the primary context of device 0 */
static void init_primary(void) {
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&g_ctx, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSetCurrent(g_ctx), CUDA_SUCCESS);
}
static size_t free_mem(void) {
  size_t f = 0, t = 0;
  SIM_CHECK_EQ(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
  return f;
}
static CUdeviceptr alloc(size_t n) {
  CUdeviceptr p = 0;
  SIM_CHECK_EQ(cuMemAlloc(&p, n), CUDA_SUCCESS);
  return p;
}

/* ---------------------------------------------------------------------------------------- */
static void init_and_context_errors(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  int n = -1, v = 0;
  CUdeviceptr p = 0;
  CUcontext c = (CUcontext)1;
  size_t f, t;
  SIM_CHECK_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
  SIM_CHECK_EQ(cuCtxGetCurrent(&c), CUDA_ERROR_NOT_INITIALIZED);
  SIM_CHECK_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
  SIM_CHECK_EQ(cuMemGetInfo(&f, &t), CUDA_ERROR_NOT_INITIALIZED);
  SIM_CHECK_EQ(cuDriverGetVersion(&v), CUDA_SUCCESS); /* works before cuInit */
  SIM_CHECK_EQ(v, 13000);
  SIM_CHECK_EQ(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  /* no current context */
  SIM_CHECK_EQ(cuCtxGetCurrent(&c), CUDA_SUCCESS);
  SIM_CHECK(c == NULL);
  SIM_CHECK_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
  SIM_CHECK_EQ(cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
  CUdevice d;
  SIM_CHECK_EQ(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
  SIM_CHECK_EQ(cuCtxSetCurrent((CUcontext)&v), CUDA_ERROR_INVALID_CONTEXT);
  /* primary context refcounting: same handle, released on the last release */
  CUcontext a, b;
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&a, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&b, 0), CUDA_SUCCESS);
  SIM_CHECK(a == b);
  unsigned flags;
  int active;
  SIM_CHECK_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
  SIM_CHECK_EQ(active, 1);
  SIM_CHECK_EQ(cuCtxSetCurrent(a), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxGetDevice(&d), CUDA_SUCCESS);
  SIM_CHECK_EQ(d, 0);
  SIM_CHECK_EQ(cuCtxDestroy(a), CUDA_ERROR_INVALID_CONTEXT); /* primary: release, not destroy */
  p = alloc(1);
  SIM_CHECK_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(p), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS); /* last one: destroyed */
  SIM_CHECK_EQ(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
  SIM_CHECK_EQ(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
  SIM_CHECK_EQ(active, 0);
  SIM_CHECK_EQ(cuMemAlloc(&p, 16), CUDA_ERROR_INVALID_CONTEXT); /* still current, but destroyed */
  SIM_CHECK_EQ(cuCtxSetCurrent(a), CUDA_ERROR_INVALID_CONTEXT);
  /* cuCtxCreate: makes it current; destroying it frees its memory and clears current */
  CUcontext own;
  SIM_CHECK_EQ(cuCtxCreate(&own, NULL, 0, 0), CUDA_SUCCESS); /* cuda.h: cuCtxCreate_v4 */
  p = alloc(100 * MiB);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 100 * MiB);
  SIM_CHECK_EQ(cuCtxDestroy(own), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxDestroy(own), CUDA_ERROR_INVALID_CONTEXT);
  SIM_CHECK_EQ(cuCtxGetCurrent(&c), CUDA_SUCCESS);
  SIM_CHECK(c == NULL);
  init_primary();
  SIM_CHECK_EQ(free_mem(), 1 * GiB);
  SIM_CHECK_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE); /* went with its context */
}

static void no_device(void) {
  simcuda_env("SIMCUDA_DEVICES", "0", (const char *)NULL);
  int n = -1;
  SIM_CHECK_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  SIM_CHECK_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE); /* sticky */
  SIM_CHECK_EQ(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
}

static void forced_init_error(void) {
  simcuda_env("SIMCUDA_INIT_ERROR", "999", (const char *)NULL);
  SIM_CHECK_EQ(cuInit(0), CUDA_ERROR_UNKNOWN);
}

static void device_info(void) {
  simcuda_env("SIMCUDA_DEVICES", "2", "SIMCUDA_MEM_BYTES", "8G,24G", "SIMCUDA_NAME", "Sim A40", "SIMCUDA_CC",
              "8.6", "SIMCUDA_DRIVER_VERSION", "13010", (const char *)NULL);
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  int n = 0, v = 0;
  SIM_CHECK_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
  SIM_CHECK_EQ(n, 2);
  SIM_CHECK_EQ(cuDriverGetVersion(&v), CUDA_SUCCESS);
  SIM_CHECK_EQ(v, 13010);
  CUdevice d;
  SIM_CHECK_EQ(cuDeviceGet(&d, 1), CUDA_SUCCESS);
  SIM_CHECK_EQ(d, 1);
  SIM_CHECK_EQ(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
  char name[64];
  SIM_CHECK_EQ(cuDeviceGetName(name, sizeof name, 1), CUDA_SUCCESS);
  SIM_CHECK(strcmp(name, "Sim A40") == 0);
  SIM_CHECK_EQ(cuDeviceGetName(name, 4, 0), CUDA_SUCCESS);
  SIM_CHECK(strcmp(name, "Sim") == 0);
  SIM_CHECK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(v, 8);
  SIM_CHECK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 1), CUDA_SUCCESS);
  SIM_CHECK_EQ(v, 6);
  SIM_CHECK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(v, 1);
  SIM_CHECK_EQ(cuDeviceGetAttribute(&v, (CUdevice_attribute)0, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuDeviceGetAttribute(&v, (CUdevice_attribute)9999, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 2), CUDA_ERROR_INVALID_DEVICE);
  size_t total = 0;
  SIM_CHECK_EQ(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(total, 8 * GiB);
  SIM_CHECK_EQ(cuDeviceTotalMem(&total, 1), CUDA_SUCCESS);
  SIM_CHECK_EQ(total, 24 * GiB);
  /* device 1 has its own address range, 1 TiB above device 0 */
  CUcontext c;
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&c, 1), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSetCurrent(c), CUDA_SUCCESS);
  SIM_CHECK_EQ(alloc(1), B0 + (1ull << 40));
  size_t f, t;
  SIM_CHECK_EQ(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
  SIM_CHECK_EQ(t, 24 * GiB);
  SIM_CHECK_EQ(f, 24 * GiB - 512 * MiB - 2 * MiB); /* default context size 512 MiB */
}

static void meminfo_context_and_other(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "16G", "SIMCUDA_CONTEXT_BYTES", "512M", "SIMCUDA_OTHER_BYTES", "1G",
              (const char *)NULL);
  init_primary();
  size_t f = 0, t = 0;
  SIM_CHECK_EQ(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
  SIM_CHECK_EQ(t, 16 * GiB);
  SIM_CHECK_EQ(f, 16 * GiB - 512 * MiB - 1 * GiB);
  /* carves sit at the top of the range (other process highest), allocations start at the bottom */
  SIM_CHECK_EQ(simcuda_largest_free(0), 14 * GiB + 512 * MiB);
  CUdeviceptr p = alloc(1);
  SIM_CHECK_EQ(p, B0);
  SIM_CHECK_EQ(free_mem(), 16 * GiB - 512 * MiB - 1 * GiB - 2 * MiB);
  /* a second context takes another 512 MiB while it lives */
  CUcontext c2;
  SIM_CHECK_EQ(cuCtxCreate_v2(&c2, 0, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 16 * GiB - 2 * 512 * MiB - 1 * GiB - 2 * MiB);
  SIM_CHECK_EQ(cuCtxDestroy(c2), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSetCurrent(g_ctx), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 16 * GiB - 512 * MiB - 1 * GiB - 2 * MiB);
  /* legacy 32-bit entry points clamp */
  PFN_cuMemGetInfo_v3020 v2 = NULL;
  CUresult (*v1)(unsigned int *, unsigned int *) = NULL;
  CUresult (*tm1)(unsigned int *, CUdevice) = NULL;
  SIM_CHECK_EQ(cuGetProcAddress("cuMemGetInfo", (void **)&v1, 2000, 0, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuGetProcAddress("cuMemGetInfo", (void **)&v2, 3020, 0, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuGetProcAddress("cuDeviceTotalMem", (void **)&tm1, 2000, 0, NULL), CUDA_SUCCESS);
  unsigned int f32 = 0, t32 = 0;
  SIM_CHECK_EQ(v1(&f32, &t32), CUDA_SUCCESS);
  SIM_CHECK_EQ(f32, 0xffffffffu);
  SIM_CHECK_EQ(t32, 0xffffffffu);
  SIM_CHECK_EQ(tm1(&t32, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(t32, 0xffffffffu);
  SIM_CHECK_EQ(v2(&f, &t), CUDA_SUCCESS);
  SIM_CHECK_EQ(f, 16 * GiB - 512 * MiB - 1 * GiB - 2 * MiB);
}

static void alloc_rounding_and_first_fit(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  init_primary();
  SIM_CHECK_EQ(free_mem(), 1 * GiB);
  CUdeviceptr a = alloc(1);
  SIM_CHECK_EQ(a, B0);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 2 * MiB); /* rounded up to 2 MiB */
  CUdeviceptr b = alloc(2 * MiB + 1);
  SIM_CHECK_EQ(b, B0 + 2 * MiB);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 6 * MiB);
  CUdeviceptr c = alloc(3 * MiB);
  SIM_CHECK_EQ(c, B0 + 6 * MiB);
  CUdeviceptr base = 0;
  size_t size = 0;
  SIM_CHECK_EQ(cuMemGetAddressRange(&base, &size, b + 100), CUDA_SUCCESS);
  SIM_CHECK_EQ(base, b);
  SIM_CHECK_EQ(size, 2 * MiB + 1); /* the requested size */
  SIM_CHECK_EQ(cuMemGetAddressRange(&base, &size, B0 + 900 * MiB), CUDA_ERROR_NOT_FOUND);
  SIM_CHECK_EQ(cuMemFree(b), CUDA_SUCCESS);
  CUdeviceptr d = alloc(1 * MiB); /* first fit: b's hole */
  SIM_CHECK_EQ(d, B0 + 2 * MiB);
  CUdeviceptr e = alloc(4 * MiB); /* the 2 MiB left of b's hole is too small */
  SIM_CHECK_EQ(e, B0 + 10 * MiB);
  CUdeviceptr f = alloc(2 * MiB);
  SIM_CHECK_EQ(f, B0 + 4 * MiB);
  CUdeviceptr pp = 0;
  size_t pitch = 0;
  SIM_CHECK_EQ(cuMemAllocPitch(&pp, &pitch, 1000, 3, 4), CUDA_SUCCESS);
  SIM_CHECK_EQ(pitch, 1024);
  SIM_CHECK_EQ(pp, B0 + 14 * MiB);
  SIM_CHECK_EQ(cuMemAllocPitch(&pp, &pitch, 1000, 3, 3), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAllocPitch(&pp, &pitch, 0, 3, 4), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 16 * MiB);
  CUdeviceptr all[] = {a, c, d, e, f, B0 + 14 * MiB};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) SIM_CHECK_EQ(cuMemFree(all[i]), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB);
  CUdeviceptr big;
  SIM_CHECK_EQ(cuMemAlloc(&big, 1 * GiB + 1), CUDA_ERROR_OUT_OF_MEMORY);
  SIM_CHECK_EQ(alloc(1 * GiB), B0);
}

static void fragmentation(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "4608M", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  init_primary();
  CUdeviceptr a = alloc(1 * GiB), b = alloc(1 * GiB), c = alloc(1 * GiB), d = alloc(1 * GiB);
  SIM_CHECK_EQ(a, B0);
  SIM_CHECK_EQ(b, B0 + 1 * GiB);
  SIM_CHECK_EQ(c, B0 + 2 * GiB);
  SIM_CHECK_EQ(d, B0 + 3 * GiB);
  SIM_CHECK_EQ(free_mem(), 512 * MiB);
  SIM_CHECK_EQ(cuMemFree(a), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(c), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 2 * GiB + 512 * MiB);
  SIM_CHECK_EQ(simcuda_largest_free(0), 1 * GiB);
  CUdeviceptr p = 0;
  SIM_CHECK_EQ(cuMemAlloc(&p, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY); /* free >= 2 GiB, no hole does */
  SIM_CHECK_EQ(p, 0);
  SIM_CHECK_EQ(free_mem(), 2 * GiB + 512 * MiB);
  SIM_CHECK_EQ(alloc(512 * MiB), B0);
  SIM_CHECK_EQ(alloc(1 * GiB), B0 + 2 * GiB);
  SIM_CHECK_EQ(alloc(512 * MiB), B0 + 512 * MiB);
  SIM_CHECK_EQ(alloc(512 * MiB), B0 + 4 * GiB);
  SIM_CHECK_EQ(free_mem(), 0);
}

static void error_codes(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  init_primary();
  CUdeviceptr p = 0;
  size_t t;
  SIM_CHECK_EQ(cuMemAlloc(&p, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAlloc(NULL, 16), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAlloc(&p, 2 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
  SIM_CHECK_EQ(cuMemFree(0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemFree(0x1234), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr a = alloc(4 * MiB);
  SIM_CHECK_EQ(cuMemFree(a + 512), CUDA_ERROR_INVALID_VALUE); /* inside, not the start */
  SIM_CHECK_EQ(cuMemFree(a), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(a), CUDA_ERROR_INVALID_VALUE); /* double free */
  SIM_CHECK_EQ(cuMemGetInfo(NULL, &t), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAllocManaged(&p, 16, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAllocManaged(&p, 16, 3), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAllocManaged(&p, 0, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_INVALID_VALUE);
  int local;
  void *h;
  SIM_CHECK_EQ(cuMemFreeHost(&local), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemHostAlloc(&h, 16, 0x80), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAllocHost(&h, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuStreamDestroy((CUstream)&local), CUDA_ERROR_INVALID_HANDLE);
  SIM_CHECK_EQ(cuStreamSynchronize((CUstream)&local), CUDA_ERROR_INVALID_HANDLE);
  SIM_CHECK_EQ(cuStreamSynchronize(NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamSynchronize(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  CUstream s;
  SIM_CHECK_EQ(cuStreamCreate(&s, 4), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  const char *str = NULL;
  SIM_CHECK_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &str), CUDA_SUCCESS);
  SIM_CHECK(strcmp(str, "CUDA_ERROR_OUT_OF_MEMORY") == 0);
  SIM_CHECK_EQ(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &str), CUDA_SUCCESS);
  SIM_CHECK(strcmp(str, "out of memory") == 0);
  SIM_CHECK_EQ(cuGetErrorName(CUDA_ERROR_NO_BINARY_FOR_GPU, &str), CUDA_SUCCESS);
  SIM_CHECK(strcmp(str, "CUDA_ERROR_NO_BINARY_FOR_GPU") == 0);
  SIM_CHECK_EQ(cuGetErrorName((CUresult)12345, &str), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK(str == NULL);
}

/* Every table entry is dlsym-visible and is what cuGetProcAddress returns at its own version. */
static void proc_address(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", (const char *)NULL);
  unsigned long long before = simcuda_proc_lookups();
  void *pfn = (void *)1;
  CUdriverProcAddressQueryResult st = (CUdriverProcAddressQueryResult)9;
  int lookups = 0;
#define E(base, version, sym, ptds)                                                                   \
  {                                                                                                   \
    void *want = dlsym(RTLD_DEFAULT, #sym);                                                           \
    SIM_CHECK(want != NULL);                                                                          \
    SIM_CHECK_EQ(cuGetProcAddress(#base, &pfn, version,                                               \
                                  ptds ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &st),     \
                 CUDA_SUCCESS);                                                                       \
    if (pfn != want) fprintf(stderr, "entry %s/%d -> wrong variant (want %s)\n", #base, version, #sym); \
    SIM_CHECK(pfn == want);                                                                           \
    SIM_CHECK_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);                                                    \
    lookups++;                                                                                        \
  }
#include "sim_driver_entries.h"
#undef E
  /* base names map to the newest variant <= cudaVersion (cuda.h's #define targets at 13000) */
  struct { const char *base; int version; unsigned long long flags; const char *sym; } m[] = {
      {"cuMemAlloc", 13000, 0, "cuMemAlloc_v2"},       {"cuMemAlloc", 3020, 0, "cuMemAlloc_v2"},
      {"cuMemAlloc", 3010, 0, "cuMemAlloc"},           {"cuMemFree", 12000, 0, "cuMemFree_v2"},
      {"cuMemGetInfo", 13000, 0, "cuMemGetInfo_v2"},   {"cuCtxCreate", 13000, 0, "cuCtxCreate_v4"},
      {"cuCtxCreate", 12000, 0, "cuCtxCreate_v3"},     {"cuCtxCreate", 11000, 0, "cuCtxCreate_v2"},
      {"cuCtxCreate", 3000, 0, "cuCtxCreate"},         {"cuStreamDestroy", 13000, 0, "cuStreamDestroy_v2"},
      {"cuCtxGetDevice", 12080, 0, "cuCtxGetDevice"},  {"cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2"},
      {"cuGetProcAddress", 13000, 0, "cuGetProcAddress_v2"},
      {"cuGetProcAddress", 11080, 0, "cuGetProcAddress"},
      {"cuMemAllocAsync", 13000, 0, "cuMemAllocAsync"},
      {"cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, "cuMemAllocAsync"},
      {"cuMemAllocAsync", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAllocAsync_ptsz"},
      {"cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD_v2_ptds"},
      {"cuMemcpyHtoD", 6050, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemcpyHtoD_v2"},
      {"cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, "cuMemAlloc_v2"},
  };
  for (size_t i = 0; i < sizeof m / sizeof *m; i++, lookups++) {
    SIM_CHECK_EQ(cuGetProcAddress(m[i].base, &pfn, m[i].version, m[i].flags, &st), CUDA_SUCCESS);
    if (pfn != dlsym(RTLD_DEFAULT, m[i].sym)) fprintf(stderr, "%s@%d: not %s\n", m[i].base, m[i].version, m[i].sym);
    SIM_CHECK(pfn == dlsym(RTLD_DEFAULT, m[i].sym));
  }
  /* unknown name, versioned name, too old a version, bad arguments */
  SIM_CHECK_EQ(cuGetProcAddress("cuNoSuchThing", &pfn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  SIM_CHECK(pfn == NULL);
  SIM_CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  SIM_CHECK_EQ(cuGetProcAddress("cuMemAlloc_v2", &pfn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  SIM_CHECK_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  SIM_CHECK_EQ(cuGetProcAddress("cuMemAllocAsync", &pfn, 11010, 0, &st), CUDA_ERROR_NOT_FOUND);
  SIM_CHECK_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  SIM_CHECK(pfn == NULL);
  SIM_CHECK_EQ(cuGetProcAddress("cuMemAlloc", &pfn, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE); /* > driver */
  SIM_CHECK_EQ(cuGetProcAddress("cuMemAlloc", &pfn, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuGetProcAddress(NULL, &pfn, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuGetProcAddress("cuMemAlloc", NULL, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
  lookups += 7;
  /* the legacy 4-argument cuGetProcAddress works too (and counts) */
  PFN_cuGetProcAddress_v11030 gpa1 = NULL;
  SIM_CHECK_EQ(cuGetProcAddress("cuGetProcAddress", (void **)&gpa1, 11030, 0, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(gpa1("cuMemAlloc", &pfn, 13000, 0), CUDA_SUCCESS);
  SIM_CHECK(pfn == dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"));
  lookups += 2;
  SIM_CHECK_EQ(simcuda_proc_lookups() - before, (unsigned long long)lookups);
  /* internals stay hidden */
  SIM_CHECK(dlsym(RTLD_DEFAULT, "sim_range_alloc") == NULL);
  SIM_CHECK(dlsym(RTLD_DEFAULT, "G") == NULL);
  SIM_CHECK(dlsym(RTLD_DEFAULT, "sim_config_once") == NULL);
  /* legacy v1 allocation entry points validate, then refuse (addresses need 64 bits) */
  init_primary();
  CUresult (*alloc_v1)(unsigned int *, unsigned int) = NULL;
  SIM_CHECK_EQ(cuGetProcAddress("cuMemAlloc", (void **)&alloc_v1, 2000, 0, NULL), CUDA_SUCCESS);
  unsigned int p32;
  SIM_CHECK_EQ(alloc_v1(&p32, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(alloc_v1(&p32, 4096), CUDA_ERROR_NOT_SUPPORTED);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 512 * MiB);
}

static cuuint64_t pool_attr(CUmemoryPool pool, CUmemPool_attribute a) {
  cuuint64_t v = 0;
  SIM_CHECK_EQ(cuMemPoolGetAttribute(pool, a, &v), CUDA_SUCCESS);
  return v;
}

static void pools(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  init_primary();
  CUmemoryPool pool, cur;
  SIM_CHECK_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
  SIM_CHECK(pool == cur);
  CUstream s;
  SIM_CHECK_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  cuuint64_t v = 0;
#define ATTR(a) pool_attr(pool, a)
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0);
  CUdeviceptr p1, p2, p3;
  SIM_CHECK_EQ(cuMemAllocAsync(&p1, 1 * MiB, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(p1, B0); /* first 32 MiB chunk at the bottom of the heap */
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * MiB);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1 * MiB);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 32 * MiB);
  SIM_CHECK_EQ(cuMemAllocAsync(&p2, 100, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(p2, B0 + 1 * MiB);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 1 * MiB + 512); /* 512-byte rounding */
  SIM_CHECK_EQ(cuMemAllocAsync(&p3, 40 * MiB, s), CUDA_SUCCESS); /* needs a 40 MiB chunk */
  SIM_CHECK_EQ(p3, B0 + 32 * MiB);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 72 * MiB);
  CUdeviceptr x = alloc(2 * MiB);
  SIM_CHECK_EQ(x, B0 + 72 * MiB);
  SIM_CHECK_EQ(cuMemFreeAsync(p1, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeAsync(p2, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeAsync(p3, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeAsync(p3, s), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 72 * MiB); /* cached until a sync */
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 74 * MiB);
  SIM_CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS); /* threshold 0: release everything unused */
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 2 * MiB);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 72 * MiB);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_USED_MEM_HIGH), 41 * MiB + 512);
  /* release threshold: keep up to 64 MiB cached across syncs */
  v = 64 * MiB;
  SIM_CHECK_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAllocAsync(&p1, 1 * MiB, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAllocAsync(&p3, 40 * MiB, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(p3, B0 + 32 * MiB);
  SIM_CHECK_EQ(cuMemFreeAsync(p1, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeAsync(p3, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS); /* 72 > 64: newest empty chunk (40 MiB) goes */
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * MiB);
  SIM_CHECK_EQ(cuStreamSynchronize(s), CUDA_SUCCESS); /* 32 <= 64: nothing more */
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * MiB);
  SIM_CHECK_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
  /* watermarks reset only to 0 (meaning: to the current value); currents are read-only */
  v = 0;
  SIM_CHECK_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v), CUDA_SUCCESS);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 0);
  v = 5;
  SIM_CHECK_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_VALUE);
  /* cuMemFree accepts a pool pointer (synchronous free back into the pool) */
  SIM_CHECK_EQ(cuMemAllocAsync(&p1, 3 * MiB, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(p1), CUDA_SUCCESS);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 32 * MiB);
  SIM_CHECK_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  /* explicit pool; destroying it with an allocation outstanding defers the release */
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 3;
  CUmemoryPool mine;
  SIM_CHECK_EQ(cuMemPoolCreate(&mine, &props), CUDA_ERROR_INVALID_VALUE);
  props.location.id = 0;
  SIM_CHECK_EQ(cuMemPoolCreate(&mine, &props), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAllocFromPoolAsync(&p1, 5 * MiB, mine, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(p1, B0);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 34 * MiB);
  SIM_CHECK_EQ(cuMemPoolDestroy(mine), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 34 * MiB);
  SIM_CHECK_EQ(cuMemPoolGetAttribute(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &v), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemFreeAsync(p1, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 2 * MiB);
  SIM_CHECK_EQ(cuMemPoolDestroy(pool), CUDA_ERROR_INVALID_VALUE); /* the default pool */
  /* a nearly full device: the 32 MiB chunk does not fit, the rounded request does */
  SIM_CHECK_EQ(cuMemFree(x), CUDA_SUCCESS);
  CUdeviceptr filler = alloc(1 * GiB - 16 * MiB);
  SIM_CHECK_EQ(cuMemAllocAsync(&p1, 1 * MiB, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(ATTR(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * MiB);
  SIM_CHECK_EQ(cuMemAllocAsync(&p2, 20 * MiB, s), CUDA_ERROR_OUT_OF_MEMORY);
  SIM_CHECK_EQ(cuMemAllocAsync(&p2, 14 * MiB, s), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 0);
  SIM_CHECK_EQ(cuMemFree(filler), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAllocAsync(&p2, 0, s), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAllocAsync(&p2, 1, (CUstream)&v), CUDA_ERROR_INVALID_HANDLE);
}

/* The sequence PyTorch's expandable segments use, then the misuse cases. */
static void vmm(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  init_primary();
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  size_t g = 0;
  SIM_CHECK_EQ(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED), CUDA_SUCCESS);
  SIM_CHECK_EQ(g, 2 * MiB);
  SIM_CHECK_EQ(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_SUCCESS);
  SIM_CHECK_EQ(g, 2 * MiB);
  SIM_CHECK_EQ(cuMemGetAllocationGranularity(&g, &prop, (CUmemAllocationGranularity_flags)7),
               CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr va = 0;
  SIM_CHECK_EQ(cuMemAddressReserve(&va, 1 * GiB, 0, 0, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(va, VA0);
  SIM_CHECK_EQ(free_mem(), 1 * GiB); /* VA only */
  CUmemGenericAllocationHandle h[4];
  for (int i = 0; i < 4; i++) SIM_CHECK_EQ(cuMemCreate(&h[i], 2 * MiB, &prop, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 8 * MiB);
  for (int i = 0; i < 4; i++) SIM_CHECK_EQ(cuMemMap(va + i * 2 * MiB, 2 * MiB, 0, h[i], 0), CUDA_SUCCESS);
  CUmemAccessDesc desc;
  memset(&desc, 0, sizeof desc);
  desc.location = prop.location;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  SIM_CHECK_EQ(cuMemSetAccess(va, 8 * MiB, &desc, 1), CUDA_SUCCESS);
  static char buf[2 * 1024 * 1024];
  SIM_CHECK_EQ(cuMemcpyHtoD(va + 3 * MiB, buf, 2 * MiB), CUDA_SUCCESS); /* across two mappings */
  SIM_CHECK_EQ(cuMemcpyHtoD(va + 7 * MiB, buf, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
  CUdeviceptr base;
  size_t size;
  SIM_CHECK_EQ(cuMemGetAddressRange(&base, &size, va + 5 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(base, va);
  SIM_CHECK_EQ(size, 8 * MiB);
  /* misuse */
  CUmemGenericAllocationHandle bad;
  SIM_CHECK_EQ(cuMemCreate(&bad, 1 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemCreate(&bad, 2 * MiB, &prop, 1), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemCreate(&bad, 2 * GiB, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  prop.location.id = 5;
  SIM_CHECK_EQ(cuMemCreate(&bad, 2 * MiB, &prop, 0), CUDA_ERROR_INVALID_DEVICE);
  SIM_CHECK_EQ(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), CUDA_ERROR_INVALID_DEVICE);
  prop.location.id = 0;
  SIM_CHECK_EQ(cuMemMap(va + 8 * MiB, 3 * MiB, 0, h[0], 0), CUDA_ERROR_INVALID_VALUE);       /* size */
  SIM_CHECK_EQ(cuMemMap(va + 9 * MiB, 2 * MiB, 0, h[0], 0), CUDA_ERROR_INVALID_VALUE);       /* address */
  SIM_CHECK_EQ(cuMemMap(va + 8 * MiB, 2 * MiB, 2 * MiB, h[0], 0), CUDA_ERROR_INVALID_VALUE); /* offset */
  SIM_CHECK_EQ(cuMemMap(va + 8 * MiB, 4 * MiB, 0, h[0], 0), CUDA_ERROR_INVALID_VALUE);       /* > handle */
  SIM_CHECK_EQ(cuMemMap(va, 2 * MiB, 0, h[0], 0), CUDA_ERROR_INVALID_VALUE);                 /* mapped */
  SIM_CHECK_EQ(cuMemMap(va - 2 * MiB, 2 * MiB, 0, h[0], 0), CUDA_ERROR_INVALID_VALUE);       /* no VA */
  SIM_CHECK_EQ(cuMemMap(va + 1 * GiB - 2 * MiB, 4 * MiB, 0, h[0], 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemMap(va + 8 * MiB, 2 * MiB, 0, 12345, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemSetAccess(va + 8 * MiB, 2 * MiB, &desc, 1), CUDA_ERROR_INVALID_VALUE); /* unmapped */
  SIM_CHECK_EQ(cuMemSetAccess(va, 3 * MiB, &desc, 1), CUDA_ERROR_INVALID_VALUE);           /* partial */
  desc.flags = (CUmemAccess_flags)2;
  SIM_CHECK_EQ(cuMemSetAccess(va, 2 * MiB, &desc, 1), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemUnmap(va, 1 * MiB), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemUnmap(va + 2 * MiB, 3 * MiB), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemUnmap(va + 6 * MiB, 4 * MiB), CUDA_ERROR_INVALID_VALUE); /* runs past the end */
  SIM_CHECK_EQ(cuMemAddressFree(va, 1 * GiB), CUDA_ERROR_INVALID_VALUE);    /* still mapped */
  /* teardown: unmap (two mappings at once), release; memory returns when both happened */
  SIM_CHECK_EQ(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 8 * MiB);
  SIM_CHECK_EQ(cuMemRelease(h[0]), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemRelease(h[1]), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 4 * MiB);
  SIM_CHECK_EQ(cuMemRelease(h[2]), CUDA_SUCCESS); /* still mapped: memory stays */
  SIM_CHECK_EQ(cuMemRelease(h[2]), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 4 * MiB);
  SIM_CHECK_EQ(cuMemUnmap(va + 4 * MiB, 2 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 2 * MiB);
  SIM_CHECK_EQ(cuMemUnmap(va + 6 * MiB, 2 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemRelease(h[3]), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB);
  SIM_CHECK_EQ(cuMemAddressFree(va, 2 * MiB), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAddressFree(va, 1 * GiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAddressFree(va, 1 * GiB), CUDA_ERROR_INVALID_VALUE);
  /* reservations: size/alignment checks, the address hint */
  SIM_CHECK_EQ(cuMemAddressReserve(&va, 3 * MiB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAddressReserve(&va, 2 * MiB, 3, 0, 0), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemAddressReserve(&va, 2 * MiB, 0, VA0 + 4 * GiB, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(va, VA0 + 4 * GiB);
  CUdeviceptr va2;
  SIM_CHECK_EQ(cuMemAddressReserve(&va2, 2 * MiB, 0, VA0 + 4 * GiB, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(va2, VA0); /* hint taken: first fit instead */
  SIM_CHECK_EQ(cuMemAddressReserve(&va2, 4 * MiB, 1 * GiB, 0, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(va2, VA0 + 1 * GiB);
  /* physical memory is not contiguous: a handle fits in holes that no cuMemAlloc could use */
  CUdeviceptr blocks[16];
  for (int i = 0; i < 16; i++) blocks[i] = alloc(64 * MiB);
  for (int i = 1; i < 16; i += 2) SIM_CHECK_EQ(cuMemFree(blocks[i]), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 512 * MiB);
  CUdeviceptr p;
  SIM_CHECK_EQ(cuMemAlloc(&p, 128 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemGenericAllocationHandle big;
  SIM_CHECK_EQ(cuMemCreate(&big, 512 * MiB, &prop, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 0);
  SIM_CHECK_EQ(cuMemRelease(big), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 512 * MiB);
}

static void managed_and_host(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  init_primary();
  CUdeviceptr m;
  SIM_CHECK_EQ(cuMemAllocManaged(&m, 1, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  SIM_CHECK_EQ(m, B0);
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 2 * MiB); /* managed is charged to the device */
  void *h1, *h2, *h3;
  SIM_CHECK_EQ(cuMemAllocHost(&h1, 1 * GiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemHostAlloc(&h2, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  CUresult (*legacy)(void **, unsigned int) = NULL; /* 32-bit size variant */
  SIM_CHECK_EQ(cuGetProcAddress("cuMemAllocHost", (void **)&legacy, 2000, 0, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(legacy(&h3, 100), CUDA_SUCCESS);
  memset(h2, 0x5a, 4096); /* real host memory */
  SIM_CHECK_EQ(free_mem(), 1 * GiB - 2 * MiB); /* host memory is not */
  SIM_CHECK_EQ(cuMemcpyHtoD(m, h2, 4096), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeHost(h1), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeHost(h2), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeHost(h3), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFreeHost(h2), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemFree(m), CUDA_SUCCESS);
  SIM_CHECK_EQ(free_mem(), 1 * GiB);
}

static void copies(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  init_primary();
  static char h[8 * 1024 * 1024], h2[16];
  CUdeviceptr a = alloc(3 * MiB); /* valid range: the rounded 4 MiB */
  SIM_CHECK_EQ(cuMemcpyHtoD(a, h, 4 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemcpyHtoD(a + 1 * MiB, h, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemcpyHtoD(a, NULL, 16), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemcpyDtoH(h, a, 16), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemcpyDtoD(a, a + 2 * MiB, 1 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemcpyDtoH(h, a + 4 * MiB, 16), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemcpy(a, (CUdeviceptr)(uintptr_t)h, 16), CUDA_SUCCESS);
  memcpy(h, "hello", 6);
  SIM_CHECK_EQ(cuMemcpy((CUdeviceptr)(uintptr_t)h2, (CUdeviceptr)(uintptr_t)h, 6), CUDA_SUCCESS);
  SIM_CHECK(strcmp(h2, "hello") == 0);
  SIM_CHECK_EQ(cuMemsetD8(a, 0, 4 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemsetD32(a, 0, 1 * MiB + 1), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuMemcpyAsync(a, a, 0, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(a), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemcpy(a, (CUdeviceptr)(uintptr_t)h, 16), CUDA_ERROR_INVALID_VALUE); /* freed */
  SIM_CHECK_EQ(cuMemcpyHtoD(a, h, 16), CUDA_ERROR_INVALID_VALUE);
}

/* Builds a 64-byte CUDA ELF header (ABI 8 layout) for sm_<arch>, followed by a string table. */
static size_t make_cubin(unsigned char *e, int arch) {
  memset(e, 0, 96);
  memcpy(e, "\177ELF", 4);
  e[4] = 2, e[5] = 1, e[6] = 1, e[7] = 0x41, e[8] = 8;
  e[0x12] = 190;                                     /* EM_CUDA */
  uint32_t flags = 0x6000004u | (uint32_t)arch << 8; /* like nvcc's 0x6005004 for sm_80 */
  memcpy(e + 0x30, &flags, 4);
  e[0x28] = 96; /* e_shoff: the image is 96 bytes long */
  memcpy(e + 65, "kernel_a", 9);
  return 96;
}
/* A fatbin with an sm_<elf_arch> ELF entry and a compute_<ptx_arch> PTX entry. */
static void make_fatbin(unsigned char *f, int elf_arch, int ptx_arch) {
  memset(f, 0, 16 + 2 * 80);
  uint32_t magic = 0xBA55ED50u;
  uint16_t ver = 1, hs = 16;
  uint64_t total = 2 * 80;
  memcpy(f, &magic, 4), memcpy(f + 4, &ver, 2), memcpy(f + 6, &hs, 2), memcpy(f + 8, &total, 8);
  for (int i = 0; i < 2; i++) {
    unsigned char *e = f + 16 + 80 * i;
    uint16_t kind = i == 0 ? 2 : 1, ev = 0x101;
    uint32_t ehs = 64, arch = (uint32_t)(i == 0 ? elf_arch : ptx_arch);
    uint64_t pad = 16;
    memcpy(e, &kind, 2), memcpy(e + 2, &ev, 2), memcpy(e + 4, &ehs, 4), memcpy(e + 8, &pad, 8);
    memcpy(e + 0x1c, &arch, 4);
  }
}

static void modules(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_CC", "8.6", (const char *)NULL);
  CUmodule m;
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN"), CUDA_ERROR_NOT_INITIALIZED);
  init_primary();
  SIM_CHECK_EQ(cuModuleLoadData(&m, NULL), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuModuleLoadData(&m, "garbage"), CUDA_ERROR_INVALID_IMAGE);
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN sm_90 compute_89"), CUDA_ERROR_NO_BINARY_FOR_GPU);
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN sm_89"), CUDA_ERROR_NO_BINARY_FOR_GPU); /* 8.9 > 8.6 */
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN sm_80 error=218"), CUDA_ERROR_INVALID_PTX);
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN error=222"), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  SIM_CHECK_EQ(cuModuleLoadDataEx(&m, "SIMCUBIN error=209", 0, NULL, NULL), CUDA_ERROR_NO_BINARY_FOR_GPU);
  SIM_CHECK_EQ(cuModuleLoadData(&m, ".version 8.8\n.target sm_90\n"), CUDA_ERROR_INVALID_PTX);
  SIM_CHECK_EQ(cuModuleLoadData(&m, ".version 9.9\n.target sm_80\n"), CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
  SIM_CHECK_EQ(cuModuleLoadData(&m, ".version 8.8\n.target sm_80\n.entry kern()"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  unsigned char img[256];
  make_cubin(img, 90);
  SIM_CHECK_EQ(cuModuleLoadData(&m, img), CUDA_ERROR_NO_BINARY_FOR_GPU);
  make_cubin(img, 80); /* sm_80 SASS runs on 8.6 */
  SIM_CHECK_EQ(cuModuleLoadData(&m, img), CUDA_SUCCESS);
  CUfunction fn, fn2;
  SIM_CHECK_EQ(cuModuleGetFunction(&fn, m, "kernel_a"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&fn2, m, "kernel_a"), CUDA_SUCCESS);
  SIM_CHECK(fn == fn2);
  SIM_CHECK_EQ(cuModuleGetFunction(&fn2, m, "kernel"), CUDA_ERROR_NOT_FOUND);
  SIM_CHECK_EQ(cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLaunchKernel(fn, 1, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuLaunchKernel(fn, 0, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
  SIM_CHECK_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleUnload(m), CUDA_ERROR_INVALID_HANDLE);
  SIM_CHECK_EQ(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_HANDLE);
  SIM_CHECK_EQ(cuModuleGetFunction(&fn, m, "kernel_a"), CUDA_ERROR_INVALID_HANDLE);
  make_fatbin(img, 90, 90);
  SIM_CHECK_EQ(cuModuleLoadData(&m, img), CUDA_ERROR_NO_BINARY_FOR_GPU);
  make_fatbin(img, 90, 75); /* PTX for compute_75 JITs on 8.6 */
  SIM_CHECK_EQ(cuModuleLoadData(&m, img), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleUnload(m), CUDA_SUCCESS);
  /* fn= lists the functions; launch_error= makes launches fail */
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN sm_86 fn=add fn=mul launch_error=719"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&fn, m, "mul"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&fn2, m, "mu"), CUDA_ERROR_NOT_FOUND);
  SIM_CHECK_EQ(cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_LAUNCH_FAILED);
  /* file loading */
  SIM_CHECK_EQ(cuModuleLoad(&m, "/nonexistent/k.cubin"), CUDA_ERROR_FILE_NOT_FOUND);
  char path[] = "/tmp/simcuda_moduleXXXXXX";
  int fd = mkstemp(path);
  SIM_CHECK(fd >= 0);
  SIM_CHECK(write(fd, "SIMCUBIN sm_80\n", 15) == 15);
  close(fd);
  SIM_CHECK_EQ(cuModuleLoad(&m, path), CUDA_SUCCESS);
  unlink(path);
  /* libraries: context-independent, checked against the current device, lazily: the load of an
   * image without code for the device succeeds and its kernel lookups fail (as on a real GPU) */
  CUlibrary lib;
  CUkernel kern;
  CUfunction kf;
  SIM_CHECK_EQ(cuLibraryLoadData(&lib, "SIMCUBIN sm_90", NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLibraryGetKernel(&kern, lib, "anything"), CUDA_ERROR_NO_BINARY_FOR_GPU);
  SIM_CHECK_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLibraryLoadData(&lib, "not an image", NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
  SIM_CHECK_EQ(cuLibraryLoadData(&lib, "SIMCUBIN compute_80", NULL, NULL, 0, NULL, NULL, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLibraryGetKernel(&kern, lib, "k"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuKernelGetFunction(&kf, kern), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLaunchKernel(kf, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuKernelGetFunction(&kf, (CUkernel)&kf), CUDA_ERROR_INVALID_HANDLE);
  SIM_CHECK_EQ(cuModuleUnload((CUmodule)lib), CUDA_ERROR_INVALID_HANDLE);
  SIM_CHECK_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLibraryUnload(lib), CUDA_ERROR_INVALID_HANDLE);
}

/* SIMCUDA_FAULT_KERNEL: the faulting kernel's launch succeeds; a synchronisation of another
 * stream does not see the pending fault, one of its own stream does (700), and from then on every
 * call in the context fails with it, except the queries the real driver still answers. A reset
 * primary context is healthy again. */
static void device_faults(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_FAULT_KERNEL", "bad", (const char *)NULL);
  init_primary();
  CUmodule m;
  CUfunction ok, bad;
  CUstream s1, s2;
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN sm_80 fn=ok fn=bad"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&ok, m, "ok"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&bad, m, "bad"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamCreate(&s1, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamCreate(&s2, 0), CUDA_SUCCESS);
  CUdeviceptr p = alloc(1 * MiB);
  SIM_CHECK_EQ(cuLaunchKernel(ok, 1, 1, 1, 32, 1, 1, 0, s1, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLaunchKernel(bad, 1, 1, 1, 32, 1, 1, 0, s1, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLaunchKernel(ok, 1, 1, 1, 32, 1, 1, 0, s2, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamSynchronize(s2), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemcpyAsync(p, p, 16, s1), CUDA_SUCCESS); /* asynchronous: not a synchronisation */
  SIM_CHECK_EQ(cuStreamQuery(s1), CUDA_ERROR_ILLEGAL_ADDRESS);
  SIM_CHECK_EQ(cuStreamSynchronize(s2), CUDA_ERROR_ILLEGAL_ADDRESS);
  SIM_CHECK_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdeviceptr q = 0;
  SIM_CHECK_EQ(cuMemAlloc(&q, 1 * MiB), CUDA_ERROR_ILLEGAL_ADDRESS);
  SIM_CHECK_EQ(cuLaunchKernel(ok, 1, 1, 1, 32, 1, 1, 0, s2, NULL, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
  const char *name = NULL;
  SIM_CHECK_EQ(cuFuncGetName(&name, ok), CUDA_ERROR_ILLEGAL_ADDRESS);
  CUdevice dev = -1;
  SIM_CHECK_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  SIM_CHECK_EQ(dev, 0);
  /* a synchronous copy makes a pending fault sticky whatever its stream (code 710 here) */
  SIM_CHECK_EQ(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuDevicePrimaryCtxRetain(&g_ctx, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSetCurrent(g_ctx), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN sm_80 fn=bad"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&bad, m, "bad"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamCreate(&s1, 0), CUDA_SUCCESS);
  p = alloc(1 * MiB);
  char host[16];
  SIM_CHECK_EQ(cuLaunchKernel(bad, 1, 1, 1, 32, 1, 1, 0, s1, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemcpyDtoH(host, p, sizeof host), CUDA_ERROR_ILLEGAL_ADDRESS);
}

/* The fault code after the colon: a device-side assert (710). */
static void device_fault_assert(void) {
  simcuda_env("SIMCUDA_FAULT_KERNEL", "_Z5indexPl:710", (const char *)NULL);
  init_primary();
  CUmodule m;
  CUfunction f;
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN sm_80"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&f, m, "_Z5indexPl"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamSynchronize(NULL), CUDA_ERROR_ASSERT);
  SIM_CHECK_EQ(cuStreamQuery(NULL), CUDA_ERROR_ASSERT);
}

/* SIMCUDA_HANG_KERNEL: the hanging kernel's launch succeeds and never completes. A
 * synchronisation of its stream, of the context, and a synchronous copy each block for good, asleep
 * (state S, not spinning) and without the driver's lock: meanwhile other calls, another stream's
 * synchronisation and a query (600) answer. A signal handler runs in a blocked thread and the wait
 * goes on. The scenario returns with the three threads still blocked (exit ends them). */
static CUstream g_hung_stream;
static CUdeviceptr g_hung_ptr;
static int g_blocked_tid[3];
static int g_returned[3];
static volatile sig_atomic_t g_handled;
static void on_usr1(int sig) { (void)sig; g_handled = 1; }
static void *hung_sync(void *arg) {
  const int which = (int)(intptr_t)arg;
  char host[16];
  SIM_CHECK_EQ(cuCtxSetCurrent(g_ctx), CUDA_SUCCESS);
  __atomic_store_n(&g_blocked_tid[which], (int)gettid(), __ATOMIC_RELEASE);
  if (which == 0) cuStreamSynchronize(g_hung_stream);
  if (which == 1) cuCtxSynchronize();
  if (which == 2) cuMemcpyDtoH(host, g_hung_ptr, sizeof host);
  __atomic_store_n(&g_returned[which], 1, __ATOMIC_RELEASE);
  return NULL;
}
/* The state letter of thread tid of this process ('R', 'S', ...; 0 when unreadable). */
static char thread_state(int tid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *paren = strrchr(buf, ')'); /* "tid (comm) S ..." */
  return paren && paren[1] == ' ' ? paren[2] : 0;
}
static void hanging_kernel(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "1G", "SIMCUDA_HANG_KERNEL", "stuck", (const char *)NULL);
  init_primary();
  CUmodule m;
  CUfunction ok, stuck;
  CUstream s2;
  SIM_CHECK_EQ(cuModuleLoadData(&m, "SIMCUBIN sm_80 fn=ok fn=stuck"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&ok, m, "ok"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuModuleGetFunction(&stuck, m, "stuck"), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamCreate(&g_hung_stream, 0), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamCreate(&s2, 0), CUDA_SUCCESS);
  g_hung_ptr = alloc(1 * MiB);
  SIM_CHECK_EQ(cuLaunchKernel(ok, 1, 1, 1, 32, 1, 1, 0, g_hung_stream, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamSynchronize(g_hung_stream), CUDA_SUCCESS); /* no hang yet */
  SIM_CHECK_EQ(cuLaunchKernel(stuck, 1, 1, 1, 32, 1, 1, 0, g_hung_stream, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuLaunchKernel(ok, 1, 1, 1, 32, 1, 1, 0, g_hung_stream, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamQuery(g_hung_stream), CUDA_ERROR_NOT_READY);
  SIM_CHECK_EQ(cuLaunchKernel(ok, 1, 1, 1, 32, 1, 1, 0, s2, NULL, NULL), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamSynchronize(s2), CUDA_SUCCESS); /* another stream drains */
  SIM_CHECK_EQ(cuStreamQuery(s2), CUDA_SUCCESS);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_usr1;
  SIM_CHECK(sigaction(SIGUSR1, &sa, NULL) == 0);
  pthread_t th[3];
  for (int i = 0; i < 3; i++) SIM_CHECK(pthread_create(&th[i], NULL, hung_sync, (void *)(intptr_t)i) == 0);
  /* Each thread gets into its wait and sleeps there (20 s at most for a loaded machine). */
  for (int i = 0; i < 3; i++) {
    int waited_ms = 0;
    while (!__atomic_load_n(&g_blocked_tid[i], __ATOMIC_ACQUIRE) ||
           thread_state(g_blocked_tid[i]) != 'S') {
      SIM_CHECK(waited_ms++ < 20000);
      usleep(1000);
    }
  }
  usleep(200 * 1000);
  for (int i = 0; i < 3; i++) {
    SIM_CHECK_EQ(__atomic_load_n(&g_returned[i], __ATOMIC_ACQUIRE), 0);
    SIM_CHECK_EQ(thread_state(g_blocked_tid[i]), 'S');
  }
  /* The lock is free: other calls answer while they wait. */
  CUdeviceptr q = alloc(1 * MiB);
  SIM_CHECK_EQ(cuMemFree(q), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamSynchronize(s2), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuStreamQuery(g_hung_stream), CUDA_ERROR_NOT_READY);
  /* A handled signal interrupts the sleep, and the wait goes on. */
  SIM_CHECK(pthread_kill(th[1], SIGUSR1) == 0);
  for (int waited_ms = 0; !g_handled; waited_ms++) {
    SIM_CHECK(waited_ms < 20000);
    usleep(1000);
  }
  usleep(200 * 1000);
  for (int i = 0; i < 3; i++) SIM_CHECK_EQ(__atomic_load_n(&g_returned[i], __ATOMIC_ACQUIRE), 0);
}

/* Many threads allocating and freeing at once (plain and stream-ordered). */
static void *worker(void *arg) {
  int t = (int)(intptr_t)arg;
  SIM_CHECK_EQ(cuCtxSetCurrent(g_ctx), CUDA_SUCCESS);
  CUdeviceptr live[4] = {0};
  for (int i = 0; i < 3000; i++) {
    int k = i % 4;
    if (live[k]) SIM_CHECK_EQ((i & 1) ? cuMemFree(live[k]) : cuMemFreeAsync(live[k], NULL), CUDA_SUCCESS);
    size_t n = (size_t)((i * 7919 + t * 104729) % 8 + 1) * MiB + (size_t)(i % 3);
    CUresult r = (i & 2) ? cuMemAlloc(&live[k], n) : cuMemAllocAsync(&live[k], n, NULL);
    SIM_CHECK_EQ(r, CUDA_SUCCESS);
    SIM_CHECK(live[k] >= B0 && live[k] < B0 + 4 * GiB);
  }
  for (int k = 0; k < 4; k++) SIM_CHECK_EQ(cuMemFree(live[k]), CUDA_SUCCESS);
  return NULL;
}

static void threads(void) {
  simcuda_env("SIMCUDA_MEM_BYTES", "4G", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
  init_primary();
  pthread_t th[8];
  for (int t = 0; t < 8; t++) SIM_CHECK(pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) == 0);
  for (int t = 0; t < 8; t++) pthread_join(th[t], NULL);
  SIM_CHECK_EQ(cuCtxSynchronize(), CUDA_SUCCESS); /* pool releases its chunks */
  SIM_CHECK_EQ(free_mem(), 4 * GiB);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"init_and_context_errors", init_and_context_errors},
      {"no_device", no_device},
      {"forced_init_error", forced_init_error},
      {"device_info", device_info},
      {"meminfo_context_and_other", meminfo_context_and_other},
      {"alloc_rounding_and_first_fit", alloc_rounding_and_first_fit},
      {"fragmentation", fragmentation},
      {"error_codes", error_codes},
      {"proc_address", proc_address},
      {"pools", pools},
      {"vmm", vmm},
      {"managed_and_host", managed_and_host},
      {"copies", copies},
      {"modules", modules},
      {"threads", threads},
      {"device_faults", device_faults},
      {"device_fault_assert", device_fault_assert},
      {"hanging_kernel", hanging_kernel},
  };
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
