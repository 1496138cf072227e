// gpu.launch-failed (error): kernel launches that returned an error, one finding per
// (kernel, error) with the count and the first time. The kernel is named:
//   - at driver level, by the name the shim read with cuFuncGetName after the failure,
//     else by the GpuFunction record of the handle (cuModuleGetFunction,
//     cuLibraryGetKernel, cuFuncGetName);
//   - at runtime level, by the GpuFunction record of the driver function the runtime
//     launched underneath when that passed through the shim, else by the host stub's
//     symbol, read offline from the module map and the object's symbol table (nvcc
//     gives a kernel's host stub the kernel's own name).
// library: the object holding the stub (runtime), or the module's file / the object
// that loaded it (driver).
#include <map>
#include <tuple>

#include "analyses/symbolize.h"
#include "gpu/gpu_api.h"
#include "gpu/gpu_findings.h"
#include "python/python_stack.h"

namespace colabtrace::analyzer::gpu {
namespace {

struct Named {
  std::string kernel, library;
};

// "kernel(float*)+0x0 (libfoo.so+0x1139)" -> {"kernel(float*)", "libfoo.so"}.
Named FromSymbolized(const std::string& line) {
  Named n;
  const size_t paren = line.rfind(" (");
  if (paren == std::string::npos) {
    const size_t plus = line.rfind('+');
    n.library = plus == std::string::npos ? "" : line.substr(0, plus);
    n.kernel = line;
    return n;
  }
  const size_t plus = line.rfind('+', paren);
  n.kernel = line.substr(0, plus == std::string::npos ? paren : plus);
  const std::string inner = line.substr(paren + 2);
  const size_t lib_plus = inner.rfind('+');
  n.library = lib_plus == std::string::npos ? inner : inner.substr(0, lib_plus);
  return n;
}

// The file a module came from (cuModuleLoad/cuLibraryLoadFromFile), else the object that
// loaded it; by handle, the last successful load.
std::map<uint64_t, std::string> ModuleLibraries(const ProcessTrace& t) {
  std::map<uint64_t, std::string> out;
  for (const auto& m : t.records.GpuModule) {
    if (m.handle == 0 || m.rc != 0) continue;
    const std::string_view path = t.Str(m.path);
    out[m.handle] = std::string(path.empty() ? t.Str(m.caller) : path);
  }
  return out;
}

}  // namespace

void AddLaunchFailedFindings(ReportBuilder& report, const ProcessTrace& t) {
  if (t.records.GpuLaunchFailed.empty()) return;
  // Lookups are by handle and by stub, each resolved once: a trace may hold millions of
  // failed launches (the file's symbol table is read once per stub, not per record).
  std::map<uint64_t, const format::GpuFunction*> functions;  // the last name of each handle
  for (const auto& f : t.records.GpuFunction) functions[f.handle] = &f;
  const std::map<uint64_t, std::string> modules = ModuleLibraries(t);
  auto module_library = [&](uint64_t handle) {
    auto it = modules.find(handle);
    return it != modules.end() ? it->second : std::string();
  };
  std::map<uint64_t, Named> stubs;
  struct Group {
    Named named;
    int64_t rc = 0;
    bool runtime = false;
    uint64_t count = 0, first_ts = 0, api = 0, stack = 0, caller = 0;
    uint64_t py_stack = 0;  // String id of the first failure's Python stack
    int64_t device = -1;
  };
  std::map<std::tuple<std::string, int64_t>, Group> groups;
  std::vector<std::tuple<std::string, int64_t>> order;
  for (const auto& l : t.records.GpuLaunchFailed) {
    Named n;
    const bool runtime = l.layer == static_cast<uint64_t>(format::GpuLayer::kRuntime);
    uint64_t handle = runtime ? l.inner_func : l.func;
    if (!runtime && !t.Str(l.name).empty()) n.kernel = std::string(t.Str(l.name));
    if (n.kernel.empty() && handle != 0) {
      if (auto it = functions.find(handle); it != functions.end()) {
        n.kernel = std::string(t.Str(it->second->name));
        n.library = module_library(it->second->module);
      }
    }
    if (runtime && l.func != 0) {
      auto [sit, fresh_stub] = stubs.try_emplace(l.func);
      if (fresh_stub) {
        const std::vector<std::string> sym = SymbolizeStack(t, {l.func});
        if (!sym.empty()) sit->second = FromSymbolized(sym[0]);
      }
      const Named& stub = sit->second;
      if (n.kernel.empty()) n.kernel = stub.kernel;
      n.library = stub.library.empty() ? n.library : stub.library;
    }
    if (!runtime && n.library.empty()) n.library = module_library(l.module);
    if (n.kernel.empty()) n.kernel = FormatHex(l.func);
    const auto key = std::make_tuple(n.kernel, l.rc);
    auto [it, fresh] = groups.try_emplace(key);
    Group& g = it->second;
    if (fresh) {
      order.push_back(key);
      g.named = n;
      g.rc = l.rc;
      g.runtime = runtime;
      g.first_ts = l.ts;
      g.api = l.api;
      g.stack = l.stack;
      g.py_stack = l.py_stack;
      g.caller = l.caller;
      g.device = l.device;
    }
    ++g.count;
  }
  for (const auto& key : order) {
    const Group& g = groups[key];
    Finding f;
    f.id = "gpu.launch-failed";
    f.severity = Severity::kError;
    f.pid = t.pid();
    const std::string error_name(GpuErrorName(g.rc, g.runtime));
    f.evidence["error"] = g.rc;
    f.evidence["error_name"] = error_name;
    f.evidence["kernel"] = g.named.kernel;
    f.evidence["library"] = g.named.library.empty() ? Json() : Json(g.named.library);
    f.evidence["count"] = g.count;
    f.evidence["first_at_ns"] = t.start_ns() <= g.first_ts ? g.first_ts - t.start_ns() : 0;
    f.evidence["api"] = GpuApiLabel(g.api);
    f.evidence["device"] = g.device;
    Json stack = Json::MakeArray();
    for (const std::string& s : BlockStack(t, g.stack, g.caller)) stack.Append(s);
    f.evidence["stack"] = std::move(stack);
    f.evidence["python_stack"] = PythonStackJson(t, g.py_stack);
    const bool image = g.rc == 209 || (g.runtime && g.rc == 98);
    f.summary = "kernel " + g.named.kernel + " failed to launch " + std::to_string(g.count) +
                " time(s): " + (error_name.empty() ? "error " + std::to_string(g.rc) : error_name) +
                " (" + std::to_string(g.rc) + ")" +
                (g.named.library.empty() ? "" : " in " + g.named.library);
    f.advice = image ? "The library holding this kernel has no code this GPU can run (see "
                       "abi.no-kernel-image): install a build for this GPU's architecture."
                     : "Check the launch configuration (grid, block, shared memory) and the "
                       "error: with CUDA_LAUNCH_BLOCKING=1 an asynchronous error is reported by "
                       "the launch that caused it.";
    report.AddFinding(std::move(f));
  }
}

}  // namespace colabtrace::analyzer::gpu
