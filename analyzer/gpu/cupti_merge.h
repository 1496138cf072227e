// What the shim's CUPTI subscriber saw (COLABTRACE_CUPTI=1), merged with the hooks.
//
// Only allocations a program made through an API count (CuptiMemoryClass): driver API
// callbacks (source 2) and MEMORY2 activity records (source 1) of memory kind DEVICE or
// MANAGED. The activity records of the driver's own memory are not the program's:
// DEVICE_STATIC / MANAGED_STATIC are the __device__ / __managed__ variables of each module
// the driver loads (PyTorch's lazily loaded kernels: 940 records of a few hundred bytes in
// one training run, correlation id 0, no API call behind them), PINNED / PAGEABLE are host
// memory (the hooks count cudaHostAlloc apart), ARRAY is cuArrayCreate's. They are counted
// apart and never added to the allocations.
//
// CUPTI reports each allocation up to twice (a driver API callback and an activity
// record); the hooks report it once. An allocation is the same when its address is: per
// address, the CUPTI allocations beyond the hooks' count (taking the larger of the two
// CUPTI sources, never their sum) are allocations only CUPTI saw, e.g. made by a
// statically linked cudart the shim cannot interpose. Those are added to the allocation
// count and flagged in gpu.coverage-incomplete; nothing is counted twice. (CUPTI's
// timestamps are on another clock, so matching is by address and count.)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/process_trace.h"

namespace colabtrace::analyzer::gpu {

// What a cupti_memory record stands for.
enum class CuptiMemoryClass {
  kProgramAllocation,  // device or managed memory a program allocated through an API
  kDriverStatic,       // the driver's memory for a loaded module's variables (DEVICE_STATIC, MANAGED_STATIC)
  kHost,               // host memory (PINNED, PAGEABLE)
  kOther,              // arrays, unknown kinds, releases, pool records
};
CuptiMemoryClass ClassifyCuptiMemory(const format::CuptiMemory& m);

struct CuptiSummary {
  bool seen = false;             // any CuptiState record
  std::string state;             // the last meaningful state: subscribed, backed-off, handed-over, ...
  int64_t rc = 0;                // its CUptiResult
  bool injected = false;         // CUDA called InitializeInjection
  std::optional<uint64_t> handed_over_ts;  // when the program's profiler took CUPTI
  uint64_t activity_records = 0; // decoded activity records (all flushes)
  uint64_t dropped = 0;          // records CUPTI dropped (all flushes)
  uint64_t merged_allocations = 0;      // CUPTI allocations the hooks also saw
  uint64_t only_allocations = 0, only_bytes = 0;  // seen by CUPTI alone
  uint64_t driver_static_allocations = 0, driver_static_bytes = 0;  // never the program's
  uint64_t host_allocations = 0;  // pinned/pageable host memory CUPTI reported
  std::vector<std::string> module_archs;  // per loaded module: "80,90"
};

CuptiSummary SummarizeCupti(const ProcessTrace& t);

}  // namespace colabtrace::analyzer::gpu
