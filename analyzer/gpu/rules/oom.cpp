// gpu.oom and gpu.oom-fragmentation (error), decided here and nowhere else
//
// Rule: an allocation failed for lack of memory and was not recovered. JudgeFailure
// (gpu_findings.cpp) names the cause from the memory reading right after it:
// fragmentation (free >= request), this process's segments, other processes, the CUDA
// context, or a request larger than the device. Where the trace has PyTorch's own
// snapshot of that error on that device (the run model's TorchSnapshots), its block-level
// accounting decides instead: fragmented cached blocks make gpu.oom-fragmentation, a
// genuine shortage of blocks gpu.oom; the summary is PyTorch's view, and the evidence
// keeps the segments' view and adds the snapshot's (accounting "pytorch-snapshot").
#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "gpu/rules/rules.h"
#include "model/python_stack.h"
#include "model/symbolize.h"
#include "python/torch_snapshot.h"

namespace colabtrace::analyzer::gpu {
namespace {

// Advice by cause where the catalogue's (this process's allocations for gpu.oom, the gaps
// between segments for gpu.oom-fragmentation) does not fit.
constexpr std::string_view kOtherProcessAdvice =
    "Another process holds the memory (nvidia-smi lists it): a previous notebook "
    "kernel still running, a DataLoader worker or subprocess that initialised CUDA, or "
    "another job on a shared GPU. Stop it, give each job its own GPU "
    "(CUDA_VISIBLE_DEVICES), or for JAX/TensorFlow neighbours turn off preallocation "
    "(XLA_PYTHON_CLIENT_PREALLOCATE=false, TF_FORCE_GPU_ALLOW_GROWTH=true).";
constexpr std::string_view kContextAdvice =
    "The CUDA context itself (driver state, the kernels of every loaded CUDA library, "
    "cuBLAS/cuDNN workspaces) takes this much, which on a small GPU leaves little for "
    "data. Set CUDA_MODULE_LOADING=LAZY, load fewer CUDA libraries, or use a GPU with "
    "more memory.";
constexpr std::string_view kLargerThanDeviceAdvice =
    "No amount of freeing makes this fit: the single allocation is larger than the GPU. "
    "Split the work (smaller batch or chunks), shard the model across GPUs, or check the "
    "size computation for an overflow or a wrong unit.";
constexpr std::string_view kUnknownAdvice =
    "Reduce the batch size or model size; run under colabtrace with the driver visible "
    "so the free memory at the failure is recorded.";
// PyTorch's snapshot shows its cache fragmented.
constexpr std::string_view kTorchFragmentationAdvice =
    "PyTorch's cache is fragmented: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
    "before the first CUDA call so segments grow in place, or max_split_size_mb:<MB> so "
    "large blocks are not split; call torch.cuda.empty_cache() between phases; allocate "
    "the largest tensors first and keep shapes uniform. The blocks' frames in ";

void OomOf(RuleContext& ctx, const ProcessTrace& t, const AllocationTimeline& g) {
  const OthersOnDevice others = OthersOnDeviceOf(ctx.run(), ctx.run().IndexOf(t));
  // PyTorch's own view.
  const std::optional<TorchSnapshot>& torch = ctx.run().Get<TorchSnapshots>().Of(ctx.run(), t);
  struct Pick {
    const Failure* f = nullptr;
    FailureVerdict v;
    uint64_t count = 0;
  };
  std::map<FindingId, Pick> picks;  // by the segments' verdict: its last unrecovered episode
  for (const Failure& f : g.failures) {
    if (!IsOutOfMemory(f.rc) || f.recovered || !f.episode_last) continue;
    auto dit = g.devices.find(f.device);
    const DeviceMemory* d = dit != g.devices.end() ? &dit->second : nullptr;
    FailureVerdict v = JudgeFailure(f, d, others);
    Pick& p = picks[*v.id];
    ++p.count;
    p.f = &f;
    p.v = std::move(v);
  }
  for (auto& [segments_verdict, p] : picks) {
    const Failure& f = *p.f;
    const FailureVerdict& v = p.v;
    // PyTorch's accounting, where it saw this error, decides the id.
    const std::optional<TorchFragmentation> torch_view = TorchOomAccounting(torch, f.device);
    const FindingId id = !torch_view ? segments_verdict
                         : torch_view->fragmentation ? FindingId::kGpuOomFragmentation
                                                     : FindingId::kGpuOom;
    auto dit = g.devices.find(f.device);
    const DeviceMemory* d = dit != g.devices.end() ? &dit->second : nullptr;
    const std::string where = DeviceLabel(d, f.device);
    const std::string api = GpuApiLabel(f.api);
    Finding finding = Finding::Of(id, t.pid());
    Json& ev = finding.evidence;
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
    ev["stack"] = StackJson(BlockStack(ctx.run().symbols(), t, f.stack, f.caller));
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
      for (const Block& b : f.map.gap_holders) holders.Append(BlockJson(ctx.run().symbols(), t, b));
      ev["segments_holding_gaps"] = std::move(holders);
      finding.summary = head + " although " + FormatBytes(f.free) + " were free: the free memory lies in " +
                        std::to_string(f.map.free_extents) + " gaps between this process's " +
                        std::to_string(f.map.segments) + " segments, the largest " +
                        FormatBytes(f.map.largest_free_extent);
      if (outside >= f.request) {
        finding.summary += " (" + FormatBytes(outside) + " free outside them, placement unknown)";
      }
      finding.advice = std::string(SpecOf(FindingId::kGpuOomFragmentation).advice) + retry;
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
        finding.summary = head + ": this process's " + std::to_string(f.process_allocations) +
                          " allocation(s) hold " + FormatBytes(f.process_live + v.pool_cached) + of_total +
                          (f.have_meminfo ? "; " + FormatBytes(f.free) + " free" : "");
        finding.advice = std::string(SpecOf(FindingId::kGpuOom).advice) + retry;
        if (v.pool_cached != 0) {
          finding.advice += " A stream-ordered pool still caches " + FormatBytes(v.pool_cached) +
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
        finding.summary = head + ": " + who + " hold about " + FormatBytes(v.others_estimate) +
                          of_total + " (this process " + FormatBytes(f.process_live) + ", free " +
                          FormatBytes(f.free) + ")";
        finding.advice = std::string(kOtherProcessAdvice);
      } else if (v.cause == "context") {
        finding.summary = head + ": the CUDA context and other memory outside this process's "
                          "allocations hold " + FormatBytes(v.held_elsewhere) + of_total +
                          " (this process " + FormatBytes(f.process_live) + ", free " + FormatBytes(f.free) + ")";
        finding.advice = std::string(kContextAdvice);
      } else if (v.cause == "larger-than-device") {
        finding.summary = head + ": the request alone is larger than the device's " + FormatBytes(f.total);
        finding.advice = std::string(kLargerThanDeviceAdvice);
      } else {
        finding.summary = head + " (out of memory); free memory could not be read after the failure";
        finding.advice = std::string(kUnknownAdvice);
      }
    }
    if (!torch_view) {
      ev["accounting"] = "segments (no PyTorch snapshot)";
    } else {
      const TorchFragmentation& pt = *torch_view;
      ev["accounting"] = "pytorch-snapshot";
      ev["torch_snapshot"] = TorchFragmentationJson(*torch, pt);
      const std::string torch_head = "PyTorch could not allocate " + FormatBytes(pt.request) +
                                     " on device " + std::to_string(f.device);
      if (pt.fragmentation) {
        finding.summary = torch_head + " although it held " + FormatBytes(pt.inactive_bytes) +
                          " reserved but unallocated (plus " + FormatBytes(pt.device_free_bytes) +
                          " free on the device): the largest free block is " +
                          FormatBytes(pt.largest_free_block) + ", and " +
                          std::to_string(pt.inactive_split_blocks) + " inactive split blocks hold " +
                          FormatBytes(pt.inactive_split_bytes);
        finding.advice = std::string(kTorchFragmentationAdvice) + torch->path + " show who holds the pieces.";
      } else {  // the advice stays the segments' cause's
        finding.summary = torch_head + ": its blocks hold " + FormatBytes(pt.allocated_bytes) +
                          " in use and only " + FormatBytes(pt.inactive_bytes) + " cached free, with " +
                          FormatBytes(pt.device_free_bytes) + " free on the device (PyTorch's accounting)";
      }
    }
    ctx.Add(std::move(finding));
  }
}

void OomRule(RuleContext& ctx) { ForEachProcess(ctx, OomOf); }

const RuleRegistration kOomRuleRegistration(OomRule,
    {FindingId::kGpuOom, FindingId::kGpuOomFragmentation});

}  // namespace

}  // namespace colabtrace::analyzer::gpu
