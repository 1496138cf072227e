#include "gpu/leak_growth.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace colabtrace::analyzer::gpu {

LeakGrowth FindLeakGrowth(const AllocationTimeline& g, uint64_t end_ns) {
  LeakGrowth out;
  if (g.leaked.empty()) return out;
  uint64_t start = g.first_alloc_ts != 0 ? g.first_alloc_ts : g.leaked.front().ts;
  uint64_t end = end_ns;
  for (const Block& b : g.leaked) {
    start = std::min(start, b.ts);
    end = std::max(end, b.ts);
  }
  const uint64_t span = end - start;
  out.window_start = start;
  out.window_end = end;
  out.warmup_end = start + static_cast<uint64_t>(static_cast<long double>(span) * kWarmupShare);
  const uint64_t rest = end - out.warmup_end;

  struct Site {
    LeakGroup group;
    bool third[3] = {false, false, false};
    uint64_t first_bytes = 0;  // the earliest survivor's size (g.leaked is in time order)
  };
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, Site> sites;
  for (const Block& b : g.leaked) {
    if (!IsDeviceMemory(b.kind)) continue;
    const auto key = b.py_stack != 0 ? std::make_tuple(b.py_stack, uint64_t{0}, uint64_t{0})
                                     : std::make_tuple(uint64_t{0}, b.stack, b.stack != 0 ? 0 : b.caller);
    Site& s = sites[key];
    LeakGroup& gr = s.group;
    if (gr.count == 0) {
      gr.py_stack = b.py_stack;
      gr.stack = b.stack;
      gr.caller = b.caller;
      gr.api = b.api;
      gr.kind = b.kind;
      gr.first_ts = b.ts;
      s.first_bytes = b.size;
    }
    ++gr.count;
    gr.bytes += b.size;
    gr.last_ts = std::max(gr.last_ts, b.ts);
    if (b.ts > out.warmup_end && rest > 0) {
      if (gr.after_warmup_count == 0) gr.after_warmup_first_ts = b.ts;
      ++gr.after_warmup_count;
      gr.after_warmup_bytes += b.size;
      const uint64_t i = std::min<uint64_t>(
          2, static_cast<uint64_t>(static_cast<long double>(b.ts - out.warmup_end) * 3 / rest));
      s.third[i] = true;
    }
  }
  // The process as a whole must hold more at the end than after warm-up. Where the window
  // gave up the records of warm-up's end, the replay knows only what was still live at its
  // start there (a lower bound): the shim's sampled history says what was live then (the
  // latest sample at or before it), when it has one.
  uint64_t at_warmup = LiveAt(g.points, out.warmup_end);
  if (out.warmup_end < g.seeded_from_ns && !g.sampled.empty() && g.sampled.front().ts <= out.warmup_end) {
    at_warmup = LiveAt(g.sampled, out.warmup_end);
    out.warmup_from_samples = true;
  }
  const bool trending_up = LiveAt(g.points, end) > at_warmup;
  uint64_t held = 0;
  for (auto& [key, s] : sites) {
    LeakGroup& gr = s.group;
    const bool growing = trending_up && gr.after_warmup_count >= kMinGrowthAllocations &&
                         s.third[0] && s.third[1] && s.third[2] &&
                         gr.last_ts - gr.after_warmup_first_ts >= kMinGrowthSpanNs;
    if (!growing) {
      held += gr.bytes;
      continue;
    }
    if (gr.last_ts > gr.first_ts) {
      // The first survivor marks the start; everything after it is growth over that time.
      gr.rate_bytes_per_s = static_cast<double>(gr.bytes - s.first_bytes) /
                            (static_cast<double>(gr.last_ts - gr.first_ts) / 1e9);
    }
    out.growth_bytes += gr.bytes;
    out.growth_allocations += gr.count;
    out.groups.push_back(gr);
  }
  out.held_at_exit_bytes = held;
  std::stable_sort(out.groups.begin(), out.groups.end(),
                   [](const LeakGroup& a, const LeakGroup& b) { return a.bytes > b.bytes; });
  return out;
}

}  // namespace colabtrace::analyzer::gpu
