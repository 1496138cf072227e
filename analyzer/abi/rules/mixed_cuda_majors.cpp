// abi.mixed-cuda-majors (error)
//
// Rule: the loaded (non-driver) libraries of one process were built for more than one
// CUDA major. A library's major comes from colabtrace_elf's DetectCudaMajor on the file
// when it is still the loaded one (soname, verdef, DT_NEEDED, device code), else from a
// soname whose major is the CUDA major (libcudart.so.12, libcublasLt.so.13). Only
// libraries that are CUDA libraries, frameworks, or link or embed CUDA code count.
#include <map>

#include "abi/rules/rules.h"

namespace colabtrace::analyzer::abi {

void MixedCudaMajorsRule(const ProcessLibraries& p, ReportBuilder& report) {
  std::map<int, std::vector<size_t>> by_major;
  for (size_t i = 0; i < p.inv.objects.size(); ++i) {
    if (p.cuda[i] && !p.inv.objects[i].unloaded_ns) by_major[p.cuda[i]->major].push_back(i);
  }
  if (by_major.size() < 2) return;
  Finding f;
  f.id = "abi.mixed-cuda-majors";
  f.severity = Severity::kError;
  f.pid = p.trace->pid();
  Json majors = Json::MakeObject();
  std::string summary;
  for (const auto& [major, idx] : by_major) {
    Json libs = Json::MakeArray();
    for (size_t i : idx) {
      Json j = LibJson(p.inv.objects[i]);
      j["evidence"] = p.cuda[i]->evidence;
      libs.Append(std::move(j));
    }
    majors[std::to_string(major)] = std::move(libs);
    if (!summary.empty()) summary += "; ";
    summary += "CUDA " + std::to_string(major) + ": " + NameOf(p.inv.objects[idx[0]]);
    if (idx.size() > 1) summary += " and " + std::to_string(idx.size() - 1) + " more";
  }
  f.evidence["majors"] = std::move(majors);
  f.summary = "libraries built for " + std::to_string(by_major.size()) +
              " CUDA majors are loaded together (" + summary + ")";
  f.advice =
      "One process can only use one CUDA major version: a library built for CUDA 12 needs "
      "libcudart.so.12 and its companions and fails or misbehaves next to CUDA 13 ones. "
      "Install wheels of one CUDA line only (all *-cu12 or all *-cu13: torch, jax and the "
      "nvidia-* packages), remove the other toolkit's directory from LD_LIBRARY_PATH, and "
      "restart the runtime.";
  report.AddFinding(std::move(f));
}

}  // namespace colabtrace::analyzer::abi
