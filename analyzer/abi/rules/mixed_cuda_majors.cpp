// abi.mixed-cuda-majors (error)
//
// Rule: the loaded (non-driver) libraries of one process depend on more than one CUDA
// major. A library's major is what it links against or is named for: colabtrace_elf's
// DetectCudaMajor on its file (a soname whose major is the CUDA major, a version it
// defines, DT_NEEDED libcudart.so.N / libcublas.so.N ..., verneed), else, without a
// readable file, such a soname alone. The device code a library embeds is no dependency
// (the CUDA 13 wheel's libcufile.so.0 carries PTX ISA 7.1): it never decides a major and
// is shown only as weak evidence (`device_code`) of the libraries listed.
//
// One finding per job and set of majors: a DataLoader's workers map what their parent
// mapped (JobFindings lists their pids).
#include <map>

#include "abi/rules/rules.h"
#include "elf/library_family.h"

namespace colabtrace::analyzer::abi {

namespace {

void MixedCudaMajorsOf(const ProcessLibraries& p, JobContext& ctx) {
  std::map<int, std::vector<size_t>> by_major;
  for (size_t i = 0; i < p.inv.objects.size(); ++i) {
    if (p.cuda[i] && !p.inv.objects[i].unloaded_ns) by_major[p.cuda[i]->major].push_back(i);
  }
  if (by_major.size() < 2) return;
  Finding f = Finding::Of(FindingId::kAbiMixedCudaMajors, p.trace->pid());
  Json majors = Json::MakeObject();
  std::string summary, cause;
  for (const auto& [major, idx] : by_major) {
    Json libs = Json::MakeArray();
    for (size_t i : idx) {
      Json j = LibJson(p.inv.objects[i]);
      f.files.push_back(p.inv.objects[i].path);
      j["evidence"] = p.cuda[i]->evidence;
      if (FileFacts* file = p.files[i]) {
        const std::optional<elf::CudaMajor> weak = elf::DeviceCodeCudaRelease(ctx.files.cache().Fatbin(*file));
        if (weak) j["device_code"] = weak->evidence + " (weak: the compiler of its kernels, not a dependency)";
      }
      libs.Append(std::move(j));
    }
    majors[std::to_string(major)] = std::move(libs);
    cause += std::to_string(major) + ",";
    if (!summary.empty()) summary += "; ";
    summary += "CUDA " + std::to_string(major) + ": " + NameOf(p.inv.objects[idx[0]]);
    if (idx.size() > 1) summary += " and " + std::to_string(idx.size() - 1) + " more";
  }
  f.evidence["majors"] = std::move(majors);
  f.summary = "libraries built for " + std::to_string(by_major.size()) +
              " CUDA majors are loaded together (" + summary + ")";
  ctx.findings.Add(std::move(f), std::move(cause));
}

void MixedCudaMajorsRule(RuleContext& rule) { ForEachProcessLibraries(rule, MixedCudaMajorsOf); }

const RuleRegistration kMixedCudaMajorsRuleRegistration(MixedCudaMajorsRule,
    {FindingId::kAbiMixedCudaMajors});

}  // namespace

}  // namespace colabtrace::analyzer::abi
