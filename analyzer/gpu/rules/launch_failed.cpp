// gpu.launch-failed (error)
//
// Rule: kernel launches that returned an error, one finding per
// (kernel, error) with the count and the first time. Failed kernel lookups of the driver
// (cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction answering that the image
// has no code for this GPU) are the launch failures of a program, or a statically linked
// runtime, that loads its kernels lazily. The kernel and its library are named by
// KernelNames (gpu/kernel_names.h). A launch that failed with a sticky error (700, 710...)
// did not fail for its own sake: the context was already corrupted, and it belongs to
// gpu.device-fault (device_fault.cpp), never to this finding.
#include <map>
#include <tuple>

#include "gpu/gpu_api.h"
#include "gpu/rules/rules.h"
#include "gpu/kernel_names.h"
#include "model/python_stack.h"

namespace colabtrace::analyzer::gpu {

namespace {

// A missing image: the catalogue's advice is for every other launch error.
constexpr std::string_view kNoImageAdvice =
    "The library holding this kernel has no code this GPU can run (see "
    "abi.no-kernel-image): install a build for this GPU's architecture.";

void LaunchFailedOf(RuleContext& ctx, const ProcessTrace& t, const AllocationTimeline&) {
  if (t.records.GpuLaunchFailed.empty()) return;
  KernelNames names(t, ctx.run().symbols());
  struct Group {
    KernelName named;
    int64_t rc = 0;
    bool runtime = false;
    uint64_t count = 0, first_ts = 0, api = 0, stack = 0, caller = 0;
    uint64_t py_stack = 0;  // String id of the first failure's Python stack
    int64_t device = -1;
  };
  std::map<std::tuple<std::string, int64_t>, Group> groups;
  std::vector<std::tuple<std::string, int64_t>> order;
  for (const auto& l : t.records.GpuLaunchFailed) {
    if (format::IsStickyGpuError(l.rc)) continue;  // the device fault's, not this launch's
    const bool runtime = l.layer == static_cast<uint64_t>(format::GpuLayer::kRuntime);
    const KernelName& n = names.Of(l.api, l.func, l.name, l.module, l.inner_func);
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
    Finding finding = Finding::Of(FindingId::kGpuLaunchFailed, t.pid());
    const std::string error_name(GpuErrorName(g.rc, g.runtime));
    finding.evidence["error"] = g.rc;
    finding.evidence["error_name"] = error_name;
    finding.evidence["kernel"] = g.named.kernel;
    finding.evidence["library"] = g.named.library.empty() ? Json() : Json(g.named.library);
    finding.evidence["count"] = g.count;
    finding.evidence["first_at_ns"] = t.start_ns() <= g.first_ts ? g.first_ts - t.start_ns() : 0;
    finding.evidence["api"] = GpuApiLabel(g.api);
    finding.evidence["device"] = g.device;
    finding.evidence["stack"] = StackJson(BlockStack(ctx.run().symbols(), t, g.stack, g.caller));
    finding.evidence["python_stack"] = PythonStackJson(t, g.py_stack);
    const bool image = format::IsNoImageGpuError(g.rc) || (g.runtime && g.rc == 98);
    const bool lookup = IsKernelLookup(g.api);
    finding.summary = "kernel " + g.named.kernel + (lookup ? " could not be loaded " : " failed to launch ") +
                      std::to_string(g.count) + " time(s): " +
                      (error_name.empty() ? "error " + std::to_string(g.rc) : error_name) +
                      " (" + std::to_string(g.rc) + ")" +
                      (g.named.library.empty() ? "" : " in " + g.named.library);
    if (image) finding.advice = std::string(kNoImageAdvice);
    ctx.Add(std::move(finding));
  }
}

void LaunchFailedRule(RuleContext& ctx) { ForEachProcess(ctx, LaunchFailedOf); }

const RuleRegistration kLaunchFailedRuleRegistration(LaunchFailedRule,
    {FindingId::kGpuLaunchFailed});
}  // namespace

}  // namespace colabtrace::analyzer::gpu
