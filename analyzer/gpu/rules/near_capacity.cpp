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

}  // namespace

void AddNearCapacity(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g) {
  for (const auto& [index, d] : g.devices) {
    if (d.total == 0 || d.peak_bytes == 0) continue;
    const double share = static_cast<double>(d.peak_bytes) / static_cast<double>(d.total);
    if (share < kNearCapacity) continue;
    Finding fd;
    fd.id = "gpu.near-capacity";
    fd.severity = Severity::kWarning;
    fd.pid = t.pid();
    fd.evidence["device"] = index;
    fd.evidence["peak_bytes"] = d.peak_bytes;
    fd.evidence["total_bytes"] = d.total;
    fd.evidence["percent_of_device"] = std::round(share * 1000.0) / 10.0;
    fd.evidence["peak_at_ns"] = Rel(t, d.peak_ts);
    fd.evidence["segments_at_peak"] = d.peak_segments;
    fd.summary = "this process's GPU memory peaked at " + FormatBytes(d.peak_bytes) + ", " +
                 Pct(share) + " of " + DeviceLabel(&d, index) + "'s " + FormatBytes(d.total);
    fd.advice =
        "Less than 5% headroom: a larger batch, a longer sequence or some fragmentation will "
        "tip it into an out-of-memory error. Keep the peak under about 90%: a smaller batch, "
        "expandable_segments:True, or gradient accumulation.";
    report.AddFinding(std::move(fd));
  }
}

}  // namespace colabtrace::analyzer::gpu
