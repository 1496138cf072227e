// ProcessFacts: the few facts about one trace that several analyses need (how it ended,
// its limits), derived in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "trace/process_trace.h"

namespace colabtrace::analyzer {

enum class EndKind { kExited, kSignaled, kKilled, kExecUntraced };

// The JSON name of an end kind (shared/PRODUCT.md): exited, signaled or killed. An exec
// into a program the shim could not follow is reported as "exited" with no code.
std::string_view EndKindName(EndKind k);

struct ProcessFacts {
  const format::ProcessStart* start = nullptr;  // the first image's start record
  const format::ProcessStart* job = nullptr;    // the last image's: the real job
  EndKind end_kind = EndKind::kKilled;
  std::optional<int64_t> exit_code;             // when it exited with a known code
  const format::Signal* signal = nullptr;       // the fatal signal, when signaled
  uint64_t peak_rss = 0;
  uint64_t cgroup_max = UINT64_MAX;             // UINT64_MAX: unlimited or unknown
  uint64_t mem_total = UINT64_MAX;
  uint64_t shm_size = UINT64_MAX;

  static ProcessFacts Of(const ProcessTrace& t);
};

}  // namespace colabtrace::analyzer
