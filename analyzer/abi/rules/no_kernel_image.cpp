// abi.no-kernel-image (error)
//
// Rule: for each GPU architecture of the process (the --gpu-arch what-if when given,
// else each GpuDevice's compute capability), every loaded library that carries device
// code (.nv_fatbin / __nv_relfatbin) is checked with colabtrace_elf's CanRunOn: a cubin
// runs on the same major with an equal or higher minor, an 'a' cubin only on its exact
// SM, an 'f' cubin within its family, PTX JITs to an equal or higher SM. A library with
// nothing that runs is reported (one finding per process and architecture, listing the
// libraries). Also reported: a CUDA call (GpuError, GpuModule, allocation) that failed
// with 209 (no kernel image) or 98 (invalid device function), naming the caller.
// With CUPTI on, the cubins the driver actually loaded (CuptiModule records, their SM
// numbers read from the cubins' ELF headers) are checked too: a loaded module none of
// whose cubins runs on the architecture is listed under `loaded_modules`.
#include <set>
#include <string_view>

#include "abi/rules/rules.h"
#include "elf/coverage.h"

namespace colabtrace::analyzer::abi {
namespace {

// True if one of the SM numbers in `archs` ("80,90", as the shim records a loaded
// module's cubins) runs on `arch`: SASS runs on its own major at an equal or higher
// minor.
bool AnyCubinRunsOn(std::string_view archs, const elf::GpuArch& arch) {
  while (!archs.empty()) {
    const size_t comma = archs.find(',');
    const std::string_view one = archs.substr(0, comma);
    int sm = 0;
    for (char c : one) {
      if (c < '0' || c > '9' || sm > 100000) break;
      sm = sm * 10 + (c - '0');
    }
    if (sm > 0 && sm / 10 == arch.major() && sm % 10 <= arch.minor()) return true;
    if (comma == std::string_view::npos) break;
    archs.remove_prefix(comma + 1);
  }
  return false;
}

// The loaded modules (CUPTI's RESOURCE domain) with no cubin for `arch`, at most 64.
Json LoadedModulesWithoutImage(const ProcessTrace& t, const elf::GpuArch& arch) {
  Json out = Json::MakeArray();
  for (const auto& m : t.records.CuptiModule) {
    if (m.event != static_cast<uint64_t>(format::CuptiModuleEvent::kModuleLoaded)) continue;
    const std::string_view archs = t.Str(m.archs);
    if (archs.empty() || AnyCubinRunsOn(archs, arch)) continue;
    Json j = Json::MakeObject();
    j["module_id"] = m.module_id;
    j["cubin_archs"] = std::string(archs);
    j["cubin_size"] = m.cubin_size;
    out.Append(std::move(j));
    if (out.array().size() >= 64) break;
  }
  return out;
}

}  // namespace

void NoKernelImageRule(const ProcessLibraries& p, RuleContext& ctx, ReportBuilder& report) {
  const ProcessTrace& t = *p.trace;
  std::vector<std::pair<elf::GpuArch, std::string>> targets;  // arch, source
  if (ctx.what_if) {
    targets.push_back({*ctx.what_if, "--gpu-arch"});
  } else {
    std::set<int> seen;
    for (const auto& d : t.records.GpuDevice) {
      const int sm = static_cast<int>(d.cc_major * 10 + d.cc_minor);
      if (sm > 0 && sm < 10000 && seen.insert(sm).second && seen.size() <= 16) {
        targets.push_back({elf::GpuArch{sm, elf::ArchVariant::kNone},
                           "device " + std::to_string(d.index) + " (" + std::string(t.Str(d.name)) + ")"});
      }
    }
  }
  Json errors = GpuErrors(t, {209, 98});
  bool reported_errors = false;
  for (const auto& [arch, source] : targets) {
    Json libs = Json::MakeArray();
    Json covered = Json::MakeArray();
    std::string names;
    size_t checked = 0;
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      FileFacts* fi = p.files[i];
      const LoadedLibrary& o = p.inv.objects[i];
      if (fi == nullptr || !fi->image || o.unloaded_ns || !SameAsLoaded(o, *fi)) continue;
      const elf::FatbinListing& fb = ctx.files.Fatbin(*fi);
      if (fb.entries.empty()) continue;
      ++checked;
      const elf::Coverage c = elf::CanRunOn(fb.entries, arch);
      if (c.covered()) {
        Json j = Json::MakeObject();
        j["path"] = o.path;
        j["via"] = std::string(elf::CoverageKindName(c.kind)) + " " +
                   elf::FormatArch(c.via, c.kind == elf::CoverageKind::kPtxJit);
        covered.Append(std::move(j));
        continue;
      }
      std::set<std::string> archs;
      for (const elf::FatbinEntry& e : fb.entries) {
        if (e.kind != elf::FatbinKind::kOther) archs.insert(elf::DescribeArch(e));
      }
      Json j = LibJson(o);
      Json have = Json::MakeArray();
      for (const std::string& a : archs) have.Append(a);
      j["device_code"] = std::move(have);
      j["explanation"] = c.explanation;
      libs.Append(std::move(j));
      if (!names.empty()) names += ", ";
      names += NameOf(o);
    }
    Json modules = LoadedModulesWithoutImage(t, arch);
    if (libs.array().empty() && modules.array().empty()) continue;
    if (names.empty()) names = std::to_string(modules.array().size()) + " loaded module(s)";
    Finding f;
    f.id = "abi.no-kernel-image";
    f.severity = Severity::kError;
    f.pid = t.pid();
    const std::string arch_name = elf::FormatArch(arch);
    f.evidence["gpu_arch"] = arch_name;
    f.evidence["arch_source"] = source;
    f.evidence["libraries"] = std::move(libs);
    f.evidence["covered_libraries"] = std::move(covered);
    f.evidence["libraries_with_device_code"] = static_cast<uint64_t>(checked);
    f.evidence["loaded_modules"] = std::move(modules);
    f.evidence["errors"] = errors;
    if (!p.host.same_host) f.evidence["disk_checks"] = p.host.DiskChecksLabel() + "; build-id-verified files only";
    reported_errors = true;
    f.summary = "no kernel image for " + arch_name + " in " + names +
                ": no cubin runs on it and no PTX can be JIT-compiled for it";
    f.advice =
        "These libraries were compiled without code for this GPU, so their kernels fail with "
        "\"no kernel image is available for execution on the device\". Install a build that "
        "includes " + arch_name + " (newer GPUs need newer wheels; older GPUs such as sm_70 "
        "are dropped by CUDA 13 builds: use the CUDA 12 wheels), or rebuild with "
        "TORCH_CUDA_ARCH_LIST / -gencode including it.";
    report.AddFinding(std::move(f));
  }
  if (!reported_errors && !errors.array().empty()) {
    Finding f;
    f.id = "abi.no-kernel-image";
    f.severity = Severity::kError;
    f.pid = t.pid();
    f.evidence["errors"] = errors;
    std::string caller = errors.array()[0]["caller"].is_string() ? errors.array()[0]["caller"].str() : "";
    f.summary = "a kernel had no image for this GPU (CUDA error " +
                std::to_string(errors.array()[0]["rc"].as_int()) + ")" +
                (caller.empty() ? "" : " in " + std::string(Basename(caller)));
    f.advice =
        "The calling library has no cubin for this GPU and no PTX the driver can JIT. Install "
        "a build that supports this GPU's compute capability (check with "
        "`colabtrace report --gpu-arch sm_XY`).";
    report.AddFinding(std::move(f));
  }
}

}  // namespace colabtrace::analyzer::abi
