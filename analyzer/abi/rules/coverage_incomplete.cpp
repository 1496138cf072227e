// gpu.coverage-incomplete (info)
//
// Rule: the GPU memory trace of a process may miss allocations, for any of these causes
// (one finding for the GPU-side causes, then one per library cause):
//   - frees of addresses never seen allocated, driver allocations made by a libcudart
//     that bypassed the runtime hooks, entry points the shim could not wrap, allocations
//     only CUPTI saw, CUPTI records dropped, CUPTI given up to another subscriber or
//     handed over to the program's own profiler (the GPU timeline and CUPTI records);
//   - a library mapped by an RTLD_DEEPBIND load (itself or as a dependency it brought in)
//     that uses CUDA (a CUDA toolkit/NVIDIA/framework library, or one whose DT_NEEDED
//     names a CUDA toolkit library or libcuda): its CUDA calls bind inside its own scope,
//     past the shim;
//   - a loaded object that defines cudaMalloc in its dynamic symbol table but is not
//     libcudart (a statically linked CUDA runtime).
// It lives with the abi.* rules because it reads the library model (a layer above gpu/);
// the GPU analysis runs it, with the other gpu.* rules.
#include <algorithm>
#include <map>
#include <string_view>

#include "abi/rules/rules.h"
#include "gpu/allocation_timeline.h"
#include "gpu/cupti_merge.h"
#include "gpu/gpu_api.h"
#include "gpu/rules/rules.h"

namespace colabtrace::analyzer::abi {
namespace {

// A library cause's advice; the catalogue's is the GPU side's.
constexpr std::string_view kDeepbindAdvice =
    "RTLD_DEEPBIND makes a library bind to its own dependencies before the preloaded "
    "shim, so its CUDA runtime calls are not seen. Load it without RTLD_DEEPBIND when "
    "possible; GPU totals in this report may be low.";
constexpr std::string_view kStaticCudartAdvice =
    "A statically linked CUDA runtime does not go through libcudart.so, so its runtime "
    "calls are not traced (its driver calls still are when it reaches the driver through "
    "dlsym or cuGetProcAddress). GPU totals in this report may be low.";

// The GPU side: what the hooks and CUPTI say they missed.
void GpuCausesOf(RuleContext& ctx, const ProcessTrace& t, const gpu::AllocationTimeline& g) {
  Json causes = Json::MakeArray();
  std::string summary;
  auto add = [&](Json cause, const std::string& text) {
    causes.Append(std::move(cause));
    summary += (summary.empty() ? "" : "; ") + text;
  };
  if (g.unmatched_frees > 0) {
    Json c = Json::MakeObject();
    c["cause"] = "frees-of-unseen-allocations";
    c["frees"] = g.unmatched_frees;
    add(std::move(c), std::to_string(g.unmatched_frees) + " GPU free(s) of addresses never seen allocated");
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
    add(std::move(c), std::to_string(g.runtime_bypassed) + " allocation(s) by " + g.runtime_bypassed_lib +
                          " reached the driver without passing the runtime hooks (recorded at driver level)");
  }
  uint64_t unwrapped = 0;
  Json names = Json::MakeArray();
  for (const auto& r : t.records.GpuInterpose) {
    if (r.wrapped == 0) {
      ++unwrapped;
      names.Append(gpu::GpuApiLabel(r.api));
    }
  }
  if (unwrapped > 0) {
    Json c = Json::MakeObject();
    c["cause"] = "entry-points-not-wrapped";
    c["entry_points"] = std::move(names);
    add(std::move(c), std::to_string(unwrapped) + " driver entry point(s) could not be wrapped");
  }
  const gpu::CuptiSummary cupti = gpu::SummarizeCupti(t);
  if (cupti.only_allocations > 0) {
    Json c = Json::MakeObject();
    c["cause"] = "allocations-seen-only-by-cupti";
    c["allocations"] = cupti.only_allocations;
    c["bytes"] = cupti.only_bytes;
    add(std::move(c), std::to_string(cupti.only_allocations) + " allocation(s), " + FormatBytes(cupti.only_bytes) +
                          ", seen only by CUPTI (a statically linked CUDA runtime the hooks cannot see; "
                          "counted, but without stacks)");
  }
  if (cupti.dropped > 0) {
    Json c = Json::MakeObject();
    c["cause"] = "cupti-records-dropped";
    c["records"] = cupti.dropped;
    add(std::move(c), "CUPTI dropped " + std::to_string(cupti.dropped) + " activity record(s)");
  }
  if (cupti.state == "backed-off") {
    Json c = Json::MakeObject();
    c["cause"] = "cupti-has-another-subscriber";
    c["rc"] = cupti.rc;
    add(std::move(c), cupti.rc == 0 ? "CUPTI was requested but the program already uses CUPTI itself, so the "
                                      "shim stepped back"
                                    : "CUPTI was requested but another tool (a profiler) already subscribed, "
                                      "so the shim stepped back");
  }
  if (cupti.handed_over_ts) {
    Json c = Json::MakeObject();
    c["cause"] = "cupti-handed-over";
    c["at_ns"] = gpu::Rel(t, *cupti.handed_over_ts);
    add(std::move(c), "CUPTI was handed over to the program's own profiler at " +
                          gpu::Seconds(gpu::Rel(t, *cupti.handed_over_ts)) +
                          " (from then on only the hooks saw allocations; the profiler keeps all its events)");
  }
  if (causes.array().empty()) return;
  Finding finding = Finding::Of(FindingId::kGpuCoverageIncomplete, t.pid());
  finding.evidence["causes"] = std::move(causes);
  finding.summary = "the GPU memory trace may be incomplete: " + summary;
  ctx.Add(std::move(finding));
}

// The libraries' side: RTLD_DEEPBIND loads of CUDA users, statically linked runtimes.
void LibraryCausesOf(RuleContext& ctx, const ProcessLibraries& p, LibraryFiles& files) {
  Json deep = Json::MakeArray(), stat = Json::MakeArray();
  for (size_t i = 0; i < p.inv.objects.size(); ++i) {
    const LoadedLibrary& o = p.inv.objects[i];
    FileFacts* fi = p.files[i];
    const elf::LibraryFamily& fam = p.family[i];
    if (o.deepbind) {
      bool uses_cuda = fam.group == elf::LibraryGroup::kCudaToolkit ||
                       fam.group == elf::LibraryGroup::kNvidiaLibrary ||
                       fam.group == elf::LibraryGroup::kFramework;
      if (fi != nullptr && fi->image) {
        for (const std::string& n : fi->image->needed()) {
          const elf::LibraryFamily nf = elf::ClassifyLibrary(n);
          if (nf.group == elf::LibraryGroup::kCudaToolkit || nf.family == "cuda-driver") uses_cuda = true;
        }
      }
      if (uses_cuda) {
        Json j = LibJson(o);
        j["flags"] = abi::DlopenFlagNames(o.flags);
        deep.Append(std::move(j));
      }
    }
    // libcolabtrace.so itself defines cudaMalloc: its hook.
    if (fam.family == "cudart" || o.unloaded_ns || o.is_vdso || o.path.empty() || NameOf(o) == "libcolabtrace.so") {
      continue;
    }
    if (fi == nullptr || !fi->image) {
      files.Skipped(FindingName(FindingId::kGpuCoverageIncomplete), "no readable file: not checked for a static CUDA runtime", o.path);
    } else if (fi->image->DefinesDynamicSymbol("cudaMalloc")) {
      stat.Append(LibJson(o));
    }
  }
  auto emit = [&](Json objs, std::string_view cause, std::string summary, std::string_view advice) {
    if (objs.array().empty()) return;
    Finding f = Finding::Of(FindingId::kGpuCoverageIncomplete, p.trace->pid());
    f.evidence["cause"] = std::string(cause);
    f.evidence["objects"] = std::move(objs);
    f.summary = std::move(summary);
    f.advice = std::string(advice);
    ctx.Add(std::move(f));
  };
  const size_t nd = deep.array().size(), ns = stat.array().size();
  emit(std::move(deep), "RTLD_DEEPBIND",
       std::to_string(nd) + " CUDA-using librar" + (nd == 1 ? "y was" : "ies were") +
           " loaded with RTLD_DEEPBIND; their CUDA calls may bypass the trace",
       kDeepbindAdvice);
  emit(std::move(stat), "static cudart",
       std::to_string(ns) + " loaded object" + (ns == 1 ? " defines" : "s define") +
           " cudaMalloc itself (a statically linked CUDA runtime)",
       kStaticCudartAdvice);
}

void CoverageIncompleteRule(RuleContext& ctx) {
  // Every process's GPU-side finding before the library ones, as the report always listed
  // them (two traces of one pid, from two hosts, keep that order).
  gpu::ForEachProcess(ctx, GpuCausesOf);
  const LibraryModels& libraries = ctx.run().Get<LibraryModels>();
  for (const ProcessLibraries& p : libraries.of_trace) LibraryCausesOf(ctx, p, *libraries.files);
}

const RuleRegistration kCoverageIncompleteRuleRegistration(CoverageIncompleteRule,
    {FindingId::kGpuCoverageIncomplete});

}  // namespace

}  // namespace colabtrace::analyzer::abi
