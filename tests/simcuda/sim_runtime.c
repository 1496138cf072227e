/* Simulated CUDA runtime (libcudart.so.13) over whatever libcuda.so.1 the loader finds.
 *
 * Like the real libcudart.so.13 it never links libcuda: it dlopen()s "libcuda.so.1", dlsym()s only
 * "cuGetProcAddress_v2" and resolves every other driver entry point with
 * cuGetProcAddress_v2(base name, &pfn, version, CU_GET_PROC_ADDRESS_DEFAULT, &status), where version
 * is the one that introduced the variant it calls (cuMemAlloc at 3020 -> cuMemAlloc_v2), exactly as
 * the real runtime does (see real_cudart13_requests.txt).
 *
 * Behaviour mirrored from the real libcudart.so.13 (measured on this toolkit):
 *  - no loadable driver (or no cuGetProcAddress_v2, or driver version < 13000): every call that
 *    needs the driver returns cudaErrorInsufficientDriver (35), cudaGetLastError/PeekAtLastError
 *    included, without touching out-parameters; cudaDriverGetVersion succeeds with 0 and
 *    cudaRuntimeGetVersion with 13000;
 *  - initialization happens before argument checks (cudaMalloc(NULL, n) returns the init error);
 *  - cuInit's CUresult is returned as the cudaError_t of the same number (100 -> cudaErrorNoDevice,
 *    34 -> cudaErrorStubLibrary, ...) by every later call; the same identity mapping is used for
 *    every driver result;
 *  - a driver older than 13000 gives cudaErrorInsufficientDriver and cuInit is never called.
 * Differences: the real runtime looks up ~440 variants (per-thread ones too, with flags 2) and needs
 * private export tables (cuGetExportTable); this one looks up only the 47 it uses, flags 0.
 * The runtime uses the context current on the thread if there is one, else it retains the
 * primary context of the thread's device (cudaSetDevice, default 0) and makes it current.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "cuda_errors.h" /* analyzer/gpu/: the generated table of every CUDA error */

#define SIM_RT_VERSION 13000
#define SIM_RT_MAX_DEVICES 16

/* Driver entry points used by the runtime: X(base name, CUDA version of the variant it calls).
 * Like the real libcudart.so.13 it asks for each variant at the version that introduced it (the
 * suffix of the PFN_<name>_v<version> typedef, which the macro also uses for the pointer type). */
#define SIM_RT_DRIVER_FUNCS(X) \
  X(cuInit, 2000) \
  X(cuDriverGetVersion, 2020) \
  X(cuDeviceGetCount, 2000) \
  X(cuDeviceGetName, 2000) \
  X(cuDeviceGetAttribute, 2000) \
  X(cuDeviceTotalMem, 3020) \
  X(cuDevicePrimaryCtxRetain, 7000) \
  X(cuDevicePrimaryCtxReset, 11000) \
  X(cuCtxGetCurrent, 4000) \
  X(cuCtxSetCurrent, 4000) \
  X(cuCtxGetDevice, 13000) \
  X(cuCtxSynchronize, 13000) \
  X(cuMemAlloc, 3020) \
  X(cuMemFree, 3020) \
  X(cuMemAllocManaged, 6000) \
  X(cuMemAllocPitch, 3020) \
  X(cuMemAllocHost, 3020) \
  X(cuMemHostAlloc, 2020) \
  X(cuMemFreeHost, 2000) \
  X(cuMemGetInfo, 3020) \
  X(cuMemAllocAsync, 11020) \
  X(cuMemFreeAsync, 11020) \
  X(cuMemAllocFromPoolAsync, 11020) \
  X(cuMemPoolCreate, 11020) \
  X(cuMemPoolDestroy, 11020) \
  X(cuMemPoolTrimTo, 11020) \
  X(cuMemPoolSetAttribute, 11020) \
  X(cuMemPoolGetAttribute, 11020) \
  X(cuDeviceGetDefaultMemPool, 11020) \
  X(cuDeviceGetMemPool, 11020) \
  X(cuDeviceSetMemPool, 11020) \
  X(cuStreamCreate, 2000) \
  X(cuStreamDestroy, 4000) \
  X(cuStreamSynchronize, 2000) \
  X(cuStreamQuery, 2000) \
  X(cuMemcpy, 4000) \
  X(cuMemcpyAsync, 4000) \
  X(cuMemcpyHtoD, 3020) \
  X(cuMemcpyDtoH, 3020) \
  X(cuMemcpyDtoD, 3020) \
  X(cuMemsetD8, 3020) \
  X(cuLibraryLoadData, 12000) \
  X(cuLibraryGetKernel, 12000) \
  X(cuKernelGetFunction, 12000) \
  X(cuLaunchKernel, 4000) \
  X(cuLaunchKernelEx, 11060) \
  X(cuLaunchCooperativeKernel, 9000)

static struct {
#define X(name, version) PFN_##name##_v##version p_##name;
  SIM_RT_DRIVER_FUNCS(X)
#undef X
} D;

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static cudaError_t g_init_err; /* sticky result of initialization */
static int g_driver_version, g_ndev;
static void *g_lib; /* libcuda.so.1 handle (kept open, as the real runtime does) */
static PFN_cuGetProcAddress_v12000 g_gpa;
static struct { CUcontext ctx; int retained; } g_primary[SIM_RT_MAX_DEVICES];
static _Thread_local int t_dev;
static _Thread_local cudaError_t t_last;

static cudaError_t from_cu(CUresult r) { return (cudaError_t)r; } /* the enums share numbers */

static void load_driver(void) {
  g_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  g_gpa = g_lib ? (PFN_cuGetProcAddress_v12000)dlsym(g_lib, "cuGetProcAddress_v2") : NULL;
  if (!g_gpa) {
    g_init_err = cudaErrorInsufficientDriver;
    return;
  }
  CUdriverProcAddressQueryResult st;
#define X(name, version) \
  if (g_gpa(#name, (void **)&D.p_##name, version, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS) \
    D.p_##name = NULL;
  SIM_RT_DRIVER_FUNCS(X)
#undef X
  if (!D.p_cuDriverGetVersion || !D.p_cuInit || D.p_cuDriverGetVersion(&g_driver_version) != CUDA_SUCCESS ||
      g_driver_version < SIM_RT_VERSION) {
    g_init_err = cudaErrorInsufficientDriver;
    return;
  }
  CUresult r = D.p_cuInit(0);
  if (r == CUDA_SUCCESS && D.p_cuDeviceGetCount) r = D.p_cuDeviceGetCount(&g_ndev);
  g_init_err = from_cu(r);
}

static cudaError_t rt_init(void) {
  pthread_once(&g_once, load_driver);
  return g_init_err;
}

/* Records failures for cudaGetLastError; cudaErrorNotReady (a query of work still running) is
 * an answer, not a failure, and the real runtime does not keep it either. */
static cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) t_last = e;
  return e;
}

/* Calls driver entry point `name`; a driver without it yields cudaErrorCallRequiresNewerDriver. */
#define DRV(name, ...) (D.p_##name ? from_cu(D.p_##name(__VA_ARGS__)) : cudaErrorCallRequiresNewerDriver)

/* Makes sure a context is current: the thread's own, else the primary context of t_dev. */
static cudaError_t rt_ctx(void) {
  cudaError_t e = rt_init();
  if (e != cudaSuccess) return e;
  CUcontext cur = NULL;
  if ((e = DRV(cuCtxGetCurrent, &cur)) != cudaSuccess) return e;
  if (cur) return cudaSuccess;
  pthread_mutex_lock(&g_mu);
  if (!g_primary[t_dev].retained) {
    e = DRV(cuDevicePrimaryCtxRetain, &g_primary[t_dev].ctx, t_dev);
    g_primary[t_dev].retained = e == cudaSuccess;
  }
  cur = g_primary[t_dev].ctx;
  pthread_mutex_unlock(&g_mu);
  return e != cudaSuccess ? e : DRV(cuCtxSetCurrent, cur);
}

#define RT_CTX()                        \
  do {                                  \
    cudaError_t e_ = rt_ctx();          \
    if (e_ != cudaSuccess) return ret(e_); \
  } while (0)
#define RT_INIT()                       \
  do {                                  \
    cudaError_t e_ = rt_init();         \
    if (e_ != cudaSuccess) return ret(e_); \
  } while (0)

/* ---- versions, errors, devices ------------------------------------------------------------ */
cudaError_t cudaRuntimeGetVersion(int *v) {
  if (!v) return ret(cudaErrorInvalidValue);
  *v = SIM_RT_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v) {
  if (!v) return ret(cudaErrorInvalidValue);
  rt_init();
  *v = g_gpa && D.p_cuDriverGetVersion ? g_driver_version : 0;
  return cudaSuccess;
}

#define SIM_STR_CASE(code, name, desc) case code: return which ? desc : name;
static const char *rt_error_text(cudaError_t e, int which) {
  switch ((int)e) { CT_CUDART_ERRORS(SIM_STR_CASE) }
  return "unrecognized error code";
}
const char *cudaGetErrorString(cudaError_t e) { return rt_error_text(e, 1); }
const char *cudaGetErrorName(cudaError_t e) { return rt_error_text(e, 0); }

cudaError_t cudaGetLastError(void) {
  cudaError_t e = rt_init();
  if (e != cudaSuccess) return e;
  e = t_last;
  t_last = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError(void) {
  cudaError_t e = rt_init();
  return e != cudaSuccess ? e : t_last;
}

cudaError_t cudaGetDeviceCount(int *count) {
  RT_INIT(); /* the real runtime leaves *count untouched on failure, cudaErrorNoDevice included */
  if (!count) return ret(cudaErrorInvalidValue);
  *count = g_ndev;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) {
  RT_INIT();
  if (dev < 0 || dev >= g_ndev || dev >= SIM_RT_MAX_DEVICES) return ret(cudaErrorInvalidDevice);
  t_dev = dev;
  pthread_mutex_lock(&g_mu);
  cudaError_t e = cudaSuccess;
  if (!g_primary[dev].retained) {
    e = DRV(cuDevicePrimaryCtxRetain, &g_primary[dev].ctx, dev);
    g_primary[dev].retained = e == cudaSuccess;
  }
  CUcontext c = g_primary[dev].ctx;
  pthread_mutex_unlock(&g_mu);
  return ret(e != cudaSuccess ? e : DRV(cuCtxSetCurrent, c));
}

cudaError_t cudaGetDevice(int *dev) {
  RT_INIT();
  if (!dev) return ret(cudaErrorInvalidValue);
  CUcontext cur = NULL;
  CUdevice d;
  if (DRV(cuCtxGetCurrent, &cur) == cudaSuccess && cur && DRV(cuCtxGetDevice, &d, cur) == cudaSuccess) {
    *dev = d;
    return cudaSuccess;
  }
  *dev = t_dev;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev) {
  RT_INIT();
  if (!value) return ret(cudaErrorInvalidValue);
  if (dev < 0 || dev >= g_ndev) return ret(cudaErrorInvalidDevice);
  return ret(DRV(cuDeviceGetAttribute, value, (CUdevice_attribute)attr, dev));
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev) {
  RT_INIT();
  if (!p) return ret(cudaErrorInvalidValue);
  if (dev < 0 || dev >= g_ndev) return ret(cudaErrorInvalidDevice);
  memset(p, 0, sizeof *p);
  cudaError_t e = DRV(cuDeviceGetName, p->name, (int)sizeof p->name, dev);
  if (e == cudaSuccess) e = DRV(cuDeviceTotalMem, &p->totalGlobalMem, dev);
  const struct { int *field; CUdevice_attribute a; } ints[] = {
      {&p->major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR},
      {&p->minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR},
      {&p->multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT},
      {&p->warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE},
      {&p->maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK},
      {&p->maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X},
      {&p->maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y},
      {&p->maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z},
      {&p->maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X},
      {&p->maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y},
      {&p->maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z},
      {&p->regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK},
      {&p->integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED},
      {&p->canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY},
      {&p->concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS},
      {&p->pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID},
      {&p->pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID},
      {&p->pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID},
      {&p->unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING},
      {&p->memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH},
      {&p->l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE},
      {&p->maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR},
      {&p->managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY},
      {&p->concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS},
      {&p->memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED},
  };
  const struct { size_t *field; CUdevice_attribute a; } sizes[] = {
      {&p->sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK},
      {&p->memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH},
      {&p->totalConstMem, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY},
      {&p->textureAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT},
      {&p->texturePitchAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT},
      {&p->sharedMemPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR},
      {&p->sharedMemPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN},
  };
  for (size_t i = 0; e == cudaSuccess && i < sizeof ints / sizeof *ints; i++)
    e = DRV(cuDeviceGetAttribute, ints[i].field, ints[i].a, dev);
  for (size_t i = 0; e == cudaSuccess && i < sizeof sizes / sizeof *sizes; i++) {
    int v = 0;
    e = DRV(cuDeviceGetAttribute, &v, sizes[i].a, dev);
    *sizes[i].field = (size_t)v;
  }
  return ret(e);
}

cudaError_t cudaDeviceSynchronize(void) {
  RT_CTX();
  return ret(DRV(cuCtxSynchronize, NULL));
}

/* Destroys the primary context of the current device (and with it its allocations). */
cudaError_t cudaDeviceReset(void) {
  RT_INIT();
  int dev = t_dev;
  CUcontext cur = NULL;
  CUdevice d;
  if (DRV(cuCtxGetCurrent, &cur) == cudaSuccess && cur && DRV(cuCtxGetDevice, &d, cur) == cudaSuccess) dev = d;
  pthread_mutex_lock(&g_mu);
  cudaError_t e = DRV(cuDevicePrimaryCtxReset, dev);
  if (dev >= 0 && dev < SIM_RT_MAX_DEVICES) g_primary[dev].retained = 0;
  pthread_mutex_unlock(&g_mu);
  if (cur == g_primary[dev].ctx) DRV(cuCtxSetCurrent, NULL);
  return ret(e);
}

/* ---- memory ------------------------------------------------------------------------------ */
cudaError_t cudaMalloc(void **p, size_t size) {
  RT_CTX();
  if (!p) return ret(cudaErrorInvalidValue);
  *p = NULL;
  if (size == 0) return cudaSuccess; /* like the real runtime: success, NULL, no driver call */
  CUdeviceptr d = 0;
  cudaError_t e = DRV(cuMemAlloc, &d, size);
  if (e == cudaSuccess) *p = (void *)(uintptr_t)d;
  return ret(e);
}

cudaError_t cudaFree(void *p) {
  RT_CTX();
  return p ? ret(DRV(cuMemFree, (CUdeviceptr)(uintptr_t)p)) : cudaSuccess;
}

cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags) {
  RT_CTX();
  if (!p || size == 0) return ret(cudaErrorInvalidValue); /* documented: size 0 is invalid here */
  CUdeviceptr d = 0;
  cudaError_t e = DRV(cuMemAllocManaged, &d, size, flags);
  *p = e == cudaSuccess ? (void *)(uintptr_t)d : NULL;
  return ret(e);
}

cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height) {
  RT_CTX();
  if (!p || !pitch) return ret(cudaErrorInvalidValue);
  *p = NULL;
  if (width == 0 || height == 0) {
    *pitch = 0;
    return cudaSuccess;
  }
  CUdeviceptr d = 0;
  cudaError_t e = DRV(cuMemAllocPitch, &d, pitch, width, height, 16);
  if (e == cudaSuccess) *p = (void *)(uintptr_t)d;
  return ret(e);
}

cudaError_t cudaMallocHost(void **p, size_t size) {
  RT_CTX();
  if (!p) return ret(cudaErrorInvalidValue);
  *p = NULL;
  return size ? ret(DRV(cuMemAllocHost, p, size)) : cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags) {
  RT_CTX();
  if (!p) return ret(cudaErrorInvalidValue);
  *p = NULL;
  return size ? ret(DRV(cuMemHostAlloc, p, size, flags)) : cudaSuccess;
}

cudaError_t cudaFreeHost(void *p) {
  RT_CTX();
  return p ? ret(DRV(cuMemFreeHost, p)) : cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
  RT_CTX();
  return ret(DRV(cuMemGetInfo, free_bytes, total));
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
  RT_CTX();
  if (n == 0) return cudaSuccess;
  CUdeviceptr d = (uintptr_t)dst, s = (uintptr_t)src;
  switch (kind) {
    case cudaMemcpyHostToHost:
      if (!dst || !src) return ret(cudaErrorInvalidValue);
      memmove(dst, src, n);
      return cudaSuccess;
    case cudaMemcpyHostToDevice: return ret(DRV(cuMemcpyHtoD, d, src, n));
    case cudaMemcpyDeviceToHost: return ret(DRV(cuMemcpyDtoH, dst, s, n));
    case cudaMemcpyDeviceToDevice: return ret(DRV(cuMemcpyDtoD, d, s, n));
    case cudaMemcpyDefault: return ret(DRV(cuMemcpy, d, s, n));
  }
  return ret(cudaErrorInvalidMemcpyDirection);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s) {
  RT_CTX();
  if ((unsigned)kind > cudaMemcpyDefault) return ret(cudaErrorInvalidMemcpyDirection);
  return ret(DRV(cuMemcpyAsync, (uintptr_t)dst, (uintptr_t)src, n, (CUstream)s));
}

cudaError_t cudaMemset(void *p, int value, size_t n) {
  RT_CTX();
  return ret(DRV(cuMemsetD8, (uintptr_t)p, (unsigned char)value, n));
}

/* ---- streams and stream-ordered allocation ----------------------------------------------- */
cudaError_t cudaStreamCreate(cudaStream_t *s) {
  RT_CTX();
  if (!s) return ret(cudaErrorInvalidValue);
  return ret(DRV(cuStreamCreate, (CUstream *)s, 0));
}
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  RT_CTX();
  return ret(DRV(cuStreamDestroy, (CUstream)s));
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  RT_CTX();
  return ret(DRV(cuStreamSynchronize, (CUstream)s));
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  RT_CTX();
  return ret(DRV(cuStreamQuery, (CUstream)s));
}

cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s) {
  RT_CTX();
  if (!p) return ret(cudaErrorInvalidValue);
  *p = NULL;
  if (size == 0) return cudaSuccess;
  CUdeviceptr d = 0;
  cudaError_t e = DRV(cuMemAllocAsync, &d, size, (CUstream)s);
  if (e == cudaSuccess) *p = (void *)(uintptr_t)d;
  return ret(e);
}

cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s) {
  RT_CTX();
  if (!p) return ret(cudaErrorInvalidValue);
  *p = NULL;
  if (size == 0) return cudaSuccess;
  CUdeviceptr d = 0;
  cudaError_t e = DRV(cuMemAllocFromPoolAsync, &d, size, (CUmemoryPool)pool, (CUstream)s);
  if (e == cudaSuccess) *p = (void *)(uintptr_t)d;
  return ret(e);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
  RT_CTX();
  return p ? ret(DRV(cuMemFreeAsync, (uintptr_t)p, (CUstream)s)) : cudaSuccess;
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props) {
  RT_CTX();
  if (!pool || !props) return ret(cudaErrorInvalidValue);
  CUmemPoolProps cp;
  memset(&cp, 0, sizeof cp);
  cp.allocType = (CUmemAllocationType)props->allocType;
  cp.handleTypes = (CUmemAllocationHandleType)props->handleTypes;
  cp.location.type = (CUmemLocationType)props->location.type;
  cp.location.id = props->location.id;
  cp.maxSize = props->maxSize;
  return ret(DRV(cuMemPoolCreate, (CUmemoryPool *)pool, &cp));
}
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  RT_CTX();
  return ret(DRV(cuMemPoolDestroy, (CUmemoryPool)pool));
}
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  RT_CTX();
  return ret(DRV(cuMemPoolTrimTo, (CUmemoryPool)pool, keep));
}
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
  RT_CTX();
  return ret(DRV(cuMemPoolSetAttribute, (CUmemoryPool)pool, (CUmemPool_attribute)attr, value));
}
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value) {
  RT_CTX();
  return ret(DRV(cuMemPoolGetAttribute, (CUmemoryPool)pool, (CUmemPool_attribute)attr, value));
}
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int dev) {
  RT_CTX();
  if (dev < 0 || dev >= g_ndev) return ret(cudaErrorInvalidDevice);
  return ret(DRV(cuDeviceGetDefaultMemPool, (CUmemoryPool *)pool, dev));
}
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int dev) {
  RT_CTX();
  if (dev < 0 || dev >= g_ndev) return ret(cudaErrorInvalidDevice);
  return ret(DRV(cuDeviceGetMemPool, (CUmemoryPool *)pool, dev));
}
cudaError_t cudaDeviceSetMemPool(int dev, cudaMemPool_t pool) {
  RT_CTX();
  if (dev < 0 || dev >= g_ndev) return ret(cudaErrorInvalidDevice);
  return ret(DRV(cuDeviceSetMemPool, dev, (CUmemoryPool)pool));
}

/* ---- kernels: registration and launches ----------------------------------------------------
 * What nvcc's host code does: a constructor registers the object's fatbin
 * (__cudaRegisterFatBinary with the wrapper {0x466243b1, 1, image, NULL}) and each kernel's
 * host stub with its device name (__cudaRegisterFunction). nvcc 13's stubs then call
 * __cudaGetKernel once (a runtime handle for the stub) and, for each launch,
 * __cudaPopCallConfiguration (the <<<...>>> that __cudaPushCallConfiguration pushed) and
 * __cudaLaunchKernel (_ptsz with --default-stream per-thread); hand-written code calls
 * cudaLaunchKernel with the stub. Like the real runtime with lazy loading (the default since
 * CUDA 12.2) a fatbin is loaded at the first launch of one of its kernels, as a library
 * (cuLibraryLoadData, which succeeds whatever the GPU: the real driver defers its code to the
 * kernel lookup), its kernel looked up with cuLibraryGetKernel (CUDA_ERROR_NO_BINARY_FOR_GPU 209
 * when the image has no code for the device -> cudaErrorNoKernelImageForDevice 209, tried again at
 * the next launch), made a function of the current context with cuKernelGetFunction (once per
 * context: later launches there reuse it) and launched
 * with cuLaunchKernel (cuLaunchKernelEx, cuLaunchCooperativeKernel). A stub that was never
 * registered, or a name the image lacks, is cudaErrorInvalidDeviceFunction (98). */
#define SIM_RT_MAX_FATBINS 64
#define SIM_RT_MAX_KERNELS 512
struct sim_fatbin_wrapper { int magic, version; const void *data; void *filename_or_fatbins; };
static struct { const void *image; CUlibrary lib; int live; } g_fatbins[SIM_RT_MAX_FATBINS];
static struct {
  const void *stub;
  int fatbin;
  const char *name;
  CUkernel kernel;  /* once found */
  CUfunction func;  /* its function in context ctx (looked up at the first launch there) */
  CUcontext ctx;
} g_kernels[SIM_RT_MAX_KERNELS];
static int g_nkernels;

void **__cudaRegisterFatBinary(void *wrapper) {
  const struct sim_fatbin_wrapper *w = wrapper;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < SIM_RT_MAX_FATBINS; i++)
    if (!g_fatbins[i].live) {
      g_fatbins[i].live = 1;
      g_fatbins[i].image = w && w->magic == 0x466243b1 ? w->data : NULL;
      g_fatbins[i].lib = NULL;
      pthread_mutex_unlock(&g_mu);
      return (void **)&g_fatbins[i];
    }
  pthread_mutex_unlock(&g_mu);
  return NULL;
}
void __cudaRegisterFatBinaryEnd(void **handle) { (void)handle; }
void __cudaUnregisterFatBinary(void **handle) {
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < SIM_RT_MAX_FATBINS; i++)
    if ((void **)&g_fatbins[i] == handle) g_fatbins[i].live = 0;
  pthread_mutex_unlock(&g_mu);
}
void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun, const char *deviceName,
                            int thread_limit, void *tid, void *bid, void *bDim, void *gDim, int *wSize) {
  (void)deviceFun, (void)thread_limit, (void)tid, (void)bid, (void)bDim, (void)gDim, (void)wSize;
  pthread_mutex_lock(&g_mu);
  int fb = -1;
  for (int i = 0; i < SIM_RT_MAX_FATBINS; i++)
    if ((void **)&g_fatbins[i] == handle) fb = i;
  if (fb >= 0 && g_nkernels < SIM_RT_MAX_KERNELS) {
    g_kernels[g_nkernels].stub = hostFun;
    g_kernels[g_nkernels].fatbin = fb;
    g_kernels[g_nkernels].name = deviceName;
    g_kernels[g_nkernels].kernel = NULL;
    g_kernels[g_nkernels].func = NULL;
    g_nkernels++;
  }
  pthread_mutex_unlock(&g_mu);
}
void __cudaRegisterVar(void **handle, char *hostVar, char *deviceAddress, const char *deviceName, int ext,
                       size_t size, int constant, int global) {
  (void)handle, (void)hostVar, (void)deviceAddress, (void)deviceName, (void)ext, (void)size, (void)constant,
      (void)global;
}
char __cudaInitModule(void **handle) { return handle != NULL; }

/* <<<grid, block, shmem, stream>>>: nvcc pushes the configuration, the stub pops it. One slot per
 * thread is enough: a stub pops what the expression just pushed. */
static _Thread_local struct { dim3 grid, block; size_t shmem; cudaStream_t stream; int pushed; } t_config;
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shmem, struct CUstream_st *stream) {
  t_config.grid = grid, t_config.block = block, t_config.shmem = shmem, t_config.stream = stream;
  t_config.pushed = 1;
  return 0;
}
cudaError_t __cudaPopCallConfiguration(dim3 *grid, dim3 *block, size_t *shmem, void *stream) {
  if (!t_config.pushed) return cudaErrorMissingConfiguration;
  t_config.pushed = 0;
  *grid = t_config.grid, *block = t_config.block, *shmem = t_config.shmem;
  *(cudaStream_t *)stream = t_config.stream;
  return cudaSuccess;
}

/* The registered kernel of a stub, -1 if none (lock held). */
static int rt_find_stub(const void *stub) {
  for (int i = 0; i < g_nkernels; i++)
    if (g_kernels[i].stub == stub && g_fatbins[g_kernels[i].fatbin].live) return i;
  return -1;
}

/* The CUfunction of registered kernel k in the current context: the fatbin loaded as a library
 * at first use, the kernel looked up (and remembered once found), a function of this context. */
static cudaError_t rt_function(int k, CUfunction *out) {
  cudaError_t e = rt_ctx();
  if (e != cudaSuccess) return e;
  CUcontext cur = NULL;
  if ((e = DRV(cuCtxGetCurrent, &cur)) != cudaSuccess) return e;
  pthread_mutex_lock(&g_mu);
  if (k < 0 || k >= g_nkernels || !g_fatbins[g_kernels[k].fatbin].live) {
    pthread_mutex_unlock(&g_mu);
    return cudaErrorInvalidDeviceFunction;
  }
  if (g_kernels[k].func && g_kernels[k].ctx == cur) {
    *out = g_kernels[k].func;
    pthread_mutex_unlock(&g_mu);
    return cudaSuccess;
  }
  int fb = g_kernels[k].fatbin;
  if (!g_fatbins[fb].lib)
    e = g_fatbins[fb].image ? DRV(cuLibraryLoadData, &g_fatbins[fb].lib, g_fatbins[fb].image, NULL, NULL, 0, NULL,
                                  NULL, 0)
                            : cudaErrorInvalidKernelImage;
  if (e == cudaSuccess && !g_kernels[k].kernel)
    e = DRV(cuLibraryGetKernel, &g_kernels[k].kernel, g_fatbins[fb].lib, g_kernels[k].name);
  CUkernel kern = g_kernels[k].kernel;
  pthread_mutex_unlock(&g_mu);
  /* the real runtime reports a kernel its image lacks as an invalid device function */
  if (e == (cudaError_t)CUDA_ERROR_NOT_FOUND) e = cudaErrorInvalidDeviceFunction;
  if (e == cudaSuccess) e = DRV(cuKernelGetFunction, out, kern);
  if (e == cudaSuccess) {
    pthread_mutex_lock(&g_mu);
    g_kernels[k].func = *out, g_kernels[k].ctx = cur;
    pthread_mutex_unlock(&g_mu);
  }
  return e;
}

static cudaError_t rt_launch_k(int k, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s, int cooperative) {
  CUfunction f = NULL;
  cudaError_t e = rt_function(k, &f);
  if (e != cudaSuccess) return ret(e);
  if (cooperative)
    return ret(DRV(cuLaunchCooperativeKernel, f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem, (CUstream)s, args));
  return ret(DRV(cuLaunchKernel, f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shmem, (CUstream)s, args, NULL));
}

static int rt_stub_kernel(const void *stub) {
  pthread_mutex_lock(&g_mu);
  int k = rt_find_stub(stub);
  pthread_mutex_unlock(&g_mu);
  return k;
}

static cudaError_t rt_launch(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s,
                             int cooperative) {
  cudaError_t e = rt_ctx();
  if (e != cudaSuccess) return ret(e);
  return rt_launch_k(rt_stub_kernel(func), g, b, args, shmem, s, cooperative);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s) {
  return rt_launch(func, g, b, args, shmem, s, 0);
}
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s) {
  return rt_launch(func, g, b, args, shmem, s, 0);
}
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 g, dim3 b, void **args, size_t shmem,
                                        cudaStream_t s) {
  return rt_launch(func, g, b, args, shmem, s, 1);
}
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 g, dim3 b, void **args, size_t shmem,
                                             cudaStream_t s) {
  return rt_launch(func, g, b, args, shmem, s, 1);
}
/* Each exported launch entry point calls only static helpers: the library is not linked
 * -Bsymbolic, so one export calling another would pass through an LD_PRELOAD shim twice. */
static cudaError_t rt_launch_ex(const cudaLaunchConfig_t *config, const void *func, void **args) {
  if (!config) return ret(cudaErrorInvalidValue);
  cudaError_t e = rt_ctx();
  if (e != cudaSuccess) return ret(e);
  CUfunction f = NULL;
  e = rt_function(rt_stub_kernel(func), &f);
  if (e != cudaSuccess) return ret(e);
  CUlaunchConfig c = {config->gridDim.x, config->gridDim.y, config->gridDim.z, config->blockDim.x,
                      config->blockDim.y, config->blockDim.z, (unsigned)config->dynamicSmemBytes,
                      (CUstream)config->stream, NULL, 0};
  return ret(DRV(cuLaunchKernelEx, &c, f, args, NULL));
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args) {
  return rt_launch_ex(config, func, args);
}
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args) {
  return rt_launch_ex(config, func, args);
}

/* nvcc 13's stubs. The handle names the registered kernel (1 + its index: never NULL); it is the
 * runtime's own, resolved to the driver's CUkernel at the launch. */
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *stub) {
  cudaError_t e = rt_init();
  if (e != cudaSuccess) return ret(e);
  if (!kernel) return ret(cudaErrorInvalidValue);
  int k = rt_stub_kernel(stub);
  if (k < 0) return ret(cudaErrorInvalidDeviceFunction);
  *kernel = (cudaKernel_t)(uintptr_t)(k + 1);
  return cudaSuccess;
}
/* The device name a host stub was registered with (the real runtime gives the mangled device
 * name, as __cudaRegisterFunction's deviceName). A stub never registered:
 * cudaErrorInvalidDeviceFunction; a NULL name or stub: cudaErrorInvalidValue. */
cudaError_t cudaFuncGetName(const char **name, const void *func) {
  cudaError_t e = rt_init();
  if (e != cudaSuccess) return ret(e);
  if (!name || !func) return ret(cudaErrorInvalidValue);
  pthread_mutex_lock(&g_mu);
  int k = rt_find_stub(func);
  const char *n = k >= 0 ? g_kernels[k].name : NULL;
  pthread_mutex_unlock(&g_mu);
  if (!n) return ret(cudaErrorInvalidDeviceFunction);
  *name = n;
  return cudaSuccess;
}
static cudaError_t rt_launch_handle(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shmem,
                                    cudaStream_t s) {
  cudaError_t e = rt_ctx();
  if (e != cudaSuccess) return ret(e);
  return rt_launch_k((int)(uintptr_t)kernel - 1, g, b, args, shmem, s, 0);
}
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shmem, cudaStream_t s) {
  return rt_launch_handle(kernel, g, b, args, shmem, s);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shmem,
                                   cudaStream_t s) {
  return rt_launch_handle(kernel, g, b, args, shmem, s);
}
