// The GPU memory analysis: the JSON `gpu` totals and `processes[].gpu`, and the gpu.* findings (the
// "GPU memory" text section: render/text/gpu_memory_section.cpp).
//
// What the counters count (docs/gpu-validation.md has the full list):
//   allocations         successful device-memory allocation calls that returned memory:
//                       cudaMalloc/Pitch/Managed/Async/FromPoolAsync, the driver's
//                       cuMemAlloc_v2/Pitch/Managed/Async/FromPoolAsync, and VMM physical
//                       allocations (cuMemCreate). A runtime call that reached the driver
//                       is one allocation. Pinned host memory and zero-byte calls are not.
//   frees               successful frees of an allocation seen in the trace (cuMemRelease
//                       for VMM handles); frees of unknown addresses are unmatched_frees.
//   failed_allocations  device-memory allocation calls that returned an error (any code).
//   peak_bytes          the highest sum of live requested sizes (device memory).
//   leaked_bytes        device memory still allocated when the process exited or was killed.
//   leak_growth_bytes   the part of it that kept growing after warm-up (gpu.leak; the rule
//                       is in leak_growth.h). `check` keys on this one: it is 0 for a run
//                       whose caches merely hold memory at exit.
//   held_at_exit_bytes  leaked_bytes - leak_growth_bytes: memory held at the end without
//                       growing (framework caches, pools): context, not a warning.
// Pinned host memory has the same figures under host_pinned.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "report/analyses.h"
#include "gpu/allocation_timeline.h"
#include "gpu/gpu_findings.h"
#include "gpu/cupti_merge.h"
#include "gpu/leak_growth.h"
#include "report/report.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer {
namespace {

using gpu::AllocationTimeline;
using gpu::DeviceKey;
using gpu::DeviceMemory;
using gpu::Point;

constexpr size_t kTimelinePoints = 100;

uint64_t Rel(uint64_t ts, uint64_t start) { return ts >= start ? ts - start : 0; }

std::string PciBusId(const format::GpuDevice& f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04llx:%02llx:%02llx.0", static_cast<unsigned long long>(f.pci_domain),
                static_cast<unsigned long long>(f.pci_bus), static_cast<unsigned long long>(f.pci_device));
  return buf;
}

// Live bytes over time as [t_ns, live_bytes, segments] samples: every change when there
// are at most kTimelinePoints of them, else the lowest and the highest point of each of
// kTimelinePoints time buckets (so peaks and dips both survive), plus the first and last.
Json TimelineJson(const std::vector<Point>& points, uint64_t start) {
  Json out = Json::MakeArray();
  auto add = [&](const Point& p) {
    Json s = Json::MakeArray();
    s.Append(Rel(p.ts, start));
    s.Append(p.bytes);
    s.Append(p.segments);
    out.Append(std::move(s));
  };
  if (points.size() <= kTimelinePoints) {
    for (const Point& p : points) add(p);
    return out;
  }
  const uint64_t first = points.front().ts, last = std::max(points.back().ts, first + 1);
  const uint64_t span = last - first;
  std::vector<const Point*> hi(kTimelinePoints, nullptr), lo(kTimelinePoints, nullptr);
  for (const Point& p : points) {
    size_t b = static_cast<size_t>(static_cast<long double>(p.ts - first) * (kTimelinePoints - 1) /
                                   static_cast<long double>(span));
    b = std::min(b, kTimelinePoints - 1);
    if (hi[b] == nullptr || p.bytes > hi[b]->bytes) hi[b] = &p;
    if (lo[b] == nullptr || p.bytes < lo[b]->bytes) lo[b] = &p;
  }
  std::vector<const Point*> pick = {&points.front()};
  for (size_t b = 0; b < kTimelinePoints; ++b) {
    if (lo[b] != nullptr && hi[b] != nullptr && lo[b] > hi[b]) std::swap(lo[b], hi[b]);
    for (const Point* p : {lo[b], hi[b]}) {
      if (p != nullptr && p != pick.back()) pick.push_back(p);
    }
  }
  if (pick.back() != &points.back()) pick.push_back(&points.back());
  for (const Point* p : pick) add(*p);
  return out;
}

// The highest value of the sum of several step functions given as change lists; each
// process's memory is gone after its last event.
struct Series {
  const std::vector<Point>* points;
  uint64_t end_ns;
};
std::pair<uint64_t, uint64_t> CombinedPeak(const std::vector<Series>& series) {
  struct Delta {
    uint64_t ts;
    __int128 d;
  };
  std::vector<Delta> deltas;
  for (const Series& s : series) {
    uint64_t prev = 0;
    for (const Point& p : *s.points) {
      deltas.push_back({p.ts, static_cast<__int128>(p.bytes) - static_cast<__int128>(prev)});
      prev = p.bytes;
    }
    if (prev != 0) deltas.push_back({s.end_ns + 1, -static_cast<__int128>(prev)});
  }
  if (series.size() > 1) {  // one series is already in time order
    std::stable_sort(deltas.begin(), deltas.end(), [](const Delta& a, const Delta& b) { return a.ts < b.ts; });
  }
  __int128 cur = 0, peak = 0;
  uint64_t peak_ts = 0;
  for (size_t i = 0; i < deltas.size(); ++i) {
    cur += deltas[i].d;
    // Compare only once all changes at this instant are applied.
    if ((i + 1 == deltas.size() || deltas[i + 1].ts != deltas[i].ts) && cur > peak) {
      peak = cur;
      peak_ts = deltas[i].ts;
    }
  }
  return {static_cast<uint64_t>(peak), peak_ts};
}

Json DeviceFacts(const DeviceMemory& d) {
  Json j = Json::MakeObject();
  j["index"] = d.index;
  j["name"] = d.facts != nullptr ? Json(d.name) : Json();
  j["compute_capability"] =
      d.facts != nullptr ? Json(std::to_string(d.facts->cc_major) + "." + std::to_string(d.facts->cc_minor))
                         : Json();
  j["total_bytes"] = d.total;
  j["pci_bus_id"] = d.facts != nullptr ? Json(PciBusId(*d.facts)) : Json();
  return j;
}

class GpuAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "gpu"; }

  void Run(ReportBuilder& report) override {
    const auto& traces = report.traces();
    const std::vector<AllocationTimeline>& tl = report.run().Get<gpu::GpuTimelines>().of_trace;

    uint64_t run_start = UINT64_MAX;
    for (const auto& t : traces) run_start = std::min(run_start, t.start_ns());
    if (run_start == UINT64_MAX) run_start = 0;

    if (!traces.empty()) {  // untraced children: the figures of a process that allocated nothing
      for (Json* p : report.UntracedProcesses()) (*p)["gpu"] = ProcessJson(report.run().symbols(), traces.front(), AllocationTimeline{});
    }
    for (size_t i = 0; i < traces.size(); ++i) {
      const ProcessTrace& t = traces[i];
      const AllocationTimeline& g = tl[i];
      report.process(i)["gpu"] = ProcessJson(report.run().symbols(), t, g);
    }
    RunRules(report, FindingArea::kGpu);
    report.root()["gpu"] = TotalsJson(traces, tl, run_start);
  }

 private:
  static Json ProcessJson(SymbolCache& symbols, const ProcessTrace& t, const AllocationTimeline& g) {
    Json j = Json::MakeObject();
    const gpu::CuptiSummary cupti = gpu::SummarizeCupti(t);
    j["allocations"] = g.allocations + cupti.only_allocations;  // cupti_merge.h
    j["frees"] = g.frees;
    j["failed_allocations"] = g.failed_allocations;
    j["peak_bytes"] = g.peak_bytes;
    j["leaked_bytes"] = g.leaked_bytes;
    const gpu::LeakGrowth lg = gpu::FindLeakGrowth(g, t.end_ns());
    j["leak_growth_bytes"] = lg.growth_bytes;
    j["held_at_exit_bytes"] = lg.held_at_exit_bytes;
    j["peak_at_ns"] = g.peak_bytes > 0 ? Json(Rel(g.peak_ts, t.start_ns())) : Json();
    j["unmatched_frees"] = g.unmatched_frees;
    j["zero_size_allocations"] = g.zero_size_allocations;
    // Format 1.5: the window gave up GPU records; the records in full start here.
    if (g.seeded_from_ns != 0) j["seeded_from_ns"] = Rel(g.seeded_from_ns, t.start_ns());
    Json kinds = Json::MakeObject();
    for (gpu::MemKind k : {gpu::MemKind::kDevice, gpu::MemKind::kManaged, gpu::MemKind::kStreamOrdered,
                           gpu::MemKind::kVmm}) {
      Json o = Json::MakeObject();
      o["allocations"] = g.by_kind[static_cast<size_t>(k)].allocations;
      o["bytes"] = g.by_kind[static_cast<size_t>(k)].bytes;
      kinds[gpu::MemKindName(k)] = std::move(o);
    }
    j["by_kind"] = std::move(kinds);
    if (cupti.seen) {
      Json c = Json::MakeObject();
      c["state"] = cupti.state;
      c["rc"] = cupti.rc;
      c["injected"] = cupti.injected;
      c["activity_records"] = cupti.activity_records;
      c["dropped_records"] = cupti.dropped;
      c["merged_allocations"] = cupti.merged_allocations;
      c["cupti_only_allocations"] = cupti.only_allocations;
      c["cupti_only_bytes"] = cupti.only_bytes;
      c["driver_static_allocations"] = cupti.driver_static_allocations;
      c["driver_static_bytes"] = cupti.driver_static_bytes;
      c["host_allocations"] = cupti.host_allocations;
      c["handed_over_at_ns"] = cupti.handed_over_ts ? Json(Rel(*cupti.handed_over_ts, t.start_ns())) : Json();
      Json archs = Json::MakeArray();
      for (const std::string& a : cupti.module_archs) archs.Append(a);
      c["module_archs"] = std::move(archs);
      j["cupti"] = std::move(c);
    }
    Json codes = Json::MakeObject();
    for (const auto& [rc, n] : g.failures_by_code) codes[std::to_string(rc)] = n;
    j["failures_by_code"] = std::move(codes);
    Json host = Json::MakeObject();
    host["allocations"] = g.host.allocations;
    host["frees"] = g.host.frees;
    host["failed_allocations"] = g.host.failed_allocations;
    host["peak_bytes"] = g.host.peak_bytes;
    host["leaked_bytes"] = g.host.leaked_bytes;
    j["host_pinned"] = std::move(host);
    // One entry per runtime library (the shim writes a second, complete record when it
    // met the runtime before its driver): the last record of each wins.
    std::vector<std::string_view> libs;
    std::map<std::string_view, const format::GpuVersion*> last;
    for (const auto& v : t.records.GpuVersion) {
      const std::string_view lib = t.Str(v.runtime_lib);
      if (!last.contains(lib)) libs.push_back(lib);
      last[lib] = &v;
    }
    Json versions = Json::MakeArray();
    for (std::string_view lib : libs) {
      const format::GpuVersion& v = *last[lib];
      Json o = Json::MakeObject();
      o["runtime"] = v.runtime;
      o["driver"] = v.driver;
      o["runtime_lib"] = std::string(lib);
      o["driver_lib"] = std::string(t.Str(v.driver_lib));
      versions.Append(std::move(o));
    }
    j["versions"] = std::move(versions);
    Json devices = Json::MakeArray();
    for (const auto& [index, d] : g.devices) {
      Json o = DeviceFacts(d);
      o["allocations"] = d.allocations;
      o["frees"] = d.frees;
      o["failed_allocations"] = d.failed_allocations;
      o["peak_bytes"] = d.peak_bytes;
      o["peak_at_ns"] = d.peak_bytes > 0 ? Json(Rel(d.peak_ts, t.start_ns())) : Json();
      o["peak_segments"] = d.peak_segments;
      o["leaked_bytes"] = d.leaked_bytes;
      Json fam = Json::MakeObject();
      fam["runtime"] = d.runtime_calls;
      fam["driver"] = d.driver_calls;
      o["api_family"] = std::move(fam);
      Json apis = Json::MakeObject();
      for (const auto& [api, n] : d.apis) apis[gpu::GpuApiLabel(api)] = n;
      o["apis"] = std::move(apis);
      o["baseline_elsewhere_bytes"] = d.have_baseline ? Json(d.baseline_elsewhere) : Json();
      o["min_free_bytes"] = d.min_free != UINT64_MAX ? Json(d.min_free) : Json();
      o["timeline"] = TimelineJson(d.points, t.start_ns());
      o["address_map_at_peak"] = gpu::AddressMapJson(symbols, t, d.at_peak);
      devices.Append(std::move(o));
    }
    j["devices"] = std::move(devices);
    Json failures = Json::MakeArray();
    for (const auto& f : g.failures) {
      auto dit = g.devices.find(f.device);
      const gpu::FailureVerdict v = gpu::JudgeFailure(f, dit != g.devices.end() ? &dit->second : nullptr, nullptr);
      Json o = Json::MakeObject();
      o["at_ns"] = Rel(f.ts, t.start_ns());
      o["tid"] = f.tid;
      o["api"] = gpu::GpuApiLabel(f.api);
      o["layer"] = f.layer == 0 ? "runtime" : "driver";
      o["device"] = f.device;
      o["request_bytes"] = f.request;
      o["rc"] = f.rc;
      o["rc_name"] = std::string(gpu::GpuErrorName(f.rc, f.layer == 0));
      o["free_bytes"] = f.have_meminfo ? Json(f.free) : Json();
      o["total_bytes"] = f.have_meminfo ? Json(f.total) : Json();
      o["process_live_bytes"] = f.process_live;
      o["verdict"] = v.id ? Json(std::string(FindingName(*v.id))) : Json();
      o["cause"] = v.cause.empty() ? Json() : Json(v.cause);
      o["recovered"] = f.recovered;
      o["retry_of"] = f.retry_of >= 0 ? Json(f.retry_of) : Json();
      if (f.retry_of >= 0) {
        o["frees_before_retry"] = f.flush_frees;
        o["freed_bytes_before_retry"] = f.flush_bytes;
      }
      if (gpu::IsOutOfMemory(f.rc)) o["address_map"] = gpu::AddressMapJson(symbols, t, f.map);
      o["stack"] = Json::MakeArray();
      for (const auto& s : gpu::BlockStack(symbols, t, f.stack, f.caller)) o["stack"].Append(s);
      failures.Append(std::move(o));
    }
    j["failures"] = std::move(failures);
    const gpu::Churn& c = g.churn;
    Json churn = Json::MakeObject();
    churn["raw_pairs"] = c.raw_pairs;
    churn["rate_per_s"] = std::round(c.rate_per_s * 10.0) / 10.0;
    churn["median_lifetime_ns"] = c.median_lifetime_ns;
    churn["time_in_calls_ns"] = c.call_ns;
    churn["cache_releases"] = c.cache_releases;
    churn["released_pairs"] = c.released_pairs;
    j["churn"] = std::move(churn);
    Json vmm = Json::MakeObject();
    vmm["creates"] = g.vmm_creates;
    vmm["maps"] = g.vmm_maps;
    j["vmm"] = std::move(vmm);
    j["pools_created"] = g.pools_created;
    Json modules = Json::MakeObject();
    modules["loaded"] = g.modules_loaded;
    modules["failed"] = g.module_failures;
    j["modules"] = std::move(modules);
    return j;
  }

  static Json TotalsJson(const std::vector<ProcessTrace>& traces,
                         const std::vector<AllocationTimeline>& tl, uint64_t run_start) {
    Json j = Json::MakeObject();
    uint64_t allocations = 0, frees = 0, failed = 0, leaked = 0, growth = 0, held = 0;
    gpu::HostPinned host;
    std::vector<Series> all;
    struct Shared {
      Json facts;
      std::set<uint32_t> pids;
      std::vector<Series> series;
    };
    std::map<std::string, Shared> devices;
    for (size_t i = 0; i < tl.size(); ++i) {
      const AllocationTimeline& g = tl[i];
      allocations += g.allocations + gpu::SummarizeCupti(traces[i]).only_allocations;
      frees += g.frees;
      failed += g.failed_allocations;
      leaked += g.leaked_bytes;
      const gpu::LeakGrowth lg = gpu::FindLeakGrowth(g, traces[i].end_ns());
      growth += lg.growth_bytes;
      held += lg.held_at_exit_bytes;
      host.allocations += g.host.allocations;
      host.frees += g.host.frees;
      host.failed_allocations += g.host.failed_allocations;
      host.peak_bytes += g.host.peak_bytes;
      host.leaked_bytes += g.host.leaked_bytes;
      all.push_back({&g.points, traces[i].end_ns()});
      for (const auto& [index, d] : g.devices) {
        Shared& s = devices[DeviceKey(d)];
        if (s.facts.is_null() || (d.facts != nullptr && s.facts["name"].is_null())) s.facts = DeviceFacts(d);
        s.pids.insert(traces[i].pid());
        s.series.push_back({&d.points, traces[i].end_ns()});
      }
    }
    const auto [peak, peak_ts] = CombinedPeak(all);
    j["allocations"] = allocations;
    j["frees"] = frees;
    j["failed_allocations"] = failed;
    j["peak_bytes"] = peak;
    j["leaked_bytes"] = leaked;
    j["leak_growth_bytes"] = growth;
    j["held_at_exit_bytes"] = held;
    j["peak_at_ns"] = peak > 0 ? Json(Rel(peak_ts, run_start)) : Json();
    Json devs = Json::MakeArray();
    for (auto& [key, s] : devices) {
      Json o = std::move(s.facts);
      Json pids = Json::MakeArray();
      for (uint32_t p : s.pids) pids.Append(p);
      o["pids"] = std::move(pids);
      const auto [dpeak, dts] = CombinedPeak(s.series);
      o["peak_bytes"] = dpeak;
      o["peak_at_ns"] = dpeak > 0 ? Json(Rel(dts, run_start)) : Json();
      devs.Append(std::move(o));
    }
    j["devices"] = std::move(devs);
    Json h = Json::MakeObject();
    h["allocations"] = host.allocations;
    h["frees"] = host.frees;
    h["failed_allocations"] = host.failed_allocations;
    h["peak_bytes"] = host.peak_bytes;  // sum of the processes' peaks
    h["leaked_bytes"] = host.leaked_bytes;
    j["host_pinned"] = std::move(h);
    return j;
  }


};

}  // namespace

std::unique_ptr<Analysis> MakeGpuAnalysis() { return std::make_unique<GpuAnalysis>(); }

}  // namespace colabtrace::analyzer
