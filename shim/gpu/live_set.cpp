// The GPU live set: see live_set.h.
#include "live_set.h"

#include "clock.h"
#include "sampling.h"
#include "writer.h"

namespace colabtrace::shim::gpu {
namespace {

using format::GpuLiveCounters;
using format::GpuLiveInfo;
using format::GpuLiveSlot;

constexpr int kNone = 0, kTaking = 1, kReady = 2, kFailed = 3;
int g_state = kNone;
uint8_t* g_chunks[1 + format::kGpuLiveTableChunks] = {};

void NoteHistory(uint64_t ticks);

// Takes and stamps the chunks, table chunks first and the info chunk last, so a reader
// that finds the info finds the table. Only one thread takes them; the others find the
// set not ready and keep their records.
bool Ready() {
  int s = __atomic_load_n(&g_state, __ATOMIC_ACQUIRE);
  if (__builtin_expect(s == kReady, 1)) return true;
  if (s != kNone || !__atomic_compare_exchange_n(&g_state, &s, kTaking, false, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
    return false;
  }
  uint8_t* c[1 + format::kGpuLiveTableChunks];
  for (uint8_t*& chunk : c) {
    chunk = g_recording ? g_trace.AllocChunk(true) : nullptr;
    if (chunk == nullptr) {
      __atomic_store_n(&g_state, kFailed, __ATOMIC_RELEASE);
      return false;
    }
    g_trace.KeepsMapped(chunk);
  }
  auto* info = reinterpret_cast<GpuLiveInfo*>(c[0] + format::kGpuLiveInfoOffset);
  info->slots = format::kGpuLiveSlots;
  info->table_chunks = format::kGpuLiveTableChunks;
  info->first_device = -1;
  for (uint32_t k = format::kGpuLiveTableChunks + 1; k-- > 0;) {
    auto* ch = reinterpret_cast<format::ChunkHeader*>(c[k]);
    ch->tid = 0;
    ch->base_ticks = Ticks();
    ch->seq = k;
    ch->flags = 0;
    ch->image = g_trace.image();
    __atomic_store_n(&ch->magic, format::kGpuLiveChunkMagic, __ATOMIC_RELEASE);
    g_chunks[k] = c[k];
  }
  __atomic_store_n(&g_state, kReady, __ATOMIC_RELEASE);
  AlsoAtPeriodicSamples(&NoteHistory);
  return true;
}

GpuLiveInfo& Info() { return *reinterpret_cast<GpuLiveInfo*>(g_chunks[0] + format::kGpuLiveInfoOffset); }

// At each periodic sample (AlsoAtPeriodicSamples): the live device bytes into the history.
void NoteHistory(uint64_t ticks) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != kReady) return;
  uint8_t* info = g_chunks[0];
  const auto* all = reinterpret_cast<const GpuLiveCounters*>(info + format::kGpuLiveCountersOffset) +
                    format::kGpuLiveAllDevices;
  format::GpuLiveHistoryAdd(*reinterpret_cast<format::GpuLiveHistory*>(info + format::kGpuLiveHistoryOffset),
                            reinterpret_cast<format::GpuLivePoint*>(info + format::kGpuLivePointsOffset), ticks,
                            __atomic_load_n(&all->live_bytes, __ATOMIC_RELAXED));
}
GpuLiveCounters& Entry(uint32_t e) {
  return reinterpret_cast<GpuLiveCounters*>(g_chunks[0] + format::kGpuLiveCountersOffset)[e];
}

struct SlotAt {
  GpuLiveSlot& operator()(uint32_t i) const {
    uint8_t* chunk = g_chunks[1 + i / format::kGpuLiveSlotsPerChunk];
    return reinterpret_cast<GpuLiveSlot*>(chunk + format::kGpuLiveSlotsOffset)[i % format::kGpuLiveSlotsPerChunk];
  }
};
using Table = format::GpuLiveTable<SlotAt>;

// The entries a slot's bytes count in: its device's and all devices', or the host's.
void Count(const GpuLiveSlot& s, bool add, bool freed, uint64_t ticks) {
  const bool host = format::IsHostPinnedAlloc(s.api);
  const uint32_t dev = format::GpuLiveEntryOf(s.device);
  auto apply = [&](uint32_t e) {
    if (e >= format::kGpuLiveEntries) return;
    if (add) {
      format::GpuLiveAdd(Entry(e), s.size, ticks);
    } else {
      format::GpuLiveRemove(Entry(e), s.size, freed, format::IsStreamOrderedAlloc(s.api));
    }
  };
  if (host) {
    apply(format::kGpuLiveHost);
    return;
  }
  apply(dev);
  apply(format::kGpuLiveAllDevices);
}

}  // namespace

bool LiveInsert(const GpuLiveSlot& s) {
  if (!Ready()) return false;
  GpuLiveSlot old;
  bool was_there = false;
  if (!Table(SlotAt{}).Insert(s, &old, &was_there)) {
    GpuLiveInfo& info = Info();
    if (__atomic_fetch_add(&info.full, 1, __ATOMIC_RELAXED) == 0) {
      __atomic_store_n(&info.full_first_ticks, s.ticks, __ATOMIC_RELAXED);
    }
    return false;
  }
  if (was_there) Count(old, false, false, s.ticks);
  Count(s, true, false, s.ticks);
  return true;
}

bool LiveTake(uint64_t addr, GpuLiveSlot* out) {
  if (__atomic_load_n(&g_state, __ATOMIC_ACQUIRE) != kReady) return false;
  return Table(SlotAt{}).Take(addr, out);
}

void LiveFreed(const GpuLiveSlot& s, bool ok, uint64_t ticks) {
  if (ok) {
    Count(s, false, true, 0);
    if (!format::IsHostPinnedAlloc(s.api) && !format::IsStreamOrderedAlloc(s.api)) {
      // Raised only (frees on several threads may store in any order).
      uint64_t* last = &Info().last_free_ticks;
      uint64_t cur = __atomic_load_n(last, __ATOMIC_RELAXED);
      while (ticks > cur && !__atomic_compare_exchange_n(last, &cur, ticks, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      }
    }
    return;
  }
  GpuLiveSlot old;
  bool was_there = false;
  // The slot it had is a tombstone now, first in its probe unless claimed meanwhile.
  if (!Table(SlotAt{}).Insert(s, &old, &was_there)) {
    // No room: it stays out of the set, so out of the counters too.
    Count(s, false, false, 0);
    __atomic_add_fetch(&Info().full, 1, __ATOMIC_RELAXED);
  }
}

void LiveNoteFirst(uint64_t ticks, uint64_t size, int64_t device) {
  if (!Ready()) return;
  GpuLiveInfo& info = Info();
  if (__atomic_load_n(&info.first_ticks, __ATOMIC_RELAXED) != 0) return;
  uint64_t expected = 0;
  const uint64_t t = ticks == 0 ? 1 : ticks;
  if (__atomic_compare_exchange_n(&info.first_ticks, &expected, t, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    __atomic_store_n(&info.first_size, size, __ATOMIC_RELAXED);
    __atomic_store_n(&info.first_device, device, __ATOMIC_RELAXED);
  }
}

void ResetLiveSet() {
  for (uint8_t*& c : g_chunks) c = nullptr;
  __atomic_store_n(&g_state, kNone, __ATOMIC_RELEASE);
}

}  // namespace colabtrace::shim::gpu
