#include "gpu/gpu_findings.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string_view>

#include "analyses/process_facts.h"
#include "analyses/symbolize.h"
#include "gpu/cupti_merge.h"
#include "gpu/leak_growth.h"
#include "python/python_stack.h"
#include "python/torch_snapshot.h"

namespace colabtrace::analyzer::gpu {
namespace {

using format::EnvSource;

// ---- thresholds ---------------------------------------------------------------------------
constexpr double kNearCapacity = 0.95;           // gpu.near-capacity: peak / device memory
constexpr uint64_t kChurnMinPairs = 1000;         // gpu.churn: raw allocate/free pairs ...
constexpr double kChurnMinRate = 100.0;           // ... at this many per second or more
constexpr uint64_t kContextMax = 1ull << 30;      // a CUDA context rarely takes more than 1 GiB
constexpr double kPreallocatedShare = 0.5;        // XLA: a first allocation this large preallocates
constexpr double kFractionTolerance = 0.1;        // XLA_PYTHON_CLIENT_MEM_FRACTION vs what happened
constexpr size_t kMaxLeakGroups = 10;

std::string Pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", v * 100.0);
  return buf;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "+%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}

uint64_t Rel(const ProcessTrace& t, uint64_t ts) { return ts >= t.start_ns() ? ts - t.start_ns() : 0; }

Json StackJson(const std::vector<std::string>& frames) {
  Json a = Json::MakeArray();
  for (const auto& f : frames) a.Append(f);
  return a;
}

bool HasModule(const ProcessTrace& t, std::initializer_list<std::string_view> needles) {
  auto match = [&](std::string_view path) {
    for (std::string_view n : needles) {
      if (path.find(n) != std::string_view::npos) return true;
    }
    return false;
  };
  for (const auto& m : t.records.Module) {
    if (match(t.Str(m.path))) return true;
  }
  for (const auto& l : t.records.LibLoad) {
    if (l.ok != 0 && match(t.Str(l.path))) return true;
  }
  return false;
}

}  // namespace

std::string DeviceLabel(const DeviceMemory* d, int64_t index) {
  std::string s = index >= 0 ? "GPU " + std::to_string(index) : std::string("an unknown GPU");
  if (d != nullptr && d->facts != nullptr && d->name.size() > 0) s += " (" + d->name + ")";
  return s;
}

std::vector<std::string> BlockStack(const ProcessTrace& t, uint64_t stack, uint64_t caller) {
  if (stack != 0) return SymbolizeStack(t, t.Stack(stack));
  if (caller != 0) return SymbolizeStack(t, std::vector<uint64_t>{caller});
  return {};
}

Json BlockJson(const ProcessTrace& t, const Block& b) {
  Json j = Json::MakeObject();
  j["address"] = FormatHex(b.addr);
  j["size"] = b.size;
  j["kind"] = std::string(MemKindName(b.kind));
  j["api"] = GpuApiLabel(b.api);
  j["allocated_at_ns"] = Rel(t, b.ts);
  j["tid"] = b.tid;
  j["stack"] = StackJson(BlockStack(t, b.stack, b.caller));
  return j;
}

Json AddressMapJson(const ProcessTrace& t, const AddressMap& m) {
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
  for (const Block& b : m.gap_holders) holders.Append(BlockJson(t, b));
  j["segments_holding_gaps"] = std::move(holders);
  return j;
}

FailureVerdict JudgeFailure(const Failure& f, const DeviceMemory* device,
                            const OthersOnDevice& others) {
  FailureVerdict v;
  if (!IsOutOfMemory(f.rc)) return v;
  if (!f.have_meminfo || f.total == 0) {
    v.id = "gpu.oom";
    v.cause = "unknown";
    return v;
  }
  if (f.free >= f.request) {
    v.id = "gpu.oom-fragmentation";
    v.cause = "fragmentation";
    return v;
  }
  v.id = "gpu.oom";
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

namespace {

// ---- gpu.oom and gpu.oom-fragmentation --------------------------------------------------------

void AddOomFindings(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g,
                    const OthersOnDevice& others) {
  const std::optional<TorchSnapshot> torch = FindTorchSnapshot(t);  // PyTorch's own view
  struct Pick {
    const Failure* f = nullptr;
    FailureVerdict v;
    uint64_t count = 0;
  };
  std::map<std::string, Pick> picks;  // by finding id: the last unrecovered episode
  for (const Failure& f : g.failures) {
    if (!IsOutOfMemory(f.rc) || f.recovered || !f.episode_last) continue;
    auto dit = g.devices.find(f.device);
    const DeviceMemory* d = dit != g.devices.end() ? &dit->second : nullptr;
    FailureVerdict v = JudgeFailure(f, d, others);
    Pick& p = picks[v.id];
    ++p.count;
    p.f = &f;
    p.v = std::move(v);
  }
  for (auto& [id, p] : picks) {
    const Failure& f = *p.f;
    const FailureVerdict& v = p.v;
    auto dit = g.devices.find(f.device);
    const DeviceMemory* d = dit != g.devices.end() ? &dit->second : nullptr;
    const std::string where = DeviceLabel(d, f.device);
    const std::string api = GpuApiLabel(f.api);
    Finding fd;
    fd.id = id;
    fd.severity = Severity::kError;
    fd.pid = t.pid();
    Json& ev = fd.evidence;
    ev["api"] = api;
    ev["layer"] = f.layer == 0 ? "runtime" : "driver";
    ev["rc"] = f.rc;
    ev["rc_name"] = std::string(GpuErrorName(f.rc, f.layer == 0));
    ev["device"] = f.device;
    ev["at_ns"] = Rel(t, f.ts);
    ev["request_bytes"] = f.request;
    ev["free_bytes"] = f.have_meminfo ? Json(f.free) : Json();
    ev["total_bytes"] = f.have_meminfo ? Json(f.total) : Json();
    ev["process_live_bytes"] = f.process_live;
    ev["process_allocations"] = f.process_allocations;
    ev["process_segments"] = f.map.segments;
    ev["largest_segment_bytes"] = f.map.largest_segment;
    ev["unrecovered_failures"] = p.count;
    ev["stack"] = StackJson(BlockStack(t, f.stack, f.caller));
    if (f.retry_of >= 0 && static_cast<size_t>(f.retry_of) < g.failures.size()) {
      const Failure& first = g.failures[static_cast<size_t>(f.retry_of)];
      Json r = Json::MakeObject();
      r["first_failure_at_ns"] = Rel(t, first.ts);
      r["frees_before_retry"] = f.flush_frees;
      r["freed_bytes_before_retry"] = f.flush_bytes;
      r["retry_failed"] = true;
      ev["cache_flush_and_retry"] = std::move(r);
    }
    if (f.have_pool) {
      ev["pool_reserved_bytes"] = f.pool_reserved;
      ev["pool_used_bytes"] = f.pool_used;
    }
    const std::string head = api + " of " + FormatBytes(f.request) + " failed on " + where;
    const std::string retry =
        f.retry_of >= 0 ? " The program freed " + std::to_string(f.flush_frees) + " segment(s) (" +
                              FormatBytes(f.flush_bytes) +
                              ") and retried the same request, which failed again: what fills "
                              "the device is in use, not merely cached."
                        : "";
    if (v.cause == "fragmentation") {
      const uint64_t outside = f.free > f.map.free_extent_bytes ? f.free - f.map.free_extent_bytes : 0;
      ev["largest_free_extent_bytes"] = f.map.largest_free_extent;
      ev["free_extents"] = f.map.free_extents;
      ev["free_extent_bytes"] = f.map.free_extent_bytes;
      ev["free_outside_segments_bytes"] = outside;
      ev["fragmentation"] =
          f.free > 0 ? 1.0 - static_cast<double>(f.map.largest_free_extent) / static_cast<double>(f.free)
                     : 0.0;
      Json holders = Json::MakeArray();
      for (const Block& b : f.map.gap_holders) holders.Append(BlockJson(t, b));
      ev["segments_holding_gaps"] = std::move(holders);
      fd.summary = head + " although " + FormatBytes(f.free) + " were free: the free memory lies in " +
                   std::to_string(f.map.free_extents) + " gaps between this process's " +
                   std::to_string(f.map.segments) + " segments, the largest " +
                   FormatBytes(f.map.largest_free_extent);
      if (outside >= f.request) {
        fd.summary += " (" + FormatBytes(outside) + " free outside them, placement unknown)";
      }
      fd.advice =
          "The request is larger than any free piece. With PyTorch, set "
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True before the first CUDA call (in the "
          "shell, or before `import torch`) so segments grow in place instead of leaving gaps; "
          "or limit splitting with max_split_size_mb. Allocate the largest buffers first, keep "
          "tensor shapes uniform, and call torch.cuda.empty_cache() between phases or "
          "experiments. The segments listed hold the gaps: their stacks show who keeps them. "
          "(On real GPUs the driver maps scattered pages, so a raw cudaMalloc seldom fails this "
          "way; the gaps that matter are inside a framework's cached segments.)" + retry;
    } else {
      ev["cause"] = v.cause;
      ev["held_elsewhere_bytes"] = v.held_elsewhere;
      ev["context_estimate_bytes"] = v.context_estimate;
      ev["other_processes_estimate_bytes"] = v.others_estimate;
      if (v.pool_cached != 0) ev["pool_cached_bytes"] = v.pool_cached;
      Json sib = Json::MakeArray();
      for (const auto& [pid, bytes] : v.traced_others) {
        Json o = Json::MakeObject();
        o["pid"] = pid;
        o["bytes"] = bytes;
        sib.Append(std::move(o));
      }
      ev["other_traced_processes"] = std::move(sib);
      const std::string of_total = f.have_meminfo ? " of " + FormatBytes(f.total) : "";
      if (v.cause == "this-process") {
        fd.summary = head + ": this process's " + std::to_string(f.process_allocations) +
                     " allocation(s) hold " + FormatBytes(f.process_live + v.pool_cached) + of_total +
                     (f.have_meminfo ? "; " + FormatBytes(f.free) + " free" : "");
        fd.advice =
            "This process's own allocations fill the device. Reduce the batch size (or sequence "
            "length, model size), free what is no longer needed (del tensors, then "
            "torch.cuda.empty_cache() between experiments in a notebook), and use mixed "
            "precision or activation checkpointing." + retry;
        if (v.pool_cached != 0) {
          fd.advice += " A stream-ordered pool still caches " + FormatBytes(v.pool_cached) +
                       " of freed memory: trim it (cudaMemPoolTrimTo) or lower its release "
                       "threshold.";
        }
      } else if (v.cause == "other-process") {
        std::string who = "other processes";
        if (!v.traced_others.empty()) {
          who = "pid " + std::to_string(v.traced_others.front().first);
          for (size_t i = 1; i < v.traced_others.size(); ++i) {
            who += ", " + std::to_string(v.traced_others[i].first);
          }
        }
        fd.summary = head + ": " + who + " hold about " + FormatBytes(v.others_estimate) +
                     of_total + " (this process " + FormatBytes(f.process_live) + ", free " +
                     FormatBytes(f.free) + ")";
        fd.advice =
            "Another process holds the memory (nvidia-smi lists it): a previous notebook "
            "kernel still running, a DataLoader worker or subprocess that initialised CUDA, or "
            "another job on a shared GPU. Stop it, give each job its own GPU "
            "(CUDA_VISIBLE_DEVICES), or for JAX/TensorFlow neighbours turn off preallocation "
            "(XLA_PYTHON_CLIENT_PREALLOCATE=false, TF_FORCE_GPU_ALLOW_GROWTH=true).";
      } else if (v.cause == "context") {
        fd.summary = head + ": the CUDA context and other memory outside this process's "
                     "allocations hold " + FormatBytes(v.held_elsewhere) + of_total +
                     " (this process " + FormatBytes(f.process_live) + ", free " + FormatBytes(f.free) + ")";
        fd.advice =
            "The CUDA context itself (driver state, the kernels of every loaded CUDA library, "
            "cuBLAS/cuDNN workspaces) takes this much, which on a small GPU leaves little for "
            "data. Set CUDA_MODULE_LOADING=LAZY, load fewer CUDA libraries, or use a GPU with "
            "more memory.";
      } else if (v.cause == "larger-than-device") {
        fd.summary = head + ": the request alone is larger than the device's " + FormatBytes(f.total);
        fd.advice =
            "No amount of freeing makes this fit: the single allocation is larger than the GPU. "
            "Split the work (smaller batch or chunks), shard the model across GPUs, or check the "
            "size computation for an overflow or a wrong unit.";
      } else {
        fd.summary = head + " (out of memory); free memory could not be read after the failure";
        fd.advice =
            "Reduce the batch size or model size; run under colabtrace with the driver visible "
            "so the free memory at the failure is recorded.";
      }
    }
    ApplyTorchAccounting(fd, torch, f.device);  // its verdict wins when it exists
    report.AddFinding(std::move(fd));
  }
}

// ---- gpu.leak ------------------------------------------------------------------------------

// The rule is in leak_growth.h: never-freed allocations from one site that keep coming
// after warm-up. Memory merely held at exit (caches, pools) is not reported here.
void AddLeakFinding(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g) {
  const LeakGrowth lg = FindLeakGrowth(g, t.end_ns());
  if (lg.groups.empty()) return;
  const bool killed = report.facts(t).end_kind == EndKind::kKilled;
  double rate = 0;
  for (const LeakGroup& gr : lg.groups) rate += gr.rate_bytes_per_s;
  Finding fd;
  fd.id = "gpu.leak";
  fd.severity = Severity::kWarning;
  fd.pid = t.pid();
  Json& ev = fd.evidence;
  ev["growth_bytes"] = lg.growth_bytes;
  ev["allocations"] = lg.growth_allocations;
  ev["growth_rate_bytes_per_s"] = static_cast<uint64_t>(std::llround(rate));
  ev["held_at_exit_bytes"] = lg.held_at_exit_bytes;
  ev["leaked_bytes"] = g.leaked_bytes;
  ev["warmup_end_ns"] = Rel(t, lg.warmup_end);
  ev["at"] = killed ? "kill" : "exit";
  ev["groups"] = static_cast<uint64_t>(lg.groups.size());
  Json arr = Json::MakeArray();
  for (size_t i = 0; i < lg.groups.size() && i < kMaxLeakGroups; ++i) {
    const LeakGroup& gr = lg.groups[i];
    Json j = Json::MakeObject();
    j["bytes"] = gr.bytes;
    j["count"] = gr.count;
    j["after_warmup_count"] = gr.after_warmup_count;
    j["rate_bytes_per_s"] = static_cast<uint64_t>(std::llround(gr.rate_bytes_per_s));
    j["first_at_ns"] = Rel(t, gr.first_ts);
    j["last_at_ns"] = Rel(t, gr.last_ts);
    j["api"] = GpuApiLabel(gr.api);
    j["kind"] = std::string(MemKindName(gr.kind));
    if (gr.py_stack != 0) j["python_stack"] = PythonStackJson(t, gr.py_stack);
    j["stack"] = StackJson(BlockStack(t, gr.stack, gr.caller));
    arr.Append(std::move(j));
  }
  ev["by_stack"] = std::move(arr);
  char rate_text[64];
  std::snprintf(rate_text, sizeof(rate_text), "%s/s", FormatBytes(static_cast<uint64_t>(rate)).c_str());
  fd.summary = "GPU memory kept growing: " + std::to_string(lg.growth_allocations) +
               " allocation(s), " + FormatBytes(lg.growth_bytes) + ", from " +
               std::to_string(lg.groups.size()) + " allocation site(s) were never freed (about " +
               rate_text + ") and still allocated " +
               (killed ? "when the process was killed" : "at exit");
  fd.advice =
      "These sites allocate again and again after warm-up and never free: free what you "
      "allocate (cudaFree, or drop the last reference to a tensor: a list that collects "
      "losses or outputs without .item()/.detach() keeps them alive). Memory a framework "
      "cache merely holds at exit is not counted here (held_at_exit_bytes).";
  report.AddFinding(std::move(fd));
}

// ---- gpu.churn -------------------------------------------------------------------------------

void AddChurnFinding(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g) {
  const Churn& c = g.churn;
  if (c.raw_pairs < kChurnMinPairs || c.rate_per_s < kChurnMinRate) return;
  Finding fd;
  fd.id = "gpu.churn";
  fd.severity = Severity::kWarning;
  fd.pid = t.pid();
  fd.evidence["raw_pairs"] = c.raw_pairs;
  fd.evidence["rate_per_s"] = std::round(c.rate_per_s * 10.0) / 10.0;
  fd.evidence["median_lifetime_ns"] = c.median_lifetime_ns;
  fd.evidence["time_in_calls_ns"] = c.call_ns;
  bool no_caching = false;
  for (const auto& e : t.records.EnvVar) {
    if (t.Str(e.name) == "PYTORCH_NO_CUDA_MEMORY_CACHING") {
      no_caching = e.source != static_cast<uint64_t>(EnvSource::kUnsetenv) && t.Str(e.value) == "1";
    }
  }
  fd.evidence["pytorch_no_cuda_memory_caching"] = no_caching;
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.0f", c.rate_per_s);
  fd.summary = std::to_string(c.raw_pairs) + " raw GPU allocate/free pairs at " + rate +
               " per second (median lifetime " + FormatDurationNs(c.median_lifetime_ns) +
               ", " + FormatDurationNs(c.call_ns) + " inside the calls): caching is bypassed";
  fd.advice =
      "Each raw cudaMalloc/cudaFree can synchronise the device and costs far more than reusing "
      "memory. Reuse buffers, allocate once outside the loop, or use a caching or "
      "stream-ordered allocator (cudaMallocAsync reuses freed memory from a pool)." +
      std::string(no_caching ? " PYTORCH_NO_CUDA_MEMORY_CACHING=1 turns PyTorch's cache off: "
                               "unset it."
                             : "");
  report.AddFinding(std::move(fd));
}

// ---- gpu.near-capacity ------------------------------------------------------------------------

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

// ---- gpu.allocator-config-ignored --------------------------------------------------------------

bool IsAllocatorVariable(std::string_view name) {
  return name == "PYTORCH_CUDA_ALLOC_CONF" || name == "PYTORCH_ALLOC_CONF" ||
         name == "TF_GPU_ALLOCATOR" || name == "TF_FORCE_GPU_ALLOW_GROWTH" ||
         name.starts_with("XLA_PYTHON_CLIENT_");
}

bool ConfSays(std::string_view conf, std::string_view key, std::string_view value) {
  // "expandable_segments:True,max_split_size_mb:128" (PyTorch's syntax).
  const std::string c = Lower(conf);
  const std::string needle = Lower(key) + ":" + Lower(value);
  size_t pos = 0;
  while ((pos = c.find(needle, pos)) != std::string::npos) {
    const bool start_ok = pos == 0 || c[pos - 1] == ',' || c[pos - 1] == ' ';
    const size_t end = pos + needle.size();
    const bool end_ok = end == c.size() || c[end] == ',' || c[end] == ' ';
    if (start_ok && end_ok) return true;
    pos = end;
  }
  return false;
}

void AddConfigFindings(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g) {
  if (g.first_alloc_ts == 0) return;
  struct Setting {
    std::string value;
    bool set = false;
  };
  std::map<std::string, Setting> effective;  // the value the allocator saw at its first call
  Json late = Json::MakeArray();
  for (const auto& e : t.records.EnvVar) {
    const std::string name(t.Str(e.name));
    if (!IsAllocatorVariable(name)) continue;
    const bool unset = e.source == static_cast<uint64_t>(EnvSource::kUnsetenv);
    if (e.ts <= g.first_alloc_ts || e.source == static_cast<uint64_t>(EnvSource::kStartup)) {
      effective[name] = Setting{unset ? "" : std::string(t.Str(e.value)), !unset};
      continue;
    }
    Json j = Json::MakeObject();
    j["variable"] = name;
    j["value"] = unset ? Json() : Json(std::string(t.Str(e.value)));
    j["set_at_ns"] = Rel(t, e.ts);
    j["how"] = e.source == static_cast<uint64_t>(EnvSource::kSetenv) ? "setenv"
               : e.source == static_cast<uint64_t>(EnvSource::kPutenv) ? "putenv"
                                                                       : "unsetenv";
    late.Append(std::move(j));
  }
  Json contradictions = Json::MakeArray();
  auto contradiction = [&](const std::string& name, const std::string& why) {
    Json j = Json::MakeObject();
    j["variable"] = name;
    j["value"] = effective[name].value;
    j["why"] = why;
    contradictions.Append(std::move(j));
  };
  const uint64_t total = [&] {
    auto it = g.devices.find(g.first_alloc_device);
    return it != g.devices.end() ? it->second.total : 0;
  }();
  const bool torch = HasModule(t, {"libc10_cuda", "libtorch_cuda"});
  const bool tensorflow = HasModule(t, {"libtensorflow", "_pywrap_tensorflow"});
  const bool xla = HasModule(t, {"xla_extension", "/jaxlib/", "xla_cuda_plugin", "jax_cuda"});
  for (const char* name : {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
    const Setting& s = effective[name];
    if (!torch || !s.set) continue;
    if (ConfSays(s.value, "expandable_segments", "true") && g.vmm_creates == 0 && g.raw_segments > 0) {
      contradiction(name, "expandable_segments is on, but the allocator made " +
                              std::to_string(g.raw_segments) +
                              " plain segment allocation(s) and no cuMemCreate/cuMemMap calls");
    }
    if (ConfSays(s.value, "backend", "cudamallocasync") && g.stream_ordered == 0 && g.raw_segments > 0) {
      contradiction(name, "backend:cudaMallocAsync is set, but the allocations were " +
                              std::to_string(g.raw_segments) +
                              " plain segments and no stream-ordered (cudaMallocAsync) ones");
    }
  }
  if (tensorflow && effective["TF_GPU_ALLOCATOR"].set &&
      Lower(effective["TF_GPU_ALLOCATOR"].value) == "cuda_malloc_async" && g.stream_ordered == 0 &&
      g.raw_segments > 0) {
    contradiction("TF_GPU_ALLOCATOR",
                  "cuda_malloc_async is set, but TensorFlow allocated plain segments only");
  }
  if (xla && total > 0) {
    const double first_share = static_cast<double>(g.first_alloc_size) / static_cast<double>(total);
    const Setting& pre = effective["XLA_PYTHON_CLIENT_PREALLOCATE"];
    const Setting& alloc = effective["XLA_PYTHON_CLIENT_ALLOCATOR"];
    const Setting& frac = effective["XLA_PYTHON_CLIENT_MEM_FRACTION"];
    const bool no_prealloc = pre.set && (Lower(pre.value) == "false" || pre.value == "0");
    if (no_prealloc && first_share >= kPreallocatedShare) {
      contradiction("XLA_PYTHON_CLIENT_PREALLOCATE",
                    "preallocation is off, but the first allocation took " + Pct(first_share) +
                        " of the device");
    }
    if (alloc.set && Lower(alloc.value) == "platform" && first_share >= kPreallocatedShare) {
      contradiction("XLA_PYTHON_CLIENT_ALLOCATOR",
                    "the platform allocator is selected, but the first allocation took " +
                        Pct(first_share) + " of the device");
    }
    if (frac.set && !no_prealloc && first_share >= kPreallocatedShare / 2) {
      char* end = nullptr;
      const double want = std::strtod(frac.value.c_str(), &end);
      if (end != frac.value.c_str() && want > 0 && std::fabs(first_share - want) > kFractionTolerance) {
        contradiction("XLA_PYTHON_CLIENT_MEM_FRACTION",
                      "the preallocation took " + Pct(first_share) + " of the device, not " +
                          Pct(want));
      }
    }
  }
  if (late.array().empty() && contradictions.array().empty()) return;
  Finding fd;
  fd.id = "gpu.allocator-config-ignored";
  fd.severity = Severity::kWarning;
  fd.pid = t.pid();
  fd.evidence["first_allocation_at_ns"] = Rel(t, g.first_alloc_ts);
  fd.evidence["set_after_first_allocation"] = late;
  fd.evidence["contradicted_by_calls"] = contradictions;
  std::string what;
  for (const Json& j : late.array()) what += (what.empty() ? "" : ", ") + j["variable"].str();
  for (const Json& j : contradictions.array()) what += (what.empty() ? "" : ", ") + j["variable"].str();
  fd.summary = what + (late.array().empty() ? " did not take effect: " + contradictions.array()[0]["why"].str()
                                            : " was set after the first GPU allocation (at " +
                                                  Seconds(Rel(t, g.first_alloc_ts)) +
                                                  "), when the allocator had already read it");
  fd.advice =
      "Allocator settings are read once, when the framework first uses CUDA. Set them in the "
      "shell or job spec, or at the very top of the script before importing torch, "
      "tensorflow or jax (os.environ[...] after that, or after the first CUDA call, is too "
      "late); then check that the calls changed as expected in a new trace.";
  report.AddFinding(std::move(fd));
}

// ---- gpu.coverage-incomplete ---------------------------------------------------------------------

void AddCoverageFinding(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g) {
  Json causes = Json::MakeArray();
  std::string summary;
  if (g.unmatched_frees > 0) {
    Json c = Json::MakeObject();
    c["cause"] = "frees-of-unseen-allocations";
    c["frees"] = g.unmatched_frees;
    causes.Append(std::move(c));
    summary = std::to_string(g.unmatched_frees) + " GPU free(s) of addresses never seen allocated";
  }
  bool deepbind = false;
  for (const auto& l : t.records.LibLoad) {
    if ((l.flags & 0x8) != 0) deepbind = true;  // RTLD_DEEPBIND: the libraries analysis says so
  }
  if (g.runtime_bypassed > 0 && !deepbind) {
    Json c = Json::MakeObject();
    c["cause"] = "runtime-layer-bypassed";
    c["allocations"] = g.runtime_bypassed;
    c["bytes"] = g.runtime_bypassed_bytes;
    c["library"] = g.runtime_bypassed_lib;
    causes.Append(std::move(c));
    if (!summary.empty()) summary += "; ";
    summary += std::to_string(g.runtime_bypassed) + " allocation(s) by " + g.runtime_bypassed_lib +
               " reached the driver without passing the runtime hooks (recorded at driver level)";
  }
  uint64_t unwrapped = 0;
  Json names = Json::MakeArray();
  for (const auto& r : t.records.GpuInterpose) {
    if (r.wrapped == 0) {
      ++unwrapped;
      names.Append(GpuApiLabel(r.api));
    }
  }
  if (unwrapped > 0) {
    Json c = Json::MakeObject();
    c["cause"] = "entry-points-not-wrapped";
    c["entry_points"] = std::move(names);
    causes.Append(std::move(c));
    if (!summary.empty()) summary += "; ";
    summary += std::to_string(unwrapped) + " driver entry point(s) could not be wrapped";
  }
  const CuptiSummary cupti = SummarizeCupti(t);
  if (cupti.only_allocations > 0) {
    Json c = Json::MakeObject();
    c["cause"] = "allocations-seen-only-by-cupti";
    c["allocations"] = cupti.only_allocations;
    c["bytes"] = cupti.only_bytes;
    causes.Append(std::move(c));
    if (!summary.empty()) summary += "; ";
    summary += std::to_string(cupti.only_allocations) + " allocation(s), " +
               FormatBytes(cupti.only_bytes) +
               ", seen only by CUPTI (a statically linked CUDA runtime the hooks cannot see; "
               "counted, but without stacks)";
  }
  if (cupti.dropped > 0) {
    Json c = Json::MakeObject();
    c["cause"] = "cupti-records-dropped";
    c["records"] = cupti.dropped;
    causes.Append(std::move(c));
    if (!summary.empty()) summary += "; ";
    summary += "CUPTI dropped " + std::to_string(cupti.dropped) + " activity record(s)";
  }
  if (cupti.state == "backed-off") {
    Json c = Json::MakeObject();
    c["cause"] = "cupti-has-another-subscriber";
    c["rc"] = cupti.rc;
    causes.Append(std::move(c));
    if (!summary.empty()) summary += "; ";
    summary += "CUPTI was requested but another tool (a profiler) already subscribed, so the "
               "shim stepped back";
  }
  if (causes.array().empty()) return;
  Finding fd;
  fd.id = "gpu.coverage-incomplete";
  fd.severity = Severity::kInfo;
  fd.pid = t.pid();
  fd.evidence["causes"] = std::move(causes);
  fd.summary = "the GPU memory trace may be incomplete: " + summary;
  fd.advice =
      "Frees of unseen addresses mean allocations happened before tracing started or through "
      "a path the shim does not see (counts and leaks may be off by those). A runtime layer "
      "that is bypassed only loses the runtime API names; the bytes are still counted at the "
      "driver level.";
  report.AddFinding(std::move(fd));
}

}  // namespace

void AddGpuFindings(ReportBuilder& report, const ProcessTrace& t, const AllocationTimeline& g,
                    const OthersOnDevice& others) {
  AddOomFindings(report, t, g, others);
  AddLeakFinding(report, t, g);
  AddLaunchFailedFindings(report, t);
  AddChurnFinding(report, t, g);
  AddNearCapacity(report, t, g);
  AddConfigFindings(report, t, g);
  AddCoverageFinding(report, t, g);
}

}  // namespace colabtrace::analyzer::gpu
