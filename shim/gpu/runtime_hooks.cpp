// CUDA runtime entry points (cuda*): thin exported hooks and their logic.
//
// Each L_<name> runs the real function with t_thread.runtime_depth raised (so the driver
// wrappers underneath record nothing of their own) and then records one event. The
// exported definitions are unversioned: they interpose cudaMalloc@libcudart.so.12 and
// @libcudart.so.13 alike, and call the definition the caller would have bound to.
#include "entry_points.h"
#include "launch_ring.h"
#include "live_set.h"

namespace colabtrace::shim::gpu {
namespace {

// What a hook returns when nothing but the shim defines the function (only reachable
// through a pointer the program took from the shim itself).
constexpr cudaError_t kNoRealRuntime = cudaErrorSymbolNotFound;

template <class F> const void* Addr(F f) { return reinterpret_cast<const void*>(f); }

uint64_t U(const void* p) { return reinterpret_cast<uint64_t>(p); }

// Runs run() as one traced runtime call, then rec(call, result) inside a ShimScope.
template <class Run, class Rec>
inline cudaError_t TracedRuntime(GpuApi api, const void* caller, const void* real, Run&& run,
                                 Rec&& rec) {
  ThreadState& t = t_thread;
  Call c{api, GpuLayer::kRuntime, caller, real, 0, 0, 0};
  ++t.runtime_depth;
  t_gpu.inner_api = 0;
  t_gpu.inner_rc = 0;
  t_gpu.inner_real = nullptr;
  c.t0 = Ticks();
  const cudaError_t r = run();
  c.t1 = Ticks();
  --t.runtime_depth;
  c.rc = static_cast<int64_t>(r);
  {
    ShimScope scope;
    if (scope.entered()) rec(c, r);
  }
  return r;
}

template <class Fn>
cudaError_t RuntimeAlloc(GpuApi api, Fn real, const void* caller, void** out, AllocFacts a,
                         auto&& run) {
  return TracedRuntime(api, caller, Addr(real), run, [&](const Call& c, cudaError_t r) {
    a.addr = r == cudaSuccess && out != nullptr ? U(*out) : 0;
    RecordAlloc(c, a);
  });
}

template <class Fn>
cudaError_t RuntimeFree(GpuApi api, Fn real, const void* caller, const void* addr, uint64_t stream,
                        auto&& run) {
  // Out of the live set before the free is called: once the memory is released another
  // thread may get the address back and put it in the set.
  format::GpuLiveSlot slot;
  const bool taken = LiveTake(U(addr), &slot);
  return TracedRuntime(api, caller, Addr(real), run, [&](const Call& c, cudaError_t) {
    RecordFree(c, U(addr), stream, taken ? &slot : nullptr);
  });
}

}  // namespace

// ---- allocation -------------------------------------------------------------------------------

cudaError_t L_cudaMalloc(decltype(&::cudaMalloc) real, const void* caller, void** p, size_t size) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p, size);
  AllocFacts a;
  a.size = size;
  return RuntimeAlloc(GpuApi::kCudaMalloc, real, caller, p, a, [&] { return real(p, size); });
}

cudaError_t L_cudaMallocManaged(decltype(&::cudaMallocManaged) real, const void* caller, void** p,
                                size_t size, unsigned int flags) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p, size, flags);
  AllocFacts a;
  a.size = size;
  a.flags = flags;
  return RuntimeAlloc(GpuApi::kCudaMallocManaged, real, caller, p, a,
                      [&] { return real(p, size, flags); });
}

cudaError_t L_cudaMallocPitch(decltype(&::cudaMallocPitch) real, const void* caller, void** p,
                              size_t* pitch, size_t width, size_t height) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p, pitch, width, height);
  return TracedRuntime(
      GpuApi::kCudaMallocPitch, caller, Addr(real), [&] { return real(p, pitch, width, height); },
      [&](const Call& c, cudaError_t r) {
        AllocFacts a;
        const bool ok = r == cudaSuccess && p != nullptr && pitch != nullptr;
        a.addr = ok ? U(*p) : 0;
        a.pitch = ok ? *pitch : 0;
        a.size = ok ? *pitch * height : width * height;
        RecordAlloc(c, a);
      });
}

cudaError_t L_cudaMallocHost(decltype(&::cudaMallocHost) real, const void* caller, void** p,
                             size_t size) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p, size);
  AllocFacts a;
  a.size = size;
  a.device = -1;  // pinned host memory belongs to no device
  return RuntimeAlloc(GpuApi::kCudaMallocHost, real, caller, p, a, [&] { return real(p, size); });
}

cudaError_t L_cudaHostAlloc(decltype(&::cudaHostAlloc) real, const void* caller, void** p,
                            size_t size, unsigned int flags) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p, size, flags);
  AllocFacts a;
  a.size = size;
  a.flags = flags;
  a.device = -1;
  return RuntimeAlloc(GpuApi::kCudaHostAlloc, real, caller, p, a,
                      [&] { return real(p, size, flags); });
}

// ---- stream-ordered allocation ----------------------------------------------------------------

namespace {
template <class Fn>
cudaError_t MallocAsync(GpuApi api, Fn real, const void* caller, void** p, size_t size,
                        cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p, size, stream);
  AllocFacts a;
  a.size = size;
  a.stream = U(stream);
  return RuntimeAlloc(api, real, caller, p, a, [&] { return real(p, size, stream); });
}

template <class Fn>
cudaError_t MallocFromPool(GpuApi api, Fn real, const void* caller, void** p, size_t size,
                           cudaMemPool_t pool, cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p, size, pool, stream);
  AllocFacts a;
  a.size = size;
  a.stream = U(stream);
  a.pool = U(pool);
  return RuntimeAlloc(api, real, caller, p, a, [&] { return real(p, size, pool, stream); });
}

template <class Fn>
cudaError_t FreeAsync(GpuApi api, Fn real, const void* caller, void* p, cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p, stream);
  return RuntimeFree(api, real, caller, p, U(stream), [&] { return real(p, stream); });
}
}  // namespace

cudaError_t L_cudaMallocAsync(decltype(&::cudaMallocAsync) real, const void* caller, void** p,
                              size_t size, cudaStream_t stream) {
  return MallocAsync(GpuApi::kCudaMallocAsync, real, caller, p, size, stream);
}
cudaError_t L_cudaMallocAsync_ptsz(decltype(&::cudaMallocAsync_ptsz) real, const void* caller,
                                   void** p, size_t size, cudaStream_t stream) {
  return MallocAsync(GpuApi::kCudaMallocAsync_ptsz, real, caller, p, size, stream);
}
cudaError_t L_cudaMallocFromPoolAsync(decltype(&::cudaMallocFromPoolAsync) real, const void* caller,
                                      void** p, size_t size, cudaMemPool_t pool,
                                      cudaStream_t stream) {
  return MallocFromPool(GpuApi::kCudaMallocFromPoolAsync, real, caller, p, size, pool, stream);
}
cudaError_t L_cudaMallocFromPoolAsync_ptsz(decltype(&::cudaMallocFromPoolAsync_ptsz) real,
                                           const void* caller, void** p, size_t size,
                                           cudaMemPool_t pool, cudaStream_t stream) {
  return MallocFromPool(GpuApi::kCudaMallocFromPoolAsync_ptsz, real, caller, p, size, pool, stream);
}
cudaError_t L_cudaFreeAsync(decltype(&::cudaFreeAsync) real, const void* caller, void* p,
                            cudaStream_t stream) {
  return FreeAsync(GpuApi::kCudaFreeAsync, real, caller, p, stream);
}
cudaError_t L_cudaFreeAsync_ptsz(decltype(&::cudaFreeAsync_ptsz) real, const void* caller, void* p,
                                 cudaStream_t stream) {
  return FreeAsync(GpuApi::kCudaFreeAsync_ptsz, real, caller, p, stream);
}

// ---- frees ------------------------------------------------------------------------------------

cudaError_t L_cudaFree(decltype(&::cudaFree) real, const void* caller, void* p) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p);
  return RuntimeFree(GpuApi::kCudaFree, real, caller, p, 0, [&] { return real(p); });
}

cudaError_t L_cudaFreeHost(decltype(&::cudaFreeHost) real, const void* caller, void* p) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(p);
  return RuntimeFree(GpuApi::kCudaFreeHost, real, caller, p, 0, [&] { return real(p); });
}

// ---- queries ------------------------------------------------------------------------------------

cudaError_t L_cudaMemGetInfo(decltype(&::cudaMemGetInfo) real, const void* caller,
                             size_t* free_bytes, size_t* total) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(free_bytes, total);
  return TracedRuntime(GpuApi::kCudaMemGetInfo, caller, Addr(real),
                       [&] { return real(free_bytes, total); },
                       [&](const Call& c, cudaError_t) { RecordMemInfo(c, free_bytes, total); });
}

cudaError_t L_cudaRuntimeGetVersion(decltype(&::cudaRuntimeGetVersion) real, const void* caller,
                                    int* v) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(v);
  return TracedRuntime(GpuApi::kCudaRuntimeGetVersion, caller, Addr(real), [&] { return real(v); },
                       [&](const Call& c, cudaError_t) { RecordVersionQuery(c); });
}

cudaError_t L_cudaDriverGetVersion(decltype(&::cudaDriverGetVersion) real, const void* caller,
                                   int* v) {
  if (real == nullptr) return kNoRealRuntime;
  if (!Recording()) return real(v);
  return TracedRuntime(GpuApi::kCudaDriverGetVersion, caller, Addr(real), [&] { return real(v); },
                       [&](const Call& c, cudaError_t) { RecordVersionQuery(c); });
}

// ---- kernel launches -----------------------------------------------------------------------------
// A launch that succeeds costs one comparison of its result and a few stores into the
// thread's launch ring (launch_ring.h; plus the runtime_depth counter that keeps a driver
// launch wrapped underneath from recording it again): no record, no clock read; and, for a
// host stub, one compare with the thread's cache of stubs already named (the first launch
// of each writes its name: NoteStubLaunched). A failed
// one is recorded with its host stub (or nvcc's kernel handle).

namespace {
template <class Run>
__attribute__((always_inline)) inline cudaError_t Launch(GpuApi api, const void* caller,
                                                         const void* real, const void* func,
                                                         cudaStream_t stream, dim3 g, dim3 b,
                                                         Run&& run) {
  ThreadState& t = t_thread;
  ++t.runtime_depth;
  const cudaError_t r = run();
  --t.runtime_depth;
  if (__builtin_expect(r == cudaSuccess, 1)) {
    RingPush(static_cast<uint16_t>(api), func, U(stream), g.x, g.y, g.z, b.x, b.y, b.z);
    if (api != GpuApi::kNvccLaunchKernel && api != GpuApi::kNvccLaunchKernel_ptsz) {
      NoteStubLaunched(api, caller, real, func);  // nvcc's handles: named at __cudaGetKernel
    }
    return r;
  }
  LaunchFailed(api, GpuLayer::kRuntime, caller, real, r, func, U(stream));
  return r;
}
constexpr dim3 kNoDim{0, 0, 0};
}  // namespace

cudaError_t L_cudaLaunchKernel(decltype(&::cudaLaunchKernel) real, const void* caller,
                               const void* func, dim3 grid, dim3 block, void** args, size_t shmem,
                               cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  return Launch(GpuApi::kCudaLaunchKernel, caller, Addr(real), func, stream, grid, block,
                [&] { return real(func, grid, block, args, shmem, stream); });
}
cudaError_t L_cudaLaunchKernel_ptsz(decltype(&::cudaLaunchKernel_ptsz) real, const void* caller,
                                    const void* func, dim3 grid, dim3 block, void** args,
                                    size_t shmem, cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  return Launch(GpuApi::kCudaLaunchKernel_ptsz, caller, Addr(real), func, stream, grid, block,
                [&] { return real(func, grid, block, args, shmem, stream); });
}
cudaError_t L_cudaLaunchKernelExC(decltype(&::cudaLaunchKernelExC) real, const void* caller,
                                  const cudaLaunchConfig_t* config, const void* func, void** args) {
  if (real == nullptr) return kNoRealRuntime;
  return Launch(GpuApi::kCudaLaunchKernelExC, caller, Addr(real), func,
                config != nullptr ? config->stream : nullptr,
                config != nullptr ? config->gridDim : kNoDim,
                config != nullptr ? config->blockDim : kNoDim,
                [&] { return real(config, func, args); });
}
cudaError_t L_cudaLaunchKernelExC_ptsz(decltype(&::cudaLaunchKernelExC_ptsz) real,
                                       const void* caller, const cudaLaunchConfig_t* config,
                                       const void* func, void** args) {
  if (real == nullptr) return kNoRealRuntime;
  return Launch(GpuApi::kCudaLaunchKernelExC_ptsz, caller, Addr(real), func,
                config != nullptr ? config->stream : nullptr,
                config != nullptr ? config->gridDim : kNoDim,
                config != nullptr ? config->blockDim : kNoDim,
                [&] { return real(config, func, args); });
}
cudaError_t L_cudaLaunchCooperativeKernel(decltype(&::cudaLaunchCooperativeKernel) real,
                                          const void* caller, const void* func, dim3 grid,
                                          dim3 block, void** args, size_t shmem,
                                          cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  return Launch(GpuApi::kCudaLaunchCooperativeKernel, caller, Addr(real), func, stream, grid, block,
                [&] { return real(func, grid, block, args, shmem, stream); });
}
cudaError_t L_cudaLaunchCooperativeKernel_ptsz(decltype(&::cudaLaunchCooperativeKernel_ptsz) real,
                                               const void* caller, const void* func, dim3 grid,
                                               dim3 block, void** args, size_t shmem,
                                               cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  return Launch(GpuApi::kCudaLaunchCooperativeKernel_ptsz, caller, Addr(real), func, stream, grid,
                block, [&] { return real(func, grid, block, args, shmem, stream); });
}

// nvcc 13's host stubs: the handle from __cudaGetKernel stands for the stub; the analyzer
// names it through the GpuFunction record written here (once per stub: the stub keeps the
// handle in a static), with the kernel's name as the runtime gives it (cudaFuncGetName).
cudaError_t L___cudaGetKernel(decltype(&::__cudaGetKernel) real, const void* caller,
                              cudaKernel_t* kernel, const void* stub) {
  if (real == nullptr) return kNoRealRuntime;
  ThreadState& t = t_thread;
  ++t.runtime_depth;
  const cudaError_t r = real(kernel, stub);
  --t.runtime_depth;
  if (r == cudaSuccess && kernel != nullptr && *kernel != nullptr && Recording()) {
    ShimScope scope;
    if (scope.entered()) {
      const uint64_t now = Ticks();
      FunctionFacts f;
      f.handle = U(*kernel);
      f.stub = U(stub);
      f.name = RuntimeKernelName(Addr(real), stub);  // the name travels with the trace
      RecordFunction(Call{GpuApi::kNvccGetKernel, GpuLayer::kRuntime, caller, Addr(real), now, now, 0},
                     f);
    }
  }
  return r;
}
cudaError_t L___cudaLaunchKernel(decltype(&::__cudaLaunchKernel) real, const void* caller,
                                 cudaKernel_t kernel, dim3 grid, dim3 block, void** args,
                                 size_t shmem, cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  return Launch(GpuApi::kNvccLaunchKernel, caller, Addr(real), kernel, stream, grid, block,
                [&] { return real(kernel, grid, block, args, shmem, stream); });
}
cudaError_t L___cudaLaunchKernel_ptsz(decltype(&::__cudaLaunchKernel_ptsz) real,
                                      const void* caller, cudaKernel_t kernel, dim3 grid,
                                      dim3 block, void** args, size_t shmem, cudaStream_t stream) {
  if (real == nullptr) return kNoRealRuntime;
  return Launch(GpuApi::kNvccLaunchKernel_ptsz, caller, Addr(real), kernel, stream, grid, block,
                [&] { return real(kernel, grid, block, args, shmem, stream); });
}

// ---- synchronising calls and error queries --------------------------------------------------------
// Where an asynchronous device fault surfaces. Success costs the comparison of the result
// (and, for a stream or device synchronisation, the epoch that tells the launch ring
// which kernels it completed); a sticky error is the device fault (launch_ring.h).

namespace {
template <class Run>
inline cudaError_t Sync(GpuApi api, const void* caller, const void* real, Marks marks,
                        const FaultScope& where, Run&& run) {
  return SyncCall<cudaError_t>(api, GpuLayer::kRuntime, caller, real, marks, where, run);
}
}  // namespace

cudaError_t L_cudaDeviceSynchronize(decltype(&::cudaDeviceSynchronize) real, const void* caller) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaDeviceSynchronize, caller, Addr(real), Marks::kDevice, FaultScope{},
              [&] { return real(); });
}
cudaError_t L_cudaStreamSynchronize(decltype(&::cudaStreamSynchronize) real, const void* caller,
                                    cudaStream_t s) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaStreamSynchronize, caller, Addr(real), Marks::kStream, OnStream(s),
              [&] { return real(s); });
}
cudaError_t L_cudaStreamSynchronize_ptsz(decltype(&::cudaStreamSynchronize_ptsz) real,
                                         const void* caller, cudaStream_t s) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaStreamSynchronize_ptsz, caller, Addr(real), Marks::kStream, OnStream(s),
              [&] { return real(s); });
}
cudaError_t L_cudaStreamQuery(decltype(&::cudaStreamQuery) real, const void* caller,
                              cudaStream_t s) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaStreamQuery, caller, Addr(real), Marks::kStream, OnStream(s),
              [&] { return real(s); });
}
cudaError_t L_cudaStreamQuery_ptsz(decltype(&::cudaStreamQuery_ptsz) real, const void* caller,
                                   cudaStream_t s) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaStreamQuery_ptsz, caller, Addr(real), Marks::kStream, OnStream(s),
              [&] { return real(s); });
}
cudaError_t L_cudaEventSynchronize(decltype(&::cudaEventSynchronize) real, const void* caller,
                                   cudaEvent_t e) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaEventSynchronize, caller, Addr(real), Marks::kNothing, FaultScope{},
              [&] { return real(e); });
}
cudaError_t L_cudaEventQuery(decltype(&::cudaEventQuery) real, const void* caller, cudaEvent_t e) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaEventQuery, caller, Addr(real), Marks::kNothing, FaultScope{},
              [&] { return real(e); });
}
// A synchronous copy waits for the legacy default stream, which waits for every blocking
// stream: a fault it reports may come from any of them.
cudaError_t L_cudaMemcpy(decltype(&::cudaMemcpy) real, const void* caller, void* dst,
                         const void* src, size_t n, cudaMemcpyKind kind) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaMemcpy, caller, Addr(real), Marks::kNothing, FaultScope{},
              [&] { return real(dst, src, n, kind); });
}
cudaError_t L_cudaMemcpy_ptds(decltype(&::cudaMemcpy_ptds) real, const void* caller, void* dst,
                              const void* src, size_t n, cudaMemcpyKind kind) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaMemcpy_ptds, caller, Addr(real), Marks::kNothing, FaultScope{},
              [&] { return real(dst, src, n, kind); });
}
cudaError_t L_cudaMemcpyAsync(decltype(&::cudaMemcpyAsync) real, const void* caller, void* dst,
                              const void* src, size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaMemcpyAsync, caller, Addr(real), Marks::kNothing, OnStream(s),
              [&] { return real(dst, src, n, kind, s); });
}
cudaError_t L_cudaMemcpyAsync_ptsz(decltype(&::cudaMemcpyAsync_ptsz) real, const void* caller,
                                   void* dst, const void* src, size_t n, cudaMemcpyKind kind,
                                   cudaStream_t s) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaMemcpyAsync_ptsz, caller, Addr(real), Marks::kNothing, OnStream(s),
              [&] { return real(dst, src, n, kind, s); });
}
cudaError_t L_cudaGetLastError(decltype(&::cudaGetLastError) real, const void* caller) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaGetLastError, caller, Addr(real), Marks::kNothing, FaultScope{},
              [&] { return real(); });
}
cudaError_t L_cudaPeekAtLastError(decltype(&::cudaPeekAtLastError) real, const void* caller) {
  if (real == nullptr) return kNoRealRuntime;
  return Sync(GpuApi::kCudaPeekAtLastError, caller, Addr(real), Marks::kNothing, FaultScope{},
              [&] { return real(); });
}

}  // namespace colabtrace::shim::gpu

// ---- exported entry points -----------------------------------------------------------------------
#pragma GCC visibility push(default)
extern "C" {

cudaError_t cudaMalloc(void** p, size_t size) { CT_GPU_EXPORT(cudaMalloc, p, size); }
cudaError_t cudaFree(void* p) { CT_GPU_EXPORT(cudaFree, p); }
cudaError_t cudaMallocAsync(void** p, size_t size, cudaStream_t s) {
  CT_GPU_EXPORT(cudaMallocAsync, p, size, s);
}
cudaError_t cudaMallocAsync_ptsz(void** p, size_t size, cudaStream_t s) {
  CT_GPU_EXPORT(cudaMallocAsync_ptsz, p, size, s);
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t s) { CT_GPU_EXPORT(cudaFreeAsync, p, s); }
cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t s) { CT_GPU_EXPORT(cudaFreeAsync_ptsz, p, s); }
cudaError_t cudaMallocFromPoolAsync(void** p, size_t size, cudaMemPool_t pool, cudaStream_t s) {
  CT_GPU_EXPORT(cudaMallocFromPoolAsync, p, size, pool, s);
}
cudaError_t cudaMallocFromPoolAsync_ptsz(void** p, size_t size, cudaMemPool_t pool,
                                         cudaStream_t s) {
  CT_GPU_EXPORT(cudaMallocFromPoolAsync_ptsz, p, size, pool, s);
}
cudaError_t cudaMallocManaged(void** p, size_t size, unsigned int flags) {
  CT_GPU_EXPORT(cudaMallocManaged, p, size, flags);
}
cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  CT_GPU_EXPORT(cudaMallocPitch, p, pitch, width, height);
}
cudaError_t cudaMallocHost(void** p, size_t size) { CT_GPU_EXPORT(cudaMallocHost, p, size); }
cudaError_t cudaHostAlloc(void** p, size_t size, unsigned int flags) {
  CT_GPU_EXPORT(cudaHostAlloc, p, size, flags);
}
cudaError_t cudaFreeHost(void* p) { CT_GPU_EXPORT(cudaFreeHost, p); }
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  CT_GPU_EXPORT(cudaMemGetInfo, free_bytes, total);
}
cudaError_t cudaRuntimeGetVersion(int* v) { CT_GPU_EXPORT(cudaRuntimeGetVersion, v); }
cudaError_t cudaDriverGetVersion(int* v) { CT_GPU_EXPORT(cudaDriverGetVersion, v); }
cudaError_t cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** a, size_t sh, cudaStream_t s) {
  CT_GPU_EXPORT(cudaLaunchKernel, f, g, b, a, sh, s);
}
cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** a, size_t sh,
                                  cudaStream_t s) {
  CT_GPU_EXPORT(cudaLaunchKernel_ptsz, f, g, b, a, sh, s);
}
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* f, void** a) {
  CT_GPU_EXPORT(cudaLaunchKernelExC, c, f, a);
}
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* c, const void* f, void** a) {
  CT_GPU_EXPORT(cudaLaunchKernelExC_ptsz, c, f, a);
}
cudaError_t cudaLaunchCooperativeKernel(const void* f, dim3 g, dim3 b, void** a, size_t sh,
                                        cudaStream_t s) {
  CT_GPU_EXPORT(cudaLaunchCooperativeKernel, f, g, b, a, sh, s);
}
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* f, dim3 g, dim3 b, void** a, size_t sh,
                                             cudaStream_t s) {
  CT_GPU_EXPORT(cudaLaunchCooperativeKernel_ptsz, f, g, b, a, sh, s);
}
cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* stub) {
  CT_GPU_EXPORT(__cudaGetKernel, k, stub);
}
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t sh,
                               cudaStream_t s) {
  CT_GPU_EXPORT(__cudaLaunchKernel, k, g, b, a, sh, s);
}
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t sh,
                                    cudaStream_t s) {
  CT_GPU_EXPORT(__cudaLaunchKernel_ptsz, k, g, b, a, sh, s);
}
cudaError_t cudaDeviceSynchronize(void) { CT_GPU_EXPORT(cudaDeviceSynchronize); }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { CT_GPU_EXPORT(cudaStreamSynchronize, s); }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  CT_GPU_EXPORT(cudaStreamSynchronize_ptsz, s);
}
cudaError_t cudaStreamQuery(cudaStream_t s) { CT_GPU_EXPORT(cudaStreamQuery, s); }
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) { CT_GPU_EXPORT(cudaStreamQuery_ptsz, s); }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { CT_GPU_EXPORT(cudaEventSynchronize, e); }
cudaError_t cudaEventQuery(cudaEvent_t e) { CT_GPU_EXPORT(cudaEventQuery, e); }
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  CT_GPU_EXPORT(cudaMemcpy, d, s, n, k);
}
cudaError_t cudaMemcpy_ptds(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  CT_GPU_EXPORT(cudaMemcpy_ptds, d, s, n, k);
}
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
  CT_GPU_EXPORT(cudaMemcpyAsync, d, s, n, k, st);
}
cudaError_t cudaMemcpyAsync_ptsz(void* d, const void* s, size_t n, cudaMemcpyKind k,
                                 cudaStream_t st) {
  CT_GPU_EXPORT(cudaMemcpyAsync_ptsz, d, s, n, k, st);
}
cudaError_t cudaGetLastError(void) { CT_GPU_EXPORT(cudaGetLastError); }
cudaError_t cudaPeekAtLastError(void) { CT_GPU_EXPORT(cudaPeekAtLastError); }

}  // extern "C"
#pragma GCC visibility pop

