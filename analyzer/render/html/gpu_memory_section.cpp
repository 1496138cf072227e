// GPU memory: per device (one identity across processes, gpu::DeviceKey), the live
// bytes of all its processes over time against the device's capacity, a marker for each
// failed allocation (out-of-memory ones apart), and the address-space map (segments and
// the free extents between them) at each process's peak and at its out-of-memory
// failures. Drawn from the AllocationTimeline of each trace (the run model's gpu::GpuTimelines).
#include <algorithm>
#include <map>
#include <queue>

#include "gpu/allocation_timeline.h"
#include "gpu/gpu_api.h"
#include "render/html/escape.h"
#include "render/html/sections.h"
#include "render/html/svg.h"

namespace colabtrace::analyzer::html {
namespace {

using gpu::AddressMap;
using gpu::AllocationTimeline;
using gpu::DeviceMemory;
using gpu::Failure;

struct Member {
  size_t trace;
  const DeviceMemory* device;
};

struct DeviceView {
  std::string name;
  int64_t index = -1;
  uint64_t total = 0;
  std::vector<Member> members;
};

std::string SecondsText(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}

// The sum of the members' live bytes over time (each process's memory is gone after its
// trace ends), merged in time order and down-sampled; also its peak.
std::vector<XY> CombinedLive(const PageContext& ctx, const DeviceView& dv, uint64_t* peak, uint64_t* peak_ts) {
  struct Cursor {
    uint64_t ts;
    size_t member;
    size_t next;  // index into points; points.size() means the end-of-trace drop
  };
  auto later = [](const Cursor& a, const Cursor& b) { return a.ts > b.ts; };
  std::priority_queue<Cursor, std::vector<Cursor>, decltype(later)> heap(later);
  std::vector<uint64_t> current(dv.members.size(), 0);
  for (size_t m = 0; m < dv.members.size(); ++m) {
    const auto& pts = dv.members[m].device->points;
    if (!pts.empty()) heap.push({pts[0].ts, m, 0});
  }
  SeriesDownsampler out(ctx.run_start, ctx.run_end);
  uint64_t total = 0;
  *peak = 0;
  *peak_ts = 0;
  while (!heap.empty()) {
    const Cursor c = heap.top();
    heap.pop();
    const auto& pts = dv.members[c.member].device->points;
    const uint64_t value = c.next < pts.size() ? pts[c.next].bytes : 0;
    total = total - current[c.member] + value;
    current[c.member] = value;
    out.Add(c.ts, static_cast<double>(total));
    if (total > *peak) *peak = total, *peak_ts = c.ts;
    if (c.next + 1 < pts.size()) {
      heap.push({pts[c.next + 1].ts, c.member, c.next + 1});
    } else if (c.next + 1 == pts.size() && value != 0) {
      const uint64_t end = ctx.report.traces()[dv.members[c.member].trace].end_ns();
      heap.push({std::max(end, c.ts) + 1, c.member, pts.size()});
    }
  }
  return out.Finish();
}

struct FailureRef {
  size_t trace;
  const Failure* failure;
};

std::string FailureTitle(const PageContext& ctx, const FailureRef& r) {
  const Failure& f = *r.failure;
  std::string name(gpu::GpuErrorName(f.rc, f.layer == 0));
  if (name.empty()) name = "error " + std::to_string(f.rc);
  std::string s = "pid " + std::to_string(ctx.report.traces()[r.trace].pid()) + ": " + gpu::GpuApiLabel(f.api) +
                  " of " + FormatBytes(f.request) + " failed (" + name + ") at " +
                  SecondsText(f.ts - std::min(f.ts, ctx.run_start)) + "; this process held " +
                  FormatBytes(f.process_live);
  if (f.have_meminfo) s += "; free " + FormatBytes(f.free) + " of " + FormatBytes(f.total);
  return s;
}

// Failure markers at the top of the chart: one each, or past kMaxMarkers one per pixel
// column and kind, carrying its count (data-n) and the first failure's description.
void DrawFailures(const PageContext& ctx, TimeChart& chart, const std::vector<FailureRef>& failures) {
  const bool bucket = failures.size() > kMaxMarkers;
  std::map<std::pair<long, bool>, std::pair<size_t, const FailureRef*>> columns;
  for (const FailureRef& r : failures) {
    const bool oom = gpu::IsOutOfMemory(r.failure->rc);
    if (!bucket) {
      chart.TopMarker(r.failure->ts, oom ? "fail oom" : "fail other",
                      std::string("data-kind=\"") + (oom ? "oom" : "other") + "\" data-n=\"1\"",
                      FailureTitle(ctx, r));
      continue;
    }
    auto& col = columns[{static_cast<long>(chart.X(r.failure->ts)), oom}];
    if (col.first++ == 0) col.second = &r;
  }
  for (const auto& [key, col] : columns) {
    chart.TopMarker(col.second->failure->ts, key.second ? "fail oom" : "fail other",
                    std::string("data-kind=\"") + (key.second ? "oom" : "other") + "\" data-n=\"" +
                        std::to_string(col.first) + "\"",
                    std::to_string(col.first) + " failed allocations here; the first: " + FailureTitle(ctx, *col.second));
  }
}

// The address map as a bar: segments and free extents in address order, each as wide as
// its share of the laid-out bytes; a jump in addresses (space never used) is a narrow
// break. Past a few hundred extents, 1-pixel columns: all segment, all free, or mixed.
std::string AddressMapFigure(const AddressMap& m, const std::string& caption) {
  constexpr double kWidth = 900, kBarTop = 4, kBarHeight = 26, kBreak = 6;
  std::string fig = "<figure class=\"amap\" data-segments=\"" + std::to_string(m.segments) +
                    "\" data-free-extents=\"" + std::to_string(m.free_extents) + "\">\n";
  Svg svg(static_cast<int>(kWidth), static_cast<int>(kBarTop * 2 + kBarHeight), "amap", caption);
  uint64_t bytes = 0;
  size_t breaks = 0;
  for (size_t i = 0; i < m.extents.size(); ++i) {
    bytes += m.extents[i].hi - m.extents[i].lo;
    if (i > 0 && m.extents[i].lo != m.extents[i - 1].hi) ++breaks;
  }
  const double usable = kWidth - kBreak * static_cast<double>(breaks);
  if (bytes > 0 && usable > 0) {
    struct Piece {
      double x0, x1;
      const gpu::Extent* e;
    };
    std::vector<Piece> pieces;
    double x = 0;
    for (size_t i = 0; i < m.extents.size(); ++i) {
      const gpu::Extent& e = m.extents[i];
      if (i > 0 && e.lo != m.extents[i - 1].hi) {
        svg.Rect(x, kBarTop, kBreak, kBarHeight, "amap-break", "address space this process never used");
        x += kBreak;
      }
      const double w = usable * static_cast<double>(e.hi - e.lo) / static_cast<double>(bytes);
      pieces.push_back({x, x + w, &e});
      x += w;
    }
    if (pieces.size() <= 300) {
      for (const Piece& p : pieces) {
        svg.Rect(p.x0, kBarTop, std::max(p.x1 - p.x0, 0.5), kBarHeight, p.e->free ? "amap-gap" : "amap-seg",
                 std::string(p.e->free ? "free extent " : "segment ") + FormatHex(p.e->lo) + "-" +
                     FormatHex(p.e->hi) + ": " + FormatBytes(p.e->hi - p.e->lo));
      }
    } else {
      // 1-pixel columns: the share of free bytes in each.
      const size_t cols = static_cast<size_t>(kWidth);
      std::vector<double> free_px(cols, 0), used_px(cols, 0);
      for (const Piece& p : pieces) {
        for (size_t c = static_cast<size_t>(p.x0); c < cols && static_cast<double>(c) < p.x1; ++c) {
          const double overlap = std::min(p.x1, c + 1.0) - std::max(p.x0, static_cast<double>(c));
          (p.e->free ? free_px : used_px)[c] += std::max(overlap, 0.0);
        }
      }
      auto cls_of = [&](size_t c) -> const char* {
        if (free_px[c] + used_px[c] <= 0) return nullptr;
        if (free_px[c] <= 0) return "amap-seg";
        if (used_px[c] <= 0) return "amap-gap";
        return "amap-mixed";
      };
      for (size_t c = 0; c < cols;) {
        const char* cls = cls_of(c);
        size_t e = c + 1;
        while (e < cols && cls_of(e) == cls) ++e;
        if (cls != nullptr) svg.Rect(static_cast<double>(c), kBarTop, static_cast<double>(e - c), kBarHeight, cls);
        c = e;
      }
    }
  }
  fig += std::move(svg).Finish();
  std::string cap = caption + ": " + std::to_string(m.segments) + " segments (" + FormatBytes(m.segment_bytes) + "), " +
                    std::to_string(m.free_extents) + " free extents (" + FormatBytes(m.free_extent_bytes) +
                    ", largest " + FormatBytes(m.largest_free_extent) + ")";
  if (m.extents_omitted > 0) cap += "; " + std::to_string(m.extents_omitted) + " more extents at higher addresses not drawn";
  fig += "<figcaption>" + Text(cap) + "</figcaption></figure>\n";
  return fig;
}

}  // namespace

std::string GpuMemorySection(const PageContext& ctx) {
  std::string s = "<section id=\"gpu\"><h2>GPU memory</h2>\n";
  const std::vector<gpu::AllocationTimeline>* tl = &ctx.report.run().Get<gpu::GpuTimelines>().of_trace;
  std::map<std::string, DeviceView> devices;
  for (size_t i = 0; i < tl->size(); ++i) {
    for (const auto& [index, d] : (*tl)[i].devices) {
      if (d.allocations == 0 && d.failed_allocations == 0) continue;
      DeviceView& v = devices[gpu::DeviceKey(d)];
      if (v.members.empty()) v.index = d.index;
      if (v.name.empty()) v.name = d.name;
      v.total = std::max(v.total, d.total);
      v.members.push_back({i, &d});
    }
  }
  if (devices.empty()) return s + "<p>No GPU memory was allocated in the traced processes.</p></section>\n";
  size_t drawn = 0;
  for (const auto& [key, dv] : devices) {
    if (drawn++ == kMaxCharts) break;
    std::string title = "Device " + std::to_string(dv.index);
    if (!dv.name.empty()) title += " (" + dv.name + ")";
    uint64_t peak = 0, peak_ts = 0;
    const std::vector<XY> live = CombinedLive(ctx, dv, &peak, &peak_ts);
    std::vector<FailureRef> failures;
    size_t ooms = 0;
    for (const Member& m : dv.members) {
      for (const Failure& f : (*tl)[m.trace].failures) {
        if (f.device != dv.index) continue;
        failures.push_back({m.trace, &f});
        ooms += gpu::IsOutOfMemory(f.rc) ? 1 : 0;
      }
    }
    double y_max = std::max<double>(static_cast<double>(peak) * 1.15, 1 << 20);
    const bool capacity_on_scale = dv.total > 0 && dv.total <= 4 * std::max<uint64_t>(peak, 1);
    if (capacity_on_scale) y_max = std::max(y_max, static_cast<double>(dv.total) * 1.05);
    s += "<div class=\"device\" data-device=\"" + std::to_string(dv.index) + "\" data-failures=\"" +
         std::to_string(failures.size()) + "\" data-oom=\"" + std::to_string(ooms) + "\">\n<h3>" + Text(title) +
         "</h3>\n";
    TimeChart chart(ctx.run_start, ctx.run_end, y_max, title + ": live bytes over time");
    chart.Steps(live, "line s0");
    if (capacity_on_scale) chart.Limit(static_cast<double>(dv.total), "limit capacity", "capacity " + FormatBytes(dv.total));
    // With a few processes on the device, each one's own live bytes too.
    std::vector<LegendEntry> own;
    if (dv.members.size() > 1 && dv.members.size() <= kMaxLines) {
      for (size_t k = 0; k < dv.members.size(); ++k) {
        const Member& m = dv.members[k];
        const ProcessTrace& t = ctx.report.traces()[m.trace];
        SeriesDownsampler d(ctx.run_start, ctx.run_end);
        for (const gpu::Point& p : m.device->points) d.Add(p.ts, static_cast<double>(p.bytes));
        if (!m.device->points.empty() && m.device->points.back().bytes != 0) d.Add(t.end_ns() + 1, 0);
        chart.Steps(d.Finish(), "line rss r" + std::to_string(k));
        own.push_back({"r" + std::to_string(k),
                       "pid " + std::to_string(t.pid()) + " (peak " + FormatBytes(m.device->peak_bytes) + ")"});
      }
    }
    DrawFailures(ctx, chart, failures);
    s += std::move(chart).Finish();
    std::vector<LegendEntry> legend = {{"s0", "live bytes, all processes (peak " + FormatBytes(peak) + ")"}};
    legend.insert(legend.end(), own.begin(), own.end());
    if (capacity_on_scale) legend.push_back({"capacity", "device memory " + FormatBytes(dv.total)});
    if (ooms > 0) legend.push_back({"oom", std::to_string(ooms) + " out-of-memory failures"});
    if (failures.size() > ooms) legend.push_back({"other", std::to_string(failures.size() - ooms) + " other failed allocations"});
    s += Legend(legend);
    std::string note = std::to_string(dv.members.size()) + " process" + (dv.members.size() == 1 ? "" : "es") +
                       " used this device. Segments, as the CUDA runtime and driver hand them out; a caching "
                       "allocator places tensors inside them.";
    if (dv.total > 0 && !capacity_on_scale) note += " Device memory (" + FormatBytes(dv.total) + ") is above the scale.";
    s += "<p class=\"note\">" + Text(note) + "</p>\n";
    // Address maps: each process at its peak (largest first), then each failure.
    std::vector<Member> by_peak = dv.members;
    std::sort(by_peak.begin(), by_peak.end(),
              [](const Member& a, const Member& b) { return a.device->peak_bytes > b.device->peak_bytes; });
    size_t maps = 0;
    for (const Member& m : by_peak) {
      if (m.device->at_peak.extents.empty()) continue;
      if (maps++ == 2) break;
      s += AddressMapFigure(m.device->at_peak,
                            "pid " + std::to_string(ctx.report.traces()[m.trace].pid()) + " at its peak (" +
                                FormatBytes(m.device->peak_bytes) + ", " +
                                SecondsText(m.device->peak_ts - std::min(m.device->peak_ts, ctx.run_start)) + ")");
    }
    size_t failure_maps = 0, failure_maps_left = 0;
    for (const FailureRef& r : failures) {
      const AddressMap& m = r.failure->map;
      if (!gpu::IsOutOfMemory(r.failure->rc) || (m.segments == 0 && m.free_extents == 0)) continue;
      // The timeline lays out the first gpu::kMaxLaidOutFailures maps; all are counted.
      if (failure_maps == kMaxAddressMaps || m.extents.empty()) {
        ++failure_maps_left;
        continue;
      }
      ++failure_maps;
      s += AddressMapFigure(m, "at the failure: " + FailureTitle(ctx, r));
    }
    s += MoreNote(failure_maps_left, "address maps at failures");
    if (maps > 0 || failure_maps > 0) {
      s += Legend({{"amap-seg", "segment"}, {"amap-gap", "free extent"}, {"amap-mixed", "both (many small extents)"},
                   {"amap-break", "never used by this process"}});
    }
    s += "</div>\n";
  }
  s += MoreNote(devices.size() > kMaxCharts ? devices.size() - kMaxCharts : 0, "devices");
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
