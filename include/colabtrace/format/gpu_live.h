// GPU live-set chunks (format 1.5): the exact set of the process's live GPU allocations
// and per-device counters, kept in place so that successful GpuAlloc and GpuFree records
// may give way to the window (docs/trace-format.md, "GPU live-set chunks").
//
// One *info* chunk (magic CTGL, seq 0) holds GpuLiveInfo and the counters; kGpuLiveTableChunks
// table chunks (CTGL, seq 1..) hold kGpuLiveSlotsPerChunk 64-byte GpuLiveSlots each: an
// open-addressing table keyed by the allocation's address, probed linearly from
// GpuLiveHome(addr) for at most kGpuLiveMaxProbe slots. A slot's key is claimed by compare
// and swap (to kGpuLiveBusy), its fields written, and the address stored last with release
// order; a free swaps the address for kGpuLiveTomb, which a later allocation may claim. So
// a reader of the file at any instant (a SIGKILL included) takes a slot whose key is above
// kGpuLiveBusy whole, and the set of such keys is what was allocated and not freed, less
// at most the call in flight on each thread.
#pragma once

#include <cstdint>

#include "colabtrace/format/records.h"
#include "colabtrace/format/wire.h"

namespace colabtrace::format {

inline constexpr uint32_t kGpuLiveChunkMagic = 0x4c475443;  // "CTGL"

inline constexpr uint64_t kGpuLiveEmpty = 0;  // never used: a probe ends here
inline constexpr uint64_t kGpuLiveTomb = 1;   // freed: a probe passes, an insert may claim it
inline constexpr uint64_t kGpuLiveBusy = 2;   // being written
inline constexpr uint32_t kGpuLiveMaxProbe = 64;

// One live allocation, as its GpuAlloc record has it.
struct GpuLiveSlot {
  uint64_t key;       // the address (> kGpuLiveBusy), or one of the states above; stored last
  uint64_t size;      // GpuAlloc.size
  uint64_t ticks;     // GpuAlloc.ts (the call's start)
  uint64_t stack;     // Stack id (0: none)
  uint64_t caller;    // GpuAlloc.caller
  uint64_t py_stack;  // String id (0: none)
  uint32_t tid;
  int32_t device;     // GpuAlloc.device
  uint16_t api;       // GpuApi
  uint8_t layer;
  uint8_t reserved0;
  uint32_t flags;     // GpuAlloc.flags
};
static_assert(sizeof(GpuLiveSlot) == 64);

inline constexpr uint32_t kGpuLiveSlotsOffset = 64;  // in a table chunk
inline constexpr uint32_t kGpuLiveSlotsPerChunk = (kChunkSize - kGpuLiveSlotsOffset) / sizeof(GpuLiveSlot);  // 511
inline constexpr uint32_t kGpuLiveTableChunks = 8;
inline constexpr uint32_t kGpuLiveSlots = kGpuLiveSlotsPerChunk * kGpuLiveTableChunks;  // 4,088

// Per-device sums of the successful allocations that held a slot, and of their frees
// (bytes: GpuAlloc.size). The peak is live_bytes' largest value, the tick of the allocation
// call that first reached it (its ts), and the allocations live then. Two atomic adds an
// allocation and two a free per entry: what the analyzer needs, nothing more.
struct GpuLiveCounters {
  uint64_t allocations, frees;
  uint64_t live_bytes;
  uint64_t peak_bytes, peak_ticks, peak_count;
  uint64_t replaced;       // allocations of an address still in the table (its free never seen)
  uint64_t stream_frees;   // of the frees, those of stream-ordered allocations (not segments)
  uint64_t reserved[8];
};
static_assert(sizeof(GpuLiveCounters) == 128);

// Entries of the counters: all devices together, pinned host memory, then devices -1..62
// (-1: unknown), as GpuAlloc.device says.
inline constexpr uint32_t kGpuLiveAllDevices = 0;
inline constexpr uint32_t kGpuLiveHost = 1;
inline constexpr uint32_t kGpuLiveDevices = 64;
inline constexpr uint32_t kGpuLiveEntries = 2 + kGpuLiveDevices;
// The entry of device dev; kGpuLiveEntries for one out of range.
constexpr uint32_t GpuLiveEntryOf(int64_t dev) {
  return dev >= -1 && dev < static_cast<int64_t>(kGpuLiveDevices) - 1 ? static_cast<uint32_t>(dev + 3)
                                                                        : kGpuLiveEntries;
}

struct GpuLiveInfo {
  uint32_t slots;         // kGpuLiveSlots
  uint32_t table_chunks;  // kGpuLiveTableChunks
  uint64_t full;          // successful allocations that found no slot: their records are
                          // in record chunks, and they are in no counter
  uint64_t full_first_ticks;  // when the first of them was made (0: never)
  uint64_t first_ticks;   // the first device allocation call (GpuAlloc.ts, success or not;
                          // pinned host memory aside); 0: none yet
  uint64_t first_size;
  int64_t first_device;
  uint64_t last_free_ticks;  // the latest successful free of a segment (not stream-ordered) in the set
  uint64_t reserved[1];
};
static_assert(sizeof(GpuLiveInfo) <= 224);

inline constexpr uint32_t kGpuLiveInfoOffset = 32;
inline constexpr uint32_t kGpuLiveCountersOffset = 256;
static_assert(kGpuLiveCountersOffset + kGpuLiveEntries * sizeof(GpuLiveCounters) <= kChunkSize);

// Pinned host memory (it belongs to no device): the analyzer's MemKind::kHostPinned.
constexpr bool IsHostPinnedAlloc(uint64_t api) {
  switch (static_cast<GpuApi>(api)) {
    case GpuApi::kCudaMallocHost:
    case GpuApi::kCudaHostAlloc:
    case GpuApi::kCuMemAllocHost_v2:
    case GpuApi::kCuMemHostAlloc:
      return true;
    default:
      return false;
  }
}

// Stream-ordered allocations (they live inside pool chunks).
constexpr bool IsStreamOrderedAlloc(uint64_t api) {
  switch (static_cast<GpuApi>(api)) {
    case GpuApi::kCudaMallocAsync:
    case GpuApi::kCudaMallocAsync_ptsz:
    case GpuApi::kCudaMallocFromPoolAsync:
    case GpuApi::kCudaMallocFromPoolAsync_ptsz:
    case GpuApi::kCuMemAllocAsync:
    case GpuApi::kCuMemAllocAsync_ptsz:
    case GpuApi::kCuMemAllocFromPoolAsync:
    case GpuApi::kCuMemAllocFromPoolAsync_ptsz:
      return true;
    default:
      return false;
  }
}

// Where addr's probe starts, of n slots.
constexpr uint32_t GpuLiveHome(uint64_t addr, uint32_t n) {
  uint64_t h = addr * 0x9E3779B97F4A7C15ull;
  h ^= h >> 29;
  return static_cast<uint32_t>((static_cast<unsigned __int128>(h) * n) >> 64);
}

// The table over its chunks: Slot(i) is slot i (i < kGpuLiveSlots). Lock-free; every
// operation touches at most kGpuLiveMaxProbe slots.
template <class SlotAt> class GpuLiveTable {
 public:
  explicit GpuLiveTable(SlotAt at) : at_(at) {}

  // Puts s (s.key the address) in the table. When the address is there already (its free
  // was never seen), that slot is rewritten and *replaced gets its old contents. False
  // when no slot within the probe limit could be had.
  bool Insert(const GpuLiveSlot& s, GpuLiveSlot* replaced, bool* was_there) {
    *was_there = false;
    uint32_t i = GpuLiveHome(s.key, kGpuLiveSlots);
    for (uint32_t probe = 0; probe < kGpuLiveMaxProbe; ++probe, i = i + 1 == kGpuLiveSlots ? 0 : i + 1) {
      GpuLiveSlot& slot = at_(i);
      uint64_t cur = __atomic_load_n(&slot.key, __ATOMIC_ACQUIRE);
      if (cur == s.key) {
        if (!__atomic_compare_exchange_n(&slot.key, &cur, kGpuLiveBusy, false, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
          continue;
        }
        *replaced = slot;
        replaced->key = s.key;
        *was_there = true;
        Fill(slot, s);
        return true;
      }
      if (cur != kGpuLiveEmpty && cur != kGpuLiveTomb) continue;
      if (!__atomic_compare_exchange_n(&slot.key, &cur, kGpuLiveBusy, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE)) {
        continue;  // another thread took it first
      }
      Fill(slot, s);
      return true;
    }
    return false;
  }

  // Takes addr out of the table into *out; false when it is not there.
  bool Take(uint64_t addr, GpuLiveSlot* out) {
    if (addr <= kGpuLiveBusy) return false;
    uint32_t i = GpuLiveHome(addr, kGpuLiveSlots);
    for (uint32_t probe = 0; probe < kGpuLiveMaxProbe; ++probe, i = i + 1 == kGpuLiveSlots ? 0 : i + 1) {
      GpuLiveSlot& slot = at_(i);
      uint64_t cur = __atomic_load_n(&slot.key, __ATOMIC_ACQUIRE);
      if (cur == kGpuLiveEmpty) return false;
      if (cur != addr) continue;
      if (!__atomic_compare_exchange_n(&slot.key, &cur, kGpuLiveBusy, false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE)) {
        return false;  // another thread freed it at the same moment
      }
      *out = slot;
      out->key = addr;
      __atomic_store_n(&slot.key, kGpuLiveTomb, __ATOMIC_RELEASE);
      return true;
    }
    return false;
  }

 private:
  static void Fill(GpuLiveSlot& slot, const GpuLiveSlot& s) {
    slot.size = s.size;
    slot.ticks = s.ticks;
    slot.stack = s.stack;
    slot.caller = s.caller;
    slot.py_stack = s.py_stack;
    slot.tid = s.tid;
    slot.device = s.device;
    slot.api = s.api;
    slot.layer = s.layer;
    slot.flags = s.flags;
    __atomic_store_n(&slot.key, s.key, __ATOMIC_RELEASE);
  }
  SlotAt at_;
};

// Adds to / takes from a counters entry one allocation of `bytes`, raising the peak.
inline void GpuLiveAdd(GpuLiveCounters& c, uint64_t bytes, uint64_t ticks) {
  const uint64_t n = __atomic_add_fetch(&c.allocations, 1, __ATOMIC_RELAXED);
  const uint64_t live = __atomic_add_fetch(&c.live_bytes, bytes, __ATOMIC_RELAXED);
  uint64_t peak = __atomic_load_n(&c.peak_bytes, __ATOMIC_RELAXED);
  while (live > peak) {
    if (__atomic_compare_exchange_n(&c.peak_bytes, &peak, live, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
      __atomic_store_n(&c.peak_ticks, ticks, __ATOMIC_RELAXED);
      __atomic_store_n(&c.peak_count,
                       n - __atomic_load_n(&c.frees, __ATOMIC_RELAXED) - __atomic_load_n(&c.replaced, __ATOMIC_RELAXED),
                       __ATOMIC_RELAXED);
      break;
    }
  }
}
inline void GpuLiveRemove(GpuLiveCounters& c, uint64_t bytes, bool freed, bool stream_ordered) {
  if (!freed) {
    __atomic_add_fetch(&c.replaced, 1, __ATOMIC_RELAXED);
  } else {
    __atomic_add_fetch(&c.frees, 1, __ATOMIC_RELAXED);
    if (stream_ordered) __atomic_add_fetch(&c.stream_frees, 1, __ATOMIC_RELAXED);
  }
  __atomic_sub_fetch(&c.live_bytes, bytes, __ATOMIC_RELAXED);
}

// The live device bytes of the whole run, sampled (since 2026-11-29, format 1.6:
// older traces have zeros here, which read as no history). The info chunk holds, from
// kGpuLiveHistoryOffset, a GpuLiveHistory and kGpuLivePoints points: at each periodic
// resource sample the shim appends (the sample's ticks, counters[kGpuLiveAllDevices]
// .live_bytes) when the samples seen are a multiple of `stride`; when the points are
// full, every other one is dropped (point i takes point 2i) and the stride doubles. So
// the points cover the run from its first sample to its latest, evenly to within a factor
// of two, however long it runs: gpu.leak's live bytes at the end of warm-up when the
// window gave up the records of that time. One writer at a time (the sample's gate). A
// point is written with its ticks stored 0 first and last; a kill in a fold leaves some
// points twice (a reader takes each tick once), none lost that was not being dropped.
inline constexpr uint32_t kGpuLiveHistoryMagic = 0x54534948;  // "HIST"
struct GpuLiveHistory {
  uint32_t magic;     // kGpuLiveHistoryMagic once set up (stored last)
  uint32_t capacity;  // kGpuLivePoints
  uint64_t stride;    // a point every stride samples
  uint64_t seen;      // samples seen
  uint64_t written;   // points written since the last fold: the newest is written - 1
  uint64_t folds;
  uint64_t reserved[3];
};
static_assert(sizeof(GpuLiveHistory) == 64);
struct GpuLivePoint {
  uint64_t ticks;  // the sample's (0: none)
  uint64_t live_bytes;
};
inline constexpr uint32_t kGpuLiveHistoryOffset = 16384;
inline constexpr uint32_t kGpuLivePointsOffset = kGpuLiveHistoryOffset + sizeof(GpuLiveHistory);
inline constexpr uint32_t kGpuLivePoints = 512;
static_assert(kGpuLiveCountersOffset + kGpuLiveEntries * sizeof(GpuLiveCounters) <= kGpuLiveHistoryOffset);
static_assert(kGpuLivePointsOffset + kGpuLivePoints * sizeof(GpuLivePoint) <= kChunkSize);

inline void GpuLivePut(GpuLivePoint& p, uint64_t ticks, uint64_t live) {
  __atomic_store_n(&p.ticks, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&p.live_bytes, live, __ATOMIC_RELEASE);
  __atomic_store_n(&p.ticks, ticks, __ATOMIC_RELEASE);
}

// Appends a sample's live bytes to the history (one writer at a time).
inline void GpuLiveHistoryAdd(GpuLiveHistory& h, GpuLivePoint* p, uint64_t ticks, uint64_t live) {
  if (h.magic != kGpuLiveHistoryMagic) {
    h.capacity = kGpuLivePoints;
    h.stride = 1;
    h.seen = 0;
    h.written = 0;
    h.folds = 0;
    __atomic_store_n(&h.magic, kGpuLiveHistoryMagic, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&h.seen, h.seen + 1, __ATOMIC_RELAXED);
  if (ticks == 0 || h.seen % h.stride != 0) return;
  if (h.written >= h.capacity) {
    const uint32_t half = h.capacity / 2;
    for (uint32_t i = 1; i < half; ++i) GpuLivePut(p[i], p[2 * i].ticks, p[2 * i].live_bytes);
    for (uint32_t i = half; i < h.capacity; ++i) __atomic_store_n(&p[i].ticks, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&h.stride, h.stride * 2, __ATOMIC_RELAXED);
    __atomic_store_n(&h.folds, h.folds + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&h.written, half, __ATOMIC_RELEASE);
  }
  GpuLivePut(p[h.written], ticks, live);
  __atomic_store_n(&h.written, h.written + 1, __ATOMIC_RELEASE);
}

}  // namespace colabtrace::format
