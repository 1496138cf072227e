#include "gpu/allocation_timeline.h"

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace colabtrace::analyzer::gpu {
namespace {

using format::GpuApi;

constexpr uint64_t kRetryWindowNs = 10'000'000'000ull;  // a retry comes within 10 s
constexpr size_t kMaxDevices = 64;                       // more distinct ids: untrusted input
constexpr size_t kMaxGapHolders = 10;

uint64_t RoundUp(uint64_t v, uint64_t g) {
  const uint64_t r = (v + g - 1) / g * g;
  return r < v ? v : r;  // saturate on overflow
}

uint64_t Bucket(uint64_t size) {
  uint64_t b = 1;
  while (b <= size / 2) b <<= 1;
  return size == 0 ? 0 : b;
}

enum EventType : uint8_t { kAlloc = 0, kFree = 1, kVmm = 2, kPool = 3, kMemInfo = 4, kModule = 5, kSeed = 6 };

// COLABTRACE_ANALYZER_IGNORE_GPU_EVENTS=1 (tests): replay as if the window had given up
// every windowed GpuAlloc and GpuFree record.
bool IgnoreGpuEvents() {
  const char* v = std::getenv("COLABTRACE_ANALYZER_IGNORE_GPU_EVENTS");
  return v != nullptr && v[0] == '1';
}

Block BlockOfSlot(const format::GpuLiveSlot& s) {
  Block b;
  b.addr = s.key;
  b.size = s.size;
  b.ts = s.ticks;
  b.device = s.device;
  b.kind = ClassifyGpuApi(s.api).kind;
  b.api = s.api;
  b.layer = s.layer;
  b.tid = s.tid;
  b.stack = s.stack;
  b.caller = s.caller;
  b.py_stack = s.py_stack;
  return b;
}

Block BlockOfFree(const Event<format::GpuFree>& f) {
  Block b;
  b.addr = f.addr;
  b.size = f.size;
  b.ts = f.alloc_ts;
  b.device = f.alloc_device;
  b.kind = ClassifyGpuApi(f.alloc_api).kind;
  b.api = static_cast<uint16_t>(f.alloc_api);
  b.layer = static_cast<uint8_t>(f.alloc_layer);
  b.tid = static_cast<uint32_t>(f.alloc_tid);
  b.stack = f.alloc_stack;
  b.caller = f.alloc_caller;
  b.py_stack = f.alloc_py_stack;
  return b;
}

struct Step {
  uint64_t ts;
  uint8_t type;
  uint32_t index;
};

struct Handle {
  Block block;
  bool released = false;
  uint64_t maps = 0;
};

struct Mapping {
  uint64_t size;
  uint64_t handle;
};

struct Pending {  // the last out-of-memory failure on a thread, waiting for its retry
  size_t failure;
  uint64_t frees = 0, bytes = 0;
};

struct Module {
  uint64_t base, end;
  std::string_view path;
};

// A segment's allocation and free, kept until its thread's run of frees ends (churn).
struct FreedPair {
  uint64_t alloc_ts, free_ts, call_ns;
};

class Replay {
 public:
  explicit Replay(const ProcessTrace& t) : t_(t) {
    const auto& r = t.records;
    // Merge the record tables into one timeline. A block is live from the moment its
    // allocation *returned* until its free was *called*: keying successful allocations
    // by their return time means that when one thread frees an address and another gets
    // it back from a concurrent allocation, the free always comes first. Everything else
    // is keyed by its start. At equal keys, calls come first (a reading taken after a
    // failure carries the failed call's ts), then the table order below.
    const uint64_t sizes[] = {r.GpuAlloc.size(), r.GpuFree.size(), r.GpuVmm.size(),
                              r.GpuPool.size(), r.GpuMemInfo.size(), r.GpuModule.size()};
    auto key_of = [&r](int type, size_t i) -> uint64_t {
      switch (type) {
        case kAlloc: {
          const auto& a = r.GpuAlloc[i];
          return a.rc == 0 ? a.ts + a.dur : a.ts;
        }
        case kFree: return r.GpuFree[i].ts;
        case kVmm: return r.GpuVmm[i].ts;
        case kPool: return r.GpuPool[i].ts;
        case kMemInfo: return r.GpuMemInfo[i].ts;
        default: return r.GpuModule[i].ts;
      }
    };
    size_t total = 0;
    for (uint64_t n : sizes) total += n;
    events_.reserve(total);
    Seed();
    for (int type = 0; type < 6; ++type) {
      for (size_t i = 0; i < sizes[type]; ++i) {
        if (seeded_ && Given(type, i)) continue;
        events_.push_back({key_of(type, i), static_cast<uint8_t>(type), static_cast<uint32_t>(i)});
      }
    }
    std::stable_sort(events_.begin(), events_.end(),
                     [](const auto& a, const auto& b) { return a.ts < b.ts; });
    for (const auto& d : r.GpuDevice) {
      if (facts_.size() < kMaxDevices && !facts_.contains(static_cast<int64_t>(d.index))) {
        facts_[static_cast<int64_t>(d.index)] = &d;
      }
    }
    for (const auto& m : r.Module) {
      modules_.push_back({m.base, m.base + m.size, t.Str(m.path)});
    }
    std::sort(modules_.begin(), modules_.end(),
              [](const Module& a, const Module& b) { return a.base < b.base; });
  }

  size_t size() const { return events_.size(); }
  // The window gave up GPU records: the replay starts from the live set at seed_ns_.
  bool seeded() const { return seeded_; }
  uint64_t seed_ns() const { return seed_ns_; }
  // Windowed frees of segments the replay saw (after the window's start).
  uint64_t windowed_segment_frees() const { return windowed_segment_frees_; }

  // Processes events [0, stop) into out.
  void Run(size_t stop, AllocationTimeline* out) {
    out_ = out;
    for (size_t i = 0; i < stop && i < events_.size(); ++i) {
      now_index_ = i;
      const Step& e = events_[i];
      switch (e.type) {
        case kAlloc: OnAlloc(t_.records.GpuAlloc[e.index]); break;
        case kFree: OnFree(t_.records.GpuFree[e.index]); break;
        case kVmm: OnVmm(t_.records.GpuVmm[e.index]); break;
        case kPool: OnPool(t_.records.GpuPool[e.index]); break;
        case kMemInfo: OnMemInfo(t_.records.GpuMemInfo[e.index]); break;
        case kModule: OnModule(t_.records.GpuModule[e.index]); break;
        case kSeed: OnSeed(seeds_[e.index]); break;
        default: break;
      }
    }
  }

  // The address map of device dev now (with its layout when `lay_out`).
  AddressMap Map(int64_t dev, bool lay_out = true) const;
  AddressMap MapNow(int64_t dev, bool lay_out) const;  // Map without the cache

  // Event index (1-based count) at which each device reached its peak.
  const std::map<int64_t, size_t>& peak_events() const { return peak_event_; }

  void Finish(AllocationTimeline* out);

 private:
  DeviceMemory& Device(int64_t index) {
    if (!out_->devices.contains(index) && out_->devices.size() >= kMaxDevices) index = -1;
    DeviceMemory& d = out_->devices[index];
    if (d.index == -1 && index != -1) d.index = index;
    if (d.facts == nullptr) {
      auto it = facts_.find(index);
      if (it != facts_.end()) {
        d.facts = it->second;
        d.name = std::string(t_.Str(it->second->name));
        if (d.total == 0) d.total = it->second->total;
      }
    }
    return d;
  }

  // Adds (or, with add false, removes) one allocation of `bytes` on device d at ts.
  // Unsigned arithmetic: hostile sizes wrap instead of overflowing.
  void Change(DeviceMemory& d, uint64_t ts, uint64_t bytes, bool add) {
    ++generation_;
    d.live_bytes = add ? d.live_bytes + bytes : d.live_bytes - bytes;
    d.live_segments = add ? d.live_segments + 1 : d.live_segments - 1;
    d.points.push_back({ts, d.live_bytes, d.live_segments});
    if (d.live_bytes > d.peak_bytes) {
      d.peak_bytes = d.live_bytes;
      d.peak_ts = ts;
      d.peak_segments = d.live_segments;
      peak_event_[d.index] = now_index_ + 1;
    }
    total_live_ = add ? total_live_ + bytes : total_live_ - bytes;
    out_->points.push_back({ts, total_live_, 0});
    if (total_live_ > out_->peak_bytes) {
      out_->peak_bytes = total_live_;
      out_->peak_ts = ts;
    }
  }

  uint64_t CallerAddress(uint64_t caller, uint64_t stack) const {
    if (caller != 0) return caller;
    const auto& frames = t_.Stack(stack);
    return frames.empty() ? 0 : frames.front();
  }

  std::string_view ModuleOf(uint64_t addr) const {
    auto it = std::upper_bound(modules_.begin(), modules_.end(), addr,
                               [](uint64_t a, const Module& m) { return a < m.base; });
    if (it == modules_.begin()) return {};
    --it;
    return addr < it->end ? it->path : std::string_view();
  }

  void NoteFirstAlloc(uint64_t ts, uint64_t size, int64_t device) {
    if (out_->first_alloc_ts != 0) return;
    out_->first_alloc_ts = ts == 0 ? 1 : ts;
    out_->first_alloc_size = size;
    out_->first_alloc_device = device;
  }

  void OnFailure(const Block& b, int64_t rc) {
    DeviceMemory& d = Device(b.device);
    ++d.failed_allocations;
    ++out_->failed_allocations;
    ++out_->failures_by_code[rc];
    Failure f;
    f.ts = b.ts;
    f.tid = b.tid;
    f.api = b.api;
    f.layer = b.layer;
    f.device = d.index;
    f.request = b.size;
    f.rc = rc;
    f.stack = b.stack;
    f.caller = b.caller;
    f.process_live = d.live_bytes;
    f.process_allocations = d.live_segments;
    if (IsOutOfMemory(rc)) {
      f.map = Map(d.index, laid_out_failures_ < kMaxLaidOutFailures);
      ++laid_out_failures_;
      auto it = pending_.find(b.tid);
      if (it != pending_.end()) {
        Failure& prev = out_->failures[it->second.failure];
        if (prev.device == f.device && prev.request == f.request && f.ts >= prev.ts &&
            f.ts - prev.ts <= kRetryWindowNs) {
          f.retry_of = prev.retry_of >= 0 ? prev.retry_of : static_cast<int64_t>(it->second.failure);
          f.flush_frees = it->second.frees;
          f.flush_bytes = it->second.bytes;
          prev.episode_last = false;
        }
      }
      pending_[b.tid] = Pending{out_->failures.size()};
    }
    out_->failures.push_back(std::move(f));
  }

  void OnSuccess(const Block& b) {
    auto it = pending_.find(b.tid);
    if (it == pending_.end()) return;
    Failure& prev = out_->failures[it->second.failure];
    if (prev.request == b.size && prev.device == b.device) {
      prev.recovered = true;
      pending_.erase(it);
    }
  }

  void NoteFlush(uint32_t tid, uint64_t bytes) {
    auto it = pending_.find(tid);
    if (it == pending_.end()) return;
    ++it->second.frees;
    it->second.bytes += bytes;
  }

  void AddLive(const Block& b, bool counted = true) {
    DeviceMemory& d = Device(b.device);
    if (counted) {  // a windowed allocation of a seeded replay is in the live-set counters
      ++d.allocations;
      ++out_->allocations;
    }
    ++d.apis[b.api];
    ++(b.layer == 0 ? d.runtime_calls : d.driver_calls);
    auto& k = out_->by_kind[static_cast<size_t>(b.kind)];
    ++k.allocations;
    k.bytes += b.size;
    Change(d, b.ts, b.size, true);
  }

  // The live set at the window's start (format/gpu_live.h): the live-set slots allocated
  // by then, and the allocations that windowed frees after it took out of the set.
  // Records given up are the windowed ones at or before it. Each seed is one kSeed event
  // at its allocation's start, before every record after the window's start: so the live
  // bytes before it are those of the allocations still live then (a lower bound).
  void Seed() {
    const GpuLiveSet& live = t_.gpu_live;
    const bool ignore = IgnoreGpuEvents();
    seeded_ = live.present && live.info.full == 0 &&
              (ignore || t_.header.dropped_until_ticks != 0 || t_.window.events_lost != 0 ||
               t_.window.compacted);
    if (!seeded_) return;
    // Events the cap never wrote may be after any time: the set at the end is all there is.
    seed_ns_ = ignore || t_.window.events_lost != 0 ? t_.end_ns() : t_.window.full_from_ns;
    for (const format::GpuLiveSlot& s : live.slots) {
      if (s.ticks <= seed_ns_) seeds_.push_back(BlockOfSlot(s));
    }
    for (const auto& f : t_.records.GpuFree) {
      if (f.windowed != 0 && f.ts > seed_ns_ && f.alloc_ts <= seed_ns_) seeds_.push_back(BlockOfFree(f));
    }
    for (size_t i = 0; i < seeds_.size(); ++i) events_.push_back({seeds_[i].ts, kSeed, static_cast<uint32_t>(i)});
  }

  // Whether record i of table `type` was given up (a windowed one at or before seed_ns_).
  bool Given(int type, size_t i) const {
    const auto& r = t_.records;
    if (type == kAlloc) return r.GpuAlloc[i].windowed != 0 && r.GpuAlloc[i].ts <= seed_ns_;
    if (type == kFree) return r.GpuFree[i].windowed != 0 && r.GpuFree[i].ts <= seed_ns_;
    return false;
  }

  void OnSeed(const Block& b) {
    if (b.kind == MemKind::kHostPinned) {
      ReplaceLive(b);
      out_->host.live_bytes += b.size;
      out_->host.peak_bytes = std::max(out_->host.peak_bytes, out_->host.live_bytes);
      return;
    }
    if (IsSegmentKind(b.kind)) Footprint(b.device).insert({b.addr, RoundUp(b.size, kSegmentGranularity)});
    ReplaceLive(b);
    Change(Device(b.device), b.ts, b.size, true);
  }

  void OnAlloc(const Event<format::GpuAlloc>& a) {
    const ApiClass cls = ClassifyGpuApi(a.api);
    if (cls.role != ApiRole::kAlloc || cls.kind == MemKind::kVmm) return;
    Block b;
    b.addr = a.addr;
    b.size = a.size;
    b.ts = a.ts;
    b.device = a.device;
    b.kind = cls.kind;
    b.api = static_cast<uint16_t>(a.api);
    b.layer = static_cast<uint8_t>(a.layer);
    b.tid = a.tid;
    b.stack = a.stack;
    b.caller = a.caller;
    b.py_stack = PyStackOf(a);
    if (cls.kind == MemKind::kHostPinned) {
      if (a.rc != 0) {
        ++out_->host.failed_allocations;
      } else if (a.addr != 0) {
        if (!(seeded_ && a.windowed != 0)) ++out_->host.allocations;
        ReplaceLive(b);
        out_->host.live_bytes += b.size;
        out_->host.peak_bytes = std::max(out_->host.peak_bytes, out_->host.live_bytes);
      }
      return;
    }
    NoteFirstAlloc(a.ts, a.size, a.device);
    if (a.rc != 0) {
      OnFailure(b, a.rc);
      return;
    }
    if (a.addr == 0) {  // cudaMalloc(&p, 0): success, no memory
      ++out_->zero_size_allocations;
      return;
    }
    if (cls.kind == MemKind::kStreamOrdered) ++out_->stream_ordered;
    if (IsSegmentKind(cls.kind)) {
      ++out_->raw_segments;
      Footprint(b.device).insert({b.addr, RoundUp(b.size, kSegmentGranularity)});
      churn_call_ns_[b.addr] = a.dur;
      if (auto run = free_runs_.find(b.tid); run != free_runs_.end()) CloseFreeRun(run->second);
    }
    if (a.layer == 1) {
      const std::string_view mod = ModuleOf(CallerAddress(a.caller, a.stack));
      if (mod.find("libcudart") != std::string_view::npos) {
        ++out_->runtime_bypassed;
        out_->runtime_bypassed_bytes += a.size;
        if (out_->runtime_bypassed_lib.empty()) out_->runtime_bypassed_lib = std::string(mod);
      }
    }
    ReplaceLive(b);
    AddLive(b, !(seeded_ && a.windowed != 0));
    OnSuccess(b);
  }

  // Inserts b, dropping (without counting a free) a block the trace never saw freed.
  void ReplaceLive(const Block& b) {
    auto [it, inserted] = live_.try_emplace(b.addr, b);
    if (inserted) return;
    const Block old = it->second;
    it->second = b;
    if (old.kind == MemKind::kHostPinned) {
      out_->host.live_bytes -= std::min(out_->host.live_bytes, old.size);
    } else {
      Change(Device(old.device), b.ts, old.size, false);
    }
  }

  void OnFree(const Event<format::GpuFree>& f) {
    const ApiClass cls = ClassifyGpuApi(f.api);
    if (cls.role != ApiRole::kFree || f.rc != 0 || f.addr == 0) return;
    auto it = live_.find(f.addr);
    if (it == live_.end()) {
      ++out_->unmatched_frees;
      return;
    }
    const Block b = it->second;
    live_.erase(it);
    const bool counted = !(seeded_ && f.windowed != 0);  // else in the live-set counters
    if (!counted && IsSegmentKind(b.kind)) ++windowed_segment_frees_;
    if (b.kind == MemKind::kHostPinned) {
      if (counted) ++out_->host.frees;
      out_->host.live_bytes -= std::min(out_->host.live_bytes, b.size);
      return;
    }
    DeviceMemory& d = Device(b.device);
    if (counted) {
      ++d.frees;
      ++out_->frees;
    }
    Change(d, f.ts, b.size, false);
    NoteFlush(f.tid, b.size);
    if (IsSegmentKind(b.kind)) {
      uint64_t call_ns = f.dur;
      if (auto ct = churn_call_ns_.find(b.addr); ct != churn_call_ns_.end()) {
        call_ns += ct->second;
        churn_call_ns_.erase(ct);
      }
      free_runs_[f.tid].push_back(FreedPair{b.ts, f.ts, call_ns});
    }
  }

  // A segment allocation (or the end) on `tid` closes its run of frees: a long run is a
  // cache release, a short one is counted as churn (kCacheReleaseMinFrees).
  void CloseFreeRun(std::vector<FreedPair>& run) {
    Churn& c = out_->churn;
    if (run.size() >= kCacheReleaseMinFrees) {
      ++c.cache_releases;
      c.released_pairs += run.size();
    } else {
      for (const FreedPair& p : run) {
        ++c.raw_pairs;
        lifetimes_.push_back(p.free_ts >= p.alloc_ts ? p.free_ts - p.alloc_ts : 0);
        if (c.first_ts == 0 || p.alloc_ts < c.first_ts) c.first_ts = p.alloc_ts;
        c.last_ts = std::max(c.last_ts, p.free_ts);
        c.call_ns += p.call_ns;
      }
    }
    run.clear();
  }

  void ReleaseHandle(std::map<uint64_t, Handle>::iterator it, uint64_t ts) {
    const Block& b = it->second.block;
    Change(Device(b.device), ts, b.size, false);
    handles_.erase(it);
  }

  void OnVmm(const Event<format::GpuVmm>& v) {
    switch (static_cast<GpuApi>(v.api)) {
      case GpuApi::kCuMemCreate: {
        Block b;
        b.addr = v.handle;
        b.size = v.size;
        b.ts = v.ts;
        b.device = v.device;
        b.kind = MemKind::kVmm;
        b.api = static_cast<uint16_t>(v.api);
        b.layer = 1;
        b.tid = v.tid;
        b.stack = v.stack;
        b.caller = v.caller;
        NoteFirstAlloc(v.ts, v.size, v.device);
        if (v.rc != 0) {
          OnFailure(b, v.rc);
          return;
        }
        ++out_->vmm_creates;
        auto [it, inserted] = handles_.try_emplace(v.handle, Handle{b});
        if (!inserted) {  // a handle value reused without a release we saw
          ReleaseHandle(it, v.ts);
          it = handles_.try_emplace(v.handle, Handle{b}).first;
        }
        AddLive(b);
        OnSuccess(b);
        break;
      }
      case GpuApi::kCuMemRelease: {
        if (v.rc != 0) return;
        auto it = handles_.find(v.handle);
        if (it == handles_.end() || it->second.released) {
          ++out_->unmatched_frees;
          return;
        }
        it->second.released = true;
        DeviceMemory& d = Device(it->second.block.device);
        ++d.frees;
        ++out_->frees;
        NoteFlush(v.tid, it->second.block.size);
        if (it->second.maps == 0) ReleaseHandle(it, v.ts);  // else when the last unmap goes
        break;
      }
      case GpuApi::kCuMemMap: {
        if (v.rc != 0) return;
        ++out_->vmm_maps;
        mappings_[v.addr] = Mapping{v.size, v.handle};
        ++generation_;
        auto it = handles_.find(v.handle);
        if (it != handles_.end()) {
          ++it->second.maps;
          Footprint(it->second.block.device).insert({v.addr, v.size});
        }
        break;
      }
      case GpuApi::kCuMemUnmap: {
        if (v.rc != 0) return;
        const uint64_t end = v.addr + v.size;
        for (auto it = mappings_.lower_bound(v.addr); it != mappings_.end() && it->first < end;) {
          auto h = handles_.find(it->second.handle);
          if (h != handles_.end() && h->second.maps > 0 && --h->second.maps == 0 &&
              h->second.released) {
            ReleaseHandle(h, v.ts);
          }
          it = mappings_.erase(it);
          ++generation_;
        }
        break;
      }
      default:
        break;
    }
  }

  void OnPool(const Event<format::GpuPool>& p) {
    if (p.api == static_cast<uint64_t>(GpuApi::kCuMemPoolCreate) && p.rc == 0) ++out_->pools_created;
    if (p.api != static_cast<uint64_t>(GpuApi::kPoolState) || p.rc != 0) return;
    for (auto it = out_->failures.rbegin(); it != out_->failures.rend(); ++it) {
      if (it->ts == p.ts && it->tid == p.tid) {
        it->have_pool = true;
        it->pool_reserved = p.value;
        it->pool_used = p.used;
        break;
      }
      if (it->ts < p.ts) break;
    }
  }

  void OnMemInfo(const Event<format::GpuMemInfo>& m) {
    if (m.rc != 0 || m.total == 0) return;
    DeviceMemory& d = Device(m.device);
    if (d.total == 0) d.total = m.total;
    d.min_free = std::min(d.min_free, m.free);
    const uint64_t used = m.total >= m.free ? m.total - m.free : 0;
    if (m.why == static_cast<uint64_t>(format::GpuMemInfoWhy::kAfterFailure)) {
      for (auto it = out_->failures.rbegin(); it != out_->failures.rend(); ++it) {
        if (it->ts == m.ts && it->tid == m.tid) {
          it->have_meminfo = true;
          it->free = m.free;
          it->total = m.total;
          it->meminfo_rc = m.rc;
          break;
        }
        if (it->ts < m.ts) break;
      }
    }
    if (!d.have_baseline) {
      d.have_baseline = true;
      d.baseline_elsewhere = used > d.live_bytes ? used - d.live_bytes : 0;
    }
  }

  void OnModule(const Event<format::GpuModule>& m) {
    if (m.rc == 0) {
      ++out_->modules_loaded;
    } else {
      ++out_->module_failures;
    }
  }

  absl::flat_hash_set<std::pair<uint64_t, uint64_t>>& Footprint(int64_t dev) {
    if (!footprint_.contains(dev) && footprint_.size() >= kMaxDevices) dev = -1;
    return footprint_[dev];
  }

  const ProcessTrace& t_;
  AllocationTimeline* out_ = nullptr;
  std::vector<Step> events_;
  size_t now_index_ = 0;
  std::map<int64_t, const format::GpuDevice*> facts_;
  std::vector<Module> modules_;
  absl::flat_hash_map<uint64_t, Block> live_;
  bool seeded_ = false;
  uint64_t seed_ns_ = 0;
  uint64_t windowed_segment_frees_ = 0;
  std::vector<Block> seeds_;
  std::map<uint64_t, Handle> handles_;
  std::map<uint64_t, Mapping> mappings_;
  absl::flat_hash_map<int64_t, absl::flat_hash_set<std::pair<uint64_t, uint64_t>>> footprint_;
  absl::flat_hash_map<uint32_t, Pending> pending_;
  absl::flat_hash_map<uint64_t, uint64_t> churn_call_ns_;  // live segment -> its alloc call time
  // Per thread, the segment frees since its last segment allocation (CloseFreeRun).
  absl::flat_hash_map<uint32_t, std::vector<FreedPair>> free_runs_;
  std::vector<uint64_t> lifetimes_;
  std::map<int64_t, size_t> peak_event_;
  uint64_t total_live_ = 0;
  size_t laid_out_failures_ = 0;
  // Map() of each device at a generation: a retry loop failing again and again with
  // nothing allocated or freed in between builds the map once, not once per failure.
  uint64_t generation_ = 0;  // bumped by every change of live segments or mappings
  struct CachedMap {
    uint64_t generation;
    bool laid_out;
    AddressMap map;
  };
  mutable std::map<int64_t, CachedMap> map_cache_;
};

AddressMap Replay::Map(int64_t dev, bool lay_out) const {
  if (auto it = map_cache_.find(dev);
      it != map_cache_.end() && it->second.generation == generation_ && (it->second.laid_out || !lay_out)) {
    AddressMap m = it->second.map;
    if (!lay_out) {
      std::vector<Extent>().swap(m.extents);  // no capacity kept either
      m.extents_omitted = 0;
    }
    return m;
  }
  AddressMap m = MapNow(dev, lay_out);
  map_cache_[dev] = CachedMap{generation_, lay_out, m};
  return m;
}

AddressMap Replay::MapNow(int64_t dev, bool lay_out) const {
  AddressMap m;
  struct Seg {
    uint64_t lo, hi;
    const Block* block;  // nullptr for a VMM mapping
    uint64_t handle;
  };
  std::vector<Seg> segs;
  for (const auto& [addr, b] : live_) {
    if (b.device != dev || !IsSegmentKind(b.kind)) continue;
    segs.push_back({addr, addr + RoundUp(b.size, kSegmentGranularity), &b, 0});
    ++m.size_histogram[Bucket(b.size)];
  }
  for (const auto& [addr, mp] : mappings_) {
    auto h = handles_.find(mp.handle);
    if (h == handles_.end() || h->second.block.device != dev) continue;
    segs.push_back({addr, addr + mp.size, nullptr, mp.handle});
    ++m.size_histogram[Bucket(mp.size)];
  }
  std::sort(segs.begin(), segs.end(), [](const Seg& a, const Seg& b) { return a.lo < b.lo; });
  m.segments = segs.size();
  for (const Seg& s : segs) {
    m.segment_bytes += s.hi - s.lo;
    const uint64_t size = s.block != nullptr ? s.block->size : s.hi - s.lo;
    m.largest_segment = std::max(m.largest_segment, size);
  }
  // Everything this process's segments ever covered on the device, merged.
  std::vector<std::pair<uint64_t, uint64_t>> foot;
  auto fit = footprint_.find(dev);
  if (fit != footprint_.end()) {
    foot.reserve(fit->second.size());
    for (const auto& [lo, len] : fit->second) foot.push_back({lo, lo + len});
  }
  std::sort(foot.begin(), foot.end());
  std::vector<std::pair<uint64_t, uint64_t>> span;
  for (const auto& r : foot) {
    if (!span.empty() && r.first <= span.back().second) {
      span.back().second = std::max(span.back().second, r.second);
    } else {
      span.push_back(r);
    }
  }
  // Free extents: the span minus the live segments (which may overlap: sizes are
  // rounded up to the granularity, small allocations share a granule).
  std::vector<const Seg*> holders;
  auto lay = [&](uint64_t lo, uint64_t hi, bool free) {
    if (!lay_out || hi <= lo) return;
    if (m.extents.size() < kMaxMapExtents) {
      m.extents.push_back({lo, hi, free});
    } else {
      ++m.extents_omitted;
    }
  };
  auto gap = [&](uint64_t lo, uint64_t hi, const Seg* left, const Seg* right) {
    lay(lo, hi, true);
    ++m.free_extents;
    m.free_extent_bytes += hi - lo;
    m.largest_free_extent = std::max(m.largest_free_extent, hi - lo);
    if (left != nullptr) holders.push_back(left);
    if (right != nullptr) holders.push_back(right);
  };
  size_t si = 0;
  for (const auto& [lo, hi] : span) {
    while (si < segs.size() && segs[si].hi <= lo) ++si;
    uint64_t cur = lo;
    const Seg* prev = nullptr;
    for (; si < segs.size() && segs[si].lo < hi; ++si) {
      if (segs[si].lo > cur) gap(cur, segs[si].lo, prev, &segs[si]);
      lay(std::max(cur, segs[si].lo), std::min(hi, segs[si].hi), false);
      cur = std::max(cur, segs[si].hi);
      prev = &segs[si];
    }
    if (cur < hi) gap(cur, hi, prev, nullptr);
  }
  std::sort(holders.begin(), holders.end());
  holders.erase(std::unique(holders.begin(), holders.end()), holders.end());
  std::sort(holders.begin(), holders.end(), [](const Seg* a, const Seg* b) {
    return a->hi - a->lo != b->hi - b->lo ? a->hi - a->lo > b->hi - b->lo : a->lo < b->lo;
  });
  for (const Seg* s : holders) {
    if (m.gap_holders.size() >= kMaxGapHolders) break;
    if (s->block != nullptr) {
      m.gap_holders.push_back(*s->block);
    } else {
      auto h = handles_.find(s->handle);
      Block b = h != handles_.end() ? h->second.block : Block{};
      b.addr = s->lo;  // the mapped address, not the handle
      b.size = s->hi - s->lo;
      m.gap_holders.push_back(b);
    }
  }
  return m;
}

void Replay::Finish(AllocationTimeline* out) {
  out_ = out;
  for (const auto& [addr, b] : live_) {
    if (b.kind == MemKind::kHostPinned) {
      out->host.leaked_bytes += b.size;
      continue;
    }
    out->leaked.push_back(b);
  }
  for (const auto& [handle, h] : handles_) out->leaked.push_back(h.block);
  std::sort(out->leaked.begin(), out->leaked.end(), [](const Block& a, const Block& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.addr < b.addr;
  });
  for (const Block& b : out->leaked) {
    out->leaked_bytes += b.size;
    Device(b.device).leaked_bytes += b.size;
  }
  for (auto& [tid, run] : free_runs_) CloseFreeRun(run);
  Churn& c = out->churn;
  if (!lifetimes_.empty()) {
    auto mid = lifetimes_.begin() + static_cast<std::ptrdiff_t>(lifetimes_.size() / 2);
    std::nth_element(lifetimes_.begin(), mid, lifetimes_.end());
    c.median_lifetime_ns = *mid;
    const double span_s = static_cast<double>(c.last_ts > c.first_ts ? c.last_ts - c.first_ts : 0) / 1e9;
    c.rate_per_s = static_cast<double>(c.raw_pairs) / std::max(span_s, 1e-3);
  }
}

}  // namespace

std::string DeviceKey(const DeviceMemory& d) {
  if (d.facts == nullptr) return "index:" + std::to_string(d.index);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04llx:%02llx:%02llx|", static_cast<unsigned long long>(d.facts->pci_domain),
                static_cast<unsigned long long>(d.facts->pci_bus),
                static_cast<unsigned long long>(d.facts->pci_device));
  return buf + d.name + "|" + std::to_string(d.total);
}

uint64_t LiveAt(const std::vector<Point>& points, uint64_t ts) {
  auto it = std::upper_bound(points.begin(), points.end(), ts,
                             [](uint64_t v, const Point& p) { return v < p.ts; });
  return it == points.begin() ? 0 : std::prev(it)->bytes;
}

namespace {

// A peak the replay did not see (it was before the window): one change to it at its time
// and one back to what the replay had there just after, so the change list (its points)
// has the peak where it was, and the live bytes around it as before.
void AddPeakPoint(std::vector<Point>& points, uint64_t ts, uint64_t bytes, uint64_t segments) {
  auto at = std::upper_bound(points.begin(), points.end(), ts, [](uint64_t v, const Point& p) { return v < p.ts; });
  const Point before = at == points.begin() ? Point{ts, 0, 0} : *std::prev(at);
  if (ts == UINT64_MAX) {  // a hostile time: nothing after it
    points.insert(at, Point{ts, bytes, segments});
    return;
  }
  points.insert(at, {Point{ts, bytes, segments}, Point{ts + 1, before.bytes, before.segments}});
}

// A seeded replay's counts and peaks from the live-set counters: the windowed allocations
// and frees (left uncounted by the replay) are in them, before and in the window; a peak
// is the counters' (the live set's) or the replay's, whichever is higher (or, equal, came
// first: the counters' time is when it was first reached). Churn: the
// segment frees given up count as pairs (their cache releases are not told apart), from
// the first allocation; its lifetimes and call time are the window's.
void AddLiveSetCounters(const GpuLiveSet& live, uint64_t windowed_segment_frees, AllocationTimeline* out) {
  for (uint32_t e = 2; e < format::kGpuLiveEntries; ++e) {
    const format::GpuLiveCounters& c = live.counters[e];
    if (c.allocations == 0) continue;
    const int64_t dev = static_cast<int64_t>(e) - 3;
    DeviceMemory& d = out->devices[dev];
    d.index = dev;
    d.allocations += c.allocations;
    d.frees += c.frees;
    out->allocations += c.allocations;
    out->frees += c.frees;
    if (c.peak_bytes > d.peak_bytes || (c.peak_bytes == d.peak_bytes && c.peak_ticks < d.peak_ts)) {
      d.peak_bytes = c.peak_bytes;
      d.peak_ts = c.peak_ticks;
      d.peak_segments = c.peak_count;
      d.at_peak = AddressMap{};  // the map at a peak before the window is not known
      AddPeakPoint(d.points, c.peak_ticks, c.peak_bytes, c.peak_count);
    }
  }
  const format::GpuLiveCounters& all = live.counters[format::kGpuLiveAllDevices];
  if (all.peak_bytes > out->peak_bytes || (all.peak_bytes == out->peak_bytes && all.peak_ticks < out->peak_ts)) {
    out->peak_bytes = all.peak_bytes;
    out->peak_ts = all.peak_ticks;
    AddPeakPoint(out->points, all.peak_ticks, all.peak_bytes, 0);
  }
  Churn& churn = out->churn;
  const uint64_t segment_frees = all.frees - std::min(all.frees, all.stream_frees);
  const uint64_t given_up = segment_frees > windowed_segment_frees ? segment_frees - windowed_segment_frees : 0;
  if (given_up > 0) {
    churn.raw_pairs += given_up;
    if (live.info.first_ticks != 0 && (churn.first_ts == 0 || live.info.first_ticks < churn.first_ts)) {
      churn.first_ts = live.info.first_ticks;
    }
    churn.last_ts = std::max(churn.last_ts, live.info.last_free_ticks);
    const double span_s = static_cast<double>(churn.last_ts > churn.first_ts ? churn.last_ts - churn.first_ts : 0) / 1e9;
    churn.rate_per_s = static_cast<double>(churn.raw_pairs) / std::max(span_s, 1e-3);
  }
  const format::GpuLiveCounters& host = live.counters[format::kGpuLiveHost];
  out->host.allocations += host.allocations;
  out->host.frees += host.frees;
  out->host.peak_bytes = std::max(out->host.peak_bytes, host.peak_bytes);
  const format::GpuLiveInfo& info = live.info;
  if (info.first_ticks != 0 && (out->first_alloc_ts == 0 || info.first_ticks < out->first_alloc_ts)) {
    out->first_alloc_ts = info.first_ticks;
    out->first_alloc_size = info.first_size;
    out->first_alloc_device = info.first_device;
  }
}

}  // namespace

AllocationTimeline AllocationTimeline::Of(const ProcessTrace& t) {
  AllocationTimeline out;
  Replay replay(t);
  replay.Run(replay.size(), &out);
  replay.Finish(&out);
  // The address map at each device's peak: replay again up to that moment.
  for (const auto& [dev, stop] : replay.peak_events()) {
    AllocationTimeline scratch;
    Replay again(t);
    again.Run(stop, &scratch);
    auto it = out.devices.find(dev);
    if (it != out.devices.end()) it->second.at_peak = again.Map(dev);
  }
  if (replay.seeded()) {
    out.seeded_from_ns = replay.seed_ns();
    AddLiveSetCounters(t.gpu_live, replay.windowed_segment_frees(), &out);
    for (const format::GpuLivePoint& p : t.gpu_live.history) out.sampled.push_back({p.ticks, p.live_bytes, 0});
  }
  return out;
}

GpuTimelines GpuTimelines::Build(const RunModel& run) {
  GpuTimelines g;
  g.of_trace.reserve(run.traces().size());
  for (const ProcessTrace& t : run.traces()) g.of_trace.push_back(AllocationTimeline::Of(t));
  return g;
}

}  // namespace colabtrace::analyzer::gpu
