// The GPU live set: every live allocation in a fixed slot of the trace's GPU live-set
// chunks, and per-device counters (format/gpu_live.h; docs/trace-format.md, "GPU live-set
// chunks"), so that successful GpuAlloc and GpuFree records may give way to the window
// while the live set, the counts and the peaks stay exact.
//
// Lock-free, no allocation, async-signal-safe: the table is claimed by compare and swap,
// the counters are atomic adds. The chunks are taken at the first allocation.
#pragma once

#include <cstdint>

#include "colabtrace/format/gpu_live.h"

namespace colabtrace::shim::gpu {

// A successful allocation of s.size bytes at s.key (nonzero): into the table and the
// counters. False when it found no slot (or the trace gives no chunks): its records must
// then be kept (never dropped), and it is counted in GpuLiveInfo::full.
bool LiveInsert(const format::GpuLiveSlot& s);
// Takes addr out of the table before the free that releases it is called; false when it
// is not there.
bool LiveTake(uint64_t addr, format::GpuLiveSlot* out);
// After the free (called at `ticks`): counts it when it succeeded, else puts the slot back.
void LiveFreed(const format::GpuLiveSlot& s, bool ok, uint64_t ticks);
// Notes a device allocation call (success or not), for GpuLiveInfo::first_*.
void LiveNoteFirst(uint64_t ticks, uint64_t size, int64_t device);
// Forgets the chunks: a fork child starts a new trace.
void ResetLiveSet();

}  // namespace colabtrace::shim::gpu
