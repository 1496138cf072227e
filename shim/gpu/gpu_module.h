// The GPU module's shared state and recording logic (shim/gpu/).
//
// The entry points (runtime_hooks.cpp, driver_hooks.cpp) are thin: they find the real
// function, call it, and hand what happened to the Record* functions here, which build
// the records. Everything here runs inside a ShimScope that entered.
//
// What the module knows about the CUDA libraries of the process:
//   - CudaLib: one loaded libcudart or libcuda, with the query functions the shim calls
//     itself (device, versions, memory info), read from that very object's dynamic
//     symbol table (elf_symbols.h).
//     Nothing is ever loaded: a library is registered from a real function pointer the
//     program already holds.
//   - each record asks only the libraries its own call went through: the runtime it
//     called and the driver that ran underneath (free/total memory after a failure is
//     read "through the same driver"). A library that ran a moment ago is still loaded,
//     so a runtime that unloads its driver after a failed start cannot leave the shim
//     holding dangling function pointers.
//
// "One allocation, two layers": a runtime hook raises t_thread.runtime_depth around
// the real call; driver wrappers reached inside it record nothing and leave their API
// and return code in t_gpu for the runtime record (driver_api, driver_rc).
#pragma once

#include <cstddef>
#include <cstdint>

#include "colabtrace/format/gpu_live.h"
#include "colabtrace/format/records.h"
#include "cuda_api.h"
#include "writer.h"

namespace colabtrace::shim::gpu {

using format::GpuApi;
using format::GpuLayer;

using format::LaunchRing;  // wire.h; launch_ring.h

// Per-thread state of the GPU module (initial-exec TLS: no allocation, no lock).
struct GpuThread {
  uint16_t inner_api = 0;  // the last traced allocation-family driver call made inside the
  int32_t inner_rc = 0;    // current runtime call, and its result
  const void* inner_real = nullptr;  // the real driver function of the last wrapped call in it
  const void* inner_func = nullptr;  // the CUfunction of a driver launch that failed in it
  const void* inner_launch_real = nullptr;  // and that driver launch's real function
  LaunchRing* ring = nullptr;  // this thread's last successful launches (launch_ring.h)
  // Host stubs this thread launched whose names are in the trace (direct-mapped by address;
  // a miss only costs a look into the process's set): see KernelNamedHere.
  const void* named[16] = {};
};
extern constinit thread_local GpuThread t_gpu CT_TLS;

// True if addr lies in libcolabtrace.so's own mapped code (set up by GpuModuleStart).
bool IsShimText(const void* addr);

// Captures the calling thread's native stack (COLABTRACE_STACKS frames, shim frames
// dropped) and returns its Stack id; 0 when stacks are off.
uint64_t CaptureGpuStack();

// ---- the CUDA libraries of the process -----------------------------------------------

enum class LibKind : uint8_t { kRuntime = 1, kDriver = 2 };

struct CudaLib {
  LibKind kind;
  uintptr_t lo, hi;   // the object's mapped address range
  const char* path;   // the loader's name for it (valid while it stays loaded)
  // Runtime (libcudart) query functions.
  cudaError_t (*rt_get_device)(int*);
  cudaError_t (*rt_runtime_version)(int*);
  cudaError_t (*rt_driver_version)(int*);
  cudaError_t (*rt_mem_get_info)(size_t*, size_t*);
  cudaError_t (*rt_device_attribute)(int*, cudaDeviceAttr, int);
  cudaError_t (*rt_device_properties)(void*, int);  // only the leading name[256] is read
  cudaError_t (*rt_func_get_name)(const char**, const void*);
  // Driver (libcuda) query functions.
  CUresult (*cu_ctx_get_device)(CUdevice*);
  CUresult (*cu_mem_get_info)(size_t*, size_t*);
  CUresult (*cu_driver_version)(int*);
  CUresult (*cu_device_name)(char*, int, CUdevice);
  CUresult (*cu_device_attribute)(int*, CUdevice_attribute, CUdevice);
  CUresult (*cu_device_total_mem)(size_t*, CUdevice);
  CUresult (*cu_device_mem_pool)(CUmemoryPool*, CUdevice);
  CUresult (*cu_pool_attribute)(CUmemoryPool, CUmemPool_attribute, void*);
  CUresult (*cu_func_get_name)(const char**, CUfunction);
};

// The registered library holding addr, registering it (reading that object's dynamic
// symbol table) the first time. nullptr if addr is in no loaded object, or while
// another thread is registering the same library.
const CudaLib* LibOf(const void* addr, LibKind kind);


// ---- what a hook saw --------------------------------------------------------------------

struct Call {
  GpuApi api;
  GpuLayer layer;
  const void* caller;  // return address of the API call
  const void* real;    // the real function that ran
  uint64_t t0, t1;     // ticks before and after it
  int64_t rc;
};

struct AllocFacts {
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t stream = 0;
  uint64_t flags = 0;
  uint64_t pool = 0;
  uint64_t pitch = 0;
  int device = -2;  // -2: ask the current context; -1: unknown
};

// True for the "out of memory" codes of both layers (cudaErrorMemoryAllocation and
// CUDA_ERROR_OUT_OF_MEMORY are both 2).
inline bool IsOutOfMemory(int64_t rc) { return rc == 2; }

// GpuAlloc, plus (once) the versions, the device's facts and a first-use memory
// reading, and after a failure the free/total memory seen through the same driver.
void RecordAlloc(const Call& c, const AllocFacts& a);
// taken: the live-set slot the free took out of the set before it was called (LiveTake),
// or null; it is counted freed, or put back when the free failed.
void RecordFree(const Call& c, uint64_t addr, uint64_t stream, const format::GpuLiveSlot* taken);
// A program's own memory query (cudaMemGetInfo, cuMemGetInfo_v2).
void RecordMemInfo(const Call& c, const size_t* free_bytes, const size_t* total);
// The version queries: the first answer of each runtime library becomes a GpuVersion.
void RecordVersionQuery(const Call& c);
void RecordPool(const Call& c, uint64_t pool, int device, uint64_t value);
struct VmmFacts {
  uint64_t handle = 0, addr = 0, size = 0, offset = 0;
  int device = -1;
};
void RecordVmm(const Call& c, const VmmFacts& v);
void RecordModule(const Call& c, uint64_t handle, const void* image, const char* path);
void RecordError(const Call& c);
// A kernel launch that returned an error (successful launches are never recorded).
// func: the runtime's host stub or the driver's CUfunction; stream as passed.
void RecordLaunchFailure(const Call& c, const void* func, uint64_t stream);
// The launch hooks' failure path (out of line, cold): a driver launch inside a runtime
// call leaves its function for the runtime's record; anything else is recorded.
__attribute__((noinline, cold)) void LaunchFailed(GpuApi api, GpuLayer layer, const void* caller,
                                                  const void* real, int64_t rc, const void* func,
                                                  uint64_t stream);
// A driver lookup of a kernel failed (cuModuleGetFunction, cuLibraryGetKernel,
// cuKernelGetFunction): recorded (as a GpuLaunchFailed with that api) when the error says
// the image has no code for this GPU (format::IsNoImageGpuError); inside a runtime call it is left for
// the runtime's record (the CUkernel in inner_func). Cold.
__attribute__((noinline, cold)) void LookupFailed(GpuApi api, const void* caller, const void* real,
                                                  int64_t rc, const void* kernel, uint64_t module,
                                                  const char* name);
// A kernel handle the driver handed out (cuModuleGetFunction, cuLibraryGetKernel) or
// named (cuFuncGetName), or one that stands for another: stub (__cudaGetKernel: the host
// stub of a cudaKernel_t) or kernel (cuKernelGetFunction: the CUkernel of a CUfunction).
struct FunctionFacts {
  uint64_t handle = 0, module = 0, stub = 0, kernel = 0;
  const char* name = nullptr;
};
void RecordFunction(const Call& c, const FunctionFacts& f);

// The kernel name the runtime `real` belongs to gives for host stub `stub`
// (cudaFuncGetName), or nullptr. For stubs the runtime just launched or handed a handle for
// (registered, so the query cannot fail and leave an error behind).
const char* RuntimeKernelName(const void* real, const void* stub);

// Kernel names travel with the trace: the first launch of each host stub in the process
// writes its name (a GpuFunction record, api the launch's), so a report made without the
// program's files still names it. A later launch costs one load and compare (the thread's
// direct-mapped cache); a miss looks into the process's set of named stubs (cold).
__attribute__((noinline, cold)) void NameStubAtFirstLaunch(GpuApi api, const void* caller, const void* real,
                                                           const void* stub);
__attribute__((always_inline)) inline void NoteStubLaunched(GpuApi api, const void* caller, const void* real,
                                                            const void* stub) {
  const void*& slot = t_gpu.named[(reinterpret_cast<uintptr_t>(stub) >> 4) & 15];
  if (__builtin_expect(slot != stub, 0)) {
    NameStubAtFirstLaunch(api, caller, real, stub);
    slot = stub;
  }
}
// A fork child's set starts empty (its trace has none of its parent's records).
void ResetNamedStubs();
// A failed synchronising call (cold): a sticky error is the device fault (NoteStickyError)
// or, inside a runtime call, left for the runtime's own hook.
struct FaultScope;
__attribute__((noinline, cold)) void SyncFailed(GpuApi api, GpuLayer layer, const void* caller,
                                                const void* real, int64_t rc,
                                                const FaultScope& where);
// The GpuFault record and, for the first one, the launch ring (launch_ring.cpp).
void RecordFault(const Call& c, const FaultScope& where, uint64_t order);


// CUPTI (cupti.cpp; COLABTRACE_CUPTI=1): start the subscriber after a successful cuInit
// (once per process), and flush activity buffers when due (called from slow paths; one
// load when CUPTI is off).
void CuptiAfterInit();
void CuptiMaybeFlush();
// What dlsym hands out for a CUPTI name (GpuInterposeSymbol): a wrapper that hands CUPTI
// over before the program's cuptiSubscribe(_v2) / cuptiActivityRegisterCallbacks runs; nullptr
// when the lookup found only the shim's own export (nothing else defines it); else `real`.
void* CuptiInterposeSymbol(const char* name, void* real);

// Forgets the per-process facts (a fork child starts a new trace).
void ResetGpuFacts();

}  // namespace colabtrace::shim::gpu
