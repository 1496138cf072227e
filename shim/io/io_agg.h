// The I/O aggregates: one format::IoAggSlot per file the process touched, in the trace's
// aggregate chunks (wire.h, "I/O aggregate chunks"), summing what its io_* records say.
//
// A slot is found once per open, opendir or path stat (a hash of the resolved path in an
// index of our own, separate from the string intern, whose full table hands out fresh
// ids) and kept in the descriptor's FdSlot, so a read, pread or fstat adds to its file's
// slot with a few relaxed atomic adds and no lookup. The sums are the records': the same
// calls, the same values, durations in ticks. Counts are 16-bit: the add that wraps one
// carries into the slot's high slot (AggCarry, once per 65,536 calls of a kind on a
// file). Lock-free except when a new aggregate chunk is taken (once per
// kIoAggSlotsPerChunk slots, under a spin lock that only hooks take, with the shim marked
// busy on the thread) and while a slot's high slot is claimed (its other wrapping threads
// wait for that one).
//
// Past the file slots, a file may hold an entry of the heavy-hitter table
// (format/io_heavy.h): its calls then go to the entry's slot instead of its directory's.
// Such a slot is held while in use (AggSlotOf holds it for its caller; a descriptor holds
// it from TrackFd to UntrackFd), so that it never changes hands under a call adding to it.
#pragma once

#include <cstdint>
#include <string_view>

#include "colabtrace/format/io_heavy.h"
#include "colabtrace/format/wire.h"

namespace colabtrace::shim::io {

using format::IoAggCount;
using format::IoAggSlot;

// The slot of path p (as the shim resolved it; String id path_id), claimed if new: its
// file's while the file slots last, then the heavy-hitter entry it holds or takes, else
// its directory's. mount: the Mount record id when known (0: not). Null when there is no
// trace, or no room. Call inside a RecordScope; AggRelease the slot when done with it.
IoAggSlot* AggSlotOf(std::string_view p, uint64_t path_id, uint64_t mount);

// Whether s is a heavy-hitter entry's slot (held while in use; others are never).
inline bool AggHeld(const IoAggSlot* s) {
  return s != nullptr && __atomic_load_n(&s->kind, __ATOMIC_RELAXED) == format::kIoAggHeavy;
}
inline format::IoHeavyEntry* HeavyEntryOf(IoAggSlot* s) {
  return reinterpret_cast<format::IoHeavyEntry*>(reinterpret_cast<uint8_t*>(s) - offsetof(format::IoHeavyEntry, slot));
}
// One more holder of s, which the caller holds already (a descriptor taking the slot).
inline void AggHold(IoAggSlot* s) {
  if (AggHeld(s)) __atomic_fetch_add(&HeavyEntryOf(s)->word, uint64_t{1}, __ATOMIC_RELAXED);
}
// One holder less: the entry may change hands once it has none.
inline void AggRelease(IoAggSlot* s) {
  if (AggHeld(s)) __atomic_fetch_sub(&HeavyEntryOf(s)->word, uint64_t{1}, __ATOMIC_RELEASE);
}

// The table's generation: a slot held under another (a fork child's inherited
// descriptors) is never released here.
uint32_t AggEpoch();

// A fresh, empty table for this process's trace (module start, fork child, exec).
void ResetAgg();

// Adds n * 65,536 to count k of s (its 16-bit word just wrapped): n to the word k of the
// slot's high slot, claimed if it has none yet (a heavy-hitter entry's own high words).
// Out of line: once per 65,536 calls.
void AggCarry(IoAggSlot* s, IoAggCount k, uint64_t n = 1);

inline void AggAdd(uint64_t& field, uint64_t v) { __atomic_fetch_add(&field, v, __ATOMIC_RELAXED); }
// One more of count k (IoAggCount) of s.
inline void AggCount(IoAggSlot* s, IoAggCount k) {
  if (__builtin_expect(__atomic_fetch_add(&s->counts[k], uint16_t{1}, __ATOMIC_RELAXED) == UINT16_MAX, 0)) {
    AggCarry(s, k);
  }
}
// n more of count k of s (a fold of a heavy-hitter entry into its directory's slot).
inline void AggCountN(IoAggSlot* s, IoAggCount k, uint64_t n) {
  const auto lo = static_cast<uint16_t>(n);
  uint64_t carry = n >> 16;
  if (lo != 0 && uint32_t{__atomic_fetch_add(&s->counts[k], lo, __ATOMIC_RELAXED)} + lo > UINT16_MAX) ++carry;
  if (carry != 0) AggCarry(s, k, carry);
}
inline void AggMax(uint64_t& field, uint64_t v) {
  uint64_t cur = __atomic_load_n(&field, __ATOMIC_RELAXED);
  while (v > cur && !__atomic_compare_exchange_n(&field, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
inline void AggFlags(IoAggSlot* s, uint16_t bits) {
  if ((__atomic_load_n(&s->flags, __ATOMIC_RELAXED) & bits) != bits) {
    __atomic_fetch_or(&s->flags, bits, __ATOMIC_RELAXED);
  }
}

// A stat (path or descriptor) of the slot's file: result 0 or -errno; size and ftype
// (st_mode >> 12) of a successful one.
inline void AggStat(IoAggSlot* s, bool by_path, int64_t result, uint64_t dur, uint64_t size, uint64_t ftype) {
  if (s == nullptr) return;
  AggCount(s, format::kIoAggStats);
  if (by_path) AggCount(s, format::kIoAggPathStats);
  AggAdd(s->stat_ns, dur);
  if (result < 0) {
    AggCount(s, format::kIoAggStatErrors);
    return;
  }
  if (ftype == 4) AggFlags(s, format::kIoAggIsDirectory);  // S_IFDIR >> 12
  if (ftype == 8) AggMax(s->size, size + 1);               // S_IFREG >> 12
}

}  // namespace colabtrace::shim::io
