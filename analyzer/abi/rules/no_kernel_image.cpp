// abi.no-kernel-image (error)
//
// Rule: for each GPU architecture of the process (the --gpu-arch what-if when given,
// else each GpuDevice's compute capability), a loaded library whose whole device code is
// known and covers nothing. Its registered fatbins (.nv_fatbin / __nv_relfatbin, read
// through LibraryFiles: --sysroot first, a build id or the same file proves it) are
// checked with colabtrace_elf's CanRunOn (a cubin runs on the same major with an equal or
// higher minor, an 'a' cubin only on its exact SM, an 'f' cubin within its family, PTX
// JITs to an equal or higher SM). When they have nothing that runs, the library is not
// judged from them alone: the fatbin containers it keeps in other sections, which it loads
// itself (cuFFT 12: one sm_75 cubin registered, its kernels in .ldata; cuBLASLt 13: its
// sm_100/sm_120 kernels in .cask_resource), are listed and checked too (only then: the
// scan is for libraries whose registered fatbins fail). Something there that runs covers
// it; entries of a kind this check does not know (not cubin, not PTX: LTO IR that
// nvJitLink could compile for any GPU), or containers it could not read, leave it not
// judged (evidence `not_judged`, and libraries_files.skipped_checks); otherwise the whole
// device code found covers nothing and it is reported. One finding per architecture and
// set of libraries for the whole job.
//
// Also reported, with no static verdict needed: a CUDA call (GpuError, GpuModule, an
// allocation, a kernel launch) that failed for want of an image: 209 (no kernel image /
// CUDA_ERROR_NO_BINARY_FOR_GPU), 98 (invalid device function), 200 (invalid image), 218
// (invalid PTX), naming the caller. With CUPTI on, the cubins the driver actually loaded
// (CuptiModule records, their SM numbers read from the cubins' ELF headers) are checked
// too: a loaded module none of whose cubins runs on the architecture is listed under
// `loaded_modules`.
#include <algorithm>
#include <set>
#include <string_view>

#include "abi/rules/rules.h"
#include "elf/coverage.h"

namespace colabtrace::analyzer::abi {
namespace {

// CUDA errors that mean "no image for this GPU", at runtime and driver level: 209
// cudaErrorNoKernelImageForDevice / CUDA_ERROR_NO_BINARY_FOR_GPU, 98
// cudaErrorInvalidDeviceFunction, 200 cudaErrorInvalidKernelImage / CUDA_ERROR_INVALID_IMAGE,
// 218 cudaErrorInvalidPtx / CUDA_ERROR_INVALID_PTX.
constexpr std::initializer_list<int64_t> kNoImageErrors = {209, 98, 200, 218};

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

void NoKernelImageOf(const ProcessLibraries& p, JobContext& ctx) {
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
  Json errors = GpuErrors(ctx.symbols, t, kNoImageErrors);
  Json not_judged_any = Json::MakeArray();  // for the finding from failed calls alone
  bool reported_errors = false;
  for (const auto& [arch, source] : targets) {
    Json libs = Json::MakeArray();
    Json covered = Json::MakeArray();
    Json not_judged = Json::MakeArray();
    std::string names, cause = elf::FormatArch(arch);
    size_t checked = 0;
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      const LoadedLibrary& o = p.inv.objects[i];
      if (o.unloaded_ns || o.is_vdso || o.path.empty()) continue;
      FileFacts* fi = p.files[i];
      if (fi == nullptr || !fi->image) {
        ctx.files.Skipped(FindingName(FindingId::kAbiNoKernelImage), "no readable file: device code not checked", o.path);
        continue;
      }
      const elf::FatbinListing& fb = ctx.files.cache().Fatbin(*fi);
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
      // Not judged from the registered fatbins alone: the containers kept elsewhere.
      const elf::UnregisteredFatbins& elsewhere = ctx.files.cache().Unregistered(*fi);
      std::string outside;
      if (elsewhere.containers > 0) {
        outside = elf::DescribeUnregisteredFatbins(elsewhere) + " outside its registered fatbins";
        const elf::Coverage oc = elf::CanRunOn(elsewhere.listing.entries, arch);
        if (oc.covered()) {
          Json j = Json::MakeObject();
          j["path"] = o.path;
          j["via"] = std::string(elf::CoverageKindName(oc.kind)) + " " +
                     elf::FormatArch(oc.via, oc.kind == elf::CoverageKind::kPtxJit) + " in " + outside;
          covered.Append(std::move(j));
          continue;
        }
        const size_t unknown = static_cast<size_t>(
            std::count_if(elsewhere.listing.entries.begin(), elsewhere.listing.entries.end(),
                          [](const elf::FatbinEntry& e) { return e.kind == elf::FatbinKind::kOther; }));
        if (unknown > 0 || !elsewhere.listing.ok()) {
          Json j = Json::MakeObject();
          j["path"] = o.path;
          j["why"] = "it carries " + outside + ", which it may load itself; nothing there runs on " +
                     elf::FormatArch(arch) + ", but " +
                     (unknown > 0 ? std::to_string(unknown) + " of their entries are of a kind this check cannot judge "
                                                               "(not cubin or PTX)"
                                  : "they could not all be read (" + elsewhere.listing.errors[0] + ")");
          not_judged.Append(j);
          const auto& any = not_judged_any.array();
          if (std::none_of(any.begin(), any.end(), [&](const Json& x) { return x["path"].str() == o.path; })) {
            not_judged_any.Append(std::move(j));
          }
          ctx.files.Skipped(FindingName(FindingId::kAbiNoKernelImage),
                            "device code outside its registered fatbins that this check cannot judge", o.path);
          continue;
        }
        for (const elf::FatbinEntry& e : elsewhere.listing.entries) archs.insert(elf::DescribeArch(e));
      }
      Json have = Json::MakeArray();
      for (const std::string& a : archs) have.Append(a);
      Json j = LibJson(o);
      j["device_code"] = std::move(have);
      j["explanation"] = c.explanation;
      if (!outside.empty()) j["outside_registered_fatbins"] = outside + ": none of it runs either";
      libs.Append(std::move(j));
      if (!names.empty()) names += ", ";
      names += NameOf(o);
      cause += '\0' + o.path;
    }
    Json modules = LoadedModulesWithoutImage(t, arch);
    if (libs.array().empty() && modules.array().empty()) continue;
    if (names.empty()) names = std::to_string(modules.array().size()) + " loaded module(s)";
    cause += "\0modules " + std::to_string(modules.array().size());
    Finding f = Finding::Of(FindingId::kAbiNoKernelImage, t.pid());
    const std::string arch_name = elf::FormatArch(arch);
    f.evidence["gpu_arch"] = arch_name;
    f.evidence["arch_source"] = source;
    f.evidence["libraries"] = std::move(libs);
    f.evidence["covered_libraries"] = std::move(covered);
    f.evidence["not_judged"] = std::move(not_judged);
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
    ctx.findings.Add(std::move(f), std::move(cause));
  }
  if (!reported_errors && !errors.array().empty()) {
    Finding f = Finding::Of(FindingId::kAbiNoKernelImage, t.pid());
    f.evidence["errors"] = errors;
    f.evidence["not_judged"] = std::move(not_judged_any);
    const Json& first = errors.array()[0];
    std::string caller = first["caller"].is_string() ? first["caller"].str() : "";
    f.summary = "a kernel had no image for this GPU (CUDA error " + std::to_string(first["rc"].as_int()) + ")" +
                (caller.empty() ? "" : " in " + std::string(Basename(caller)));
    std::string cause = "errors " + std::to_string(first["rc"].as_int()) + '\0' + caller;
    ctx.findings.Add(std::move(f), std::move(cause));
  }
}

void NoKernelImageRule(RuleContext& rule) { ForEachProcessLibraries(rule, NoKernelImageOf); }

const RuleRegistration kNoKernelImageRuleRegistration(NoKernelImageRule,
    {FindingId::kAbiNoKernelImage});

}  // namespace

}  // namespace colabtrace::analyzer::abi
