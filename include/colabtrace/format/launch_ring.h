// A launch ring slot (wire.h, RingSlot) as the GpuLaunchRing record it becomes: the one
// spelling of that conversion, for the shim (a fault or fatal signal writes the ring) and
// the reader (the rings a killed trace left in its ring chunks).
#pragma once

#include <cstdint>

#include "colabtrace/format/records.h"
#include "colabtrace/format/wire.h"

namespace colabtrace::format {

// The record of slot s of thread `owner`'s ring, written for `why` (1 fault, 2 fatal
// signal, 3 left in a killed trace); synced: the completed epoch of s's stream. ts is
// the caller's; py_stack is the slot's (a reader of a format 1.0 trace clears it: the
// slot held an address there).
inline GpuLaunchRing RingRecordOf(const RingSlot& s, int32_t owner, uint64_t why, uint64_t synced) {
  GpuLaunchRing rec;
  rec.why = why;
  rec.tid = static_cast<uint64_t>(owner);
  rec.seq = s.seq;
  rec.epoch = s.epoch;
  rec.synced = synced;
  rec.api = s.api;
  rec.layer = static_cast<uint64_t>(s.api < 64 ? GpuLayer::kRuntime : GpuLayer::kDriver);
  rec.func = s.func;
  rec.stream = s.stream;
  rec.grid_x = s.grid[0];
  rec.grid_y = s.grid[1];
  rec.grid_z = s.grid[2];
  rec.block_x = s.block[0];
  rec.block_y = s.block[1];
  rec.block_z = s.block[2];
  rec.py_stack = s.py_stack;
  return rec;
}

}  // namespace colabtrace::format
