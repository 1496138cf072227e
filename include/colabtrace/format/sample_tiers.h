// Thinned samples (format 1.4): the periodic resource samples of a whole run, kept in
// three fixed tiers of the trace's thinned-sample chunks (CTTS), so that the window may
// give the samples themselves up (they lie in event chunks) and a week-long run's trace
// still says what its memory did, with exact peaks.
//
//   tier 0: one entry per 10 s, kThinEntriesPerChunk of them (the last 33 minutes);
//   tier 1: one entry per minute (the 3.4 hours before);
//   tier 2: one entry per 10 minutes, folded when full: neighbours merged in pairs and
//           the width doubled (33 hours, then 67, 134, 268 ...), so it covers the rest of
//           the run, however long, at a resolution that halves with each fold.
// An entry summarises the samples of its interval: the maximum of each figure (RSS at
// the time it peaked) and the last values. A tier's oldest entry, when its ring is full,
// is merged into the next tier before its slot is reused. The run's exact peaks and the
// last Clock pair and Python position are in ThinRun, written twice alternately.
//
// SIGKILL: everything lives in MAP_SHARED chunks, rewritten in place by one writer at a
// time (the periodic sample's gate). A slot being rewritten has start_ticks 0 (stored
// first, published last), so a reader sees it whole or not at all; a merge only raises
// maxima and moves the last values on; the data of an entry leaves its slot only after it
// is in the next tier (a kill in between counts it twice, which no maximum minds). ThinRun
// is copied into its other half, then `seq` names that half.
//
// Header-only and dependency-free: the shim's sampler writes through it, the reader's
// tests drive it on plain memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "colabtrace/format/wire.h"

namespace colabtrace::format {

inline constexpr uint32_t kThinChunkMagic = 0x53545443;  // "CTTS"
inline constexpr int kThinTiers = 3;
inline constexpr uint64_t kThinUnknown = UINT64_MAX;     // as in Sample records
inline constexpr uint64_t kThinIntervalNs[kThinTiers] = {10'000'000'000ull, 60'000'000'000ull,
                                                         600'000'000'000ull};

// The samples of one interval. start_ticks 0: an empty (or half-written) slot.
struct ThinEntry {
  uint64_t start_ticks;   // the first sample's ts (stored last)
  uint64_t end_ticks;     // the last sample's ts
  uint64_t start_off_ns;  // the first sample's CLOCK_MONOTONIC minus the tiers' base
  uint64_t bucket;        // start_off_ns / the tier's interval when the entry was opened
  uint64_t count;         // samples summed
  uint64_t peak_ticks;    // ts of the sample with the largest RSS
  uint64_t max_rss, max_vm, max_threads, max_cgroup;
  uint64_t max_working_set;  // cgroup memory.current - inactive_file, where both were read
  uint64_t last_rss, last_vm, last_threads, last_cgroup, last_inactive_file, last_oom_kill;
  uint64_t last_utime_ns, last_stime_ns;
  uint64_t tid;           // the thread that took the last sample
};
static_assert(sizeof(ThinEntry) == 160);

// Per tier, at kThinTierOffset of its chunk.
struct ThinTier {
  uint32_t tier;          // 0, 1, 2 (also the chunk's seq)
  uint32_t capacity;      // entries (kThinEntriesPerChunk)
  uint64_t interval_ns;   // an entry's width (tier 2: doubled by each fold)
  uint64_t written;       // entries opened since the last fold: the newest is slot (written-1) % capacity
  uint64_t folds;         // tier 2: times folded
};

// The run's exact peaks and its last clock pair and Python position (tier 0's chunk).
struct ThinRunHalf {
  uint64_t samples;  // periodic samples taken
  uint64_t peak_rss, peak_rss_ticks;
  uint64_t peak_vm, peak_vm_ticks;
  uint64_t peak_cgroup, peak_cgroup_ticks;
  uint64_t peak_threads, peak_threads_ticks;
  uint64_t clock_ticks, clock_mono_ns, clock_realtime_ns;  // the last periodic Clock record's
  uint64_t py_ticks, py_tid, py_stack;  // the last periodic PySample's (py_stack a String id; 0: none)
  uint64_t base_mono_ns;                // CLOCK_MONOTONIC the entries' start_off_ns count from
};
static_assert(sizeof(ThinRunHalf) == 128);
struct ThinRun {
  uint64_t seq;  // half[seq & 1] is whole
  uint64_t reserved[7];
  ThinRunHalf half[2];
};

inline constexpr uint32_t kThinTierOffset = 32;
inline constexpr uint32_t kThinRunOffset = 64;
inline constexpr uint32_t kThinEntriesOffset = kThinRunOffset + sizeof(ThinRun);
inline constexpr uint32_t kThinEntriesPerChunk = ((kChunkSize - kThinEntriesOffset) / sizeof(ThinEntry)) & ~1u;
static_assert(kThinTierOffset + sizeof(ThinTier) <= kThinRunOffset);
static_assert(kThinEntriesPerChunk >= 64);

inline uint64_t ThinMax(uint64_t a, uint64_t b) {
  if (a == kThinUnknown) return b;
  if (b == kThinUnknown) return a;
  return a > b ? a : b;
}

// A store the compiler may not split, reorder before earlier stores, or drop.
inline void ThinStore(uint64_t& field, uint64_t v) { __atomic_store_n(&field, v, __ATOMIC_RELEASE); }

// The tiers of one exec image: three chunks (any may be missing: null), and the sampler's
// state. Plain data; the shim keeps one in static storage.
struct ThinTiers {
  uint8_t* chunk[kThinTiers] = {};
  uint64_t base_mono_ns = 0;
  uint64_t lost = 0;  // entries that found no chunk (the trace gave no more)

  ThinTier* Tier(int k) const { return reinterpret_cast<ThinTier*>(chunk[k] + kThinTierOffset); }
  ThinEntry* Entries(int k) const { return reinterpret_cast<ThinEntry*>(chunk[k] + kThinEntriesOffset); }
  ThinRun* Run() const { return chunk[0] ? reinterpret_cast<ThinRun*>(chunk[0] + kThinRunOffset) : nullptr; }

  // Stamps a fresh chunk (zeroed, from the trace) as tier k's; its ChunkHeader's magic is
  // the caller's to store last.
  static void InitChunk(uint8_t* c, int k) {
    auto* t = reinterpret_cast<ThinTier*>(c + kThinTierOffset);
    t->tier = static_cast<uint32_t>(k);
    t->capacity = kThinEntriesPerChunk;
    t->interval_ns = kThinIntervalNs[k];
    t->written = 0;
    t->folds = 0;
  }

  // Merges src into dst in place: maxima raised, the later entry's last values taken. The
  // interval is widened first, so a kill at any store leaves peak_ticks inside it (a last
  // value may then lag its end_ticks by one sample).
  static void Merge(ThinEntry& dst, const ThinEntry& src) {
    if (src.start_ticks < dst.start_ticks) ThinStore(dst.start_ticks, src.start_ticks);
    const bool later = src.end_ticks >= dst.end_ticks;
    if (later) ThinStore(dst.end_ticks, src.end_ticks);
    if (src.max_rss != kThinUnknown && (dst.max_rss == kThinUnknown || src.max_rss > dst.max_rss)) {
      ThinStore(dst.peak_ticks, src.peak_ticks);
      ThinStore(dst.max_rss, src.max_rss);
    }
    ThinStore(dst.max_vm, ThinMax(dst.max_vm, src.max_vm));
    ThinStore(dst.max_threads, ThinMax(dst.max_threads, src.max_threads));
    ThinStore(dst.max_cgroup, ThinMax(dst.max_cgroup, src.max_cgroup));
    ThinStore(dst.max_working_set, ThinMax(dst.max_working_set, src.max_working_set));
    ThinStore(dst.count, dst.count + src.count);
    if (later) {
      ThinStore(dst.last_rss, src.last_rss);
      ThinStore(dst.last_vm, src.last_vm);
      ThinStore(dst.last_threads, src.last_threads);
      ThinStore(dst.last_cgroup, src.last_cgroup);
      ThinStore(dst.last_inactive_file, src.last_inactive_file);
      ThinStore(dst.last_oom_kill, src.last_oom_kill);
      ThinStore(dst.last_utime_ns, src.last_utime_ns);
      ThinStore(dst.last_stime_ns, src.last_stime_ns);
      ThinStore(dst.tid, src.tid);
    }
  }

  // Writes e into slot s whole: start_ticks cleared first, published last.
  static void WriteSlot(ThinEntry& s, const ThinEntry& e, uint64_t bucket) {
    ThinStore(s.start_ticks, 0);
    uint64_t* d = &s.end_ticks;
    const uint64_t* from = &e.end_ticks;
    for (size_t i = 0; i < sizeof(ThinEntry) / 8 - 1; ++i) ThinStore(d[i], from[i]);
    ThinStore(s.bucket, bucket);
    ThinStore(s.start_ticks, e.start_ticks);
  }

  // Tier 2 full: merges neighbours in pairs into the first half and doubles the width.
  // Slot i takes slots 2i and 2i+1, which are still whole when it is written (2i >= i);
  // slot 0 merges slot 1 into itself in place.
  void Fold() {
    ThinTier* t = Tier(2);
    ThinEntry* s = Entries(2);
    const uint32_t half = t->capacity / 2;
    for (uint32_t i = 0; i < half; ++i) {
      ThinEntry m = s[2 * i];
      if (m.start_ticks == 0) m = s[2 * i + 1];
      else if (s[2 * i + 1].start_ticks != 0) Merge(m, s[2 * i + 1]);
      if (i == 0 && s[0].start_ticks != 0) {
        if (s[1].start_ticks != 0) Merge(s[0], s[1]);
        ThinStore(s[0].bucket, s[0].bucket / 2);
      } else if (m.start_ticks != 0) {
        WriteSlot(s[i], m, m.bucket / 2);
      } else {
        ThinStore(s[i].start_ticks, 0);
      }
    }
    for (uint32_t i = half; i < t->capacity; ++i) ThinStore(s[i].start_ticks, 0);
    ThinStore(t->interval_ns, t->interval_ns * 2);
    ThinStore(t->written, half);
    ThinStore(t->folds, t->folds + 1);
  }

  // Adds e (an entry of any width) to tier k: merged into the newest entry when it falls
  // in that entry's interval, else into a new entry, the ring's oldest moved on to tier
  // k + 1 first (tier 2 folds instead). alloc(k) gives tier k's chunk when it has none.
  template <class Alloc> void Put(int k, const ThinEntry& e, Alloc&& alloc) {
    if (chunk[k] == nullptr) {
      chunk[k] = alloc(k);
      if (chunk[k] == nullptr) {
        ++lost;
        return;
      }
    }
    ThinTier* t = Tier(k);
    ThinEntry* s = Entries(k);
    const uint64_t bucket = e.start_off_ns / (t->interval_ns ? t->interval_ns : 1);
    if (t->written > 0) {
      ThinEntry& newest = s[(t->written - 1) % t->capacity];
      // (A bucket before the newest one cannot come from one writer; merged all the same.)
      if (newest.start_ticks != 0 && bucket <= newest.bucket) {
        Merge(newest, e);
        return;
      }
    }
    if (t->written >= t->capacity) {
      if (k + 1 < kThinTiers) {
        const ThinEntry& oldest = s[t->written % t->capacity];
        if (oldest.start_ticks != 0) Put(k + 1, oldest, alloc);
      } else {
        Fold();
        Put(k, e, alloc);
        return;
      }
    }
    WriteSlot(s[t->written % t->capacity], e, bucket);
    ThinStore(t->written, t->written + 1);
  }

  // One periodic sample: an entry of its own, put into tier 0.
  template <class Alloc>
  void AddSample(uint64_t ts, uint64_t mono_ns, uint64_t tid, uint64_t rss, uint64_t vm, uint64_t threads,
                 uint64_t cgroup, uint64_t inactive_file, uint64_t oom_kill, uint64_t utime_ns, uint64_t stime_ns,
                 Alloc&& alloc) {
    ThinEntry e{};
    e.start_ticks = ts == 0 ? 1 : ts;
    e.end_ticks = e.start_ticks;
    e.start_off_ns = mono_ns > base_mono_ns ? mono_ns - base_mono_ns : 0;
    e.count = 1;
    e.peak_ticks = e.start_ticks;
    e.max_rss = e.last_rss = rss;
    e.max_vm = e.last_vm = vm;
    e.max_threads = e.last_threads = threads;
    e.max_cgroup = e.last_cgroup = cgroup;
    e.max_working_set = cgroup != kThinUnknown && inactive_file != kThinUnknown && cgroup >= inactive_file
                            ? cgroup - inactive_file
                            : kThinUnknown;
    e.last_inactive_file = inactive_file;
    e.last_oom_kill = oom_kill;
    e.last_utime_ns = utime_ns;
    e.last_stime_ns = stime_ns;
    e.tid = tid;
    Put(0, e, alloc);
  }
};

// The run's peaks folded with one sample (kThinUnknown leaves a peak as it was).
inline void ThinNotePeak(uint64_t& peak, uint64_t& peak_ticks, uint64_t v, uint64_t ts) {
  if (v != kThinUnknown && (peak == 0 || v > peak)) peak = v, peak_ticks = ts;
}

// Publishes h as the run's state: written into the half seq does not name, then seq moved.
inline void ThinPublishRun(ThinRun* run, const ThinRunHalf& h) {
  if (run == nullptr) return;
  const uint64_t next = run->seq + 1;
  uint64_t* d = reinterpret_cast<uint64_t*>(&run->half[next & 1]);
  const uint64_t* s = reinterpret_cast<const uint64_t*>(&h);
  for (size_t i = 0; i < sizeof(ThinRunHalf) / 8; ++i) ThinStore(d[i], s[i]);
  ThinStore(run->seq, next);
}

}  // namespace colabtrace::format
