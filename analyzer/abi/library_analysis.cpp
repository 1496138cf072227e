// The library / ABI analysis: libraries[] and the abi.* findings, plus
// gpu.coverage-incomplete for its library-derived causes (RTLD_DEEPBIND loads of CUDA
// users, statically linked cudart). Each finding's exact rule is written above the
// function that makes it; docs/ARCHITECTURE.md lists them too.
#include <sys/stat.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "abi/dlerror_text.h"
#include "abi/file_facts.h"
#include "abi/library_inventory.h"
#include "abi/library_search.h"
#include "analyses/factories.h"
#include "analyses/symbolize.h"
#include "elf/coverage.h"
#include "elf/cuda_arch.h"
#include "elf/library_family.h"
#include "report/report.h"

namespace colabtrace::analyzer {
namespace {

using abi::FailedLoad;
using abi::FileFacts;
using abi::FileFactsCache;
using abi::LibraryInventory;
using abi::LoadedLibrary;
using format::LibApi;

// ---- small helpers ------------------------------------------------------------------------

std::string Basename(std::string_view p) {
  const size_t s = p.rfind('/');
  return std::string(s == std::string_view::npos ? p : p.substr(s + 1));
}

std::string NameOf(const LoadedLibrary& o) { return o.soname.empty() ? Basename(o.path) : o.soname; }

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

std::string CudaVersionText(int64_t v) {  // 12040 -> "12.4"
  if (v <= 0) return std::to_string(v);
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

// "pip" for a file under site-packages/dist-packages, "system" for the usual system
// places, "" otherwise.
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

bool Overlap(const LoadedLibrary& a, const LoadedLibrary& b) {
  const uint64_t a_end = a.unloaded_ns.value_or(UINT64_MAX);
  const uint64_t b_end = b.unloaded_ns.value_or(UINT64_MAX);
  return a.loaded_ns < b_end && b.loaded_ns < a_end;
}

bool SameFile(const LoadedLibrary& a, const LoadedLibrary& b) {
  if (a.identity.known() && b.identity.known()) {
    return a.identity.dev == b.identity.dev && a.identity.ino == b.identity.ino;
  }
  return a.path == b.path;
}

Json LibJson(const LoadedLibrary& o) {
  Json j = Json::MakeObject();
  j["path"] = o.path;
  j["soname"] = o.soname.empty() ? Json() : Json(o.soname);
  j["build_id"] = o.build_id.empty() ? Json() : Json(o.build_id);
  j["loaded_by"] = o.loaded_by.empty() ? Json() : Json(o.loaded_by);
  j["requested"] = o.requested.empty() ? Json() : Json(o.requested);
  j["how"] = std::string(abi::LibApiName(o.api));
  return j;
}

// A CUDA version pip package suffix: "cu12".
std::string CuSuffix(std::optional<int> major) { return major ? "cu" + std::to_string(*major) : "cuXX"; }

// The pip package that ships a library family, when there is a well-known one.
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
  return std::string(it->second) + "-" + CuSuffix(cuda_major);
}

// ---- per-process state ------------------------------------------------------------------

struct ProcessLibs {
  const ProcessTrace* trace = nullptr;
  LibraryInventory inv;
  std::vector<elf::LibraryFamily> family;         // per object
  std::vector<std::optional<elf::CudaMajor>> cuda;  // per object
  std::vector<FileFacts*> files;                  // per object (nullptr: no file)
  uint64_t end_realtime_ns = 0;
};

class LibraryAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "libraries"; }

  void Run(ReportBuilder& report) override {
    ParseTargetArch(report);
    Json rows = Json::MakeArray();
    std::string text;
    const auto& traces = report.traces();
    for (size_t i = 0; i < traces.size(); ++i) {
      ProcessLibs p = Collect(traces[i]);
      AddRows(p, rows);
      AddTextLines(p, text);
      DuplicateLibrary(report, p);
      MixedCudaMajors(report, p);
      DriverTooOld(report, p);
      NoKernelImage(report, p);
      LoadFailed(report, p);
      SymbolVersionMissing(report, p);
      StaleLibrary(report, p);
      SystemVsPip(report, p);
      CoverageIncomplete(report, p);
      Json& proc = report.process(i);
      Json summary = Json::MakeObject();
      summary["loaded"] = static_cast<uint64_t>(p.inv.objects.size());
      summary["failed_loads"] = static_cast<uint64_t>(p.inv.failures.size());
      summary["dlclose_calls"] = p.inv.dlclose_calls;
      proc["libraries"] = std::move(summary);
    }
    report.root()["libraries"] = std::move(rows);
    if (!text.empty()) report.AddText("Libraries", text);
  }

 private:
  FileFactsCache files_;
  std::optional<elf::GpuArch> what_if_;

  void ParseTargetArch(ReportBuilder& report) {
    const auto& opt = report.options().gpu_arch;
    if (!opt) return;
    absl::StatusOr<elf::ArchSpec> a = elf::ParseArch(*opt);
    if (!a.ok()) {
      report.AddWarning("--gpu-arch " + *opt + ": " + std::string(a.status().message()));
      return;
    }
    what_if_ = elf::GpuArch{a->arch.sm, elf::ArchVariant::kNone};
  }

  ProcessLibs Collect(const ProcessTrace& t) {
    ProcessLibs p;
    p.trace = &t;
    p.inv = LibraryInventory::Of(t);
    p.end_realtime_ns = t.start_realtime_ns() + (t.end_ns() - t.start_ns());
    for (const LoadedLibrary& o : p.inv.objects) {
      p.family.push_back(FamilyOf(o));
      FileFacts* f = (o.is_vdso || o.path.empty()) ? nullptr : &files_.Get(o.path);
      p.files.push_back(f);
      p.cuda.push_back(CudaMajorOf(o, p.family.back(), f));
    }
    return p;
  }

  // The CUDA major a library was built for: from the file (soname, verdef, DT_NEEDED,
  // device code) for libraries that are or use CUDA libraries, else from the soname.
  std::optional<elf::CudaMajor> CudaMajorOf(const LoadedLibrary& o, const elf::LibraryFamily& fam,
                                            FileFacts* f) {
    if (fam.group == elf::LibraryGroup::kCudaDriver || fam.group == elf::LibraryGroup::kSystem) {
      return std::nullopt;
    }
    bool cuda_related = fam.group == elf::LibraryGroup::kCudaToolkit ||
                        fam.group == elf::LibraryGroup::kNvidiaLibrary ||
                        fam.group == elf::LibraryGroup::kFramework;
    if (f != nullptr && f->image && !cuda_related) {
      for (const std::string& n : f->image->needed()) {
        const elf::LibraryFamily nf = elf::ClassifyLibrary(n);
        if (nf.group == elf::LibraryGroup::kCudaToolkit) cuda_related = true;
      }
      if (!cuda_related && (f->image->FindSection(".nv_fatbin") != nullptr)) cuda_related = true;
    }
    if (!cuda_related) return std::nullopt;
    if (f != nullptr && f->image && SameAsLoaded(o, *f)) return files_.CudaMajor(*f);
    if (fam.soname_major_is_cuda_major && fam.soname_major) {
      return elf::CudaMajor{*fam.soname_major, elf::CudaMajorSource::kSoname, "soname " + NameOf(o)};
    }
    return std::nullopt;
  }

  // True when the file on disk is (still) the one the process loaded: same identity, or
  // the same build id.
  static bool SameAsLoaded(const LoadedLibrary& o, const FileFacts& f) {
    if (!f.exists) return false;
    if (!o.identity.known()) return true;  // nothing to compare with: assume so
    const uint64_t mtime = static_cast<uint64_t>(f.st.st_mtim.tv_sec) * 1000000000ull +
                           static_cast<uint64_t>(f.st.st_mtim.tv_nsec);
    if (f.st.st_dev == o.identity.dev && f.st.st_ino == o.identity.ino &&
        static_cast<uint64_t>(f.st.st_size) == o.identity.size && mtime == o.identity.mtime_ns) {
      return true;
    }
    return !o.build_id.empty() && f.image && f.image->build_id() == o.build_id;
  }

  // "same", "changed", "changed during the run", "same build", "missing", "unknown".
  static std::string DiskState(const LoadedLibrary& o, const FileFacts* f, uint64_t end_realtime_ns) {
    if (!o.changes.empty()) return "changed during the run";
    if (f == nullptr || !o.identity.known()) return "unknown";
    if (!f->exists) return "missing";
    const uint64_t mtime = static_cast<uint64_t>(f->st.st_mtim.tv_sec) * 1000000000ull +
                           static_cast<uint64_t>(f->st.st_mtim.tv_nsec);
    if (f->st.st_dev == o.identity.dev && f->st.st_ino == o.identity.ino &&
        static_cast<uint64_t>(f->st.st_size) == o.identity.size && mtime == o.identity.mtime_ns) {
      return "same";
    }
    if (!o.build_id.empty() && f->image && f->image->build_id() == o.build_id) return "same build";
    const uint64_t ctime = static_cast<uint64_t>(f->st.st_ctim.tv_sec) * 1000000000ull +
                           static_cast<uint64_t>(f->st.st_ctim.tv_nsec);
    return ctime <= end_realtime_ns ? "changed during the run" : "changed";
  }

  void AddRows(const ProcessLibs& p, Json& rows) {
    const ProcessTrace& t = *p.trace;
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      const LoadedLibrary& o = p.inv.objects[i];
      Json r = Json::MakeObject();
      r["pid"] = t.pid();
      r["path"] = o.path;
      r["soname"] = o.soname.empty() ? Json() : Json(o.soname);
      r["build_id"] = o.build_id.empty() ? Json() : Json(o.build_id);
      r["loaded_by"] = o.loaded_by.empty() ? Json() : Json(o.loaded_by);
      r["requested"] = o.requested.empty() ? Json() : Json(o.requested);
      r["how"] = std::string(abi::LibApiName(o.api));
      r["flags"] = (o.api == LibApi::kDlopen || o.api == LibApi::kDlmopen)
                       ? Json(abi::DlopenFlagNames(o.flags))
                       : Json();
      r["namespace"] = o.nsid;
      r["base"] = FormatHex(o.base);
      r["ok"] = true;
      r["error"] = Json();
      r["family"] = p.family[i].family.empty() ? Json() : Json(p.family[i].family);
      r["group"] = std::string(GroupName(p.family[i].group));
      r["cuda_major"] = p.cuda[i] ? Json(static_cast<int64_t>(p.cuda[i]->major)) : Json();
      r["cuda_major_evidence"] = p.cuda[i] ? Json(p.cuda[i]->evidence) : Json();
      r["deepbind"] = o.deepbind;
      r["executable"] = o.is_executable;
      r["loaded_at_ns"] = o.loaded_ns >= t.start_ns() ? o.loaded_ns - t.start_ns() : 0;
      r["unloaded"] = o.unloaded_ns.has_value();
      Json file = Json::MakeObject();
      file["dev"] = o.identity.dev;
      file["inode"] = o.identity.ino;
      file["size"] = o.identity.size;
      file["mtime_ns"] = o.identity.mtime_ns;
      r["file"] = std::move(file);
      r["on_disk"] = DiskState(o, p.files[i], p.end_realtime_ns);
      rows.Append(std::move(r));
    }
    for (const FailedLoad& f : p.inv.failures) {
      Json r = Json::MakeObject();
      r["pid"] = t.pid();
      r["path"] = Json();
      r["soname"] = Json();
      r["build_id"] = Json();
      r["loaded_by"] = f.requester.empty() ? Json() : Json(f.requester);
      r["requested"] = f.requested;
      r["how"] = std::string(abi::LibApiName(f.api));
      r["flags"] = abi::DlopenFlagNames(f.flags);
      r["namespace"] = f.nsid;
      r["ok"] = false;
      r["error"] = f.error;
      rows.Append(std::move(r));
    }
  }

  void AddTextLines(const ProcessLibs& p, std::string& text) {
    const ProcessTrace& t = *p.trace;
    size_t cuda_libs = 0;
    std::string lines;
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      if (!p.cuda[i] && p.family[i].group != elf::LibraryGroup::kCudaDriver) continue;
      ++cuda_libs;
      const LoadedLibrary& o = p.inv.objects[i];
      lines += "    " + o.path + (p.cuda[i] ? "  [CUDA " + std::to_string(p.cuda[i]->major) + "]" : "") +
               (o.loaded_by.empty() ? "" : "  by " + Basename(o.loaded_by)) + "\n";
    }
    for (const FailedLoad& f : p.inv.failures) {
      if (f.flags & RTLD_NOLOAD) continue;
      lines += "    FAILED " + f.requested + "  by " + Basename(f.requester) + ": " + f.error + "\n";
    }
    text += "pid " + std::to_string(t.pid()) + ": " + std::to_string(p.inv.objects.size()) +
            " objects loaded, " + std::to_string(cuda_libs) + " CUDA-related, " +
            std::to_string(p.inv.failures.size()) + " failed loads\n" + lines;
  }

  // ---- abi.duplicate-library ---------------------------------------------------------------
  // Rule: in one process and one namespace, two loaded objects with the same library stem
  // (name without "lib", version and wheel hash: libcudart.so.12 and libcudart.so.13 are
  // both "cudart") that are different files (dev+inode, else path) and were mapped at the
  // same time. The executable and the vDSO are ignored.
  void DuplicateLibrary(ReportBuilder& report, const ProcessLibs& p) {
    std::map<std::pair<int64_t, std::string>, std::vector<size_t>> groups;
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      const LoadedLibrary& o = p.inv.objects[i];
      if (o.is_executable || o.is_vdso || NameOf(o).find(".so") == std::string::npos) continue;
      const std::string stem = abi::LibraryStem(NameOf(o));
      if (!stem.empty()) groups[{o.nsid, stem}].push_back(i);
    }
    for (const auto& [key, idx] : groups) {
      std::vector<size_t> dup;
      for (size_t a = 0; a < idx.size(); ++a) {
        for (size_t b = a + 1; b < idx.size(); ++b) {
          const LoadedLibrary& x = p.inv.objects[idx[a]];
          const LoadedLibrary& y = p.inv.objects[idx[b]];
          if (!SameFile(x, y) && Overlap(x, y)) {
            if (std::find(dup.begin(), dup.end(), idx[a]) == dup.end()) dup.push_back(idx[a]);
            if (std::find(dup.begin(), dup.end(), idx[b]) == dup.end()) dup.push_back(idx[b]);
          }
        }
      }
      if (dup.size() < 2) continue;
      std::sort(dup.begin(), dup.end());
      Finding f;
      f.id = "abi.duplicate-library";
      f.severity = Severity::kError;
      f.pid = p.trace->pid();
      const std::string family = p.family[dup[0]].family.empty() ? key.second : p.family[dup[0]].family;
      f.evidence["family"] = family;
      f.evidence["library"] = key.second;
      f.evidence["namespace"] = key.first;
      Json copies = Json::MakeArray();
      std::string list;
      for (size_t i : dup) {
        const LoadedLibrary& o = p.inv.objects[i];
        copies.Append(LibJson(o));
        if (!list.empty()) list += " and ";
        list += o.path + (o.loaded_by.empty() ? "" : " (by " + Basename(o.loaded_by) + ")");
      }
      f.evidence["copies"] = std::move(copies);
      f.summary = "lib" + key.second + " is loaded from " + std::to_string(dup.size()) + " files: " + list;
      f.advice =
          "Two copies of one library are mapped in one process; each symbol binds to whichever "
          "copy the loader searched first, so code built against one copy may run the other. "
          "This usually comes from a pip wheel (site-packages/nvidia/...) plus a system or "
          "toolkit copy reached through LD_LIBRARY_PATH or an absolute dlopen: remove the "
          "extra directory from LD_LIBRARY_PATH (or pin wheels so one copy serves every user), "
          "then restart the runtime.";
      report.AddFinding(std::move(f));
    }
  }

  // ---- abi.mixed-cuda-majors ---------------------------------------------------------------
  // Rule: the loaded (non-driver) libraries of one process were built for more than one
  // CUDA major. A library's major comes from colabtrace_elf's DetectCudaMajor on the file
  // when it is still the loaded one (soname, verdef, DT_NEEDED, device code), else from a
  // soname whose major is the CUDA major (libcudart.so.12, libcublasLt.so.13). Only
  // libraries that are CUDA libraries, frameworks, or link or embed CUDA code count.
  void MixedCudaMajors(ReportBuilder& report, const ProcessLibs& p) {
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

  // ---- abi.driver-too-old --------------------------------------------------------------------
  // Rule: a GpuVersion record with runtime > driver (both > 0); or a CUDA call (GpuError,
  // GpuModule, or an allocation) that failed with 35 (cudaErrorInsufficientDriver), 222 (unsupported PTX version), 803
  // (system driver mismatch) or 804 (forward compatibility not supported).
  void DriverTooOld(ReportBuilder& report, const ProcessLibs& p) {
    const ProcessTrace& t = *p.trace;
    Json versions = Json::MakeArray();
    bool too_old = false;
    int64_t runtime = 0, driver = 0;
    std::string runtime_lib, driver_lib;
    for (const auto& v : t.records.GpuVersion) {
      Json j = Json::MakeObject();
      j["runtime"] = CudaVersionText(v.runtime);
      j["driver"] = CudaVersionText(v.driver);
      j["runtime_lib"] = std::string(t.Str(v.runtime_lib));
      j["driver_lib"] = std::string(t.Str(v.driver_lib));
      versions.Append(std::move(j));
      if (v.runtime > 0 && v.driver > 0 && v.runtime > v.driver) {
        too_old = true;
        runtime = v.runtime;
        driver = v.driver;
        runtime_lib = std::string(t.Str(v.runtime_lib));
        driver_lib = std::string(t.Str(v.driver_lib));
      }
    }
    Json errors = GpuErrors(t, {35, 222, 803, 804});
    if (!too_old && errors.array().empty()) return;
    Finding f;
    f.id = "abi.driver-too-old";
    f.severity = Severity::kError;
    f.pid = t.pid();
    f.evidence["versions"] = std::move(versions);
    f.evidence["errors"] = std::move(errors);
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      if (p.family[i].family == "cuda-driver") {
        f.evidence["driver_library"] = p.inv.objects[i].path;
        break;
      }
    }
    if (too_old) {
      f.summary = "the CUDA runtime " + CudaVersionText(runtime) +
                  (runtime_lib.empty() ? "" : " (" + Basename(runtime_lib) + ")") +
                  " is newer than the driver supports (CUDA " + CudaVersionText(driver) + ")";
    } else {
      f.summary = "CUDA calls failed because the driver is too old for the loaded runtime or its PTX";
    }
    f.advice =
        "The installed NVIDIA driver supports an older CUDA than the libraries this process "
        "loaded. Install wheels built for a CUDA version the driver supports (e.g. torch "
        "+cu121 for a CUDA 12.2 driver; `nvidia-smi` shows the driver's CUDA version), or "
        "upgrade the driver (on data-center GPUs the cuda-compat package also works).";
    report.AddFinding(std::move(f));
  }

  static Json GpuErrors(const ProcessTrace& t, std::initializer_list<int64_t> codes) {
    Json out = Json::MakeArray();
    auto wanted = [&](int64_t rc) { return std::find(codes.begin(), codes.end(), rc) != codes.end(); };
    for (const auto& e : t.records.GpuError) {
      if (!wanted(e.rc)) continue;
      Json j = Json::MakeObject();
      const char* api = format::GpuApiName(e.api);
      j["api"] = api != nullptr ? Json(api) : Json(e.api);
      j["rc"] = e.rc;
      j["caller"] = std::string(t.Str(e.caller));
      out.Append(std::move(j));
    }
    for (const auto& a : t.records.GpuAlloc) {
      if (!wanted(a.rc)) continue;
      Json j = Json::MakeObject();
      const char* api = format::GpuApiName(a.api);
      j["api"] = api != nullptr ? Json(api) : Json(a.api);
      j["rc"] = a.rc;
      j["caller"] = Json();
      out.Append(std::move(j));
      break;  // one allocation failure is evidence enough
    }
    for (const auto& m : t.records.GpuModule) {
      if (!wanted(m.rc)) continue;
      Json j = Json::MakeObject();
      const char* api = format::GpuApiName(m.api);
      j["api"] = api != nullptr ? Json(api) : Json(m.api);
      j["rc"] = m.rc;
      j["caller"] = std::string(t.Str(m.caller));
      j["path"] = std::string(t.Str(m.path));
      out.Append(std::move(j));
    }
    return out;
  }

  // ---- abi.no-kernel-image ------------------------------------------------------------------
  // Rule: for each GPU architecture of the process (the --gpu-arch what-if when given,
  // else each GpuDevice's compute capability), every loaded library that carries device
  // code (.nv_fatbin / __nv_relfatbin) is checked with colabtrace_elf's CanRunOn: a cubin
  // runs on the same major with an equal or higher minor, an 'a' cubin only on its exact
  // SM, an 'f' cubin within its family, PTX JITs to an equal or higher SM. A library with
  // nothing that runs is reported (one finding per process and architecture, listing the
  // libraries). Also reported: a CUDA call (GpuError, GpuModule, allocation) that failed
  // with 209 (no kernel image) or 98 (invalid device function), naming the caller.
  void NoKernelImage(ReportBuilder& report, ProcessLibs& p) {
    const ProcessTrace& t = *p.trace;
    std::vector<std::pair<elf::GpuArch, std::string>> targets;  // arch, source
    if (what_if_) {
      targets.push_back({*what_if_, "--gpu-arch"});
    } else {
      std::set<int> seen;
      for (const auto& d : t.records.GpuDevice) {
        const int sm = static_cast<int>(d.cc_major * 10 + d.cc_minor);
        if (sm > 0 && seen.insert(sm).second) {
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
        const elf::FatbinListing& fb = files_.Fatbin(*fi);
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
      if (libs.array().empty()) continue;
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
      f.evidence["errors"] = errors;
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
      std::string caller = errors.array()[0]["caller"].str();
      f.summary = "a kernel had no image for this GPU (CUDA error " +
                  std::to_string(errors.array()[0]["rc"].as_int()) + ")" +
                  (caller.empty() ? "" : " in " + Basename(caller));
      f.advice =
          "The calling library has no cubin for this GPU and no PTX the driver can JIT. Install "
          "a build that supports this GPU's compute capability (check with "
          "`colabtrace report --gpu-arch sm_XY`).";
      report.AddFinding(std::move(f));
    }
  }

  // ---- abi.load-failed ----------------------------------------------------------------------
  // Rule: a dlopen/dlmopen call (without RTLD_NOLOAD) returned NULL. Calls with the same
  // name, requester and error are one finding with a count. Severity error, or warning
  // when a library with the same stem was loaded successfully later (a fallback worked).
  // The evidence lists copies of the file found elsewhere (LibrarySearch) and other
  // versions of it.
  void LoadFailed(ReportBuilder& report, ProcessLibs& p) {
    const ProcessTrace& t = *p.trace;
    std::map<std::tuple<std::string, std::string, std::string>, std::vector<const FailedLoad*>> groups;
    for (const FailedLoad& fl : p.inv.failures) {
      if (fl.flags & RTLD_NOLOAD) continue;
      groups[{fl.requested, fl.requester, fl.error}].push_back(&fl);
    }
    if (groups.empty()) return;
    abi::LibrarySearch search(t, p.inv);
    for (const auto& [key, calls] : groups) {
      const FailedLoad& fl = *calls.front();
      const abi::DlerrorFacts facts = abi::ParseDlerror(fl.error);
      const std::string wanted = Basename(fl.requested);
      abi::LibrarySearch s = search;
      if (!fl.requester.empty()) {
        FileFacts& rf = files_.Get(fl.requester);
        if (rf.image) s.AddFirst(abi::RunpathDirs(fl.requester, rf.image->runpath(), rf.image->rpath()));
      }
      std::vector<abi::FoundCopy> copies = s.FindCopies(wanted);
      std::vector<abi::FoundCopy> others = s.FindOtherVersions(wanted);
      const std::string stem = abi::LibraryStem(wanted);
      const LoadedLibrary* later = nullptr;
      for (const LoadedLibrary& o : p.inv.objects) {
        if (o.loaded_ns >= fl.ts && abi::LibraryStem(NameOf(o)) == stem && !stem.empty()) {
          later = &o;
          break;
        }
      }
      Finding f;
      f.id = "abi.load-failed";
      f.severity = later != nullptr ? Severity::kWarning : Severity::kError;
      f.pid = t.pid();
      Json& ev = f.evidence;
      ev["requested"] = fl.requested;
      ev["requester"] = fl.requester;
      ev["error"] = fl.error;
      ev["flags"] = abi::DlopenFlagNames(fl.flags);
      ev["api"] = std::string(abi::LibApiName(fl.api));
      ev["count"] = static_cast<uint64_t>(calls.size());
      Json cj = Json::MakeArray();
      for (const abi::FoundCopy& c : copies) {
        Json j = Json::MakeObject();
        j["path"] = c.path;
        j["found_via"] = c.why;
        cj.Append(std::move(j));
      }
      ev["copies_found"] = std::move(cj);
      Json oj = Json::MakeArray();
      for (const abi::FoundCopy& c : others) oj.Append(c.path);
      ev["other_versions_found"] = std::move(oj);
      ev["directories_searched"] = static_cast<uint64_t>(s.dirs().size());
      ev["loaded_later"] = later != nullptr ? Json(later->path) : Json();
      if (fl.stack != 0) {
        Json st = Json::MakeArray();
        for (const std::string& fr : SymbolizeStack(t, t.Stack(fl.stack))) st.Append(fr);
        ev["stack"] = std::move(st);
      }
      f.summary = "loading " + fl.requested + (fl.requester.empty() ? "" : " (from " + Basename(fl.requester) + ")") +
                  " failed" + (calls.size() > 1 ? " " + std::to_string(calls.size()) + " times" : "") +
                  ": " + fl.error;
      if (!copies.empty()) f.summary += "; a copy exists at " + copies[0].path;
      const elf::LibraryFamily fam = elf::ClassifyLibrary(wanted);
      std::optional<int> major;
      if (fam.soname_major_is_cuda_major && fam.soname_major) major = *fam.soname_major;
      const std::string pkg = PipPackageFor(fam.family, major);
      if (facts.kind == abi::DlerrorFacts::kVersionNotFound ||
          facts.kind == abi::DlerrorFacts::kUndefinedSymbol ||
          facts.kind == abi::DlerrorFacts::kSymbolVersion) {
        f.advice = "The file was found but a symbol or symbol version it needs is missing from a "
                   "library it depends on (see abi.symbol-version-missing): an older copy of that "
                   "dependency was loaded first. Make the newer copy win (LD_LIBRARY_PATH order, or "
                   "install matching versions), then restart the runtime.";
      } else if (!copies.empty() && copies[0].why == "LD_LIBRARY_PATH set at run time") {
        f.advice = "A copy exists at " + copies[0].path + ", in a directory added to "
                   "LD_LIBRARY_PATH while the process was running (e.g. os.environ in a notebook). "
                   "The loader reads LD_LIBRARY_PATH only when a process starts: set it before "
                   "starting Python, then restart the runtime.";
      } else if (!copies.empty()) {
        f.advice = "A copy exists at " + copies[0].path + " (" + copies[0].why + "), but not where "
                   "the loader looked for this request. Add its directory to LD_LIBRARY_PATH "
                   "before the process starts, or install the package that provides it into this "
                   "environment, then restart the runtime.";
      } else if (!others.empty()) {
        std::string list;
        for (const auto& o : others) list += (list.empty() ? "" : ", ") + Basename(o.path);
        f.advice = "Only other versions are installed (" + list + "): " +
                   (fl.requester.empty() ? std::string("the requester") : Basename(fl.requester)) +
                   " was built for " + wanted + ". Install the version it needs" +
                   (pkg.empty() ? "" : " (pip install " + pkg + ")") +
                   " or a build of the requester for the installed version, then restart the runtime.";
      } else {
        f.advice = "No copy of " + wanted + " was found on this machine. Install it" +
                   (pkg.empty() ? "" : " (pip install " + pkg + ")") +
                   ", then restart the runtime.";
      }
      report.AddFinding(std::move(f));
    }
  }

  // ---- abi.symbol-version-missing ----------------------------------------------------------
  // Rule: a failed load whose dlerror says a version or a symbol was not found ("version
  // `V' not found (required by R)", "undefined symbol: S[, version V]", "symbol S version
  // V not defined in file P"). The evidence, from the files on disk: the versions the
  // requiring object needs from the provider (verneed), the versions the loaded provider
  // defines (verdef) in the same namespace (GLIBCXX_* etc.), and other copies of the
  // provider that define the missing version.
  void SymbolVersionMissing(ReportBuilder& report, ProcessLibs& p) {
    const ProcessTrace& t = *p.trace;
    std::set<std::string> done;
    for (const FailedLoad& fl : p.inv.failures) {
      const abi::DlerrorFacts e = abi::ParseDlerror(fl.error);
      if (e.kind != abi::DlerrorFacts::kVersionNotFound && e.kind != abi::DlerrorFacts::kUndefinedSymbol &&
          e.kind != abi::DlerrorFacts::kSymbolVersion) {
        continue;
      }
      if (!done.insert(fl.error).second) continue;
      std::string provider, needer;
      if (e.kind == abi::DlerrorFacts::kVersionNotFound) {
        provider = e.object;
        needer = e.required_by;
      } else if (e.kind == abi::DlerrorFacts::kSymbolVersion) {
        provider = e.object;
      } else {
        needer = e.object;
      }
      // An undefined versioned symbol: the provider is the file whose version it is.
      if (provider.empty() && !needer.empty() && !e.version.empty()) {
        FileFacts& nf = files_.Get(needer);
        if (nf.image) {
          for (const elf::VersionRequirement& r : nf.image->verneed()) {
            if (std::find(r.versions.begin(), r.versions.end(), e.version) != r.versions.end()) {
              provider = LoadedPathFor(p, r.file, fl.nsid);
              if (provider.empty()) provider = r.file;
            }
          }
        }
      }
      Finding f;
      f.id = "abi.symbol-version-missing";
      f.severity = Severity::kError;
      f.pid = t.pid();
      Json& ev = f.evidence;
      ev["error"] = fl.error;
      ev["requested"] = fl.requested;
      ev["version"] = e.version.empty() ? Json() : Json(e.version);
      ev["symbol"] = e.symbol.empty() ? Json() : Json(e.symbol);
      ev["required_by"] = needer.empty() ? Json() : Json(needer);
      ev["provider"] = provider.empty() ? Json() : Json(provider);
      std::string provider_soname;
      if (!provider.empty() && provider.front() == '/') {
        FileFacts& pf = files_.Get(provider);
        if (pf.image) {
          provider_soname = pf.image->soname();
          Json defs = Json::MakeArray();
          const std::string prefix = e.version.substr(0, e.version.find_first_of("_0123456789"));
          for (const elf::VersionDefinition& d : pf.image->verdef()) {
            if (d.is_base) continue;
            if (prefix.empty() || d.name.starts_with(prefix)) defs.Append(d.name);
          }
          ev["provider_versions"] = std::move(defs);
          if (!e.symbol.empty()) ev["provider_defines_symbol"] = pf.image->DefinesDynamicSymbol(e.symbol);
        }
      }
      if (!needer.empty() && needer.front() == '/') {
        FileFacts& nf = files_.Get(needer);
        if (nf.image) {
          Json needs = Json::MakeArray();
          for (const elf::VersionRequirement& r : nf.image->verneed()) {
            if (!provider_soname.empty() && r.file != provider_soname) continue;
            for (const std::string& v : r.versions) needs.Append(r.file + ":" + v);
          }
          ev["required_versions"] = std::move(needs);
        }
      }
      // Other copies of the provider that have what is missing.
      Json better = Json::MakeArray();
      const std::string prov_name = provider_soname.empty() ? Basename(provider) : provider_soname;
      if (!prov_name.empty() && !e.version.empty()) {
        abi::LibrarySearch s(t, p.inv);
        for (const abi::FoundCopy& c : s.FindCopies(prov_name)) {
          FileFacts& cf = files_.Get(c.path);
          if (cf.image && cf.image->DefinesVersion(e.version)) better.Append(c.path);
        }
      }
      ev["copies_with_version"] = better;
      const std::string what = !e.version.empty() ? e.version : e.symbol;
      f.summary = (needer.empty() ? std::string("a library") : Basename(needer)) + " needs " + what +
                  (e.symbol.empty() || e.version.empty() ? "" : " (" + e.symbol + ")") + ", which " +
                  (provider.empty() ? std::string("the loaded provider") : provider) + " does not provide";
      f.advice = "An older copy of " + (prov_name.empty() ? std::string("the provider") : prov_name) +
                 " was loaded than the one " + (needer.empty() ? std::string("the library") : Basename(needer)) +
                 " was built against." +
                 (better.array().empty() ? std::string("")
                                         : " A copy that has " + what + " exists at " + better.array()[0].str() +
                                               ": put its directory first in LD_LIBRARY_PATH (for libstdc++, a "
                                               "conda environment's lib/) or") +
                 " install a newer " + (prov_name.empty() ? std::string("provider") : prov_name) +
                 " (for GLIBCXX_*/CXXABI_*: a newer libstdc++6 or conda's libstdcxx-ng; for GLIBC_*: a "
                 "newer OS image), or use a build of the requester made for the older one; then "
                 "restart the runtime.";
      report.AddFinding(std::move(f));
    }
  }

  // The loaded object (same namespace) whose soname or file name is `name`.
  static std::string LoadedPathFor(const ProcessLibs& p, const std::string& name, int64_t nsid) {
    for (const LoadedLibrary& o : p.inv.objects) {
      if (o.nsid == nsid && !o.unloaded_ns && (o.soname == name || Basename(o.path) == name)) return o.path;
    }
    return "";
  }

  // ---- abi.stale-library -------------------------------------------------------------------
  // Rule: a loaded file whose identity (dev, inode, size, mtime) changed while the process
  // ran: seen by the shim's re-checks at later loads and at exit (LibCheck), or found now
  // with a change time (ctime) before the trace's end. Not reported when the file now on
  // disk has the loaded build id (an identical reinstall).
  void StaleLibrary(ReportBuilder& report, ProcessLibs& p) {
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      const LoadedLibrary& o = p.inv.objects[i];
      FileFacts* fi = p.files[i];
      if (fi == nullptr || !o.identity.known()) continue;
      const std::string state = DiskState(o, fi, p.end_realtime_ns);
      if (state != "changed during the run") continue;
      if (!o.build_id.empty() && fi->image && fi->image->build_id() == o.build_id) continue;
      Finding f;
      f.id = "abi.stale-library";
      f.severity = Severity::kWarning;
      f.pid = p.trace->pid();
      Json& ev = f.evidence;
      ev["path"] = o.path;
      ev["loaded_build_id"] = o.build_id.empty() ? Json() : Json(o.build_id);
      Json loaded = Json::MakeObject();
      loaded["dev"] = o.identity.dev;
      loaded["inode"] = o.identity.ino;
      loaded["size"] = o.identity.size;
      loaded["mtime_ns"] = o.identity.mtime_ns;
      ev["loaded_file"] = std::move(loaded);
      Json changes = Json::MakeArray();
      for (const abi::IdentityChange& c : o.changes) {
        Json j = Json::MakeObject();
        j["at_ns_after_start"] = c.ts >= p.trace->start_ns() ? c.ts - p.trace->start_ns() : 0;
        j["seen_at"] = c.when == static_cast<uint64_t>(format::LibCheckWhen::kExit) ? "exit" : "later load";
        if (c.err != 0) {
          j["error"] = std::string(std::strerror(static_cast<int>(-c.err)));
        } else {
          j["inode"] = c.now.ino;
          j["size"] = c.now.size;
          j["mtime_ns"] = c.now.mtime_ns;
        }
        changes.Append(std::move(j));
      }
      ev["changes"] = std::move(changes);
      if (fi->exists) {
        Json now = Json::MakeObject();
        now["inode"] = static_cast<uint64_t>(fi->st.st_ino);
        now["size"] = static_cast<uint64_t>(fi->st.st_size);
        now["build_id"] = fi->image && !fi->image->build_id().empty() ? Json(fi->image->build_id()) : Json();
        ev["on_disk_now"] = std::move(now);
      } else {
        ev["on_disk_now"] = Json();
      }
      f.summary = o.path + " was replaced on disk while the process had it loaded";
      f.advice =
          "The process still runs the old copy, while new processes (and later loads of its "
          "companions) get the new one, so versions mix. This is what `pip install` into a "
          "running notebook does: restart the runtime after installing packages.";
      report.AddFinding(std::move(f));
    }
  }

  // ---- abi.system-vs-pip --------------------------------------------------------------------
  // Rule: one library family (colabtrace_elf's ClassifyLibrary; glibc excluded) has loaded
  // files both under site-packages/dist-packages ("pip") and under system directories
  // (/usr, /lib, /lib64, /opt, /etc, including apt's /usr/lib/python3/dist-packages) in one
  // process.
  void SystemVsPip(ReportBuilder& report, const ProcessLibs& p) {
    std::map<std::string, std::pair<std::vector<size_t>, std::vector<size_t>>> fams;
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      const std::string& fam = p.family[i].family;
      if (fam.empty() || fam == "glibc" || p.inv.objects[i].is_executable) continue;
      const std::string_view origin = Origin(p.inv.objects[i].path);
      if (origin == "pip") fams[fam].first.push_back(i);
      if (origin == "system") fams[fam].second.push_back(i);
    }
    for (const auto& [fam, sides] : fams) {
      if (sides.first.empty() || sides.second.empty()) continue;
      Finding f;
      f.id = "abi.system-vs-pip";
      f.severity = Severity::kWarning;
      f.pid = p.trace->pid();
      f.evidence["family"] = fam;
      Json pip = Json::MakeArray(), sys = Json::MakeArray();
      for (size_t i : sides.first) pip.Append(LibJson(p.inv.objects[i]));
      for (size_t i : sides.second) sys.Append(LibJson(p.inv.objects[i]));
      f.evidence["pip"] = std::move(pip);
      f.evidence["system"] = std::move(sys);
      f.summary = fam + " libraries come both from site-packages (" + p.inv.objects[sides.first[0]].path +
                  ") and from the system (" + p.inv.objects[sides.second[0]].path + ")";
      f.advice =
          "Parts of one library family come from a pip wheel and from a system install, which "
          "are usually different versions. On Colab this is typically LD_LIBRARY_PATH pointing "
          "at /usr/local/cuda or /usr/lib64-nvidia: remove the system directory from "
          "LD_LIBRARY_PATH (or uninstall the wheel) so that one copy serves everything, then "
          "restart the runtime.";
      report.AddFinding(std::move(f));
    }
  }

  // ---- gpu.coverage-incomplete (library causes) ------------------------------------------
  // Rule: (a) a library mapped by an RTLD_DEEPBIND load (itself or as a dependency it
  // brought in) that uses CUDA (a CUDA toolkit/NVIDIA/framework library, or one whose
  // DT_NEEDED names a CUDA toolkit library or libcuda): its CUDA calls bind inside its own
  // scope, past the shim; (b) a loaded object that defines cudaMalloc in its dynamic
  // symbol table but is not libcudart (a statically linked CUDA runtime).
  void CoverageIncomplete(ReportBuilder& report, ProcessLibs& p) {
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
      if (fi != nullptr && fi->image && fam.family != "cudart" && !o.unloaded_ns &&
          NameOf(o) != "libcolabtrace.so" && fi->image->DefinesDynamicSymbol("cudaMalloc")) {
        stat.Append(LibJson(o));
      }
    }
    auto emit = [&](Json objs, std::string_view cause, std::string summary, std::string advice) {
      if (objs.array().empty()) return;
      Finding f;
      f.id = "gpu.coverage-incomplete";
      f.severity = Severity::kInfo;
      f.pid = p.trace->pid();
      f.evidence["cause"] = std::string(cause);
      f.evidence["objects"] = std::move(objs);
      f.summary = std::move(summary);
      f.advice = std::move(advice);
      report.AddFinding(std::move(f));
    };
    const size_t nd = deep.array().size(), ns = stat.array().size();
    emit(std::move(deep), "RTLD_DEEPBIND",
         std::to_string(nd) + " CUDA-using librar" + (nd == 1 ? "y was" : "ies were") +
             " loaded with RTLD_DEEPBIND; their CUDA calls may bypass the trace",
         "RTLD_DEEPBIND makes a library bind to its own dependencies before the preloaded "
         "shim, so its CUDA runtime calls are not seen. Load it without RTLD_DEEPBIND when "
         "possible; GPU totals in this report may be low.");
    emit(std::move(stat), "static cudart",
         std::to_string(ns) + " loaded object" + (ns == 1 ? " defines" : "s define") +
             " cudaMalloc itself (a statically linked CUDA runtime)",
         "A statically linked CUDA runtime does not go through libcudart.so, so its runtime "
         "calls are not traced (its driver calls still are when it reaches the driver through "
         "dlsym or cuGetProcAddress). GPU totals in this report may be low.");
  }
};

}  // namespace

std::unique_ptr<Analysis> MakeLibraryAnalysis() { return std::make_unique<LibraryAnalysis>(); }

}  // namespace colabtrace::analyzer
