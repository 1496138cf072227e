/* Shared state of the simulated CUDA driver (libcuda.so.1). Internal to tests/simcuda/.
 *
 * Everything is guarded by one global mutex (SIM_LOCKED at the top of an entry point takes it
 * and releases it on every return path). The only per-thread state is the current context.
 * See README.md for the simulated semantics; this header only declares the data model:
 *
 *   sim_range   a sorted array of used blocks over [base, base+size): the device heap, each
 *               pool chunk, the global VA reservation space and each reservation's mappings all
 *               use it. Allocation is first-fit from the bottom (or from the top for carves).
 *   device heap contexts' carves and "other process" memory (top-down), cuMemAlloc/Pitch/
 *               Managed blocks, pool chunks and VMM physical pieces (first-fit, 2 MiB aligned).
 */
#pragma once
#define _GNU_SOURCE
#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* cuda.h maps base names to their newest variant (#define cuMemAlloc cuMemAlloc_v2 ...). The
 * simulator defines every variant under its real exported name, so drop those mappings and
 * declare the legacy (v1) and per-thread variants cuda.h does not declare in public mode. */
#undef cuDeviceTotalMem
#undef cuCtxCreate
#undef cuCtxDestroy
#undef cuMemGetInfo
#undef cuMemAlloc
#undef cuMemAllocPitch
#undef cuMemFree
#undef cuMemGetAddressRange
#undef cuMemAllocHost
#undef cuStreamDestroy
#undef cuDevicePrimaryCtxRelease
#undef cuDevicePrimaryCtxReset
#undef cuGetProcAddress
#undef cuMemcpyHtoD
#undef cuMemcpyDtoH
#undef cuMemcpyDtoD
#undef cuMemsetD8
#undef cuMemsetD32

typedef unsigned int CUdeviceptr_v1;
CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes, CUdevice dev);
CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev);
CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
                                CUdevice dev);
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx);
CUresult CUDAAPI cuMemGetInfo(unsigned int *free, unsigned int *total);
CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize);
CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int WidthInBytes,
                                 unsigned int Height, unsigned int ElementSizeBytes);
CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr);
CUresult CUDAAPI cuMemAllocHost(void **pp, unsigned int bytesize);
CUresult CUDAAPI cuStreamDestroy(CUstream hStream);
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev);
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream);
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream);
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount);
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N);
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dstDevice, unsigned int ui, size_t N);
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                              CUstream hStream);
CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                     unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                     unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                     void **kernelParams, void **extra);
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                       void **extra);
CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                                unsigned int gridDimZ, unsigned int blockDimX,
                                                unsigned int blockDimY, unsigned int blockDimZ,
                                                unsigned int sharedMemBytes, CUstream hStream,
                                                void **kernelParams);

#define SIM_EXPORT __attribute__((visibility("default")))
/* Export exactly the table's symbols: the library is compiled with -fvisibility=hidden and every
 * translation unit sees these default-visibility redeclarations before its definitions. */
#define E(base, version, sym, ptds) extern __typeof__(sym) sym SIM_EXPORT;
#include "sim_driver_entries.h"
#undef E
#define SIM_MiB (1024ull * 1024ull)
#define SIM_GiB (1024ull * SIM_MiB)
#define SIM_TiB (1024ull * SIM_GiB)
#define SIM_GRANULE (2 * SIM_MiB)            /* cuMemAlloc rounding and VMM granularity */
#define SIM_POOL_CHUNK (32 * SIM_MiB)        /* minimum pool growth step */
#define SIM_POOL_ALIGN 512ull                /* sub-allocation rounding inside a pool chunk */
#define SIM_PITCH_ALIGN 512ull               /* cuMemAllocPitch row alignment */
#define SIM_MAX_DEVICES 16
#define SIM_HEAP_BASE 0x200000000000ull      /* device d heap starts at BASE + d * 1 TiB */
#define SIM_VA_BASE 0x400000000000ull        /* cuMemAddressReserve space (global, 16 TiB) */
#define SIM_VA_SIZE (16 * SIM_TiB)

static inline uint64_t sim_round_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

/* ---- ranges ---------------------------------------------------------------------------- */
enum sim_kind { K_OTHER = 1, K_CTX, K_MEM, K_MANAGED, K_CHUNK, K_VMM, K_SUB, K_RESERVE, K_MAP };
typedef struct sim_blk { uint64_t addr, len; int kind; void *owner; uint64_t aux; } sim_blk;
typedef struct sim_range { uint64_t base, size, used; sim_blk *v; size_t n, cap; } sim_range;

/* first-fit from the bottom, each block aligned to `align` (relative to address 0) */
int sim_range_alloc(sim_range *r, uint64_t len, uint64_t align, int kind, void *owner, uint64_t *out);
/* highest gap that fits, block placed at its top (used for context/other-process carves) */
int sim_range_alloc_top(sim_range *r, uint64_t len, int kind, void *owner, uint64_t *out);
/* exact placement; fails if [addr, addr+len) is not entirely free */
int sim_range_alloc_at(sim_range *r, uint64_t addr, uint64_t len, int kind, void *owner);
long sim_range_find(const sim_range *r, uint64_t addr); /* block containing addr, or -1 */
void sim_range_remove(sim_range *r, size_t idx);
uint64_t sim_range_largest_gap(const sim_range *r, uint64_t align);
void sim_range_clear(sim_range *r);

/* ---- objects --------------------------------------------------------------------------- */
struct CUctx_st {
  int dev, primary, active, refcount;
  unsigned flags;
  /* Device faults (SIMCUDA_FAULT_KERNEL): a launch of the faulting kernel leaves `pending` on its
   * stream; the next synchronisation of that stream (or of the context) makes it `sticky`, which
   * every later call in the context returns. */
  CUresult pending, sticky;
  CUstream pending_stream; /* NULL for the default streams */
  /* Slow kernels (SIMCUDA_SLOW_KERNEL): the work launched on busy_stream runs until busy_until
   * (CLOCK_MONOTONIC ns; 0: idle); a synchronisation that waits for it blocks until then. */
  uint64_t busy_until;
  CUstream busy_stream; /* NULL for the default streams */
  /* Hanging kernels (SIMCUDA_HANG_KERNEL): once `hung`, the work launched on hung_stream (the
   * first stream a hanging kernel was launched on) never completes; a synchronisation that waits
   * for it blocks for good. */
  int hung;
  CUstream hung_stream; /* NULL for the default streams */
  struct CUctx_st *next; /* all contexts ever created (never freed: stale handles stay safe) */
};
struct CUstream_st { struct CUctx_st *ctx; unsigned flags; struct CUstream_st *next; };
typedef struct sim_chunk { sim_range sub; } sim_chunk; /* sub.base/size = the chunk's heap block */
struct CUmemPoolHandle_st {
  int dev, is_default, destroyed;
  uint64_t threshold, reserved, used, reserved_high, used_high;
  int reuse[3];
  sim_chunk **chunks;
  size_t nchunks;
  struct CUmemPoolHandle_st *next;
};
typedef struct sim_vmm { /* a cuMemCreate handle */
  int dev, released, maps;
  uint64_t size;
  uint64_t *piece_addr, *piece_len; /* where its physical memory sits in the device heap */
  size_t npieces;
  struct sim_vmm *next;
} sim_vmm;
typedef struct sim_reservation { sim_range maps; } sim_reservation; /* blocks: K_MAP, owner sim_vmm */

typedef struct sim_device {
  char name[256];
  int cc_major, cc_minor;
  uint64_t total, other;
  sim_range heap;
  struct CUctx_st primary;
  struct CUmemPoolHandle_st *default_pool, *current_pool;
} sim_device;

typedef struct sim_state {
  pthread_mutex_t mu;
  int initialized;      /* cuInit succeeded */
  CUresult init_result; /* result of the first cuInit (sticky, like the real driver) */
  int ndev, driver_version, log;
  uint64_t context_bytes;
  sim_device dev[SIM_MAX_DEVICES];
  sim_range va;                  /* K_RESERVE blocks, owner sim_reservation */
  struct CUctx_st *ctxs;         /* created with cuCtxCreate */
  struct CUstream_st *streams;
  struct CUmemPoolHandle_st *pools;
  sim_vmm *vmms;
  unsigned long long proc_lookups, export_table_calls;
  char fault_kernel[256]; /* SIMCUDA_FAULT_KERNEL=name[:code] */
  CUresult fault_code;
  char slow_kernel[256];  /* SIMCUDA_SLOW_KERNEL=name:ms */
  uint64_t slow_ns;
  char hang_kernel[256];  /* SIMCUDA_HANG_KERNEL=name */
} sim_state;

extern sim_state G;
extern _Thread_local struct CUctx_st *sim_tls_ctx;

void sim_config_once(void); /* reads SIMCUDA_* env once */
void sim_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The tool interface (sim_tool.h): sim_tool() hands one event to the attached tool, if any. */
#include "sim_tool.h"
void sim_tool(const sim_tool_data *d);
/* A driver API call returned successfully: its CUPTI callback id and parameter block. */
void sim_tool_api(uint32_t cbid, const void *params, void *ctx);
void sim_tool_memory(int op, uint64_t addr, uint64_t bytes, int device, uint64_t pool);
int sim_lock_guard(void);
void sim_unlock_guard(int *);
#define SIM_LOCKED int sim__lk __attribute__((cleanup(sim_unlock_guard), unused)) = sim_lock_guard()

/* Checks used by nearly every entry point (lock held). */
#define SIM_NEED_INIT() do { if (!G.initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
CUresult sim_current_ctx(struct CUctx_st **out); /* NOT_INITIALIZED / INVALID_CONTEXT / its sticky error */
CUresult sim_stream_ctx(CUstream s, struct CUctx_st **out); /* default streams -> current ctx; sticky too */
/* The same without the sticky error (calls that still answer after a device fault, and the
 * synchronisations that make a pending fault sticky). */
CUresult sim_current_ctx_any(struct CUctx_st **out);
CUresult sim_stream_ctx_any(CUstream s, struct CUctx_st **out);
/* A synchronisation of stream s (any != 0: of every stream) in context c: a pending fault there
 * becomes sticky. Returns the context's sticky error (CUDA_SUCCESS when healthy). */
CUresult sim_sync_faults(struct CUctx_st *c, CUstream s, int any);
/* The current context's sticky error, for context-independent calls (cuFuncGetName,
 * cuLibraryGetKernel...), which the real driver also fails after a fault. */
CUresult sim_current_sticky(void);
/* A successful launch of function `name` on stream s of context c (SIMCUDA_FAULT_KERNEL,
 * SIMCUDA_SLOW_KERNEL, SIMCUDA_HANG_KERNEL). */
void sim_launched(struct CUctx_st *c, CUstream s, const char *name);
/* A synchronisation of stream s (any != 0: of every stream) in context c waits for a slow
 * kernel's work there: the calling thread sleeps until it is done, after it releases the lock
 * (sim_unlock_guard); for a hanging kernel's work, it sleeps there for good (a signal still
 * ends the process). */
void sim_sync_wait(struct CUctx_st *c, CUstream s, int any);
/* Whether stream s of context c still runs a slow or hanging kernel (cuStreamQuery:
 * CUDA_ERROR_NOT_READY). */
int sim_stream_busy(struct CUctx_st *c, CUstream s);
int sim_valid_dev(CUdevice d);

/* memory helpers shared between files (lock held) */
void sim_ctx_free_memory(struct CUctx_st *ctx); /* frees the context's cuMemAlloc/Managed blocks */
void sim_pools_on_sync(int dev);                /* release-threshold handling at sync points */
void sim_ctx_unload_modules(struct CUctx_st *ctx); /* unloads the context's modules */
