// abi.system-vs-pip (warning)
//
// Rule: one library family (colabtrace_elf's ClassifyLibrary; glibc excluded) has loaded
// files both under site-packages/dist-packages ("pip") and under system directories
// (/usr, /lib, /lib64, /opt, /etc, including apt's /usr/lib/python3/dist-packages) in one
// process image (an exec replaces every library: a wrapper's are not the job's). One
// finding per family and set of files for the whole job.
#include <map>

#include "abi/rules/rules.h"

namespace colabtrace::analyzer::abi {

namespace {

void SystemVsPipOf(const ProcessLibraries& p, JobContext& ctx) {
  // (image, family) -> (pip objects, system objects)
  std::map<std::pair<uint64_t, std::string>, std::pair<std::vector<size_t>, std::vector<size_t>>> fams;
  for (size_t i = 0; i < p.inv.objects.size(); ++i) {
    const std::string& fam = p.family[i].family;
    if (fam.empty() || fam == "glibc" || p.inv.objects[i].is_executable) continue;
    const std::string_view origin = Origin(p.inv.objects[i].path);
    const uint64_t image = p.inv.objects[i].image;
    if (origin == "pip") fams[{image, fam}].first.push_back(i);
    if (origin == "system") fams[{image, fam}].second.push_back(i);
  }
  for (const auto& [key, sides] : fams) {
    const std::string& fam = key.second;
    if (sides.first.empty() || sides.second.empty()) continue;
    Finding f = Finding::Of(FindingId::kAbiSystemVsPip, p.trace->pid());
    f.evidence["family"] = fam;
    Json pip = Json::MakeArray(), sys = Json::MakeArray();
    std::string cause = fam;
    for (size_t i : sides.first) {
      pip.Append(LibJson(p.inv.objects[i]));
      cause += '\0' + p.inv.objects[i].path;
    }
    cause += '\0';
    for (size_t i : sides.second) {
      sys.Append(LibJson(p.inv.objects[i]));
      cause += '\0' + p.inv.objects[i].path;
    }
    f.evidence["pip"] = std::move(pip);
    f.evidence["system"] = std::move(sys);
    f.summary = fam + " libraries come both from site-packages (" + p.inv.objects[sides.first[0]].path +
                ") and from the system (" + p.inv.objects[sides.second[0]].path + ")";
    ctx.findings.Add(std::move(f), std::move(cause));
  }
}

void SystemVsPipRule(RuleContext& rule) { ForEachProcessLibraries(rule, SystemVsPipOf); }

const RuleRegistration kSystemVsPipRuleRegistration(SystemVsPipRule, {FindingId::kAbiSystemVsPip});

}  // namespace

}  // namespace colabtrace::analyzer::abi
