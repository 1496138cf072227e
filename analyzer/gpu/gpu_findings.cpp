// The helpers the gpu.* rules share and JudgeFailure (the cause of an out-of-memory
// failure).
#include "gpu/gpu_findings.h"

#include <algorithm>
#include <cstdio>

#include "gpu/rules/rules.h"
#include "model/symbolize.h"

namespace colabtrace::analyzer::gpu {
namespace {

constexpr uint64_t kContextMax = 1ull << 30;  // a CUDA context rarely takes more than 1 GiB

}  // namespace

std::string Pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", v * 100.0);
  return buf;
}

uint64_t Rel(const ProcessTrace& t, uint64_t ts) { return ts >= t.start_ns() ? ts - t.start_ns() : 0; }

std::string Seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "+%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}

Json StackJson(const std::vector<std::string>& frames) {
  Json a = Json::MakeArray();
  for (const auto& f : frames) a.Append(f);
  return a;
}

std::string DeviceLabel(const DeviceMemory* d, int64_t index) {
  std::string s = index >= 0 ? "GPU " + std::to_string(index) : std::string("an unknown GPU");
  if (d != nullptr && d->facts != nullptr && d->name.size() > 0) s += " (" + d->name + ")";
  return s;
}

std::vector<std::string> BlockStack(SymbolCache& symbols, const ProcessTrace& t, uint64_t stack,
                                    uint64_t caller) {
  if (stack != 0) return symbols.Stack(t, t.Stack(stack));
  if (caller != 0) return symbols.Stack(t, std::vector<uint64_t>{caller});
  return {};
}

Json BlockJson(SymbolCache& symbols, const ProcessTrace& t, const Block& b) {
  Json j = Json::MakeObject();
  j["address"] = FormatHex(b.addr);
  j["size"] = b.size;
  j["kind"] = std::string(MemKindName(b.kind));
  j["api"] = GpuApiLabel(b.api);
  j["allocated_at_ns"] = Rel(t, b.ts);
  j["tid"] = b.tid;
  j["stack"] = StackJson(BlockStack(symbols, t, b.stack, b.caller));
  return j;
}

Json AddressMapJson(SymbolCache& symbols, const ProcessTrace& t, const AddressMap& m) {
  Json j = Json::MakeObject();
  j["segments"] = m.segments;
  j["segment_bytes"] = m.segment_bytes;
  j["largest_segment_bytes"] = m.largest_segment;
  j["free_extents"] = m.free_extents;
  j["free_extent_bytes"] = m.free_extent_bytes;
  j["largest_free_extent_bytes"] = m.largest_free_extent;
  Json hist = Json::MakeObject();
  for (const auto& [bucket, n] : m.size_histogram) hist[std::to_string(bucket)] = n;
  j["segment_size_histogram"] = std::move(hist);
  Json holders = Json::MakeArray();
  for (const Block& b : m.gap_holders) holders.Append(BlockJson(symbols, t, b));
  j["segments_holding_gaps"] = std::move(holders);
  return j;
}

FailureVerdict JudgeFailure(const Failure& f, const DeviceMemory* device,
                            const OthersOnDevice& others) {
  FailureVerdict v;
  if (!IsOutOfMemory(f.rc)) return v;
  if (!f.have_meminfo || f.total == 0) {
    v.id = FindingId::kGpuOom;
    v.cause = "unknown";
    return v;
  }
  if (f.free >= f.request) {
    v.id = FindingId::kGpuOomFragmentation;
    v.cause = "fragmentation";
    return v;
  }
  v.id = FindingId::kGpuOom;
  if (f.request > f.total) {
    v.cause = "larger-than-device";
    return v;
  }
  const uint64_t used = f.total > f.free ? f.total - f.free : 0;
  v.held_elsewhere = used > f.process_live ? used - f.process_live : 0;
  if (f.have_pool && f.pool_reserved > f.pool_used) {
    v.pool_cached = std::min(f.pool_reserved - f.pool_used, v.held_elsewhere);
  }
  uint64_t elsewhere = v.held_elsewhere - v.pool_cached;
  if (others) v.traced_others = others(f.device, f.ts);
  uint64_t traced = 0;
  for (const auto& [pid, bytes] : v.traced_others) traced += bytes;
  traced = std::min(traced, elsewhere);
  const uint64_t untraced = elsewhere - traced;
  // The context's share: what was held elsewhere at this process's first reading (its
  // context and whatever others held then), capped at what a context plausibly takes.
  uint64_t baseline = device != nullptr && device->have_baseline ? device->baseline_elsewhere : untraced;
  v.context_estimate = std::min({untraced, baseline, kContextMax});
  v.others_estimate = elsewhere - v.context_estimate;
  const uint64_t own = f.process_live + v.pool_cached;
  if (own >= v.others_estimate && own >= v.context_estimate) {
    v.cause = "this-process";
  } else if (v.others_estimate >= v.context_estimate) {
    v.cause = "other-process";
  } else {
    v.cause = "context";
  }
  return v;
}

OthersOnDevice OthersOnDeviceOf(const RunModel& run, size_t i) {
  return [&run, i](int64_t device, uint64_t ts) {
    const std::vector<ProcessTrace>& traces = run.traces();
    const std::vector<AllocationTimeline>& tl = run.Get<GpuTimelines>().of_trace;
    std::vector<std::pair<uint32_t, uint64_t>> out;
    auto self = tl[i].devices.find(device);
    if (self == tl[i].devices.end()) return out;
    const std::string key = DeviceKey(self->second);
    for (size_t j = 0; j < tl.size(); ++j) {
      if (j == i || ts > traces[j].end_ns() || ts < traces[j].start_ns()) continue;
      for (const auto& [idx, d] : tl[j].devices) {
        if (DeviceKey(d) != key) continue;
        const uint64_t live = LiveAt(d.points, ts);
        if (live > 0) out.emplace_back(traces[j].pid(), live);
      }
    }
    return out;
  };
}

}  // namespace colabtrace::analyzer::gpu
