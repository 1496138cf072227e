// GPU memory: per process that used GPU memory, its counts, peak, what was left at the
// end, each device's peak with a sparkline of live bytes, each failed allocation and
// pinned host memory; past kProcessRowsBeforeGrouping such processes one summed line per
// role. From the run model's gpu::GpuTimelines.
#include <algorithm>
#include <map>

#include "gpu/allocation_timeline.h"
#include "gpu/gpu_api.h"
#include "gpu/gpu_findings.h"
#include "gpu/leak_growth.h"
#include "model/process_role.h"
#include "render/text/sections.h"

namespace colabtrace::analyzer::text {
namespace {

using gpu::AllocationTimeline;
using gpu::Point;

uint64_t Rel(uint64_t ts, uint64_t start) { return ts >= start ? ts - start : 0; }

std::string Sparkline(const std::vector<Point>& points) {
  static const char* const kBars[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  if (points.empty()) return "";
  constexpr size_t kWidth = 40;
  const uint64_t first = points.front().ts, last = std::max(points.back().ts, first + 1);
  std::vector<uint64_t> col(kWidth, 0);
  uint64_t top = 1;
  size_t k = 0;
  uint64_t cur = 0;
  for (size_t c = 0; c < kWidth; ++c) {
    const uint64_t until = first + (last - first) * (c + 1) / kWidth;
    uint64_t hi = cur;
    while (k < points.size() && points[k].ts <= until) hi = std::max(hi, cur = points[k++].bytes);
    col[c] = hi;
    top = std::max(top, hi);
  }
  std::string s;
  for (uint64_t v : col) s += kBars[std::min<uint64_t>(7, v * 8 / (top + 1))];
  return s;
}

bool HasText(const AllocationTimeline& g) {
  return g.allocations != 0 || g.failed_allocations != 0 || g.host.allocations != 0;
}

// Past kProcessRowsBeforeGrouping processes that used GPU memory: one line per role
// (ProcessRole), with sums, the highest peak and a few pids.
std::string GroupedText(const ReportBuilder& report, const std::vector<size_t>& allocating,
                        const std::vector<AllocationTimeline>& tl, const std::vector<const Json*>& rows) {
  struct Group {
    std::vector<int64_t> pids;
    uint64_t allocations = 0, frees = 0, failed = 0, peak = 0, leaked = 0, growth = 0, held = 0, pinned = 0;
  };
  std::map<std::string, Group> groups;
  for (size_t i : allocating) {
    const AllocationTimeline& g = tl[i];
    const gpu::LeakGrowth lg = gpu::FindLeakGrowth(g, report.traces()[i].end_ns());
    Group& gr = groups[rows[i] != nullptr ? ProcessRole(*rows[i]) : ProcessRole(Json::MakeObject())];
    gr.pids.push_back(report.traces()[i].pid());
    gr.allocations += g.allocations, gr.frees += g.frees, gr.failed += g.failed_allocations;
    gr.peak = std::max(gr.peak, g.peak_bytes);
    gr.leaked += g.leaked_bytes, gr.growth += lg.growth_bytes, gr.held += lg.held_at_exit_bytes;
    gr.pinned += g.host.allocations;
  }
  std::vector<std::pair<const std::string*, const Group*>> order;
  for (const auto& [role, g] : groups) order.emplace_back(&role, &g);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->pids.size() > b.second->pids.size(); });
  std::string s = std::to_string(allocating.size()) + " processes used GPU memory, in " +
                  std::to_string(groups.size()) +
                  " groups (by command and role, summed; `report --format json` lists each process)\n";
  for (const auto& [role, g] : order) {
    const size_t n = g->pids.size();
    s += EscapeForTerminal(*role).substr(0, 64) + ": " + std::to_string(n) +
         (n == 1 ? " process (pid " : " processes (pids ") + PidSample(g->pids) + "): " +
         std::to_string(g->allocations) + " allocations, " + std::to_string(g->frees) + " frees, " +
         std::to_string(g->failed) + " failed; highest peak " + FormatBytes(g->peak) + "; " +
         FormatBytes(g->leaked) + " still allocated at the end (" + FormatBytes(g->growth) + " of it growing, " +
         FormatBytes(g->held) + " held)" +
         (g->pinned > 0 ? "; " + std::to_string(g->pinned) + " pinned host allocations" : "") + "\n";
  }
  return s;
}

std::string ProcessText(const ProcessTrace& t, const AllocationTimeline& g) {
  if (!HasText(g)) return "";
  char line[512];
  std::string s;
  const gpu::LeakGrowth lg = gpu::FindLeakGrowth(g, t.end_ns());
  std::snprintf(line, sizeof(line),
                "pid %u: %llu allocations, %llu frees, %llu failed; peak %s at +%.3f s; %s still "
                "allocated at the end (%s of it growing, %s held)\n",
                t.pid(), static_cast<unsigned long long>(g.allocations),
                static_cast<unsigned long long>(g.frees),
                static_cast<unsigned long long>(g.failed_allocations), FormatBytes(g.peak_bytes).c_str(),
                static_cast<double>(Rel(g.peak_ts, t.start_ns())) / 1e9,
                FormatBytes(g.leaked_bytes).c_str(), FormatBytes(lg.growth_bytes).c_str(),
                FormatBytes(lg.held_at_exit_bytes).c_str());
  s += line;
  for (const auto& [index, d] : g.devices) {
    const double pct = d.total > 0 ? 100.0 * static_cast<double>(d.peak_bytes) / static_cast<double>(d.total) : 0;
    std::snprintf(line, sizeof(line), "  %s, %s: peak %s (%.1f%%) in %llu segments  %s\n",
                  gpu::DeviceLabel(&d, index).c_str(), FormatBytes(d.total).c_str(),
                  FormatBytes(d.peak_bytes).c_str(), pct,
                  static_cast<unsigned long long>(d.peak_segments), Sparkline(d.points).c_str());
    s += line;
  }
  for (const auto& f : g.failures) {
    auto dit = g.devices.find(f.device);
    const gpu::FailureVerdict v =
        gpu::JudgeFailure(f, dit != g.devices.end() ? &dit->second : nullptr, nullptr);
    std::snprintf(line, sizeof(line), "  failed at +%.3f s: %s of %s -> %lld%s%s%s\n",
                  static_cast<double>(Rel(f.ts, t.start_ns())) / 1e9, gpu::GpuApiLabel(f.api).c_str(),
                  FormatBytes(f.request).c_str(), static_cast<long long>(f.rc),
                  f.have_meminfo ? (", free " + FormatBytes(f.free) + " of " + FormatBytes(f.total)).c_str() : "",
                  v.cause.empty() ? "" : (": " + v.cause).c_str(), f.recovered ? " (recovered)" : "");
    s += line;
  }
  if (g.host.allocations > 0) {
    std::snprintf(line, sizeof(line), "  pinned host memory: %llu allocations, peak %s\n",
                  static_cast<unsigned long long>(g.host.allocations), FormatBytes(g.host.peak_bytes).c_str());
    s += line;
  }
  return s;
}

}  // namespace

void GpuMemorySection(const ReportBuilder& report, std::vector<TextSection>& out) {
  const auto& traces = report.traces();
  const std::vector<AllocationTimeline>& tl = report.run().Get<gpu::GpuTimelines>().of_trace;
  std::vector<size_t> allocating;  // traces with a GPU text paragraph
  for (size_t i = 0; i < traces.size() && i < tl.size(); ++i) {
    if (HasText(tl[i])) allocating.push_back(i);
  }
  std::string text;
  if (allocating.size() <= kProcessRowsBeforeGrouping) {
    for (size_t i : allocating) text += ProcessText(traces[i], tl[i]);
  } else {
    text = GroupedText(report, allocating, tl, RowsOfTraces(report));
  }
  if (!text.empty()) out.push_back({"GPU memory", text});
}

}  // namespace colabtrace::analyzer::text
