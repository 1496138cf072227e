// gpu.allocator-config-ignored (warning)
//
// Rule: an allocator variable (PYTORCH_CUDA_ALLOC_CONF, XLA_PYTHON_CLIENT_*, TF_*) set
// after the process's first GPU allocation, or contradicted by the calls the framework
// made (XLA preallocating with PREALLOCATE=false, a first allocation far from
// MEM_FRACTION).
#include <algorithm>
#include <map>
#include <string_view>

#include "gpu/rules/rules.h"
#include <cctype>
#include <cmath>

namespace colabtrace::analyzer::gpu {

using format::EnvSource;
namespace {

constexpr double kPreallocatedShare = 0.5;  // XLA: a first allocation this large preallocates
constexpr double kFractionTolerance = 0.1;  // XLA_PYTHON_CLIENT_MEM_FRACTION vs what happened


std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
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

void AllocatorConfigOf(RuleContext& ctx, const ProcessTrace& t, const AllocationTimeline& g) {
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
  Finding finding = Finding::Of(FindingId::kGpuAllocatorConfigIgnored, t.pid());
  finding.evidence["first_allocation_at_ns"] = Rel(t, g.first_alloc_ts);
  finding.evidence["set_after_first_allocation"] = late;
  finding.evidence["contradicted_by_calls"] = contradictions;
  std::string what;
  for (const Json& j : late.array()) what += (what.empty() ? "" : ", ") + j["variable"].str();
  for (const Json& j : contradictions.array()) what += (what.empty() ? "" : ", ") + j["variable"].str();
  finding.summary = what + (late.array().empty() ? " did not take effect: " + contradictions.array()[0]["why"].str()
                                            : " was set after the first GPU allocation (at " +
                                                  Seconds(Rel(t, g.first_alloc_ts)) +
                                                  "), when the allocator had already read it");
  ctx.Add(std::move(finding));
}

void AllocatorConfigIgnoredRule(RuleContext& ctx) { ForEachProcess(ctx, AllocatorConfigOf); }

const RuleRegistration kAllocatorConfigIgnoredRuleRegistration(AllocatorConfigIgnoredRule,
    {FindingId::kGpuAllocatorConfigIgnored});
}  // namespace

}  // namespace colabtrace::analyzer::gpu
