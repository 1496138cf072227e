// gpu.coverage-incomplete (info): the GPU side
//
// Rule: frees of addresses never seen allocated, driver allocations made by a libcudart
// that bypassed the runtime hooks, entry points the shim could not wrap
// (abi/rules/coverage_incomplete.cpp adds the library causes).
#include <algorithm>
#include <map>
#include <string_view>

#include "gpu/cupti_merge.h"
#include "gpu/rules/rules.h"

namespace colabtrace::analyzer::gpu {

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
    summary += cupti.rc == 0 ? "CUPTI was requested but the program already uses CUPTI itself, so the "
                               "shim stepped back"
                             : "CUPTI was requested but another tool (a profiler) already subscribed, "
                               "so the shim stepped back";
  }
  if (cupti.handed_over_ts) {
    Json c = Json::MakeObject();
    c["cause"] = "cupti-handed-over";
    c["at_ns"] = Rel(t, *cupti.handed_over_ts);
    causes.Append(std::move(c));
    if (!summary.empty()) summary += "; ";
    summary += "CUPTI was handed over to the program's own profiler at " +
               Seconds(Rel(t, *cupti.handed_over_ts)) +
               " (from then on only the hooks saw allocations; the profiler keeps all its events)";
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

}  // namespace colabtrace::analyzer::gpu
