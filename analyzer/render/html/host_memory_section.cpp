// Host memory, per machine: the memory of every process over time, stacked (PSS from
// `colabtrace run`'s samples, so shared pages count once and DataLoader workers add up
// on top of the main process; RSS from the shim's own samples when there is no PSS),
// each large process's RSS as a line, the cgroup's memory.current, and the cgroup limit
// and MemTotal as horizontal lines, with every killed process marked where it ended.
// Drawn from the run model's LifecycleModel, the traces' samples and
// ProcessFacts.
#include <algorithm>
#include <map>
#include <set>

#include "model/process_facts.h"
#include "render/html/escape.h"
#include "render/html/sections.h"
#include "render/html/svg.h"

namespace colabtrace::analyzer::html {
namespace {

constexpr size_t kColumns = 300;

struct ProcessSeries {
  uint32_t pid = 0;
  std::string label;
  std::vector<XY> stacked;  // PSS (or RSS when the host has no PSS)
  std::vector<XY> rss;
  double peak_stacked = 0, peak_rss = 0;
  uint64_t end_ns = 0;  // its trace's end (its memory is drawn until then), 0 unknown
};

void AddPoint(std::vector<XY>& v, double& peak, uint64_t ts, uint64_t value) {
  if (value == UINT64_MAX || value == 0) return;  // unknown, or read during teardown
  v.push_back({ts, static_cast<double>(value)});
  peak = std::max(peak, static_cast<double>(value));
}

std::string HostSection(const PageContext& ctx, const std::string& host, const std::vector<size_t>& traces,
                        bool show_host) {
  const auto& all = ctx.report.traces();
  const LifecycleModel* model = &ctx.report.run().lifecycle();
  std::map<uint32_t, ProcessSeries> procs;
  std::map<uint32_t, const Json*> json_of;
  for (size_t i : traces) {
    if (ctx.process_of_trace[i] == nullptr) continue;
    json_of[all[i].pid()] = ctx.process_of_trace[i];
    procs[all[i].pid()].end_ns = std::max(procs[all[i].pid()].end_ns, all[i].end_ns());
  }
  bool have_pss = false;
  if (model != nullptr) {
    for (const auto& [pid, samples] : model->OutsideSamples(host)) {
      ProcessSeries& p = procs[pid];
      for (const OutsideSample& o : samples) {
        AddPoint(p.rss, p.peak_rss, o.ts, o.rss);
        AddPoint(p.stacked, p.peak_stacked, o.ts, o.pss);
      }
      have_pss = have_pss || !p.stacked.empty();
    }
  }
  for (size_t i : traces) {
    const ProcessTrace& t = all[i];
    ProcessSeries& p = procs[t.pid()];
    if (ctx.process_of_trace[i] == nullptr || !p.stacked.empty() || !p.rss.empty()) continue;  // run's samples win
    for (const auto& smp : t.records.Sample) AddPoint(p.rss, p.peak_rss, smp.ts, smp.rss_bytes);
  }
  std::vector<ProcessSeries*> order;
  for (auto& [pid, p] : procs) {
    p.pid = pid;
    if (!have_pss) p.stacked = p.rss, p.peak_stacked = p.peak_rss;
    auto it = json_of.find(pid);
    p.label = it != json_of.end() ? ProcessLabel(*it->second) : "pid " + std::to_string(pid);
    std::sort(p.stacked.begin(), p.stacked.end(), [](const XY& a, const XY& b) { return a.x < b.x; });
    std::sort(p.rss.begin(), p.rss.end(), [](const XY& a, const XY& b) { return a.x < b.x; });
    if (!p.stacked.empty() || !p.rss.empty()) order.push_back(&p);
  }
  // Limits and the cgroup's own reading.
  uint64_t cgroup_max = UINT64_MAX, mem_total = UINT64_MAX;
  for (size_t i : traces) {
    const ProcessFacts& f = ctx.report.run().facts(all[i]);
    if (f.cgroup_max != UINT64_MAX && f.cgroup_max != 0) cgroup_max = f.cgroup_max;
    if (f.mem_total != UINT64_MAX && f.mem_total != 0) mem_total = f.mem_total;
  }
  std::vector<XY> cgroup_current;
  double peak_cgroup = 0;
  if (model != nullptr) {
    for (const CgroupReading& c : model->CgroupReadings(host)) {
      AddPoint(cgroup_current, peak_cgroup, c.ts, c.current);
      if (c.max != UINT64_MAX && c.max != 0) cgroup_max = c.max;
    }
  }
  std::string s = "<div class=\"host\" data-processes=\"" + std::to_string(order.size()) + "\">\n";
  if (show_host) s += "<h3>Host " + Text(host) + "</h3>\n";
  if (order.empty()) return s + "<p>No memory samples.</p></div>\n";

  // Stack: processes in the order they started (the main process at the bottom, its
  // workers above it); the largest kMaxStackedLayers - 1 on their own, the rest summed.
  std::sort(order.begin(), order.end(), [](const ProcessSeries* a, const ProcessSeries* b) {
    const uint64_t ta = a->stacked.empty() ? UINT64_MAX : a->stacked.front().x;
    const uint64_t tb = b->stacked.empty() ? UINT64_MAX : b->stacked.front().x;
    return ta != tb ? ta < tb : a->pid < b->pid;
  });
  std::vector<ProcessSeries*> by_peak = order;
  std::sort(by_peak.begin(), by_peak.end(),
            [](const ProcessSeries* a, const ProcessSeries* b) { return a->peak_stacked > b->peak_stacked; });
  std::set<const ProcessSeries*> own;
  for (size_t k = 0; k < by_peak.size() && own.size() + 1 < kMaxStackedLayers; ++k) own.insert(by_peak[k]);
  if (own.size() + 1 == by_peak.size()) own.insert(by_peak.back());  // no "1 other"
  std::vector<std::pair<std::string, std::vector<double>>> layers;
  std::vector<double> others(kColumns, -1);
  size_t other_count = 0;
  for (const ProcessSeries* p : order) {
    if (p->stacked.empty()) continue;
    std::vector<double> grid = ColumnMax(p->stacked, ctx.run_start, ctx.run_end, kColumns, p->end_ns, -1);
    if (own.contains(p)) {
      layers.emplace_back(p->label, std::move(grid));
      continue;
    }
    ++other_count;
    for (size_t c = 0; c < kColumns; ++c) {
      if (grid[c] >= 0) others[c] = std::max(others[c], 0.0) + grid[c];
    }
  }
  if (other_count > 0) layers.emplace_back(std::to_string(other_count) + " other processes", std::move(others));
  std::vector<double> base(kColumns, 0);
  double stack_peak = 0;
  std::vector<std::vector<double>> lower, upper;
  for (auto& [label, grid] : layers) {
    std::vector<double> lo = base, hi(kColumns, -1);
    for (size_t c = 0; c < kColumns; ++c) {
      if (grid[c] < 0) continue;
      hi[c] = base[c] + grid[c];
      base[c] = hi[c];
      stack_peak = std::max(stack_peak, hi[c]);
    }
    lower.push_back(std::move(lo));
    upper.push_back(std::move(hi));
  }
  std::vector<ProcessSeries*> rss_lines;
  for (ProcessSeries* p : by_peak) {
    if (rss_lines.size() == kMaxLines) break;
    if (have_pss && !p->rss.empty()) rss_lines.push_back(p);
  }
  double data_peak = stack_peak;
  for (const ProcessSeries* p : rss_lines) data_peak = std::max(data_peak, p->peak_rss);
  // The cgroup also holds page cache and processes outside this run: drawn only when it
  // does not flatten the processes' own memory.
  const bool cgroup_current_on_scale = !cgroup_current.empty() && peak_cgroup <= 4 * data_peak;
  if (cgroup_current_on_scale) data_peak = std::max(data_peak, peak_cgroup);
  double y_max = std::max(data_peak * 1.15, static_cast<double>(1 << 20));
  const bool cgroup_on_scale = cgroup_max != UINT64_MAX && static_cast<double>(cgroup_max) <= 4 * data_peak;
  const bool total_on_scale = mem_total != UINT64_MAX && static_cast<double>(mem_total) <= 4 * data_peak;
  if (cgroup_on_scale) y_max = std::max(y_max, static_cast<double>(cgroup_max) * 1.05);
  if (total_on_scale) y_max = std::max(y_max, static_cast<double>(mem_total) * 1.05);

  const std::string what = have_pss ? "PSS" : "RSS";
  TimeChart chart(ctx.run_start, ctx.run_end, y_max, "host memory over time: " + what + " per process, stacked");
  std::vector<LegendEntry> legend;
  for (size_t k = 0; k < layers.size(); ++k) {
    const std::string cls = "s" + std::to_string(k % 10);
    chart.Band(lower[k], upper[k], "band " + cls, what + " of " + layers[k].first);
    legend.push_back({cls, what + ": " + layers[k].first});
  }
  for (size_t k = 0; k < rss_lines.size(); ++k) {
    chart.Steps(Downsample(rss_lines[k]->rss, ctx.run_start, ctx.run_end), "line rss r" + std::to_string(k),
                rss_lines[k]->end_ns);
    legend.push_back({"r" + std::to_string(k), "RSS: " + rss_lines[k]->label});
  }
  if (cgroup_current_on_scale) {
    chart.Steps(Downsample(cgroup_current, ctx.run_start, ctx.run_end), "line cgroup");
    legend.push_back({"cgroup", "cgroup memory.current"});
  }
  if (cgroup_on_scale) {
    chart.Limit(static_cast<double>(cgroup_max), "limit cgroup-max", "cgroup limit " + FormatBytes(cgroup_max));
    legend.push_back({"cgroup-max", "cgroup memory.max " + FormatBytes(cgroup_max)});
  }
  if (total_on_scale) {
    chart.Limit(static_cast<double>(mem_total), "limit memtotal", "MemTotal " + FormatBytes(mem_total));
    legend.push_back({"memtotal", "MemTotal " + FormatBytes(mem_total)});
  }
  size_t kills = 0;
  for (size_t i : traces) {
    const Json* p = ctx.process_of_trace[i];
    if (p == nullptr) continue;
    const Json& end = (*p)["end"];
    if (!end["kind"].is_string() || end["kind"].str() != "killed") continue;
    ++kills;
    const std::string sig = end["signal_name"].is_string() ? " (" + end["signal_name"].str() + ")" : "";
    chart.Event(all[i].end_ns(), "kill", "pid " + std::to_string(all[i].pid()) + " killed" + sig);
  }
  if (kills > 0) legend.push_back({"kill", std::to_string(kills) + " killed"});
  s += "<figure class=\"hostmem\" data-kills=\"" + std::to_string(kills) + "\">" + std::move(chart).Finish() +
       "</figure>\n" + Legend(legend);
  std::string note = have_pss ? "PSS from colabtrace run's samples: shared pages are split between the processes "
                                "that map them, so the stack is the tree's real footprint."
                              : "RSS from the shim's own samples (run under colabtrace run for PSS; RSS counts "
                                "shared pages in every process that maps them, so the stack may overstate).";
  if (!cgroup_current.empty() && !cgroup_current_on_scale) {
    note += " The cgroup's memory.current (peak " + FormatBytes(static_cast<uint64_t>(peak_cgroup)) +
            ", page cache and processes outside this run included) is above the scale.";
  }
  if (cgroup_max != UINT64_MAX && !cgroup_on_scale) note += " The cgroup limit (" + FormatBytes(cgroup_max) + ") is above the scale.";
  if (mem_total != UINT64_MAX && !total_on_scale) note += " MemTotal (" + FormatBytes(mem_total) + ") is above the scale.";
  return s + "<p class=\"note\">" + Text(note) + "</p></div>\n";
}

}  // namespace

std::string HostMemorySection(const PageContext& ctx) {
  std::string s = "<section id=\"host\"><h2>Host memory</h2>\n";
  std::map<std::string, std::vector<size_t>> hosts;
  const auto& all = ctx.report.traces();
  for (size_t i = 0; i < all.size(); ++i) hosts[HostKey(all[i])].push_back(i);
  size_t drawn = 0;
  for (const auto& [host, idx] : hosts) {
    if (drawn++ == kMaxCharts) break;
    s += HostSection(ctx, host, idx, hosts.size() > 1);
  }
  s += MoreNote(hosts.size() > kMaxCharts ? hosts.size() - kMaxCharts : 0, "hosts");
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
