// perf.gpu-unused (warning)
//
// Rule: a process that imported a framework (torch, jax, tensorflow: its recorded Python
// packages, or their native libraries loaded) and stepped never used a GPU (no device
// allocation, module, pool or kernel launch of its own), on a machine that has an NVIDIA
// GPU (the shim's host facts: nvidia_gpus, the models under /proc/driver/nvidia/gpus, or
// nvidia_dev_nodes, the /dev/nvidiaN nodes). It names the GPU and the cause where it
// shows: a CPU-only build (a "+cpu" version), CUDA_VISIBLE_DEVICES empty, or JAX_PLATFORMS
// limited to the CPU. Without a GPU on the machine it says nothing.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "perf/rules/rules.h"

namespace colabtrace::analyzer::perf {
namespace {

bool UsedGpu(const ProcessTrace& t) {
  const RecordTables& r = t.records;
  return !r.GpuAlloc.empty() || !r.GpuDevice.empty() || !r.GpuModule.empty() || !r.GpuPool.empty() ||
         !r.GpuVmm.empty() || !r.GpuActivity.empty() || !r.CuptiMemory.empty() || !r.GpuLaunchFailed.empty() ||
         !r.GpuFunction.empty();
}

// The frameworks a process imported, by name, with the version its package records give.
struct Framework {
  std::string name, version;
};

std::vector<Framework> FrameworksOf(const ProcessTrace& t) {
  std::vector<Framework> out;
  auto add = [&](std::string name, std::string version) {
    for (Framework& f : out) {
      if (f.name == name) {
        if (f.version.empty()) f.version = std::move(version);
        return;
      }
    }
    out.push_back({std::move(name), std::move(version)});
  };
  for (const auto& p : t.records.PyPackage) {
    const std::string_view modules = t.Str(p.modules);
    size_t at = 0;
    while (at <= modules.size()) {
      size_t comma = modules.find(',', at);
      if (comma == std::string_view::npos) comma = modules.size();
      const std::string_view mod = modules.substr(at, comma - at);
      if (mod == "torch" || mod == "jax" || mod == "tensorflow") add(std::string(mod), std::string(t.Str(p.version)));
      at = comma + 1;
    }
  }
  for (const auto& l : t.records.LibLoad) {
    if (!l.ok) continue;
    const std::string_view path = t.Str(l.path);
    if (path.find("/libtorch_cpu.so") != std::string_view::npos) add("torch", "");
    if (path.find("/jaxlib/") != std::string_view::npos) add("jax", "");
    if (path.find("/libtensorflow_framework.so") != std::string_view::npos) add("tensorflow", "");
  }
  return out;
}

// The last value the process's environment gave `name` (nullopt: unset or never recorded).
std::optional<std::string> EnvOf(const ProcessTrace& t, std::string_view name) {
  std::optional<std::string> v;
  for (const auto& e : t.records.EnvVar) {
    if (t.Str(e.name) != name) continue;
    if (e.source == static_cast<uint64_t>(format::EnvSource::kUnsetenv) || e.redacted) {
      v.reset();
    } else {
      v = std::string(t.Str(e.value));
    }
  }
  return v;
}

void GpuUnusedRule(RuleContext& ctx) {
  const RunModel& run = ctx.run();
  const StepModels& m = run.Get<StepModels>();
  const LifecycleModel& lc = run.lifecycle();
  for (const ProcessSteps& p : m.processes) {
    const ProcessTrace& t = run.traces()[p.trace];
    if (UsedGpu(t)) continue;
    const std::vector<Framework> frameworks = FrameworksOf(t);
    if (frameworks.empty()) continue;
    // The machine's GPUs, from any trace of its host.
    std::string gpus;
    uint64_t dev_nodes = 0;
    const std::string host = lc.HostOf(t);
    for (const ProcessTrace& o : run.traces()) {
      if (lc.HostOf(o) != host) continue;
      for (const auto& h : o.records.HostInfo) {
        if (o.Str(h.key) == "nvidia_gpus" && gpus.empty()) gpus = std::string(o.Str(h.value));
      }
      for (const auto& h : o.records.HostNum) {
        if (o.Str(h.key) == "nvidia_dev_nodes") dev_nodes = std::max<uint64_t>(dev_nodes, h.value);
      }
    }
    if (gpus.empty() && dev_nodes == 0) continue;

    Finding f = Finding::Of(FindingId::kPerfGpuUnused, p.pid);
    Json& ev = f.evidence;
    ev["gpus"] = gpus;
    ev["nvidia_dev_nodes"] = dev_nodes;
    ev["steps"] = static_cast<uint64_t>(p.count);
    Json fw = Json::MakeArray();
    std::string names;
    for (const Framework& x : frameworks) {
      Json j = Json::MakeObject();
      j["name"] = x.name;
      j["version"] = x.version;
      fw.Append(std::move(j));
      if (!names.empty()) names += ", ";
      names += x.name + (x.version.empty() ? "" : " " + x.version);
    }
    ev["frameworks"] = std::move(fw);
    std::vector<std::string> causes;
    for (const Framework& x : frameworks) {
      if (x.version.find("+cpu") != std::string::npos) causes.push_back("a CPU-only build (" + x.name + " " + x.version + ")");
    }
    if (const auto v = EnvOf(t, "CUDA_VISIBLE_DEVICES"); v && (v->empty() || *v == "-1")) {
      causes.push_back("CUDA_VISIBLE_DEVICES=" + *v + " hides every GPU");
    }
    if (const auto v = EnvOf(t, "JAX_PLATFORMS"); v && v->find("cpu") != std::string::npos &&
                                                   v->find("cuda") == std::string::npos && v->find("gpu") == std::string::npos) {
      causes.push_back("JAX_PLATFORMS=" + *v);
    }
    Json cj = Json::MakeArray();
    std::string cause_text;
    for (const std::string& c : causes) {
      cj.Append(Json(c));
      cause_text += (cause_text.empty() ? "" : "; ") + c;
    }
    ev["causes"] = std::move(cj);
    const std::string gpu_name = gpus.empty() ? std::to_string(dev_nodes) + " NVIDIA device(s)" : gpus;
    f.summary = std::to_string(p.count) + " steps of " + names + " ran on the CPU only, never touching the " + gpu_name +
                " on this machine" + (cause_text.empty() ? "" : ": " + cause_text);
    ctx.Add(std::move(f));
  }
}

const RuleRegistration kGpuUnusedRuleRegistration(GpuUnusedRule, {FindingId::kPerfGpuUnused});

}  // namespace
}  // namespace colabtrace::analyzer::perf
