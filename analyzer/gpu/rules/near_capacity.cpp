// gpu.near-capacity (warning)
//
// Rule: a device's peak reached kNearCapacity of its memory.
#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>

#include "gpu/rules/rules.h"

namespace colabtrace::analyzer::gpu {
namespace {

constexpr double kNearCapacity = 0.95;  // peak / device memory

void NearCapacityOf(RuleContext& ctx, const ProcessTrace& t, const AllocationTimeline& g) {
  for (const auto& [index, d] : g.devices) {
    if (d.total == 0 || d.peak_bytes == 0) continue;
    const double share = static_cast<double>(d.peak_bytes) / static_cast<double>(d.total);
    if (share < kNearCapacity) continue;
    Finding finding = Finding::Of(FindingId::kGpuNearCapacity, t.pid());
    finding.evidence["device"] = index;
    finding.evidence["peak_bytes"] = d.peak_bytes;
    finding.evidence["total_bytes"] = d.total;
    finding.evidence["percent_of_device"] = std::round(share * 1000.0) / 10.0;
    finding.evidence["peak_at_ns"] = Rel(t, d.peak_ts);
    finding.evidence["segments_at_peak"] = d.peak_segments;
    finding.summary = "this process's GPU memory peaked at " + FormatBytes(d.peak_bytes) + ", " +
                      Pct(share) + " of " + DeviceLabel(&d, index) + "'s " + FormatBytes(d.total);
    ctx.Add(std::move(finding));
  }
}

void NearCapacityRule(RuleContext& ctx) { ForEachProcess(ctx, NearCapacityOf); }

const RuleRegistration kNearCapacityRuleRegistration(NearCapacityRule,
    {FindingId::kGpuNearCapacity});
}  // namespace

}  // namespace colabtrace::analyzer::gpu
