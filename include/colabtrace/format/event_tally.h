// Counts the droppable records a trace's process wrote from its event chunks
// (docs/trace-format.md, "Event chunks"): per thread, its latest event chunk's
// events_before plus the records in it, and the header's events_retired for the threads
// that exited. Shared by the reader (events_total) and `colabtrace run`'s compaction, so
// both count alike. Analyzer-side (std::map); the shim never reads its own chunks.
#pragma once

#include <cstdint>
#include <map>
#include <tuple>

#include "colabtrace/format/wire.h"

namespace colabtrace::format {

class EventTally {
 public:
  explicit EventTally(const FileHeader& h) : retired_(h.events_retired) {}

  // One event chunk, holding `droppable` records.
  void Add(const EventChunkHeader& eh, uint64_t droppable) {
    const ChunkHeader& ch = eh.chunk;
    // Counted in the header already: its thread's latest chunk, worth nothing here (its
    // thread's older chunks, if still in the file, must not stand in for it).
    const bool in_header = eh.retired != 0 && eh.retired - 1 <= retired_;
    const uint64_t total = in_header ? 0 : Sum(eh.events_before, droppable);
    auto [it, fresh] = latest_.try_emplace({ch.image, ch.tid, ch.thread}, Latest{ch.seq, total});
    if (!fresh && ch.seq >= it->second.seq) it->second = {ch.seq, total};
  }

  // The threads' droppable records: those of the latest chunks plus the retired ones (not
  // the header's events_lost, nor records outside event chunks).
  uint64_t Total() const {
    uint64_t sum = retired_;
    for (const auto& [key, last] : latest_) sum = Sum(sum, last.total);
    return sum;
  }

 private:
  static uint64_t Sum(uint64_t a, uint64_t b) {  // a damaged count saturates
    uint64_t s = 0;
    return __builtin_add_overflow(a, b, &s) ? UINT64_MAX : s;
  }
  struct Latest {
    uint32_t seq;
    uint64_t total;
  };
  uint64_t retired_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, Latest> latest_;  // (image, tid, thread)
};

}  // namespace colabtrace::format
