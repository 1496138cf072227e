// What the shim's CUPTI subscriber saw (COLABTRACE_CUPTI=1), merged with the hooks.
//
// CUPTI reports each allocation up to twice (a driver API callback, source 2, and a
// MEMORY2 activity record, source 1); the hooks report it once. An allocation is the
// same when its address is: per address, the CUPTI allocations beyond the hooks' count
// (taking the larger of the two CUPTI sources, never their sum) are allocations only CUPTI
// saw, e.g. made by a statically linked cudart the shim cannot interpose. Those are added
// to the allocation count and flagged in gpu.coverage-incomplete; nothing is counted twice.
// (CUPTI's timestamps are on another clock, so matching is by address and count.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/process_trace.h"

namespace colabtrace::analyzer::gpu {

struct CuptiSummary {
  bool seen = false;             // any CuptiState record
  std::string state;             // the last meaningful state: subscribed, backed-off, ...
  int64_t rc = 0;                // its CUptiResult
  bool injected = false;         // CUDA called InitializeInjection
  uint64_t activity_records = 0; // decoded activity records (all flushes)
  uint64_t dropped = 0;          // records CUPTI dropped (all flushes)
  uint64_t merged_allocations = 0;      // CUPTI allocations the hooks also saw
  uint64_t only_allocations = 0, only_bytes = 0;  // seen by CUPTI alone
  std::vector<std::string> module_archs;  // per loaded module: "80,90"
};

CuptiSummary SummarizeCupti(const ProcessTrace& t);

}  // namespace colabtrace::analyzer::gpu
