// The launch ring, the synchronisation epochs and the device-fault state. See launch_ring.h.
#include "launch_ring.h"

#include <errno.h>

#include <cstring>

#include "colabtrace/format/launch_ring.h"
#include "modules.h"
#include "raw.h"
#include "state.h"
#include "writer.h"

namespace colabtrace::shim::gpu {

uint32_t g_sync_epoch = 1;

namespace {

// ---- the pool of rings ---------------------------------------------------------------------

// The rings handed out so far (in the trace's ring chunks), at most kMaxRings.
LaunchRing* g_rings[kMaxRings];
int g_ring_count = 0;
int g_rings_lock = 0;
// Launches of a thread that found no ring (more than kMaxRings live launching threads, or
// no trace): written, never read.
LaunchRing g_no_ring;

// The rings handed out, for readers (a ring is whole before its pointer is published).
int RingCount() { return __atomic_load_n(&g_ring_count, __ATOMIC_ACQUIRE); }

void Clear(LaunchRing& r) {
  r.next = 0;
  for (RingSlot& s : r.slots) __atomic_store_n(&s.seq, 0, __ATOMIC_RELAXED);
}

bool TryClaim(LaunchRing& r, int32_t expected, int32_t tid) {
  if (!__atomic_compare_exchange_n(&r.owner, &expected, tid, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    return false;
  }
  Clear(r);
  return true;
}

// ---- the streams' last successful synchronisations ----------------------------------------

// Small and lock-protected: only synchronisations (microseconds each) and the fault's
// one-time dump touch it. A stream pushed out of the table falls back to the device's
// epoch, which only makes more kernels count as in flight. The table lives in the trace's
// first state chunk (state.h), so a killed process leaves it for the reader too.
constexpr int kSyncedStreams = static_cast<int>(format::kSyncedStreams);
int g_synced_lock = 0;

bool Lock(bool wait) {
  while (__atomic_exchange_n(&g_synced_lock, 1, __ATOMIC_ACQUIRE) != 0) {
    if (!wait) return false;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
  }
  return true;
}
void Unlock() { __atomic_store_n(&g_synced_lock, 0, __ATOMIC_RELEASE); }

void RaiseTo(uint32_t* at, uint32_t epoch) {
  uint32_t cur = __atomic_load_n(at, __ATOMIC_RELAXED);
  while (cur < epoch &&
         !__atomic_compare_exchange_n(at, &cur, epoch, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// The epoch below which launches on `stream` are known complete. wait: false in a signal
// handler (the interrupted thread may hold the lock: then only the device's epoch).
uint32_t SyncedFor(uint64_t stream, bool wait) {
  const SyncedTable table = SyncedTableOf(/*may_claim=*/wait);
  uint32_t e = __atomic_load_n(table.device, __ATOMIC_RELAXED);
  if (!Lock(wait)) return e;
  for (int i = 0; i < kSyncedStreams; ++i) {
    const format::SyncedStream& s = table.streams[i];
    if (s.epoch != 0 && s.stream == stream && s.epoch > e) e = s.epoch;
  }
  Unlock();
  return e;
}

// ---- the device fault --------------------------------------------------------------------

int g_fault_state = 0;  // 0 none seen, 1 the first recorded, 2 the first later one recorded
int g_ring_written = 0;

// Writes every ring's valid slots through out (hook or signal context).
template <class Out> void WriteRing(uint64_t why, bool wait, Out& out) {
  if (__atomic_exchange_n(&g_ring_written, 1, __ATOMIC_ACQ_REL) != 0) return;
  const uint64_t now = Ticks();
  const int rings = RingCount();
  for (int k = 0; k < rings; ++k) {
    LaunchRing& r = *g_rings[k];
    const int32_t owner = __atomic_load_n(&r.owner, __ATOMIC_ACQUIRE);
    if (owner == 0) continue;
    for (const RingSlot& live : r.slots) {
      const uint32_t seq = __atomic_load_n(&live.seq, __ATOMIC_ACQUIRE);
      if (seq == 0) continue;
      RingSlot s;
      std::memcpy(static_cast<void*>(&s), &live, sizeof(s));
      __atomic_thread_fence(__ATOMIC_ACQUIRE);
      if (__atomic_load_n(&live.seq, __ATOMIC_RELAXED) != seq) continue;  // rewritten meanwhile
      format::GpuLaunchRing rec = format::RingRecordOf(s, owner, why, SyncedFor(s.stream, wait));
      rec.ts = now;
      out.Put(rec);
    }
  }
}

struct HookOut {
  void Put(const format::GpuLaunchRing& r) { Emit(r); }
};

struct SignalOut {
  ThreadState& w;
  void Put(const format::GpuLaunchRing& r) { EmitFromSignalHandler(w, r); }
};

}  // namespace

LaunchRing* ClaimRing() {
  const int32_t tid = raw::Gettid();
  LaunchRing* got = nullptr;
  const int rings = RingCount();
  for (int k = 0; k < rings && got == nullptr; ++k) {  // a free one (never, but after a reset)
    LaunchRing& r = *g_rings[k];
    if (__atomic_load_n(&r.owner, __ATOMIC_RELAXED) == 0 && TryClaim(r, 0, tid)) got = &r;
  }
  if (got == nullptr && rings < kMaxRings) {  // a new one, in the trace
    while (__atomic_exchange_n(&g_rings_lock, 1, __ATOMIC_ACQUIRE) != 0) {
    }
    if (g_ring_count < kMaxRings) {
      LaunchRing* fresh = AllocLaunchRing();
      if (fresh != nullptr && TryClaim(*fresh, 0, tid)) {
        g_rings[g_ring_count] = fresh;
        __atomic_store_n(&g_ring_count, g_ring_count + 1, __ATOMIC_RELEASE);
        got = fresh;
      }
    }
    __atomic_store_n(&g_rings_lock, 0, __ATOMIC_RELEASE);
  }
  if (got == nullptr) {  // full: take over the ring of a thread that is gone
    for (int k = 0; k < RingCount() && got == nullptr; ++k) {
      LaunchRing& r = *g_rings[k];
      const int32_t owner = __atomic_load_n(&r.owner, __ATOMIC_RELAXED);
      if (owner != tid && raw::Tgkill(g_pid, owner, 0) == -ESRCH && TryClaim(r, owner, tid)) got = &r;
    }
  }
  t_gpu.ring = got != nullptr ? got : &g_no_ring;
  return t_gpu.ring;
}

void SyncSucceeded(uint32_t begun, bool device_wide, uint64_t stream) {
  const SyncedTable table = SyncedTableOf();
  if (device_wide) {
    RaiseTo(table.device, begun);
    return;
  }
  Lock(true);
  format::SyncedStream* slot = nullptr;
  format::SyncedStream* oldest = &table.streams[0];
  for (int i = 0; i < kSyncedStreams; ++i) {
    format::SyncedStream& s = table.streams[i];
    if (s.epoch != 0 && s.stream == stream) {
      slot = &s;
      break;
    }
    if (slot == nullptr && s.epoch == 0) slot = &s;
    if (s.epoch < oldest->epoch) oldest = &s;
  }
  if (slot == nullptr) slot = oldest;
  if (slot->stream != stream || slot->epoch < begun) {
    slot->stream = stream;
    __atomic_store_n(&slot->epoch, begun, __ATOMIC_RELEASE);
  }
  Unlock();
}

uint32_t CompletedEpochOf(uint64_t stream) { return SyncedFor(stream, true); }

bool DeviceFaultSeen() { return __atomic_load_n(&g_fault_state, __ATOMIC_ACQUIRE) != 0; }

void NoteStickyError(const Call& c, const FaultScope& where) {
  int state = __atomic_load_n(&g_fault_state, __ATOMIC_ACQUIRE);
  if (state >= 2) return;
  if (!__atomic_compare_exchange_n(&g_fault_state, &state, state + 1, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    return;  // another thread recorded this one
  }
  RecordFault(c, where, static_cast<uint64_t>(state + 1));
  if (state == 0) {
    HookOut out;
    WriteRing(1, true, out);
  }
}

void RecordRingAtSignal(ThreadState& w) {
  SignalOut out{w};
  WriteRing(2, false, out);
}

void ResetLaunchRings() {
  // The parent's rings and stream epochs are in the parent's trace, which this child no
  // longer maps: its own come from its own trace.
  for (LaunchRing*& r : g_rings) r = nullptr;
  g_ring_count = 0;
  g_rings_lock = 0;
  t_gpu.ring = nullptr;
  g_synced_lock = 0;
  g_fault_state = 0;
  g_ring_written = 0;
}

}  // namespace colabtrace::shim::gpu

namespace colabtrace::shim {

void GpuModuleFatalSignal(ThreadState& w) { gpu::RecordRingAtSignal(w); }

}  // namespace colabtrace::shim
