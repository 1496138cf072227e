// PyTorch's own view of its CUDA memory at an out-of-memory error.
//
// The Python start-up hook (python/colabtrace/_startup/sitecustomize.py) writes
// torch.cuda.memory._snapshot() as JSON next to the trace, as
// colabtrace.<prog>.<pid>.torch-snapshot.json, from PyTorch's OOM observer, plus a
// "colabtrace" member with the observer's arguments (device, requested bytes, device
// allocated and free bytes). The schema is the one documented in torch/cuda/memory.py:
// segments[] {device, address, total_size, allocated_size, active_size, stream,
// segment_type, blocks[] {address, size, requested_size, state, frames[] {filename,
// line, name}}}. The file is untrusted input: anything missing or malformed is skipped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/json.h"
#include "model/run_model.h"
#include "report/report.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer {

enum class TorchBlockState { kActiveAllocated, kActivePendingFree, kInactive, kUnknown };

struct TorchBlock {
  uint64_t address = 0, size = 0, requested_size = 0;
  TorchBlockState state = TorchBlockState::kUnknown;
  std::vector<std::string> frames;  // "path:line in function", innermost first
};

struct TorchSegment {
  int64_t device = 0;
  uint64_t address = 0, total_size = 0, allocated_size = 0, active_size = 0, stream = 0;
  std::string segment_type;  // "large" | "small"
  std::vector<TorchBlock> blocks;
};

struct TorchSnapshot {
  std::string path;
  std::vector<TorchSegment> segments;
  bool has_oom = false;  // the "colabtrace" member: written by the OOM observer
  int64_t oom_device = -1;
  uint64_t requested_bytes = 0, device_allocated_bytes = 0, device_free_bytes = 0;
};

// Block-level accounting for one device, against a request.
struct TorchFragmentation {
  int64_t device = -1;
  uint64_t request = 0;
  uint64_t segments = 0, blocks = 0;
  uint64_t reserved_bytes = 0;         // sum of segment sizes
  uint64_t allocated_bytes = 0;        // active blocks (allocated or awaiting free)
  uint64_t inactive_bytes = 0;         // cached, free for reuse
  uint64_t largest_free_block = 0;     // largest inactive block in any segment
  uint64_t inactive_split_blocks = 0;  // inactive blocks in segments that also hold active ones
  uint64_t inactive_split_bytes = 0;
  uint64_t device_free_bytes = 0;      // what the driver still had (from the observer)
  // The request would have fit in the cached free bytes (plus the device's free memory)
  // but no single free block is large enough: PyTorch's "reserved but unallocated".
  bool fragmentation = false;
};

// Parses a snapshot; nullopt with *error on JSON that is not a snapshot at all.
std::optional<TorchSnapshot> ParseTorchSnapshot(std::string_view json_text, std::string path,
                                                std::string* error);
// The snapshot written next to trace t (its .ctrace name with .torch-snapshot.json), if any.
std::optional<TorchSnapshot> FindTorchSnapshot(const ProcessTrace& t);

// Every trace's snapshot, read and parsed once (RunModel::Get<TorchSnapshots>()).
struct TorchSnapshots {
  std::vector<std::optional<TorchSnapshot>> of_trace;  // same order as the run's traces
  static TorchSnapshots Build(const RunModel& run);
  const std::optional<TorchSnapshot>& Of(const RunModel& run, const ProcessTrace& t) const {
    return of_trace[run.IndexOf(t)];
  }
};

// Accounting for `device` (-1: the observer's device) against `request` (0: the
// observer's requested bytes).
TorchFragmentation AnalyzeTorchSnapshot(const TorchSnapshot& s, int64_t device = -1,
                                        uint64_t request = 0);

// The accounting as JSON (processes[].python.torch_snapshot).
Json TorchFragmentationJson(const TorchSnapshot& s, const TorchFragmentation& f);

// PyTorch's accounting of its out-of-memory error on `device`: only when the snapshot
// was written by the OOM observer for that device (nullopt otherwise). The gpu.oom rule
// (gpu/rules/oom.cpp) lets it decide between gpu.oom and gpu.oom-fragmentation.
std::optional<TorchFragmentation> TorchOomAccounting(const std::optional<TorchSnapshot>& snap,
                                                     int64_t device);

}  // namespace colabtrace::analyzer
