#include "abi/library_model.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <map>
#include <optional>

#include "analyses/process_facts.h"
#include "gpu/kernel_names.h"
#include "report/report.h"

namespace colabtrace::analyzer::abi {
namespace {

std::string ReadId(const char* path) {
  std::string s;
  if (std::FILE* f = std::fopen(path, "re")) {
    char buf[128];
    const size_t n = std::fread(buf, 1, sizeof(buf), f);
    std::fclose(f);
    s.assign(buf, n);
  }
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The CUDA major a library was built for: from the file (soname, verdef, DT_NEEDED,
// device code) for libraries that are or use CUDA libraries, else from the soname.
std::optional<elf::CudaMajor> CudaMajorOf(const LoadedLibrary& o, const elf::LibraryFamily& fam,
                                          FileFacts* f, FileFactsCache& cache) {
  if (fam.group == elf::LibraryGroup::kCudaDriver || fam.group == elf::LibraryGroup::kSystem) {
    return std::nullopt;
  }
  bool cuda_related = fam.group == elf::LibraryGroup::kCudaToolkit ||
                      fam.group == elf::LibraryGroup::kNvidiaLibrary ||
                      fam.group == elf::LibraryGroup::kFramework;
  if (f != nullptr && f->image && !cuda_related) {
    for (const std::string& n : f->image->needed()) {
      if (elf::ClassifyLibrary(n).group == elf::LibraryGroup::kCudaToolkit) cuda_related = true;
    }
    if (!cuda_related && f->image->FindSection(".nv_fatbin") != nullptr) cuda_related = true;
  }
  if (!cuda_related) return std::nullopt;
  if (f != nullptr && f->image && SameAsLoaded(o, *f)) return cache.CudaMajor(*f);
  if (fam.soname_major_is_cuda_major && fam.soname_major) {
    return elf::CudaMajor{*fam.soname_major, elf::CudaMajorSource::kSoname, "soname " + NameOf(o)};
  }
  return std::nullopt;
}

uint64_t Ns(const struct timespec& t) {
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

bool SameIdentity(const LoadedLibrary& o, const FileFacts& f) {
  return f.st.st_dev == o.identity.dev && f.st.st_ino == o.identity.ino &&
         static_cast<uint64_t>(f.st.st_size) == o.identity.size && Ns(f.st.st_mtim) == o.identity.mtime_ns;
}

}  // namespace

std::string HostOrigin::DiskChecksLabel() const {
  return same_host ? std::string() : "skipped: trace from another host (" + why + " differs)";
}

const LocalHost& LocalHost::Get() {
  static const LocalHost kLocal = [] {
    LocalHost h;
    if (const char* id = std::getenv("COLABTRACE_ANALYZER_HOST_ID"); id != nullptr && *id != '\0') {
      h.boot_id = h.machine_id = id;  // test-only: pretend to be another machine
    } else {
      h.boot_id = ReadId("/proc/sys/kernel/random/boot_id");
      h.machine_id = ReadId("/etc/machine-id");
    }
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) == 0) h.hostname = name;
    return h;
  }();
  return kLocal;
}

HostOrigin HostOriginOf(const ProcessTrace& t, const LocalHost& local) {
  std::string boot_id, machine_id, hostname;
  for (const auto& h : t.records.HostInfo) {
    const std::string_view key = t.Str(h.key);
    if (key == "boot_id") boot_id = std::string(t.Str(h.value));
    if (key == "machine_id") machine_id = std::string(t.Str(h.value));
    if (key == "hostname") hostname = std::string(t.Str(h.value));
  }
  HostOrigin o;
  // A different boot of the same machine may have different files too (an upgrade and
  // a reboot), so the boot id decides when both sides have it.
  if (!boot_id.empty() && !local.boot_id.empty()) {
    if (boot_id != local.boot_id) o = {false, "boot_id"};
  } else if (!machine_id.empty() && !local.machine_id.empty()) {
    if (machine_id != local.machine_id) o = {false, "machine_id"};
  } else if (!hostname.empty() && !local.hostname.empty() && hostname != local.hostname) {
    o = {false, "hostname"};
  }
  return o;
}

ProcessLibraries ProcessLibraries::Of(const ProcessTrace& t, const ProcessFacts& facts, FileFactsCache& cache) {
  ProcessLibraries p;
  p.trace = &t;
  p.inv = LibraryInventory::Of(t);
  p.host = HostOriginOf(t);
  p.end_realtime_ns = t.start_realtime_ns() + (t.end_ns() - t.start_ns());
  p.process_failed = facts.end_kind == EndKind::kSignaled || facts.end_kind == EndKind::kKilled ||
                     (facts.exit_code && *facts.exit_code != 0);
  for (const LoadedLibrary& o : p.inv.objects) {
    p.family.push_back(FamilyOf(o));
    FileFacts* f = (o.is_vdso || o.path.empty()) ? nullptr : &cache.Get(o.path);
    // On another host a path names some other file unless its build id is the loaded one.
    if (f != nullptr && !p.host.same_host &&
        (o.build_id.empty() || !f->image || f->image->build_id() != o.build_id)) {
      f = nullptr;
    }
    p.files.push_back(f);
    p.cuda.push_back(CudaMajorOf(o, p.family.back(), f, cache));
  }
  return p;
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

bool SameAsLoaded(const LoadedLibrary& o, const FileFacts& f) {
  if (!f.exists) return false;
  if (!o.identity.known()) return true;  // nothing to compare with: assume so
  if (SameIdentity(o, f)) return true;
  return !o.build_id.empty() && f.image && f.image->build_id() == o.build_id;
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
  return Ns(f->st.st_ctim) <= end_realtime_ns ? "changed during the run" : "changed";
}

std::string LoadedPathFor(const ProcessLibraries& p, const std::string& name, int64_t nsid) {
  for (const LoadedLibrary& o : p.inv.objects) {
    if (o.nsid == nsid && !o.unloaded_ns && (o.soname == name || Basename(o.path) == name)) return o.path;
  }
  return "";
}

Json GpuErrors(const ProcessTrace& t, std::initializer_list<int64_t> codes) {
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
    if (!names) names.emplace(t);
    const gpu::KernelName& n = names->Of(l.api, l.func, l.name, l.module, l.inner_func);
    Json j = Json::MakeObject();
    j["api"] = api_name(l.api);
    j["rc"] = l.rc;
    j["caller"] = n.library.empty() ? Json() : Json(n.library);
    j["kernel"] = n.kernel;
    j["see"] = "gpu.launch-failed";
    out.Append(std::move(j));
  }
  return out;
}

}  // namespace colabtrace::analyzer::abi
