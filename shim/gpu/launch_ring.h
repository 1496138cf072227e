// The kernels in flight: the last successful launches, and the synchronisations that
// completed them, in the trace's state and ring chunks (state.h): written out as records
// when a device fault needs them (device_faults.cpp), and left in the file for the reader
// when the process is killed.
//
// A successful launch is never recorded (that would cost a record per launch). Instead
// each launching thread owns a small ring of the last kRingSlots launches (function or
// host stub, stream, grid, block, the interned id of its Python stack) in the trace's
// ring chunks: plain stores, no atomic read-modify-write, no clock read (a TSC read costs
// more than the launch path's 10 ns budget on a VM). Order across threads comes from the
// synchronisation epoch: every stream or device synchronisation bumps g_sync_epoch when
// it starts, a launch notes the epoch it returned in, and a successful synchronisation
// notes the epoch it began with per stream (or for the whole device). A launch whose
// epoch is below the last successful synchronisation of its stream has completed; the
// rest are "in flight" as far as the program knows.
//
// At the first sticky error (or a fatal signal) every ring is copied out, each slot
// under a per-slot sequence check (0 while being written), so a slot another thread is
// rewriting at that moment is skipped rather than torn.
#pragma once

#include <cstdint>

#include "gpu_module.h"
#include "python/python_stack.h"
#include "state.h"

namespace colabtrace::shim::gpu {

// The rings live in the trace's ring chunks (format::LaunchRing, wire.h): a process
// killed while its kernels ran leaves its last launches in the file (the reader makes
// gpu_launch_ring records of them, why 3).
using format::kRingSlots;
using format::LaunchRing;
using format::RingSlot;
inline constexpr int kMaxRings = 128;  // launching threads kept at once

extern uint32_t g_sync_epoch;

// The calling thread's ring, claimed from the pool at its first launch (a ring whose
// thread is gone is reclaimed when the pool is full); a ring that is never dumped when
// none can be had.
LaunchRing* ClaimRing();

// Notes one successful launch in the calling thread's ring.
__attribute__((always_inline)) inline void RingPush(uint16_t api, const void* func, uint64_t stream,
                                                    uint32_t gx, uint32_t gy, uint32_t gz,
                                                    uint32_t bx, uint32_t by, uint32_t bz) {
  LaunchRing* r = t_gpu.ring;
  if (__builtin_expect(r == nullptr, 0)) r = ClaimRing();
  const uint32_t n = r->next + 1;
  RingSlot& s = r->slots[n & (kRingSlots - 1)];
  __atomic_store_n(&s.seq, 0, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);  // a reader sees seq 0 before any new field
  s.epoch = __atomic_load_n(&g_sync_epoch, __ATOMIC_RELAXED);
  s.api = api;
  s.block[0] = static_cast<uint16_t>(bx);
  s.block[1] = static_cast<uint16_t>(by);
  s.block[2] = static_cast<uint16_t>(bz);
  s.func = reinterpret_cast<uint64_t>(func);
  s.stream = stream;
  s.grid[0] = gx;
  s.grid[1] = gy;
  s.grid[2] = gz;
  s.py_stack = __builtin_expect(python::PythonFramesOn(), 0) ? python::LaunchPythonStackId() : 0;
  __atomic_store_n(&s.seq, n, __ATOMIC_RELEASE);
  r->next = n;
}

// ---- synchronisation epochs ----------------------------------------------------------------

// At the start of a stream or device synchronisation: the epoch it covers launches below.
inline uint32_t SyncBegin() { return __atomic_add_fetch(&g_sync_epoch, 1, __ATOMIC_RELAXED); }
// After it succeeded: every launch on `stream` (all streams when device_wide) that returned
// before epoch `begun` has completed.
void SyncSucceeded(uint32_t begun, bool device_wide, uint64_t stream);

// ---- sticky errors --------------------------------------------------------------------------

using format::IsStickyGpuError;

// Where a call that reported an error waits: one stream, or the whole device.
struct FaultScope {
  uint64_t stream = 0;
  bool device_wide = true;
  const void* func = nullptr;  // the kernel of a launch that reported it
};

// A call that waits on one stream.
inline FaultScope OnStream(const void* stream) {
  FaultScope w;
  w.stream = reinterpret_cast<uint64_t>(stream);
  w.device_wide = false;
  return w;
}

// What a successful synchronising call tells the ring: nothing (a copy, an error query,
// an event), that one stream completed, or that the whole device did.
enum class Marks : uint8_t { kNothing, kStream, kDevice };

// A call returned a sticky error (call inside a ShimScope that entered): the first one is
// recorded with the launch ring, the first later one on its own; then nothing more.
void NoteStickyError(const Call& c, const FaultScope& where);

// True once a sticky error was recorded: launches failing after it belong to the fault.
bool DeviceFaultSeen();

// Whether api waits for the device's work to finish: a stream, context (device) or event
// synchronisation, or a synchronous copy (which waits for the legacy default stream).
// Queries (cudaStreamQuery, cudaEventQuery), the error queries and asynchronous copies
// return at once: they are never timed.
constexpr bool WaitsForDevice(GpuApi api) {
  switch (api) {
    case GpuApi::kCudaDeviceSynchronize:
    case GpuApi::kCudaStreamSynchronize:
    case GpuApi::kCudaStreamSynchronize_ptsz:
    case GpuApi::kCudaEventSynchronize:
    case GpuApi::kCudaMemcpy:
    case GpuApi::kCudaMemcpy_ptds:
    case GpuApi::kCuCtxSynchronize:
    case GpuApi::kCuCtxSynchronize_v2:
    case GpuApi::kCuStreamSynchronize:
    case GpuApi::kCuStreamSynchronize_ptsz:
    case GpuApi::kCuEventSynchronize:
    case GpuApi::kCuMemcpy:
    case GpuApi::kCuMemcpy_ptds:
    case GpuApi::kCuMemcpyHtoD_v2:
    case GpuApi::kCuMemcpyHtoD_v2_ptds:
    case GpuApi::kCuMemcpyDtoH_v2:
    case GpuApi::kCuMemcpyDtoH_v2_ptds:
    case GpuApi::kCuMemcpyDtoD_v2:
    case GpuApi::kCuMemcpyDtoD_v2_ptds:
      return true;
    default:
      return false;
  }
}

// A lower bound, in ticks, of format::kGpuSyncRecordNs: ticks are nanoseconds or TSC
// cycles, and an invariant TSC runs at well over 500 MHz. Calls that blocked less are
// dismissed with one comparison; NoteBlockingSync decides the rest exactly.
inline constexpr uint64_t kGpuSyncMinTicks = format::kGpuSyncRecordNs / 2;

// A synchronising call of the program's own blocked for `ticks` from t0: a GpuSync record
// when that is at least format::kGpuSyncRecordNs (cold; checks Recording itself).
__attribute__((noinline, cold)) void NoteBlockingSync(GpuApi api, GpuLayer layer, uint64_t t0,
                                                      uint64_t ticks, const FaultScope& where,
                                                      bool device_wide, int64_t rc);

// A synchronising call (or an error query, or a copy) of either layer: run() is the real
// call. Success costs the comparison and, for a stream or device synchronisation made by
// the program itself (not by a runtime hook's call underneath), the epoch; a failure goes
// to SyncFailed (gpu_module.h). A runtime call raises runtime_depth, as every runtime hook.
// A call that waits for the device (WaitsForDevice) made by the program itself is timed
// (two tick reads), and one that blocked measurably leaves a GpuSync record.
template <class R, class Run>
inline R SyncCall(GpuApi api, GpuLayer layer, const void* caller, const void* real, Marks marks,
                  const FaultScope& where, Run&& run) {
  ThreadState& t = t_thread;
  const bool runtime = layer == GpuLayer::kRuntime;
  const bool own = runtime || t.runtime_depth == 0;
  const bool marking = marks != Marks::kNothing && own;
  const bool timed = WaitsForDevice(api) && own;
  const uint32_t begun = marking ? SyncBegin() : 0;
  const uint64_t t0 = timed ? Ticks() : 0;
  // A wait for the device is noted while it lasts (state.h): a kernel that never ends
  // leaves the call, its stream and epoch in the trace for the reader.
  format::CallNote* note = nullptr;
  if (timed && Recording()) {
    note = BeginNoteFull(&format::ThreadNotes::call, format::InFlightCall::kGpuSync, static_cast<uint32_t>(api),
                         t0, where.stream, begun != 0 ? begun : __atomic_load_n(&g_sync_epoch, __ATOMIC_RELAXED) + 1,
                         where.device_wide || marks == Marks::kDevice ? format::kNoteDeviceWide : 0u, 0);
  }
  if (runtime) ++t.runtime_depth;
  const R r = run();
  if (runtime) --t.runtime_depth;
  EndNote(note);
  if (timed) {
    const uint64_t blocked = Ticks() - t0;
    if (__builtin_expect(blocked >= kGpuSyncMinTicks, 0)) {
      NoteBlockingSync(api, layer, t0, blocked, where, marks == Marks::kDevice, static_cast<int64_t>(r));
    }
  }
  if (__builtin_expect(r == 0, 1)) {
    if (marking) SyncSucceeded(begun, marks == Marks::kDevice, where.stream);
    return r;
  }
  SyncFailed(api, layer, caller, real, static_cast<int64_t>(r), where);
  return r;
}

// From the fatal-signal handler (signal context, own writer w): writes the launch ring
// unless the first sticky error already did.
void RecordRingAtSignal(ThreadState& w);

// A fork child's pool starts empty (its parent's launches are not its own).
void ResetLaunchRings();

}  // namespace colabtrace::shim::gpu
