/* An XLA/TensorFlow/NCCL-style CUDA client: it links no CUDA library. It dlopen()s
 * libcuda.so.1 RTLD_LOCAL, takes cuGetProcAddress_v2 with dlsym and every other entry
 * point through it (by base name + ABI version), and some with plain dlsym, as
 * TensorFlow's stream executor does. It prints where each pointer it got lives, so the
 * test can tell a shim wrapper from the driver's own function.
 *
 * `gpu_xla_client SCENARIO`:
 *   allocate   cuMemAlloc x3 (64 MiB each) via cuGetProcAddress_v2, one via dlsym'd
 *              cuMemAlloc_v2 (32 MiB); frees two of them; a memory query; an OOM (2 x
 *              the device) that must be recorded with free/total.
 *   lookups    prints the owner of each looked-up pointer (see below); allocates nothing. */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "simcuda_test.h"

#define MiB (1024ull * 1024ull)

static void *g_cuda;
static PFN_cuGetProcAddress_v12000 g_gpa;

/* Short name of the object holding p ("libcuda.so.1", "libcolabtrace.so", ...). */
static const char *owner(const void *p) {
  Dl_info info;
  if (!p || !dladdr(p, &info) || !info.dli_fname) return "none";
  const char *s = strrchr(info.dli_fname, '/');
  return s ? s + 1 : info.dli_fname;
}

static void *proc(const char *name, int version, cuuint64_t flags) {
  void *p = NULL;
  CUdriverProcAddressQueryResult st;
  CUresult r = g_gpa(name, &p, version, flags, &st);
  return r == CUDA_SUCCESS ? p : NULL;
}

static void open_driver(void) {
  g_cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  SIM_CHECK(g_cuda != NULL);
  g_gpa = (PFN_cuGetProcAddress_v12000)dlsym(g_cuda, "cuGetProcAddress_v2");
  SIM_CHECK(g_gpa != NULL);
}

static void context(void) {
  PFN_cuInit_v2000 init = proc("cuInit", 2000, 0);
  PFN_cuDeviceGet_v2000 get = proc("cuDeviceGet", 2000, 0);
  PFN_cuDevicePrimaryCtxRetain_v7000 retain = proc("cuDevicePrimaryCtxRetain", 7000, 0);
  PFN_cuCtxSetCurrent_v4000 set = proc("cuCtxSetCurrent", 4000, 0);
  SIM_CHECK(init && get && retain && set);
  SIM_CHECK_EQ(init(0), CUDA_SUCCESS);
  CUdevice dev;
  SIM_CHECK_EQ(get(&dev, 0), CUDA_SUCCESS);
  CUcontext ctx;
  SIM_CHECK_EQ(retain(&ctx, dev), CUDA_SUCCESS);
  SIM_CHECK_EQ(set(ctx), CUDA_SUCCESS);
}

static void allocate(void) {
  open_driver();
  context();
  PFN_cuMemAlloc_v3020 alloc = proc("cuMemAlloc", 3020, 0);
  PFN_cuMemFree_v3020 mfree = proc("cuMemFree", 3020, 0);
  PFN_cuMemGetInfo_v3020 info = proc("cuMemGetInfo", 3020, 0);
  PFN_cuMemAlloc_v3020 alloc_dlsym = (PFN_cuMemAlloc_v3020)dlsym(g_cuda, "cuMemAlloc_v2");
  SIM_CHECK(alloc && mfree && info && alloc_dlsym);
  CUdeviceptr d[4];
  for (int i = 0; i < 3; i++) SIM_CHECK_EQ(alloc(&d[i], 64 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(alloc_dlsym(&d[3], 32 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(mfree(d[0]), CUDA_SUCCESS);
  SIM_CHECK_EQ(mfree(d[3]), CUDA_SUCCESS);
  size_t f = 0, t = 0;
  SIM_CHECK_EQ(info(&f, &t), CUDA_SUCCESS);
  CUdeviceptr big = 0;
  SIM_CHECK_EQ(alloc(&big, 2 * t), CUDA_ERROR_OUT_OF_MEMORY);
  printf("alloc=%s free=%s info=%s alloc_dlsym=%s\n", owner((void *)alloc), owner((void *)mfree),
         owner((void *)info), owner((void *)alloc_dlsym));
}

static void lookups(void) {
  open_driver();
  void *p = NULL;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  /* traced entry points come back wrapped */
  printf("cuMemAlloc@3020=%s\n", owner(proc("cuMemAlloc", 3020, 0)));
  printf("cuMemAllocAsync@11020/ptds=%s\n",
         owner(proc("cuMemAllocAsync", 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)));
  printf("cuMemCreate@10020=%s\n", owner(proc("cuMemCreate", 10020, 0)));
  printf("cuGetProcAddress@12000=%s\n", owner(proc("cuGetProcAddress", 12000, 0)));
  /* the legacy 32-bit variant and untraced entry points are the driver's own */
  printf("cuMemAlloc@2000=%s\n", owner(proc("cuMemAlloc", 2000, 0)));
  printf("cuGetExportTable@3000=%s\n", owner(proc("cuGetExportTable", 3000, 0)));
  printf("cuCtxSetCurrent@4000=%s\n", owner(proc("cuCtxSetCurrent", 4000, 0)));
  printf("dlsym:cuGetExportTable=%s\n", owner(dlsym(g_cuda, "cuGetExportTable")));
  printf("dlsym:cuMemFree_v2=%s\n", owner(dlsym(g_cuda, "cuMemFree_v2")));
  printf("dlsym:cuMemFree=%s\n", owner(dlsym(g_cuda, "cuMemFree")));
  /* a name from another library: no recursion, just NULL */
  printf("dlsym:cudnnCreate=%s\n", owner(dlsym(g_cuda, "cudnnCreate")));
  /* the same request twice gives the same pointer */
  printf("stable=%d\n", proc("cuMemFree", 3020, 0) == proc("cuMemFree", 3020, 0));
  /* a wrapped cuGetProcAddress hands out wrappers too */
  PFN_cuGetProcAddress_v12000 gpa2 = proc("cuGetProcAddress", 12000, 0);
  SIM_CHECK(gpa2 != NULL);
  SIM_CHECK_EQ(gpa2("cuMemFree", &p, 3020, 0, &st), CUDA_SUCCESS);
  printf("via-wrapped-gpa:cuMemFree=%s\n", owner(p));
  /* NULL arguments and unknown names get the driver's own answers */
  p = (void *)0x1;
  printf("null-symbol=%d\n", (int)g_gpa(NULL, &p, 12000, 0, &st));
  printf("null-pfn=%d\n", (int)g_gpa("cuMemAlloc", NULL, 12000, 0, &st));
  printf("unknown=%d status=%d\n", (int)g_gpa("cuNoSuchThing", &p, 12000, 0, &st), (int)st);
  printf("too-new=%d\n", (int)g_gpa("cuMemAlloc", &p, 99000, 0, NULL));
}

/* A process that never loaded CUDA looks for it the way frameworks probe: the shim's own
 * exported hooks must not make CUDA appear present. */
static void probe_default(void) {
  printf("cudaMalloc=%s cuMemAlloc_v2=%s cuGetProcAddress_v2=%s\n",
         dlsym(RTLD_DEFAULT, "cudaMalloc") ? "found" : "null",
         dlsym(RTLD_DEFAULT, "cuMemAlloc_v2") ? "found" : "null",
         dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2") ? "found" : "null");
  printf("libcuda_loaded=%d libcudart_loaded=%d\n",
         dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD) != NULL,
         dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD) != NULL);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"allocate", allocate}, {"lookups", lookups}, {"probe_default", probe_default}};
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
