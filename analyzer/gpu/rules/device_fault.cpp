// gpu.device-fault (error): a sticky device error (illegal address, device-side assert,
// launch failure, misaligned address...) surfaced at some CUDA call, after the kernel
// that caused it.
//
// The shim records the first sticky error of the process (GpuFault order 1: the call, its
// stream, its native and Python stacks), the first later call that failed with it (order
// 2), and right after the first one the kernels it had seen launched (GpuLaunchRing).
// The kernels in flight are those launched on the call's stream (every stream, for a
// call that waits on the whole device) since that stream's last successful
// synchronisation: a ring record whose epoch is at least its `synced` epoch. Newest
// first; the newest is the likely culprit. A fault surfaces at whichever call comes next,
// not necessarily on the faulting kernel's stream (measured on an H200: a synchronisation
// of another stream reported it first), so kernels in flight on other streams are listed
// too. With CUDA_LAUNCH_BLOCKING=1 a launch that reports the error ran the faulting
// kernel itself.
//
// Traces from a shim without fault records still show the fault as a launch that failed
// with a sticky error (the launches after it all fail so): the first such launch is where
// it surfaced, without the kernels in flight.
#include <algorithm>
#include <vector>

#include "gpu/gpu_api.h"
#include "gpu/kernel_names.h"
#include "gpu/rules/rules.h"
#include "model/python_stack.h"

namespace colabtrace::analyzer::gpu {
namespace {

// The kernels kept per launching thread by the shim (shim/gpu/launch_ring.h).
constexpr uint64_t kRingSlotsPerThread = 32;

struct Surfaced {
  uint64_t ts = 0, api = 0, layer = 0, stream = 0, stack = 0, caller = 0, py_stack = 0,
           func = 0;
  int64_t rc = 0, device = -1;
  bool device_wide = true, launch_blocking = false, from_launch_failure = false;
};

std::string Hex(uint64_t v) { return FormatHex(v); }

// "kernel (library, path:line)".
std::string Describe(const Json& k) {
  std::string s = k["kernel"].str();
  std::string where;
  if (k["library"].is_string()) where = k["library"].str();
  if (k["python_line"].is_string()) where += (where.empty() ? "" : ", ") + k["python_line"].str();
  return where.empty() ? s : s + " (" + where + ")";
}

void DeviceFaultOf(RuleContext& ctx, const ProcessTrace& t, const AllocationTimeline&) {
  const format::GpuFault* first = nullptr;
  const format::GpuFault* later = nullptr;
  for (const auto& f : t.records.GpuFault) {
    if (f.order == 1 && first == nullptr) first = &f;
    if (f.order == 2 && later == nullptr) later = &f;
  }
  Surfaced s;
  if (first != nullptr) {
    s = Surfaced{first->ts,     first->api,  first->layer,    first->stream, first->stack,
                 first->caller, first->py_stack, first->func, first->rc,     first->device,
                 first->device_wide != 0, first->launch_blocking != 0, false};
  } else {
    const format::GpuLaunchFailed* l = nullptr;
    for (const auto& r : t.records.GpuLaunchFailed) {
      if (format::IsStickyGpuError(r.rc)) {
        l = &r;
        break;
      }
    }
    if (l == nullptr) return;
    s = Surfaced{l->ts, l->api, l->layer, l->stream, l->stack, l->caller, l->py_stack, l->func,
                 l->rc, l->device, true, false, true};
  }
  if (s.device < 0 && t.records.GpuDevice.size() == 1) {
    s.device = static_cast<int64_t>(t.records.GpuDevice.front().index);
  }

  KernelNames names(t, ctx.run().symbols());
  // In flight: not known complete when the ring was written.
  std::vector<const format::GpuLaunchRing*> here, elsewhere;
  // (The reader makes why-3 records of a killed trace's rings only where the shim wrote
  // none at the fault: either way these are the ring.)
  for (const auto& r : t.records.GpuLaunchRing) {
    if (r.epoch < r.synced) continue;
    (s.device_wide || r.stream == s.stream ? here : elsewhere).push_back(&r);
  }
  auto newest_first = [](const format::GpuLaunchRing* a, const format::GpuLaunchRing* b) {
    if (a->epoch != b->epoch) return a->epoch > b->epoch;
    if (a->seq != b->seq) return a->seq > b->seq;
    return a->tid < b->tid;
  };
  std::sort(here.begin(), here.end(), newest_first);
  std::sort(elsewhere.begin(), elsewhere.end(), newest_first);

  Json kernels = Json::MakeArray();
  if (s.func != 0 && s.launch_blocking) {
    // CUDA_LAUNCH_BLOCKING=1: the launch that reported it ran the faulting kernel.
    Json k = KernelJson(t, names, s.api, s.func, s.py_stack, s.stream);
    k["reported_by_its_own_launch"] = true;
    kernels.Append(std::move(k));
  }
  for (const auto* r : here) kernels.Append(RingKernelJson(t, names, *r));
  Json others = Json::MakeArray();
  for (const auto* r : elsewhere) others.Append(RingKernelJson(t, names, *r));

  const bool runtime = s.layer == static_cast<uint64_t>(format::GpuLayer::kRuntime);
  const std::string error_name(GpuErrorName(s.rc, runtime));
  const std::string api = GpuApiLabel(s.api);
  Finding finding = Finding::Of(FindingId::kGpuDeviceFault, t.pid());
  Json& ev = finding.evidence;
  ev["error"] = s.rc;
  ev["error_name"] = error_name;
  ev["api"] = api;
  ev["at_ns"] = Rel(t, s.ts);
  ev["device"] = s.device;
  ev["stream"] = s.device_wide ? Json() : Json(Hex(s.stream));
  ev["scope"] = s.device_wide ? "device" : "stream";
  ev["stack"] = StackJson(BlockStack(ctx.run().symbols(), t, s.stack, s.caller));
  ev["python_stack"] = PythonStackJson(t, s.py_stack);
  ev["kernels"] = kernels;
  ev["kernels_on_other_streams"] = others;
  ev["culprit"] = kernels.array().empty() ? Json() : kernels.array()[0];
  ev["launch_blocking"] = s.launch_blocking;
  ev["launches_kept_per_thread"] = kRingSlotsPerThread;
  ev["ring_recorded"] = first != nullptr && !t.records.GpuLaunchRing.empty();
  if (s.from_launch_failure && s.func != 0) {
    ev["reported_by_launch_of"] = names.Of(s.api, s.func).kernel;
  }
  if (later != nullptr) {
    Json l = Json::MakeObject();
    l["api"] = GpuApiLabel(later->api);
    l["error"] = later->rc;
    l["error_name"] = std::string(GpuErrorName(later->rc, later->layer == 0));
    l["at_ns"] = Rel(t, later->ts);
    ev["later_call"] = std::move(l);
  } else {
    ev["later_call"] = Json();
  }

  const std::string what = (error_name.empty() ? "error " + std::to_string(s.rc) : error_name) +
                           " (" + std::to_string(s.rc) + ")";
  const std::string where = s.device_wide ? "the device" : "stream " + Hex(s.stream);
  finding.summary = "GPU device fault: " + what + " surfaced at " + api;
  if (!kernels.array().empty()) {
    finding.summary += "; likely culprit: kernel " + Describe(kernels.array()[0]);
  }
  const size_t n = kernels.array().size();
  finding.summary += " (" + std::to_string(n) + " kernel" + (n == 1 ? "" : "s") + " in flight on " + where +
               ")";

  std::string advice = "A device fault is asynchronous: it is reported by a later CUDA call (here " + api +
                       "), not by the kernel that caused it, and every CUDA call after it fails too. ";
  if (s.rc == 710) {
    advice += "A device-side assert fired (in PyTorch typically an index out of range, or a target "
              "outside [0, classes) in a loss). ";
  }
  if (!kernels.array().empty()) {
    advice += "The likely culprit is the newest kernel launched on " + where +
              " since its last successful synchronisation: " + Describe(kernels.array()[0]) + ". ";
    if (kernels.array().size() > 1) advice += "Earlier kernels in flight there are listed in the evidence. ";
  } else if (first != nullptr) {
    advice += "No kernel launch on " + where + " since its last successful synchronisation was seen "
              "(a statically linked runtime launches through private driver interfaces). ";
  } else {
    advice += "This trace holds no record of the kernels in flight (recorded by an older colabtrace). ";
  }
  if (!others.array().empty()) {
    advice += "Kernels were also in flight on other streams (listed in the evidence): the fault may be "
              "theirs. ";
  }
  finding.advice = advice + finding.advice;  // the specifics, then the catalogue's "Confirm with ..."
  ctx.Add(std::move(finding));
}

void DeviceFaultRule(RuleContext& ctx) { ForEachProcess(ctx, DeviceFaultOf); }

const RuleRegistration kDeviceFaultRuleRegistration(DeviceFaultRule, {FindingId::kGpuDeviceFault});
}  // namespace

}  // namespace colabtrace::analyzer::gpu
