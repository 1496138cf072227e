#include "abi/library_model.h"

#include <algorithm>
#include <map>
#include <optional>

#include "model/process_facts.h"
#include "gpu/kernel_names.h"
#include "report/report.h"

namespace colabtrace::analyzer::abi {
namespace {

// The CUDA major a library links against or is named for (colabtrace_elf's
// DetectCudaMajor on its file: soname, verdef, DT_NEEDED, verneed); without a readable
// file, from a soname whose major is the CUDA major. The driver and system libraries
// have none.
std::optional<elf::CudaMajor> CudaMajorOf(const LoadedLibrary& o, const elf::LibraryFamily& fam,
                                          FileFacts* f, LibraryFiles& files) {
  if (fam.group == elf::LibraryGroup::kCudaDriver || fam.group == elf::LibraryGroup::kSystem) {
    return std::nullopt;
  }
  if (f != nullptr) return files.cache().CudaMajor(*f);
  if (!o.is_vdso && !o.path.empty()) {
    files.Skipped(FindingName(FindingId::kAbiMixedCudaMajors),
                  "no readable file: CUDA major from the soname only, DT_NEEDED and symbol versions not read",
                  o.path);
  }
  if (fam.soname_major_is_cuda_major && fam.soname_major) {
    return elf::CudaMajor{*fam.soname_major, elf::CudaMajorSource::kSoname, "soname " + NameOf(o)};
  }
  return std::nullopt;
}

bool AnyGpuCallFailed(const ProcessTrace& t) {
  auto failed = [](const auto& table) {
    return std::any_of(table.begin(), table.end(), [](const auto& r) { return r.rc != 0; });
  };
  return failed(t.records.GpuError) || failed(t.records.GpuAlloc) || failed(t.records.GpuFree) ||
         failed(t.records.GpuModule) || !t.records.GpuLaunchFailed.empty();
}

}  // namespace

LibraryModels LibraryModels::Build(const RunModel& run) {
  LibraryModels m;
  m.files = std::make_unique<LibraryFiles>(run.options().sysroot);
  if (const auto& opt = run.options().gpu_arch) {
    absl::StatusOr<elf::ArchSpec> a = elf::ParseArch(*opt);
    if (a.ok()) {
      m.what_if = elf::GpuArch{a->arch.sm, elf::ArchVariant::kNone};
    } else {
      m.what_if_error = "--gpu-arch " + *opt + ": " + std::string(a.status().message());
    }
  }
  m.of_trace.reserve(run.traces().size());
  for (const ProcessTrace& t : run.traces()) m.of_trace.push_back(ProcessLibraries::Of(run, t, *m.files));
  return m;
}

ProcessLibraries ProcessLibraries::Of(const RunModel& run, const ProcessTrace& t, LibraryFiles& files) {
  ProcessLibraries p(t, run.Get<LibraryInventories>().of_trace[run.IndexOf(t)]);
  const ProcessFacts& facts = run.facts(t);
  p.host = HostOriginOf(t);
  p.end_realtime_ns = t.start_realtime_ns() + (t.end_ns() - t.start_ns());
  p.process_failed = facts.end_kind == EndKind::kSignaled || facts.end_kind == EndKind::kKilled ||
                     (facts.exit_code && *facts.exit_code != 0);
  p.gpu_call_failed = AnyGpuCallFailed(t);
  for (const LoadedLibrary& o : p.inv.objects) {
    p.family.push_back(FamilyOf(o));
    p.files.push_back(files.Loaded(o, p.host).file);
    p.on_disk.push_back(files.AtRecordedPath(o, p.host));
    p.cuda.push_back(CudaMajorOf(o, p.family.back(), p.files.back(), files));
  }
  return p;
}

FileFacts* ProcessLibraries::FileNamed(const std::string& path, LibraryFiles& library_files) const {
  for (size_t i = 0; i < inv.objects.size(); ++i) {
    if (inv.objects[i].path == path && files[i] != nullptr) return files[i];
  }
  return library_files.Named(path, host);
}

std::string NameOf(const LoadedLibrary& o) { return o.soname.empty() ? std::string(Basename(o.path)) : o.soname; }

elf::LibraryFamily FamilyOf(const LoadedLibrary& o) {
  elf::LibraryFamily f = elf::ClassifyLibrary(o.soname.empty() ? o.path : o.soname);
  if (f.family.empty() && !o.soname.empty()) f = elf::ClassifyLibrary(o.path);
  return f;
}

std::string_view GroupName(elf::LibraryGroup g) {
  switch (g) {
    case elf::LibraryGroup::kCudaToolkit: return "cuda-toolkit";
    case elf::LibraryGroup::kCudaDriver: return "cuda-driver";
    case elf::LibraryGroup::kNvidiaLibrary: return "nvidia-library";
    case elf::LibraryGroup::kSystem: return "system";
    case elf::LibraryGroup::kFramework: return "framework";
    case elf::LibraryGroup::kUnknown: break;
  }
  return "other";
}

std::string CudaVersionText(int64_t v) {
  if (v <= 0) return std::to_string(v);
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string_view Origin(const std::string& path) {
  // Debian/Ubuntu's apt installs Python packages in /usr/lib/python3/dist-packages: that
  // is the system; pip's dist-packages is /usr/local/lib/python3.X/dist-packages.
  if (path.starts_with("/usr/lib/python3/dist-packages/")) return "system";
  if (path.find("/site-packages/") != std::string::npos ||
      path.find("/dist-packages/") != std::string::npos) {
    return "pip";
  }
  for (const char* p : {"/usr/", "/lib/", "/lib64/", "/opt/", "/etc/"}) {
    if (path.starts_with(p)) return "system";
  }
  return "";
}

Json LibJson(const LoadedLibrary& o) {
  Json j = Json::MakeObject();
  j["path"] = o.path;
  j["soname"] = o.soname.empty() ? Json() : Json(o.soname);
  j["build_id"] = o.build_id.empty() ? Json() : Json(o.build_id);
  j["loaded_by"] = o.loaded_by.empty() ? Json() : Json(o.loaded_by);
  j["requested"] = o.requested.empty() ? Json() : Json(o.requested);
  j["how"] = std::string(LibApiName(o.api));
  return j;
}

std::string PipPackageFor(std::string_view family, std::optional<int> cuda_major) {
  static const std::map<std::string_view, std::string_view> kPackages = {
      {"cudart", "nvidia-cuda-runtime"}, {"cudnn", "nvidia-cudnn"},   {"cublas", "nvidia-cublas"},
      {"cublasLt", "nvidia-cublas"},     {"cufft", "nvidia-cufft"},   {"curand", "nvidia-curand"},
      {"cusolver", "nvidia-cusolver"},   {"cusparse", "nvidia-cusparse"}, {"nccl", "nvidia-nccl"},
      {"nvrtc", "nvidia-cuda-nvrtc"},    {"nvJitLink", "nvidia-nvjitlink"}, {"cupti", "nvidia-cuda-cupti"},
      {"cusparseLt", "nvidia-cusparselt"}, {"nvtx", "nvidia-nvtx"},
  };
  auto it = kPackages.find(family);
  if (it == kPackages.end()) return "";
  return std::string(it->second) + "-" + (cuda_major ? "cu" + std::to_string(*cuda_major) : "cuXX");
}

std::string DiskState(const LoadedLibrary& o, const FileFacts* f, uint64_t end_realtime_ns) {
  if (!o.changes.empty()) {
    // Every re-check failed (ENOENT) and nothing is at the path now: removed, not replaced.
    const bool removed = std::all_of(o.changes.begin(), o.changes.end(),
                                     [](const IdentityChange& c) { return c.err != 0; }) &&
                         (f == nullptr || !f->exists);
    return removed ? "removed during the run" : "changed during the run";
  }
  if (f == nullptr || !o.identity.known()) return "unknown";
  if (!f->exists) return "missing";
  if (SameIdentity(o, *f)) return "same";
  if (!o.build_id.empty() && f->image && f->image->build_id() == o.build_id) return "same build";
  return TimespecNs(f->st.st_ctim) <= end_realtime_ns ? "changed during the run" : "changed";
}

std::string LoadedPathFor(const ProcessLibraries& p, const std::string& name, int64_t nsid) {
  for (const LoadedLibrary& o : p.inv.objects) {
    if (o.nsid == nsid && !o.unloaded_ns && (o.soname == name || Basename(o.path) == name)) return o.path;
  }
  return "";
}

Json GpuErrors(SymbolCache& symbols, const ProcessTrace& t, std::initializer_list<int64_t> codes) {
  // At most kMaxErrors entries: a trace may hold millions of failed calls.
  constexpr size_t kMaxErrors = 32;
  Json out = Json::MakeArray();
  auto wanted = [&](int64_t rc) { return std::find(codes.begin(), codes.end(), rc) != codes.end(); };
  auto api_name = [](auto api) {
    const char* n = format::GpuApiName(api);
    return n != nullptr ? Json(n) : Json(api);
  };
  for (const auto& e : t.records.GpuError) {
    if (!wanted(e.rc) || out.array().size() >= kMaxErrors) continue;
    Json j = Json::MakeObject();
    j["api"] = api_name(e.api);
    j["rc"] = e.rc;
    j["caller"] = std::string(t.Str(e.caller));
    out.Append(std::move(j));
  }
  for (const auto& a : t.records.GpuAlloc) {
    if (!wanted(a.rc)) continue;
    Json j = Json::MakeObject();
    j["api"] = api_name(a.api);
    j["rc"] = a.rc;
    j["caller"] = Json();
    out.Append(std::move(j));
    break;  // one allocation failure is evidence enough
  }
  for (const auto& m : t.records.GpuModule) {
    if (!wanted(m.rc) || out.array().size() >= kMaxErrors) continue;
    Json j = Json::MakeObject();
    j["api"] = api_name(m.api);
    j["rc"] = m.rc;
    j["caller"] = std::string(t.Str(m.caller));
    j["path"] = std::string(t.Str(m.path));
    out.Append(std::move(j));
  }
  // Failed kernel launches and lookups (gpu.launch-failed): the kernel, and as the caller
  // the library holding it.
  std::optional<gpu::KernelNames> names;
  for (const auto& l : t.records.GpuLaunchFailed) {
    if (!wanted(l.rc) || out.array().size() >= kMaxErrors) continue;
    if (!names) names.emplace(t, symbols);
    const gpu::KernelName& n = names->Of(l.api, l.func, l.name, l.module, l.inner_func);
    Json j = Json::MakeObject();
    j["api"] = api_name(l.api);
    j["rc"] = l.rc;
    j["caller"] = n.library.empty() ? Json() : Json(n.library);
    j["kernel"] = n.kernel;
    j["see"] = std::string(FindingName(FindingId::kGpuLaunchFailed));
    out.Append(std::move(j));
  }
  return out;
}

}  // namespace colabtrace::analyzer::abi
