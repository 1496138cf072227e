#include "elf/coverage.h"

#include <set>
#include <tuple>
#include <vector>

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace colabtrace::elf {
namespace {

// Orders archs by SM, then variant, for stable explanations.
struct ArchLess {
  bool operator()(const GpuArch& a, const GpuArch& b) const {
    return std::tie(a.sm, a.variant) < std::tie(b.sm, b.variant);
  }
};

std::string JoinArchs(const std::set<GpuArch, ArchLess>& archs, bool is_virtual) {
  if (archs.empty()) return "none";
  std::vector<std::string> names;
  for (const GpuArch& a : archs) names.push_back(FormatArch(a, is_virtual));
  return absl::StrJoin(names, ", ");
}

}  // namespace

Coverage CanRunOn(std::span<const FatbinEntry> entries, GpuArch target) {
  const int sm = target.sm;
  const std::string gpu = FormatArch(GpuArch{sm});
  std::set<GpuArch, ArchLess> cubins, ptxs;
  for (const FatbinEntry& e : entries) {
    if (e.kind == FatbinKind::kCubin) cubins.insert(e.arch);
    if (e.kind == FatbinKind::kPtx) ptxs.insert(e.arch);
  }
  Coverage c;
  // Exact: built for this SM (any variant that may run here).
  for (const GpuArch& a : cubins) {
    if (a.sm == sm && CubinRunsOn(a, sm)) {
      c.kind = CoverageKind::kExactCubin;
      c.via = a;
      c.explanation = fmt::format("{} cubin runs on {}", FormatArch(a), gpu);
      return c;
    }
  }
  // Compatible: the newest older-minor cubin of the same major (or family).
  for (auto it = cubins.rbegin(); it != cubins.rend(); ++it) {
    if (CubinRunsOn(*it, sm)) {
      c.kind = CoverageKind::kCompatibleCubin;
      c.via = *it;
      c.explanation = fmt::format("{} cubin is binary compatible with {}", FormatArch(*it), gpu);
      return c;
    }
  }
  // PTX: the newest that can be JIT-compiled for this SM.
  for (auto it = ptxs.rbegin(); it != ptxs.rend(); ++it) {
    if (PtxJitsTo(*it, sm)) {
      c.kind = CoverageKind::kPtxJit;
      c.via = *it;
      c.explanation = fmt::format("{} PTX is JIT-compiled for {}", FormatArch(*it, true), gpu);
      return c;
    }
  }
  c.explanation = fmt::format(
      "nothing runs on {}: no cubin for {} or an older minor of the same major (cubins: {}), "
      "no PTX <= compute_{} (PTX: {})",
      gpu, gpu, JoinArchs(cubins, false), sm, JoinArchs(ptxs, true));
  return c;
}

CoverageSummary SummarizeCoverage(std::span<const FatbinEntry> entries, GpuArch target) {
  CoverageSummary s;
  // A container's entries are contiguous in a listing: walk the runs.
  for (size_t i = 0, j = 0; i < entries.size(); i = j) {
    bool has_code = false;
    for (j = i; j < entries.size() && entries[j].container == entries[i].container; ++j) {
      has_code |= entries[j].kind != FatbinKind::kOther;
    }
    if (!has_code) continue;
    ++s.containers;
    switch (CanRunOn(entries.subspan(i, j - i), target).kind) {
      case CoverageKind::kExactCubin: ++s.exact_cubin; break;
      case CoverageKind::kCompatibleCubin: ++s.compatible_cubin; break;
      case CoverageKind::kPtxJit: ++s.ptx_jit; break;
      case CoverageKind::kNotCovered: ++s.not_covered; break;
    }
  }
  return s;
}

std::string_view CoverageKindName(CoverageKind kind) {
  switch (kind) {
    case CoverageKind::kExactCubin: return "exact cubin";
    case CoverageKind::kCompatibleCubin: return "compatible cubin";
    case CoverageKind::kPtxJit: return "PTX JIT";
    case CoverageKind::kNotCovered: return "not covered";
  }
  return "not covered";
}

}  // namespace colabtrace::elf
