// A process group's block in a collective chunk (format::kCollChunkMagic, wire.h): its
// counters and the ring of its latest format::kCollRing collectives, written in place so
// that a SIGKILL leaves them in the file. A plain function over the block's bytes (unit
// tests pass an ordinary buffer).
//
// Hot path (one collective's end): an atomic add claims the ring position (and counts
// it), up to two atomic adds and two atomic raises update the counters, eleven stores
// fill the slot. Lock-free: threads of one group may end collectives at once, each in its
// own slot. A slot's `n` is 0 while written and its position once done, so a reader never
// takes a half-written slot.
#pragma once

#include <cstdint>

#include "colabtrace/format/records.h"
#include "colabtrace/format/wire.h"

namespace colabtrace::shim::python {

// Raises *word to at least v.
inline void RaiseTo(uint64_t* word, uint64_t v) {
  uint64_t cur = __atomic_load_n(word, __ATOMIC_RELAXED);
  while (cur < v && !__atomic_compare_exchange_n(word, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

// One collective that ended: every field of `s` but n, which this sets. Returns n.
inline uint64_t NoteCollectiveEnd(format::CollGroupBlock* b, const format::CollSlot& s) {
  format::CollGroupInfo& g = b->info;
  const uint64_t n = __atomic_add_fetch(&g.written, 1, __ATOMIC_RELAXED);
  using format::CollectiveStatus;
  if (s.status == static_cast<uint8_t>(CollectiveStatus::kRaised)) __atomic_add_fetch(&g.raised, 1, __ATOMIC_RELAXED);
  if (s.status == static_cast<uint8_t>(CollectiveStatus::kIssued)) __atomic_add_fetch(&g.async_ops, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&g.ticks, s.dur, __ATOMIC_RELAXED);
  if (s.seq != 0) {
    const uint64_t last = s.seq + (s.seqs > 0 ? s.seqs - 1 : 0);
    RaiseTo(&g.entered, last);
    if (s.status != static_cast<uint8_t>(CollectiveStatus::kRaised)) RaiseTo(&g.returned, last);
  }
  format::CollSlot& d = b->ring[(n - 1) & (format::kCollRing - 1)];
  __atomic_store_n(&d.n, uint64_t{0}, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);  // a reader sees n == 0 before any new field
  d.ts = s.ts;
  d.dur = s.dur;
  d.seq = s.seq;
  d.count = s.count;
  d.seqs = s.seqs;
  d.dtype = s.dtype;
  d.where = s.where;
  d.tid = s.tid;
  d.op = s.op;
  d.status = s.status;
  __atomic_store_n(&d.n, n, __ATOMIC_RELEASE);
  return n;
}

}  // namespace colabtrace::shim::python
