// The NCCL module's state in the trace's NCCL chunk (format::kNcclChunkMagic, wire.h): the
// communicator table and the ring of the last format::kNcclSlots calls, written in place so
// that a SIGKILL leaves them in the file; and the process-local index from a ncclComm_t to its
// entry. Plain functions over a chunk's bytes (unit tests pass an ordinary buffer).
//
// Hot path (one NCCL call): an index probe (no lock), a relaxed atomic add for the
// communicator's sequence number, an atomic add for the ring position and nine stores. A slot
// is claimed by its position; its `n` is 0 while written and the position (from 1) when done,
// so a reader never takes a half-written slot. Communicators are claimed under the caller's
// lock (init, split: cold).
#pragma once

#include <cstdint>

#include "colabtrace/format/records.h"
#include "colabtrace/format/wire.h"

namespace colabtrace::shim::nccl {

using format::NcclCommEntry;
using format::NcclSlot;

struct NcclCounts {
  uint32_t calls;  // calls written: slot (calls - 1) % kNcclSlots is the last
  uint32_t comms;  // entries claimed
};
static_assert(sizeof(NcclCounts) <= format::kNcclCommsOffset - format::kNcclCountsOffset);

inline NcclCounts* CountsOf(uint8_t* chunk) {
  return reinterpret_cast<NcclCounts*>(chunk + format::kNcclCountsOffset);
}
inline NcclCommEntry* CommsOf(uint8_t* chunk) {
  return reinterpret_cast<NcclCommEntry*>(chunk + format::kNcclCommsOffset);
}
inline NcclSlot* SlotsOf(uint8_t* chunk) { return reinterpret_cast<NcclSlot*>(chunk + format::kNcclSlotsOffset); }

// A fresh entry for a communicator, its handle stored last; nullptr when the table is full.
// Call under the module's lock.
inline NcclCommEntry* ClaimComm(uint8_t* chunk, uint64_t handle, uint64_t comm, uint64_t parent, int32_t nranks,
                                int32_t rank) {
  NcclCounts* k = CountsOf(chunk);
  if (k->comms >= format::kNcclComms) return nullptr;
  NcclCommEntry* e = CommsOf(chunk) + k->comms++;
  e->comm = comm;
  e->parent = parent;
  e->colls = 0;
  e->p2p = 0;
  e->nranks = nranks;
  e->rank = rank;
  e->state = static_cast<uint32_t>(format::NcclCommStateCode::kLive);
  e->splits = 0;
  e->async_noted = 0;
  __atomic_store_n(&e->handle, handle, __ATOMIC_RELEASE);
  return e;
}

// One call into the ring: every field of `s` but n, which PushCall sets. Returns n.
inline uint32_t PushCall(uint8_t* chunk, const NcclSlot& s) {
  const uint32_t n = __atomic_add_fetch(&CountsOf(chunk)->calls, 1, __ATOMIC_RELAXED);
  NcclSlot& d = SlotsOf(chunk)[(n - 1) & (format::kNcclSlots - 1)];
  __atomic_store_n(&d.n, 0u, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);  // a reader sees n == 0 before any new field
  d.op = s.op;
  d.dtype = s.dtype;
  d.redop = s.redop;
  d.group = s.group;
  d.comm = s.comm;
  d.seq = s.seq;
  d.count = s.count;
  d.stream = s.stream;
  d.ticks = s.ticks;
  d.peer = s.peer;
  d.rc = s.rc;
  d.py_stack = s.py_stack;
  __atomic_store_n(&d.n, n, __ATOMIC_RELEASE);
  return n;
}

// ncclComm_t -> its entry, for this process. Lookups take no lock; Put runs under the
// module's lock. A handle NCCL reuses after a destroy gets the new communicator's entry.
class CommIndex {
 public:
  static constexpr uint32_t kCells = 256;  // four times the table: short probes, room for reuse

  NcclCommEntry* Find(uint64_t handle) const {
    for (uint32_t i = 0, h = Home(handle); i < kCells; ++i, h = (h + 1) & (kCells - 1)) {
      const uint64_t k = __atomic_load_n(&cells_[h].handle, __ATOMIC_ACQUIRE);
      if (k == handle) return __atomic_load_n(&cells_[h].entry, __ATOMIC_ACQUIRE);
      if (k == 0) return nullptr;
    }
    return nullptr;
  }
  // False when the index is full.
  bool Put(uint64_t handle, NcclCommEntry* e) {
    for (uint32_t i = 0, h = Home(handle); i < kCells; ++i, h = (h + 1) & (kCells - 1)) {
      const uint64_t k = cells_[h].handle;
      if (k != handle && k != 0) continue;
      __atomic_store_n(&cells_[h].entry, e, __ATOMIC_RELEASE);
      __atomic_store_n(&cells_[h].handle, handle, __ATOMIC_RELEASE);
      return true;
    }
    return false;
  }
  void Clear() {
    for (Cell& c : cells_) c = Cell{};
  }

 private:
  struct Cell {
    uint64_t handle = 0;
    NcclCommEntry* entry = nullptr;
  };
  static uint32_t Home(uint64_t handle) {
    return static_cast<uint32_t>(((handle >> 4) * 0x9e3779b97f4a7c15ull) >> 56) & (kCells - 1);
  }
  Cell cells_[kCells];
};

}  // namespace colabtrace::shim::nccl
