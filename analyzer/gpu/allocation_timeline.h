// AllocationTimeline: one process's GPU memory, replayed from its trace.
//
// The replay walks the process's GPU records in time order and keeps what was live:
// allocations by address, VMM physical handles and their mappings. From that it derives
// the figures of the report: counts, live bytes over time per device, the peak, what
// was left at the end (exit or kill), each failed allocation with the state around it
// (free memory seen through the same driver, this process's segments, the address map
// of free extents between them, a cache-flush-and-retry episode), and churn.
//
// The shim sees segments (what the program asked the CUDA runtime or driver for), not
// the tensors a framework's caching allocator places inside them; every figure here is
// a segment-level fact. See docs/trace-format.md for the records.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "gpu/gpu_api.h"
#include "model/run_model.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::gpu {

// The driver's allocation granularity: a segment occupies its size rounded up to this.
inline constexpr uint64_t kSegmentGranularity = 2ull << 20;

// One allocation (a live segment, a VMM physical handle, a pinned host buffer).
// The Python stack (String id) of an allocation record; 0 for records written before the
// field existed (the Python-attribution work adds GpuAlloc.py_stack).
template <class R> uint64_t PyStackOf(const R& r) {
  if constexpr (requires { r.py_stack; }) {
    return r.py_stack;
  } else {
    return 0;
  }
}

struct Block {
  uint64_t addr = 0;   // address (or, for VMM, the handle)
  uint64_t size = 0;   // requested bytes
  uint64_t ts = 0;     // when it was allocated
  int64_t device = -1;
  MemKind kind = MemKind::kNone;
  uint16_t api = 0;
  uint8_t layer = 0;
  uint32_t tid = 0;
  uint64_t stack = 0;   // Stack id (0: none)
  uint64_t caller = 0;  // return address, when there is no stack
  uint64_t py_stack = 0;  // the Python stack's String id (0: none recorded)
};

// One piece of an address map, in address order: a live segment (as it occupies the
// device: rounded up to kSegmentGranularity) or a free extent between segments.
struct Extent {
  uint64_t lo = 0, hi = 0;
  bool free = false;
};

// At most this many extents are laid out per map (the lowest addresses); the rest are
// counted in AddressMap::extents_omitted.
inline constexpr size_t kMaxMapExtents = 1024;
// Only the first this many out-of-memory failures of a process keep their layout (a
// failing retry loop must not hold thousands of maps); later ones keep the counts.
inline constexpr size_t kMaxLaidOutFailures = 8;

// Free extents between this process's segments on one device.
struct AddressMap {
  uint64_t segments = 0;        // live segments (VMM: mapped extents)
  uint64_t segment_bytes = 0;
  uint64_t free_extents = 0;     // free extents inside the span its segments ever used
  uint64_t free_extent_bytes = 0;
  uint64_t largest_free_extent = 0;
  uint64_t largest_segment = 0;
  std::vector<Block> gap_holders;  // live segments next to a free extent, largest first
  std::map<uint64_t, uint64_t> size_histogram;  // power-of-two bucket -> live segments
  // The layout, for a drawing: segments and free extents inside the span its segments
  // ever covered, in address order. A jump between two extents is address space this
  // process never used. Empty for failures past kMaxLaidOutFailures.
  std::vector<Extent> extents;
  uint64_t extents_omitted = 0;
};

// A failed allocation call (device memory), with the state around it.
struct Failure {
  uint64_t ts = 0;
  uint32_t tid = 0;
  uint16_t api = 0;
  uint8_t layer = 0;
  int64_t device = -1;
  uint64_t request = 0;
  int64_t rc = 0;
  uint64_t stack = 0, caller = 0;
  uint64_t process_live = 0;  // this process's live device bytes on that device
  uint64_t process_allocations = 0;  // and how many allocations hold them
  bool have_meminfo = false;  // free/total read right after the failure
  uint64_t free = 0, total = 0;
  int64_t meminfo_rc = 0;
  bool have_pool = false;     // stream-ordered: the pool's state after the failure
  uint64_t pool_reserved = 0, pool_used = 0;
  AddressMap map;
  // The framework pattern: failure, a burst of frees, the same request again.
  int64_t retry_of = -1;      // index of the episode's first failure, -1 if none
  uint64_t flush_frees = 0, flush_bytes = 0;  // frees on this thread since the previous try
  bool recovered = false;     // the same request succeeded on this thread afterwards
  bool episode_last = true;   // no retry of this failure followed
};

// A change of live bytes: (time, live bytes afterwards, live segments afterwards).
struct Point {
  uint64_t ts;
  uint64_t bytes;
  uint64_t segments;
};

struct DeviceMemory {
  int64_t index = -1;
  const format::GpuDevice* facts = nullptr;  // GpuDevice record, when there is one
  std::string name;                           // from facts
  uint64_t total = 0;                         // device memory (facts or memory readings)
  uint64_t allocations = 0, frees = 0, failed_allocations = 0;
  uint64_t live_bytes = 0, live_segments = 0;
  uint64_t peak_bytes = 0, peak_ts = 0, peak_segments = 0;
  uint64_t leaked_bytes = 0;
  std::vector<Point> points;  // every change, in time order
  AddressMap at_peak;
  std::map<uint16_t, uint64_t> apis;          // successful allocations by API
  uint64_t runtime_calls = 0, driver_calls = 0;  // successful allocations by layer
  bool have_baseline = false;       // the first memory reading on this device
  uint64_t baseline_elsewhere = 0;  // total - free - own live bytes at that reading
  uint64_t min_free = UINT64_MAX;   // lowest free memory any reading saw
};

struct HostPinned {
  uint64_t allocations = 0, frees = 0, failed_allocations = 0;
  uint64_t live_bytes = 0, peak_bytes = 0, leaked_bytes = 0;
};

// A run of at least this many segment frees on one thread, with no allocation on that
// thread in between, is a caching allocator releasing its cache at once (PyTorch's
// empty_cache() or its free-and-retry after an out-of-memory failure, a framework's
// teardown): its pairs are not churn. Churn interleaves allocations and frees.
inline constexpr uint64_t kCacheReleaseMinFrees = 32;

struct Churn {
  uint64_t raw_pairs = 0;          // segments (cudaMalloc-style) allocated and freed again,
                                   // cache releases (kCacheReleaseMinFrees) left out
  uint64_t median_lifetime_ns = 0;
  double rate_per_s = 0;           // pairs per second between the first and the last
  uint64_t call_ns = 0;            // time spent in those allocate and free calls
  uint64_t first_ts = 0, last_ts = 0;
  uint64_t cache_releases = 0;     // runs of >= kCacheReleaseMinFrees frees on one thread
  uint64_t released_pairs = 0;     // the pairs those runs closed (not in raw_pairs)
};

struct AllocationTimeline {
  uint64_t allocations = 0, frees = 0, failed_allocations = 0;
  uint64_t peak_bytes = 0, peak_ts = 0, leaked_bytes = 0;
  uint64_t unmatched_frees = 0;     // successful frees of addresses never seen allocated
  uint64_t zero_size_allocations = 0;
  uint64_t first_alloc_ts = 0;      // first device allocation call (0: none)
  uint64_t first_alloc_size = 0;
  int64_t first_alloc_device = -1;
  std::map<int64_t, DeviceMemory> devices;
  HostPinned host;
  std::vector<Failure> failures;
  std::vector<Block> leaked;        // device memory live at the end
  std::map<int64_t, uint64_t> failures_by_code;
  struct KindTotals {
    uint64_t allocations = 0, bytes = 0;
  };
  KindTotals by_kind[6];            // indexed by MemKind
  uint64_t vmm_creates = 0, vmm_maps = 0, stream_ordered = 0, raw_segments = 0;
  uint64_t pools_created = 0;
  uint64_t modules_loaded = 0, module_failures = 0;
  // Driver-layer allocations made by a libcudart whose runtime entry point did not pass
  // through the shim (the runtime layer was bypassed; the driver layer still saw them).
  uint64_t runtime_bypassed = 0, runtime_bypassed_bytes = 0;
  std::string runtime_bypassed_lib;
  Churn churn;
  std::vector<Point> points;        // all devices together
  // The window gave up GPU records (format 1.5, gpu_live.h): the replay started from the
  // live set at this time, and took counts and peaks from the live-set counters; 0: the
  // records are all there. Churn, the points and the per-API counts are the window's.
  uint64_t seeded_from_ns = 0;
  // With seeded_from_ns: the live device bytes the shim sampled over the whole run
  // (format/gpu_live.h, GpuLiveHistory), ts and bytes only; empty for older traces.
  std::vector<Point> sampled;

  // Replays t's GPU records.
  static AllocationTimeline Of(const ProcessTrace& t);
};

// Every trace's timeline (RunModel::Get<GpuTimelines>()).
struct GpuTimelines {
  std::vector<AllocationTimeline> of_trace;  // same order as the run's traces
  static GpuTimelines Build(const RunModel& run);
};

// A device's identity across processes: its PCI address, name and size when recorded,
// else its index.
std::string DeviceKey(const DeviceMemory& d);

// Live bytes at time ts in a change list (0 before the first change).
uint64_t LiveAt(const std::vector<Point>& points, uint64_t ts);

}  // namespace colabtrace::analyzer::gpu
