// gpu.churn (warning)
//
// Rule: at least kChurnMinPairs raw segment allocate/free pairs at kChurnMinRate per second
// or more: a caching allocator turned off or defeated. A caching allocator releasing its
// cache at once (a run of kCacheReleaseMinFrees frees on one thread with no allocation
// between: PyTorch's empty_cache() or its free-and-retry after an out-of-memory failure)
// is not churn: AllocationTimeline leaves those pairs out of raw_pairs.
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "gpu/rules/rules.h"

namespace colabtrace::analyzer::gpu {

using format::EnvSource;
namespace {

constexpr uint64_t kChurnMinPairs = 1000;  // raw allocate/free pairs ...
constexpr double kChurnMinRate = 100.0;    // ... at this many per second or more

void ChurnOf(RuleContext& ctx, const ProcessTrace& t, const AllocationTimeline& g) {
  const Churn& c = g.churn;
  if (c.raw_pairs < kChurnMinPairs || c.rate_per_s < kChurnMinRate) return;
  Finding finding = Finding::Of(FindingId::kGpuChurn, t.pid());
  finding.evidence["raw_pairs"] = c.raw_pairs;
  finding.evidence["rate_per_s"] = std::round(c.rate_per_s * 10.0) / 10.0;
  finding.evidence["median_lifetime_ns"] = c.median_lifetime_ns;
  finding.evidence["time_in_calls_ns"] = c.call_ns;
  finding.evidence["cache_releases"] = c.cache_releases;
  bool no_caching = false;
  for (const auto& e : t.records.EnvVar) {
    if (t.Str(e.name) == "PYTORCH_NO_CUDA_MEMORY_CACHING") {
      no_caching = e.source != static_cast<uint64_t>(EnvSource::kUnsetenv) && t.Str(e.value) == "1";
    }
  }
  finding.evidence["pytorch_no_cuda_memory_caching"] = no_caching;
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.0f", c.rate_per_s);
  finding.summary = std::to_string(c.raw_pairs) + " raw GPU allocate/free pairs at " + rate +
                    " per second (median lifetime " + FormatDurationNs(c.median_lifetime_ns) +
                    ", " + FormatDurationNs(c.call_ns) + " inside the calls): caching is bypassed";
  if (no_caching) finding.advice += " PYTORCH_NO_CUDA_MEMORY_CACHING=1 turns PyTorch's cache off: unset it.";
  ctx.Add(std::move(finding));
}

void ChurnRule(RuleContext& ctx) { ForEachProcess(ctx, ChurnOf); }

const RuleRegistration kChurnRuleRegistration(ChurnRule, {FindingId::kGpuChurn});
}  // namespace

}  // namespace colabtrace::analyzer::gpu
