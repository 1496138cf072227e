// Growth-based GPU leak detection (gpu.leak, the `leak_growth_bytes` metric).
//
// A leak is device memory that keeps growing while the program runs: allocations that
// are never freed, made over and over after warm-up from one allocation site. Memory a
// caching allocator (PyTorch, TF, XLA, a program's own pool) allocated once and still
// holds at exit is not a leak; it is reported as `held_at_exit_bytes` context.
//
// The rule, exactly (docs/gpu-validation.md explains the choice of numbers):
//   - window: from the process's first device allocation to its end (exit or kill);
//   - warm-up: the window's first quarter (kWarmupShare); the rest is split into three
//     equal thirds;
//   - survivors: device allocations still live at the end, grouped by allocation site
//     (the Python stack when one was recorded, else the native stack, else the caller);
//   - a group is growing when it has at least kMinGrowthAllocations survivors allocated
//     after warm-up, at least one in each of the three thirds, spread over at least
//     kMinGrowthSpanNs (growth over milliseconds cannot be told from setup: eight worker
//     threads each keeping one buffer as they finish), and the process's live device
//     bytes at the end exceed those at the end of warm-up;
//   - a growing group's count and bytes are all of its survivors (warm-up ones too), its
//     rate is (bytes of its survivors after the first) / (last - first survivor time).
// The sum of the growing groups' bytes is `leak_growth_bytes`: zero for a program that
// frees what it allocates per step, whatever its caches hold, so `check` does not flap.
#pragma once

#include <cstdint>
#include <vector>

#include "gpu/allocation_timeline.h"

namespace colabtrace::analyzer::gpu {

inline constexpr double kWarmupShare = 0.25;
inline constexpr uint64_t kMinGrowthAllocations = 3;
inline constexpr uint64_t kMinGrowthSpanNs = 1000000000;  // 1 s

struct LeakGroup {
  uint64_t py_stack = 0, stack = 0, caller = 0;  // the site (String id, Stack id, address)
  uint16_t api = 0;
  MemKind kind = MemKind::kNone;
  uint64_t count = 0, bytes = 0;                    // all survivors of the site
  uint64_t after_warmup_count = 0, after_warmup_bytes = 0;
  uint64_t after_warmup_first_ts = 0;
  uint64_t first_ts = 0, last_ts = 0;
  double rate_bytes_per_s = 0;
};

struct LeakGrowth {
  uint64_t window_start = 0, warmup_end = 0, window_end = 0;
  uint64_t growth_bytes = 0, growth_allocations = 0;
  uint64_t held_at_exit_bytes = 0;  // live at the end but not growing (caches, pools)
  // The live bytes at warm-up's end came from the shim's samples (the window had given up
  // the records of that time): exact at the sample, which may precede warm-up's end.
  bool warmup_from_samples = false;
  std::vector<LeakGroup> groups;    // growing sites, most bytes first
};

// end_ns: when the process ended (ProcessTrace::end_ns()).
LeakGrowth FindLeakGrowth(const AllocationTimeline& g, uint64_t end_ns);

}  // namespace colabtrace::analyzer::gpu
