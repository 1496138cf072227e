// CUDA driver entry points (cu*): thin exported hooks and their logic.
//
// The same L_<name> serves a program linked against libcuda (through the exported
// definition) and a program that took the entry point from dlsym or cuGetProcAddress
// (through a wrapper slot, see interpose.cpp). Inside a runtime call (cudart calling the
// driver under the hood) the allocation calls record nothing: the runtime hook records
// the allocation once and notes the driver API and result on it. Module loads, cuInit
// failures, pools and VMM calls are recorded at any depth.
#include "entry_points.h"
#include "launch_ring.h"
#include "live_set.h"

namespace colabtrace::shim::gpu {
namespace {

constexpr CUresult kNoRealDriver = CUDA_ERROR_NOT_FOUND;

template <class F> const void* Addr(F f) { return reinterpret_cast<const void*>(f); }
uint64_t U(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Runs run() as one traced driver call and records it with rec(call, result), unless a
// runtime hook below us on this thread records it (then only the note is left).
template <class Run, class Rec>
inline CUresult TracedDriver(GpuApi api, bool defer_to_runtime, const void* caller,
                             const void* real, Run&& run, Rec&& rec) {
  if (t_thread.runtime_depth > 0) {
    t_gpu.inner_real = real;
    if (defer_to_runtime) {
      const CUresult r = run();
      t_gpu.inner_api = static_cast<uint16_t>(api);
      t_gpu.inner_rc = static_cast<int32_t>(r);
      return r;
    }
  }
  Call c{api, GpuLayer::kDriver, caller, real, 0, 0, 0};
  c.t0 = Ticks();
  const CUresult r = run();
  c.t1 = Ticks();
  c.rc = static_cast<int64_t>(r);
  {
    ShimScope scope;
    if (scope.entered()) rec(c, r);
  }
  return r;
}

template <class Fn>
CUresult DriverAlloc(GpuApi api, Fn real, const void* caller, CUdeviceptr* out, AllocFacts a,
                     auto&& run) {
  return TracedDriver(api, true, caller, Addr(real), run, [&](const Call& c, CUresult r) {
    a.addr = r == CUDA_SUCCESS && out != nullptr ? static_cast<uint64_t>(*out) : 0;
    RecordAlloc(c, a);
  });
}

template <class Fn>
CUresult DriverFree(GpuApi api, Fn real, const void* caller, uint64_t addr, uint64_t stream,
                    auto&& run) {
  // Out of the live set before the free is called (as in the runtime's hook, which does
  // it for the driver call underneath).
  format::GpuLiveSlot slot;
  const bool taken = t_thread.runtime_depth == 0 && LiveTake(addr, &slot);
  return TracedDriver(api, true, caller, Addr(real), run, [&](const Call& c, CUresult) {
    RecordFree(c, addr, stream, taken ? &slot : nullptr);
  });
}

}  // namespace

// ---- plain, pitched, managed and host memory -----------------------------------------------------

CUresult L_cuMemAlloc_v2(decltype(&::cuMemAlloc_v2) real, const void* caller, CUdeviceptr* d,
                         size_t size) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(d, size);
  AllocFacts a;
  a.size = size;
  return DriverAlloc(GpuApi::kCuMemAlloc_v2, real, caller, d, a, [&] { return real(d, size); });
}

CUresult L_cuMemAllocManaged(decltype(&::cuMemAllocManaged) real, const void* caller,
                             CUdeviceptr* d, size_t size, unsigned int flags) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(d, size, flags);
  AllocFacts a;
  a.size = size;
  a.flags = flags;
  return DriverAlloc(GpuApi::kCuMemAllocManaged, real, caller, d, a,
                     [&] { return real(d, size, flags); });
}

CUresult L_cuMemAllocPitch_v2(decltype(&::cuMemAllocPitch_v2) real, const void* caller,
                              CUdeviceptr* d, size_t* pitch, size_t width, size_t height,
                              unsigned int elem) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(d, pitch, width, height, elem);
  return TracedDriver(
      GpuApi::kCuMemAllocPitch_v2, true, caller, Addr(real),
      [&] { return real(d, pitch, width, height, elem); },
      [&](const Call& c, CUresult r) {
        AllocFacts a;
        const bool ok = r == CUDA_SUCCESS && d != nullptr && pitch != nullptr;
        a.addr = ok ? static_cast<uint64_t>(*d) : 0;
        a.pitch = ok ? *pitch : 0;
        a.size = ok ? *pitch * height : width * height;
        RecordAlloc(c, a);
      });
}

CUresult L_cuMemFree_v2(decltype(&::cuMemFree_v2) real, const void* caller, CUdeviceptr p) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(p);
  return DriverFree(GpuApi::kCuMemFree_v2, real, caller, p, 0, [&] { return real(p); });
}

CUresult L_cuMemAllocHost_v2(decltype(&::cuMemAllocHost_v2) real, const void* caller, void** p,
                             size_t size) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(p, size);
  return TracedDriver(GpuApi::kCuMemAllocHost_v2, true, caller, Addr(real),
                      [&] { return real(p, size); }, [&](const Call& c, CUresult r) {
                        AllocFacts a;
                        a.size = size;
                        a.device = -1;
                        a.addr = r == CUDA_SUCCESS && p != nullptr ? U(*p) : 0;
                        RecordAlloc(c, a);
                      });
}

CUresult L_cuMemHostAlloc(decltype(&::cuMemHostAlloc) real, const void* caller, void** p,
                          size_t size, unsigned int flags) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(p, size, flags);
  return TracedDriver(GpuApi::kCuMemHostAlloc, true, caller, Addr(real),
                      [&] { return real(p, size, flags); }, [&](const Call& c, CUresult r) {
                        AllocFacts a;
                        a.size = size;
                        a.flags = flags;
                        a.device = -1;
                        a.addr = r == CUDA_SUCCESS && p != nullptr ? U(*p) : 0;
                        RecordAlloc(c, a);
                      });
}

CUresult L_cuMemFreeHost(decltype(&::cuMemFreeHost) real, const void* caller, void* p) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(p);
  return DriverFree(GpuApi::kCuMemFreeHost, real, caller, U(p), 0, [&] { return real(p); });
}

CUresult L_cuMemGetInfo_v2(decltype(&::cuMemGetInfo_v2) real, const void* caller,
                           size_t* free_bytes, size_t* total) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(free_bytes, total);
  return TracedDriver(GpuApi::kCuMemGetInfo_v2, true, caller, Addr(real),
                      [&] { return real(free_bytes, total); },
                      [&](const Call& c, CUresult) { RecordMemInfo(c, free_bytes, total); });
}

// ---- stream-ordered allocation ------------------------------------------------------------------

namespace {
template <class Fn>
CUresult AllocAsync(GpuApi api, Fn real, const void* caller, CUdeviceptr* d, size_t size,
                    CUstream s) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(d, size, s);
  AllocFacts a;
  a.size = size;
  a.stream = U(s);
  return DriverAlloc(api, real, caller, d, a, [&] { return real(d, size, s); });
}
template <class Fn>
CUresult AllocFromPool(GpuApi api, Fn real, const void* caller, CUdeviceptr* d, size_t size,
                       CUmemoryPool pool, CUstream s) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(d, size, pool, s);
  AllocFacts a;
  a.size = size;
  a.stream = U(s);
  a.pool = U(pool);
  return DriverAlloc(api, real, caller, d, a, [&] { return real(d, size, pool, s); });
}
template <class Fn>
CUresult FreeAsync(GpuApi api, Fn real, const void* caller, CUdeviceptr p, CUstream s) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(p, s);
  return DriverFree(api, real, caller, p, U(s), [&] { return real(p, s); });
}
}  // namespace

CUresult L_cuMemAllocAsync(decltype(&::cuMemAllocAsync) real, const void* caller, CUdeviceptr* d,
                           size_t size, CUstream s) {
  return AllocAsync(GpuApi::kCuMemAllocAsync, real, caller, d, size, s);
}
CUresult L_cuMemAllocAsync_ptsz(decltype(&::cuMemAllocAsync_ptsz) real, const void* caller,
                                CUdeviceptr* d, size_t size, CUstream s) {
  return AllocAsync(GpuApi::kCuMemAllocAsync_ptsz, real, caller, d, size, s);
}
CUresult L_cuMemAllocFromPoolAsync(decltype(&::cuMemAllocFromPoolAsync) real, const void* caller,
                                   CUdeviceptr* d, size_t size, CUmemoryPool pool, CUstream s) {
  return AllocFromPool(GpuApi::kCuMemAllocFromPoolAsync, real, caller, d, size, pool, s);
}
CUresult L_cuMemAllocFromPoolAsync_ptsz(decltype(&::cuMemAllocFromPoolAsync_ptsz) real,
                                        const void* caller, CUdeviceptr* d, size_t size,
                                        CUmemoryPool pool, CUstream s) {
  return AllocFromPool(GpuApi::kCuMemAllocFromPoolAsync_ptsz, real, caller, d, size, pool, s);
}
CUresult L_cuMemFreeAsync(decltype(&::cuMemFreeAsync) real, const void* caller, CUdeviceptr p,
                          CUstream s) {
  return FreeAsync(GpuApi::kCuMemFreeAsync, real, caller, p, s);
}
CUresult L_cuMemFreeAsync_ptsz(decltype(&::cuMemFreeAsync_ptsz) real, const void* caller,
                               CUdeviceptr p, CUstream s) {
  return FreeAsync(GpuApi::kCuMemFreeAsync_ptsz, real, caller, p, s);
}

// ---- pools ------------------------------------------------------------------------------------------

CUresult L_cuMemPoolCreate(decltype(&::cuMemPoolCreate) real, const void* caller,
                           CUmemoryPool* pool, const CUmemPoolProps* props) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(pool, props);
  return TracedDriver(GpuApi::kCuMemPoolCreate, false, caller, Addr(real),
                      [&] { return real(pool, props); }, [&](const Call& c, CUresult r) {
                        const bool on_device =
                            props != nullptr && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
                        RecordPool(c, r == CUDA_SUCCESS && pool != nullptr ? U(*pool) : 0,
                                   on_device ? props->location.id : -1,
                                   props != nullptr ? props->maxSize : 0);
                      });
}

CUresult L_cuMemPoolDestroy(decltype(&::cuMemPoolDestroy) real, const void* caller,
                            CUmemoryPool pool) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(pool);
  return TracedDriver(GpuApi::kCuMemPoolDestroy, false, caller, Addr(real),
                      [&] { return real(pool); },
                      [&](const Call& c, CUresult) { RecordPool(c, U(pool), -1, 0); });
}

CUresult L_cuMemPoolTrimTo(decltype(&::cuMemPoolTrimTo) real, const void* caller, CUmemoryPool pool,
                           size_t keep) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(pool, keep);
  return TracedDriver(GpuApi::kCuMemPoolTrimTo, false, caller, Addr(real),
                      [&] { return real(pool, keep); },
                      [&](const Call& c, CUresult) { RecordPool(c, U(pool), -1, keep); });
}

// ---- virtual memory management (PyTorch's expandable segments) ------------------------------------

CUresult L_cuMemCreate(decltype(&::cuMemCreate) real, const void* caller,
                       CUmemGenericAllocationHandle* handle, size_t size,
                       const CUmemAllocationProp* prop, unsigned long long flags) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(handle, size, prop, flags);
  return TracedDriver(GpuApi::kCuMemCreate, false, caller, Addr(real),
                      [&] { return real(handle, size, prop, flags); },
                      [&](const Call& c, CUresult r) {
                        VmmFacts v;
                        v.handle = r == CUDA_SUCCESS && handle != nullptr ? *handle : 0;
                        v.size = size;
                        if (prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
                          v.device = prop->location.id;
                        }
                        RecordVmm(c, v);
                      });
}

CUresult L_cuMemRelease(decltype(&::cuMemRelease) real, const void* caller,
                        CUmemGenericAllocationHandle handle) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(handle);
  return TracedDriver(GpuApi::kCuMemRelease, false, caller, Addr(real),
                      [&] { return real(handle); }, [&](const Call& c, CUresult) {
                        VmmFacts v;
                        v.handle = handle;
                        RecordVmm(c, v);
                      });
}

CUresult L_cuMemMap(decltype(&::cuMemMap) real, const void* caller, CUdeviceptr ptr, size_t size,
                    size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(ptr, size, offset, handle, flags);
  return TracedDriver(GpuApi::kCuMemMap, false, caller, Addr(real),
                      [&] { return real(ptr, size, offset, handle, flags); },
                      [&](const Call& c, CUresult) {
                        VmmFacts v;
                        v.handle = handle;
                        v.addr = ptr;
                        v.size = size;
                        v.offset = offset;
                        RecordVmm(c, v);
                      });
}

CUresult L_cuMemUnmap(decltype(&::cuMemUnmap) real, const void* caller, CUdeviceptr ptr,
                      size_t size) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(ptr, size);
  return TracedDriver(GpuApi::kCuMemUnmap, false, caller, Addr(real),
                      [&] { return real(ptr, size); }, [&](const Call& c, CUresult) {
                        VmmFacts v;
                        v.addr = ptr;
                        v.size = size;
                        RecordVmm(c, v);
                      });
}

CUresult L_cuMemAddressReserve(decltype(&::cuMemAddressReserve) real, const void* caller,
                               CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                               unsigned long long flags) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(ptr, size, alignment, addr, flags);
  return TracedDriver(GpuApi::kCuMemAddressReserve, false, caller, Addr(real),
                      [&] { return real(ptr, size, alignment, addr, flags); },
                      [&](const Call& c, CUresult r) {
                        VmmFacts v;
                        v.addr = r == CUDA_SUCCESS && ptr != nullptr ? *ptr : 0;
                        v.size = size;
                        v.offset = alignment;
                        v.handle = addr;
                        RecordVmm(c, v);
                      });
}

CUresult L_cuMemAddressFree(decltype(&::cuMemAddressFree) real, const void* caller, CUdeviceptr ptr,
                            size_t size) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(ptr, size);
  return TracedDriver(GpuApi::kCuMemAddressFree, false, caller, Addr(real),
                      [&] { return real(ptr, size); }, [&](const Call& c, CUresult) {
                        VmmFacts v;
                        v.addr = ptr;
                        v.size = size;
                        RecordVmm(c, v);
                      });
}

// ---- modules and libraries loaded at run time -----------------------------------------------------

namespace {
template <class Run>
CUresult Module(GpuApi api, const void* real, const void* caller, void* const* out,
                const void* image, const char* path, Run&& run) {
  return TracedDriver(api, false, caller, real, run, [&](const Call& c, CUresult r) {
    RecordModule(c, r == CUDA_SUCCESS && out != nullptr ? U(*out) : 0, image, path);
  });
}
}  // namespace

CUresult L_cuModuleLoad(decltype(&::cuModuleLoad) real, const void* caller, CUmodule* m,
                        const char* fname) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(m, fname);
  return Module(GpuApi::kCuModuleLoad, Addr(real), caller, reinterpret_cast<void* const*>(m),
                nullptr, fname, [&] { return real(m, fname); });
}
CUresult L_cuModuleLoadData(decltype(&::cuModuleLoadData) real, const void* caller, CUmodule* m,
                            const void* image) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(m, image);
  return Module(GpuApi::kCuModuleLoadData, Addr(real), caller, reinterpret_cast<void* const*>(m),
                image, nullptr, [&] { return real(m, image); });
}
CUresult L_cuModuleLoadDataEx(decltype(&::cuModuleLoadDataEx) real, const void* caller,
                              CUmodule* m, const void* image, unsigned int n, CUjit_option* o,
                              void** v) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(m, image, n, o, v);
  return Module(GpuApi::kCuModuleLoadDataEx, Addr(real), caller, reinterpret_cast<void* const*>(m),
                image, nullptr, [&] { return real(m, image, n, o, v); });
}
CUresult L_cuModuleLoadFatBinary(decltype(&::cuModuleLoadFatBinary) real, const void* caller,
                                 CUmodule* m, const void* fatbin) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(m, fatbin);
  return Module(GpuApi::kCuModuleLoadFatBinary, Addr(real), caller,
                reinterpret_cast<void* const*>(m), fatbin, nullptr, [&] { return real(m, fatbin); });
}
CUresult L_cuLibraryLoadData(decltype(&::cuLibraryLoadData) real, const void* caller,
                             CUlibrary* lib, const void* code, CUjit_option* jo, void** jv,
                             unsigned int nj, CUlibraryOption* lo, void** lv, unsigned int nl) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(lib, code, jo, jv, nj, lo, lv, nl);
  return Module(GpuApi::kCuLibraryLoadData, Addr(real), caller,
                reinterpret_cast<void* const*>(lib), code, nullptr,
                [&] { return real(lib, code, jo, jv, nj, lo, lv, nl); });
}
CUresult L_cuLibraryLoadFromFile(decltype(&::cuLibraryLoadFromFile) real, const void* caller,
                                 CUlibrary* lib, const char* file, CUjit_option* jo, void** jv,
                                 unsigned int nj, CUlibraryOption* lo, void** lv,
                                 unsigned int nl) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(lib, file, jo, jv, nj, lo, lv, nl);
  return Module(GpuApi::kCuLibraryLoadFromFile, Addr(real), caller,
                reinterpret_cast<void* const*>(lib), nullptr, file,
                [&] { return real(lib, file, jo, jv, nj, lo, lv, nl); });
}

// ---- kernel launches and kernel names --------------------------------------------------------------
// A launch that succeeds costs one comparison of its result; a failed one is recorded
// (or, inside a runtime call, left for the runtime's record). Kernel handles are mapped
// to names when the program asks the driver for them.

namespace {
// A driver launch made inside a runtime launch is the runtime's (its hook notes it in the
// ring, with the host stub); one made by the program itself (or by a statically linked
// runtime) is noted here.
template <class Run>
__attribute__((always_inline)) inline CUresult Launch(GpuApi api, const void* caller,
                                                      const void* real, CUfunction f, CUstream s,
                                                      unsigned gx, unsigned gy, unsigned gz,
                                                      unsigned bx, unsigned by, unsigned bz,
                                                      Run&& run) {
  const CUresult r = run();
  if (__builtin_expect(r == CUDA_SUCCESS, 1)) {
    if (__builtin_expect(t_thread.runtime_depth == 0, 1)) {
      RingPush(static_cast<uint16_t>(api), f, U(s), gx, gy, gz, bx, by, bz);
    }
    return r;
  }
  LaunchFailed(api, GpuLayer::kDriver, caller, real, r, f, U(s));
  return r;
}
}  // namespace

CUresult L_cuLaunchKernel(decltype(&::cuLaunchKernel) real, const void* caller, CUfunction f,
                          unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                          unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  if (real == nullptr) return kNoRealDriver;
  return Launch(GpuApi::kCuLaunchKernel, caller, Addr(real), f, s, gx, gy, gz, bx, by, bz,
                [&] { return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra); });
}
CUresult L_cuLaunchKernel_ptsz(decltype(&::cuLaunchKernel_ptsz) real, const void* caller,
                               CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shmem, CUstream s,
                               void** params, void** extra) {
  if (real == nullptr) return kNoRealDriver;
  return Launch(GpuApi::kCuLaunchKernel_ptsz, caller, Addr(real), f, s, gx, gy, gz, bx, by, bz,
                [&] { return real(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra); });
}
namespace {
template <class Fn>
CUresult LaunchEx(GpuApi api, Fn real, const void* caller, const CUlaunchConfig* c, CUfunction f,
                  void** params, void** extra) {
  if (real == nullptr) return kNoRealDriver;
  if (c == nullptr) {
    return Launch(api, caller, Addr(real), f, nullptr, 0, 0, 0, 0, 0, 0,
                  [&] { return real(c, f, params, extra); });
  }
  return Launch(api, caller, Addr(real), f, c->hStream, c->gridDimX, c->gridDimY, c->gridDimZ,
                c->blockDimX, c->blockDimY, c->blockDimZ, [&] { return real(c, f, params, extra); });
}
}  // namespace
CUresult L_cuLaunchKernelEx(decltype(&::cuLaunchKernelEx) real, const void* caller,
                            const CUlaunchConfig* config, CUfunction f, void** params,
                            void** extra) {
  return LaunchEx(GpuApi::kCuLaunchKernelEx, real, caller, config, f, params, extra);
}
CUresult L_cuLaunchKernelEx_ptsz(decltype(&::cuLaunchKernelEx_ptsz) real, const void* caller,
                                 const CUlaunchConfig* config, CUfunction f, void** params,
                                 void** extra) {
  return LaunchEx(GpuApi::kCuLaunchKernelEx_ptsz, real, caller, config, f, params, extra);
}
CUresult L_cuLaunchCooperativeKernel(decltype(&::cuLaunchCooperativeKernel) real,
                                     const void* caller, CUfunction f, unsigned gx, unsigned gy,
                                     unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                     unsigned shmem, CUstream s, void** params) {
  if (real == nullptr) return kNoRealDriver;
  return Launch(GpuApi::kCuLaunchCooperativeKernel, caller, Addr(real), f, s, gx, gy, gz, bx, by,
                bz, [&] { return real(f, gx, gy, gz, bx, by, bz, shmem, s, params); });
}
CUresult L_cuLaunchCooperativeKernel_ptsz(decltype(&::cuLaunchCooperativeKernel_ptsz) real,
                                          const void* caller, CUfunction f, unsigned gx,
                                          unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                          unsigned bz, unsigned shmem, CUstream s,
                                          void** params) {
  if (real == nullptr) return kNoRealDriver;
  return Launch(GpuApi::kCuLaunchCooperativeKernel_ptsz, caller, Addr(real), f, s, gx, gy, gz, bx,
                by, bz, [&] { return real(f, gx, gy, gz, bx, by, bz, shmem, s, params); });
}

// ---- kernel lookups ------------------------------------------------------------------------------
// A lookup that succeeds names its handle (one GpuFunction record); one that fails for
// want of an image is the launch failure of a program (or statically linked runtime)
// that loads lazily: the real CUDA 13 driver loads a library's code for the GPU at
// cuLibraryGetKernel and answers 209 there (measured on an H200; cuLibraryLoadData
// itself succeeds).

namespace {
void NoteFunction(GpuApi api, const void* caller, const void* real, const FunctionFacts& f) {
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  const uint64_t now = Ticks();
  RecordFunction(Call{api, GpuLayer::kDriver, caller, real, now, now, 0}, f);
}

// cuKernelGetFunction may be called for every launch: its mapping is noted once per
// CUfunction (the thread's last handle, then a lock-free set of the handles seen; past its
// capacity every call is noted).
constexpr size_t kSeenSlots = 4096;
uint64_t g_seen_functions[kSeenSlots];
constinit thread_local uint64_t t_last_function CT_TLS = 0;
bool FirstSighting(uint64_t handle) {
  if (__builtin_expect(handle == t_last_function, 1)) return false;
  t_last_function = handle;
  uint64_t h = handle * 0x9E3779B97F4A7C15ull;
  for (size_t probe = 0; probe < 16; ++probe, h += 0x9E3779B97F4A7C15ull) {
    uint64_t& slot = g_seen_functions[(h >> 52) & (kSeenSlots - 1)];
    uint64_t cur = __atomic_load_n(&slot, __ATOMIC_RELAXED);
    if (cur == handle) return false;
    if (cur == 0 && __atomic_compare_exchange_n(&slot, &cur, handle, false, __ATOMIC_RELAXED,
                                                __ATOMIC_RELAXED)) {
      return true;
    }
    if (cur == handle) return false;
  }
  return true;
}
}  // namespace

namespace {
// A lookup by name in a module or library: its handle named on success, the failure noted.
template <class Fn, class Handle, class Container>
CUresult NamedLookup(GpuApi api, Fn real, const void* caller, Handle* out, Container in,
                     const char* name) {
  if (real == nullptr) return kNoRealDriver;
  const CUresult r = real(out, in, name);
  if (r == CUDA_SUCCESS) {
    if (out != nullptr && name != nullptr) {
      FunctionFacts ff;
      ff.handle = U(*out);
      ff.module = U(in);
      ff.name = name;
      NoteFunction(api, caller, Addr(real), ff);
    }
    return r;
  }
  LookupFailed(api, caller, Addr(real), r, nullptr, U(in), name);
  return r;
}
}  // namespace

CUresult L_cuModuleGetFunction(decltype(&::cuModuleGetFunction) real, const void* caller,
                               CUfunction* f, CUmodule m, const char* name) {
  return NamedLookup(GpuApi::kCuModuleGetFunction, real, caller, f, m, name);
}
CUresult L_cuLibraryGetKernel(decltype(&::cuLibraryGetKernel) real, const void* caller,
                              CUkernel* k, CUlibrary lib, const char* name) {
  return NamedLookup(GpuApi::kCuLibraryGetKernel, real, caller, k, lib, name);
}
CUresult L_cuKernelGetFunction(decltype(&::cuKernelGetFunction) real, const void* caller,
                               CUfunction* f, CUkernel k) {
  if (real == nullptr) return kNoRealDriver;
  const CUresult r = real(f, k);
  if (r == CUDA_SUCCESS) {
    if (f != nullptr && *f != nullptr && FirstSighting(U(*f))) {
      FunctionFacts ff;
      ff.handle = U(*f);
      ff.kernel = U(k);
      NoteFunction(GpuApi::kCuKernelGetFunction, caller, Addr(real), ff);
    }
    return r;
  }
  LookupFailed(GpuApi::kCuKernelGetFunction, caller, Addr(real), r, k, 0, nullptr);
  return r;
}
CUresult L_cuFuncGetName(decltype(&::cuFuncGetName) real, const void* caller, const char** name,
                         CUfunction f) {
  if (real == nullptr) return kNoRealDriver;
  const CUresult r = real(name, f);
  if (r == CUDA_SUCCESS && name != nullptr && *name != nullptr) {
    FunctionFacts ff;
    ff.handle = U(f);
    ff.name = *name;
    NoteFunction(GpuApi::kCuFuncGetName, caller, Addr(real), ff);
  }
  return r;
}

// ---- synchronising calls and copies --------------------------------------------------------------
// As at the runtime level (runtime_hooks.cpp): success costs the comparison (and a
// synchronisation's epoch); a sticky error is the device fault. Inside a runtime call the
// runtime's hook does both.

namespace {
template <class Run>
inline CUresult Sync(GpuApi api, const void* caller, const void* real, Marks marks,
                     const FaultScope& where, Run&& run) {
  return SyncCall<CUresult>(api, GpuLayer::kDriver, caller, real, marks, where, run);
}
}  // namespace

CUresult L_cuCtxSynchronize(decltype(&::cuCtxSynchronize) real, const void* caller) {
  if (real == nullptr) return kNoRealDriver;
  return Sync(GpuApi::kCuCtxSynchronize, caller, Addr(real), Marks::kDevice, FaultScope{},
              [&] { return real(); });
}
CUresult L_cuCtxSynchronize_v2(decltype(&::cuCtxSynchronize_v2) real, const void* caller,
                               CUcontext ctx) {
  if (real == nullptr) return kNoRealDriver;
  return Sync(GpuApi::kCuCtxSynchronize_v2, caller, Addr(real), Marks::kDevice, FaultScope{},
              [&] { return real(ctx); });
}
CUresult L_cuStreamSynchronize(decltype(&::cuStreamSynchronize) real, const void* caller,
                               CUstream s) {
  if (real == nullptr) return kNoRealDriver;
  return Sync(GpuApi::kCuStreamSynchronize, caller, Addr(real), Marks::kStream, OnStream(s),
              [&] { return real(s); });
}
CUresult L_cuStreamSynchronize_ptsz(decltype(&::cuStreamSynchronize_ptsz) real,
                                    const void* caller, CUstream s) {
  if (real == nullptr) return kNoRealDriver;
  return Sync(GpuApi::kCuStreamSynchronize_ptsz, caller, Addr(real), Marks::kStream, OnStream(s),
              [&] { return real(s); });
}
CUresult L_cuStreamQuery(decltype(&::cuStreamQuery) real, const void* caller, CUstream s) {
  if (real == nullptr) return kNoRealDriver;
  return Sync(GpuApi::kCuStreamQuery, caller, Addr(real), Marks::kStream, OnStream(s),
              [&] { return real(s); });
}
CUresult L_cuStreamQuery_ptsz(decltype(&::cuStreamQuery_ptsz) real, const void* caller,
                              CUstream s) {
  if (real == nullptr) return kNoRealDriver;
  return Sync(GpuApi::kCuStreamQuery_ptsz, caller, Addr(real), Marks::kStream, OnStream(s),
              [&] { return real(s); });
}
CUresult L_cuEventSynchronize(decltype(&::cuEventSynchronize) real, const void* caller,
                              CUevent e) {
  if (real == nullptr) return kNoRealDriver;
  return Sync(GpuApi::kCuEventSynchronize, caller, Addr(real), Marks::kNothing, FaultScope{},
              [&] { return real(e); });
}
CUresult L_cuEventQuery(decltype(&::cuEventQuery) real, const void* caller, CUevent e) {
  if (real == nullptr) return kNoRealDriver;
  return Sync(GpuApi::kCuEventQuery, caller, Addr(real), Marks::kNothing, FaultScope{},
              [&] { return real(e); });
}

#define CT_SYNC_COPY(name, params, args)                                                    \
  CUresult L_##name(decltype(&::name) real, const void* caller, CT_UNPAREN params) {      \
    if (real == nullptr) return kNoRealDriver;                                             \
    return Sync(static_cast<GpuApi>(ApiOf(#name)), caller, Addr(real), Marks::kNothing, FaultScope{},        \
                [&] { return real args; });                                                \
  }
#define CT_ASYNC_COPY(name, params, args, stream)                                           \
  CUresult L_##name(decltype(&::name) real, const void* caller, CT_UNPAREN params) {      \
    if (real == nullptr) return kNoRealDriver;                                             \
    return Sync(static_cast<GpuApi>(ApiOf(#name)), caller, Addr(real), Marks::kNothing, OnStream(stream),    \
                [&] { return real args; });                                                \
  }
#define CT_UNPAREN(...) __VA_ARGS__
// A synchronous copy waits for the legacy default stream (and so every blocking stream).
CT_SYNC_COPY(cuMemcpy, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))
CT_SYNC_COPY(cuMemcpy_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))
CT_SYNC_COPY(cuMemcpyHtoD_v2, (CUdeviceptr d, const void* h, size_t n), (d, h, n))
CT_SYNC_COPY(cuMemcpyHtoD_v2_ptds, (CUdeviceptr d, const void* h, size_t n), (d, h, n))
CT_SYNC_COPY(cuMemcpyDtoH_v2, (void* h, CUdeviceptr d, size_t n), (h, d, n))
CT_SYNC_COPY(cuMemcpyDtoH_v2_ptds, (void* h, CUdeviceptr d, size_t n), (h, d, n))
CT_SYNC_COPY(cuMemcpyDtoD_v2, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))
CT_SYNC_COPY(cuMemcpyDtoD_v2_ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), (d, s, n))
CT_ASYNC_COPY(cuMemcpyAsync, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), (d, s, n, st), st)
CT_ASYNC_COPY(cuMemcpyAsync_ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st),
              (d, s, n, st), st)
CT_ASYNC_COPY(cuMemcpyHtoDAsync_v2, (CUdeviceptr d, const void* h, size_t n, CUstream st),
              (d, h, n, st), st)
CT_ASYNC_COPY(cuMemcpyHtoDAsync_v2_ptsz, (CUdeviceptr d, const void* h, size_t n, CUstream st),
              (d, h, n, st), st)
CT_ASYNC_COPY(cuMemcpyDtoHAsync_v2, (void* h, CUdeviceptr d, size_t n, CUstream st),
              (h, d, n, st), st)
CT_ASYNC_COPY(cuMemcpyDtoHAsync_v2_ptsz, (void* h, CUdeviceptr d, size_t n, CUstream st),
              (h, d, n, st), st)
#undef CT_SYNC_COPY
#undef CT_ASYNC_COPY
#undef CT_UNPAREN

// ---- initialisation and entry points ----------------------------------------------------------------

CUresult L_cuInit(decltype(&::cuInit) real, const void* caller, unsigned int flags) {
  if (real == nullptr) return kNoRealDriver;
  if (!Recording()) return real(flags);
  const CUresult r = TracedDriver(GpuApi::kCuInit, false, caller, Addr(real),
                                  [&] { return real(flags); }, [&](const Call& c, CUresult rc) {
                                    if (rc != CUDA_SUCCESS) RecordError(c);
                                  });
  if (r == CUDA_SUCCESS) CuptiAfterInit();
  return r;
}

// cuGetProcAddress hands out wrappers for the entry points above; everything else (and
// every failure, NULL argument and cuGetExportTable) passes through untouched.
CUresult L_cuGetProcAddress(decltype(&::cuGetProcAddress) real, const void*, const char* symbol,
                            void** pfn, int version, cuuint64_t flags) {
  if (real == nullptr) return kNoRealDriver;
  const CUresult r = real(symbol, pfn, version, flags);
  if (r == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
    *pfn = MapProcAddress(symbol, *pfn, version, flags, format::GpuInterposeVia::kGetProcAddress);
  }
  return r;
}

CUresult L_cuGetProcAddress_v2(decltype(&::cuGetProcAddress_v2) real, const void*,
                               const char* symbol, void** pfn, int version, cuuint64_t flags,
                               CUdriverProcAddressQueryResult* status) {
  if (real == nullptr) return kNoRealDriver;
  const CUresult r = real(symbol, pfn, version, flags, status);
  if (r == CUDA_SUCCESS && symbol != nullptr && pfn != nullptr && *pfn != nullptr) {
    *pfn =
        MapProcAddress(symbol, *pfn, version, flags, format::GpuInterposeVia::kGetProcAddressV2);
  }
  return r;
}

}  // namespace colabtrace::shim::gpu

// ---- exported entry points ---------------------------------------------------------------------------
#pragma GCC visibility push(default)
extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* d, size_t size) { CT_GPU_EXPORT(cuMemAlloc_v2, d, size); }
CUresult cuMemFree_v2(CUdeviceptr p) { CT_GPU_EXPORT(cuMemFree_v2, p); }
CUresult cuMemAllocManaged(CUdeviceptr* d, size_t size, unsigned int flags) {
  CT_GPU_EXPORT(cuMemAllocManaged, d, size, flags);
}
CUresult cuMemAllocPitch_v2(CUdeviceptr* d, size_t* pitch, size_t w, size_t h, unsigned int e) {
  CT_GPU_EXPORT(cuMemAllocPitch_v2, d, pitch, w, h, e);
}
CUresult cuMemAllocAsync(CUdeviceptr* d, size_t size, CUstream s) {
  CT_GPU_EXPORT(cuMemAllocAsync, d, size, s);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* d, size_t size, CUstream s) {
  CT_GPU_EXPORT(cuMemAllocAsync_ptsz, d, size, s);
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { CT_GPU_EXPORT(cuMemFreeAsync, p, s); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { CT_GPU_EXPORT(cuMemFreeAsync_ptsz, p, s); }
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* d, size_t size, CUmemoryPool pool, CUstream s) {
  CT_GPU_EXPORT(cuMemAllocFromPoolAsync, d, size, pool, s);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* d, size_t size, CUmemoryPool pool, CUstream s) {
  CT_GPU_EXPORT(cuMemAllocFromPoolAsync_ptsz, d, size, pool, s);
}
CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  CT_GPU_EXPORT(cuMemPoolCreate, pool, props);
}
CUresult cuMemPoolDestroy(CUmemoryPool pool) { CT_GPU_EXPORT(cuMemPoolDestroy, pool); }
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  CT_GPU_EXPORT(cuMemPoolTrimTo, pool, keep);
}
CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t size, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  CT_GPU_EXPORT(cuMemCreate, h, size, prop, flags);
}
CUresult cuMemRelease(CUmemGenericAllocationHandle h) { CT_GPU_EXPORT(cuMemRelease, h); }
CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                  unsigned long long flags) {
  CT_GPU_EXPORT(cuMemMap, ptr, size, offset, h, flags);
}
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) { CT_GPU_EXPORT(cuMemUnmap, ptr, size); }
CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags) {
  CT_GPU_EXPORT(cuMemAddressReserve, ptr, size, alignment, addr, flags);
}
CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  CT_GPU_EXPORT(cuMemAddressFree, ptr, size);
}
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  CT_GPU_EXPORT(cuMemGetInfo_v2, free_bytes, total);
}
CUresult cuMemAllocHost_v2(void** p, size_t size) { CT_GPU_EXPORT(cuMemAllocHost_v2, p, size); }
CUresult cuMemHostAlloc(void** p, size_t size, unsigned int flags) {
  CT_GPU_EXPORT(cuMemHostAlloc, p, size, flags);
}
CUresult cuMemFreeHost(void* p) { CT_GPU_EXPORT(cuMemFreeHost, p); }
CUresult cuModuleLoad(CUmodule* m, const char* fname) { CT_GPU_EXPORT(cuModuleLoad, m, fname); }
CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  CT_GPU_EXPORT(cuModuleLoadData, m, image);
}
CUresult cuModuleLoadDataEx(CUmodule* m, const void* image, unsigned int n, CUjit_option* o,
                            void** v) {
  CT_GPU_EXPORT(cuModuleLoadDataEx, m, image, n, o, v);
}
CUresult cuModuleLoadFatBinary(CUmodule* m, const void* fatbin) {
  CT_GPU_EXPORT(cuModuleLoadFatBinary, m, fatbin);
}
CUresult cuLibraryLoadData(CUlibrary* lib, const void* code, CUjit_option* jo, void** jv,
                           unsigned int nj, CUlibraryOption* lo, void** lv, unsigned int nl) {
  CT_GPU_EXPORT(cuLibraryLoadData, lib, code, jo, jv, nj, lo, lv, nl);
}
CUresult cuLibraryLoadFromFile(CUlibrary* lib, const char* file, CUjit_option* jo, void** jv,
                               unsigned int nj, CUlibraryOption* lo, void** lv, unsigned int nl) {
  CT_GPU_EXPORT(cuLibraryLoadFromFile, lib, file, jo, jv, nj, lo, lv, nl);
}
CUresult cuInit(unsigned int flags) { CT_GPU_EXPORT(cuInit, flags); }
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                        unsigned by, unsigned bz, unsigned sh, CUstream s, void** p, void** e) {
  CT_GPU_EXPORT(cuLaunchKernel, f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned sh, CUstream s, void** p,
                             void** e) {
  CT_GPU_EXPORT(cuLaunchKernel_ptsz, f, gx, gy, gz, bx, by, bz, sh, s, p, e);
}
CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** p, void** e) {
  CT_GPU_EXPORT(cuLaunchKernelEx, c, f, p, e);
}
CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* c, CUfunction f, void** p, void** e) {
  CT_GPU_EXPORT(cuLaunchKernelEx_ptsz, c, f, p, e);
}
CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned sh, CUstream s,
                                   void** p) {
  CT_GPU_EXPORT(cuLaunchCooperativeKernel, f, gx, gy, gz, bx, by, bz, sh, s, p);
}
CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned sh,
                                        CUstream s, void** p) {
  CT_GPU_EXPORT(cuLaunchCooperativeKernel_ptsz, f, gx, gy, gz, bx, by, bz, sh, s, p);
}
CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  CT_GPU_EXPORT(cuModuleGetFunction, f, m, name);
}
CUresult cuLibraryGetKernel(CUkernel* k, CUlibrary lib, const char* name) {
  CT_GPU_EXPORT(cuLibraryGetKernel, k, lib, name);
}
CUresult cuFuncGetName(const char** name, CUfunction f) { CT_GPU_EXPORT(cuFuncGetName, name, f); }
CUresult cuKernelGetFunction(CUfunction* f, CUkernel k) { CT_GPU_EXPORT(cuKernelGetFunction, f, k); }
CUresult cuCtxSynchronize(void) { CT_GPU_EXPORT(cuCtxSynchronize); }
CUresult cuCtxSynchronize_v2(CUcontext c) { CT_GPU_EXPORT(cuCtxSynchronize_v2, c); }
CUresult cuStreamSynchronize(CUstream s) { CT_GPU_EXPORT(cuStreamSynchronize, s); }
CUresult cuStreamSynchronize_ptsz(CUstream s) { CT_GPU_EXPORT(cuStreamSynchronize_ptsz, s); }
CUresult cuStreamQuery(CUstream s) { CT_GPU_EXPORT(cuStreamQuery, s); }
CUresult cuStreamQuery_ptsz(CUstream s) { CT_GPU_EXPORT(cuStreamQuery_ptsz, s); }
CUresult cuEventSynchronize(CUevent e) { CT_GPU_EXPORT(cuEventSynchronize, e); }
CUresult cuEventQuery(CUevent e) { CT_GPU_EXPORT(cuEventQuery, e); }
CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { CT_GPU_EXPORT(cuMemcpy, d, s, n); }
CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  CT_GPU_EXPORT(cuMemcpy_ptds, d, s, n);
}
CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  CT_GPU_EXPORT(cuMemcpyAsync, d, s, n, st);
}
CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  CT_GPU_EXPORT(cuMemcpyAsync_ptsz, d, s, n, st);
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void* h, size_t n) {
  CT_GPU_EXPORT(cuMemcpyHtoD_v2, d, h, n);
}
CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void* h, size_t n) {
  CT_GPU_EXPORT(cuMemcpyHtoD_v2_ptds, d, h, n);
}
CUresult cuMemcpyDtoH_v2(void* h, CUdeviceptr d, size_t n) {
  CT_GPU_EXPORT(cuMemcpyDtoH_v2, h, d, n);
}
CUresult cuMemcpyDtoH_v2_ptds(void* h, CUdeviceptr d, size_t n) {
  CT_GPU_EXPORT(cuMemcpyDtoH_v2_ptds, h, d, n);
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  CT_GPU_EXPORT(cuMemcpyDtoD_v2, d, s, n);
}
CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  CT_GPU_EXPORT(cuMemcpyDtoD_v2_ptds, d, s, n);
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void* h, size_t n, CUstream st) {
  CT_GPU_EXPORT(cuMemcpyHtoDAsync_v2, d, h, n, st);
}
CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void* h, size_t n, CUstream st) {
  CT_GPU_EXPORT(cuMemcpyHtoDAsync_v2_ptsz, d, h, n, st);
}
CUresult cuMemcpyDtoHAsync_v2(void* h, CUdeviceptr d, size_t n, CUstream st) {
  CT_GPU_EXPORT(cuMemcpyDtoHAsync_v2, h, d, n, st);
}
CUresult cuMemcpyDtoHAsync_v2_ptsz(void* h, CUdeviceptr d, size_t n, CUstream st) {
  CT_GPU_EXPORT(cuMemcpyDtoHAsync_v2_ptsz, h, d, n, st);
}
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  CT_GPU_EXPORT(cuGetProcAddress, symbol, pfn, version, flags);
}
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  CT_GPU_EXPORT(cuGetProcAddress_v2, symbol, pfn, version, flags, status);
}

}  // extern "C"
#pragma GCC visibility pop

