// abi.load-failed (error, or info for a load the program handled)
//
// Rule: a dlopen/dlmopen call (without RTLD_NOLOAD) returned NULL. Calls with the same
// name, requester and error are one finding with a count, and one finding for the whole
// job (JobFindings lists the processes). The evidence lists copies of the file found
// elsewhere on this machine (LibrarySearch; skipped for a trace from another host) and
// other versions of it.
//
// Severity (evidence.severity_reason says which case applied), the first that applies:
//   error when
//     - the requested file was found but a library it needs (DT_NEEDED) is missing, or a
//       symbol or symbol version it needs is missing (see abi.symbol-version-missing);
//       except info for a dlopen'd module whose missing dependency is a CUDA-family
//       library, in a process that ended normally with no failed GPU call (CuPy's optional
//       cuTENSOR backend without libcutensor.so.2 installed: seen on the H200);
//   info when the program handled it: the same library (its stem: libcudnn_graph for
//     libcudnn_graph.so.9.19) was mapped at the time or loaded later. cuDNN 9.19 tries
//     libcudnn_graph.so.9.19 and .9.19.0 (and its engines, heuristic) before .so.9, which
//     loads: such a probe of the same soname major is info whatever happened later (the
//     program got the library it probed for). Another major loaded instead (libcudart.so.12
//     failed, libcudart.so.13 loaded) is info too unless the process then failed;
//   info when the load was made inside a signal handler (its stack passes the signal
//     trampoline) of a process that then failed: a crash reporter's optional plugin, such
//     as the JVM's disassembler (hsdis) while it writes hs_err, not the cause of the crash;
//   error when the process then failed (non-zero exit, a fatal signal, or killed) in the
//     image that made the load: an image that exec'd another program did not end the
//     process (pyenv's bash shim probes `enable -f` and execs python, whose exit is
//     python's);
//   for the families that matter here (a CUDA library, the driver, cuDNN, NCCL, cuTENSOR
//     and the other NVIDIA libraries, torch, libstdc++):
//       info for the CUDA driver (libcuda, libnvidia-*) not found in a run that recorded
//         no GPU, which is how a CUDA build of a framework finds out it is on a CPU-only
//         host;
//       error when a GPU call failed in the process;
//       info otherwise: an optional library probed by a healthy process (CuPy probes
//         cuTENSOR and runs on without it);
//   warning when a copy is in a directory the program itself added to LD_LIBRARY_PATH
//     at run time (the loader ignores that: a notebook's os.environ mistake) and the
//     verdict was info;
//   info otherwise: programs probe optional libraries and go on without them (bash's
//     `enable -f` in pyenv's shims, plugin scans).
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "abi/dlerror_text.h"
#include "abi/library_search.h"
#include "abi/rules/rules.h"
#include "model/process_facts.h"
#include "model/symbolize.h"

namespace colabtrace::analyzer::abi {
namespace {

struct Verdict {
  Severity severity;
  std::string reason;
};

bool FamilyMatters(const elf::LibraryFamily& fam) {
  return fam.group == elf::LibraryGroup::kCudaToolkit || fam.group == elf::LibraryGroup::kNvidiaLibrary ||
         fam.group == elf::LibraryGroup::kCudaDriver || fam.group == elf::LibraryGroup::kFramework ||
         fam.family == "libstdc++";
}

// Whether the load at ts was made by the process's last image, the one whose end is the
// process's end: no exec (traced or not) followed it.
bool InLastImage(const ProcessTrace& t, uint64_t ts) {
  if (UntracedExecOf(t) != nullptr) return false;
  return std::none_of(t.records.ProcessStart.begin(), t.records.ProcessStart.end(),
                      [ts](const auto& s) { return s.image > 0 && s.ts > ts; });
}

// The same library (by stem) mapped when `fl` failed or loaded after it, or nullptr.
const LoadedLibrary* LoadedInstead(const std::vector<const LoadedLibrary*>& same_stem, const FailedLoad& fl) {
  for (const LoadedLibrary* o : same_stem) {
    if (!o->unloaded_ns || *o->unloaded_ns >= fl.ts) return o;
  }
  return nullptr;
}

Verdict Judge(const ProcessLibraries& p, const FailedLoad& fl, const DlerrorFacts& facts,
              const elf::LibraryFamily& fam, const LoadedLibrary* instead, bool in_signal_handler) {
  const ProcessTrace& t = *p.trace;
  const bool in_last_image = InLastImage(t, fl.ts);
  const bool failed_after = p.process_failed && in_last_image;
  if (facts.kind == DlerrorFacts::kVersionNotFound || facts.kind == DlerrorFacts::kUndefinedSymbol ||
      facts.kind == DlerrorFacts::kSymbolVersion) {
    return {Severity::kError, "the library was found but a symbol or version it needs is missing"};
  }
  if (facts.kind == DlerrorFacts::kNotFound && !facts.object.empty() &&
      Basename(facts.object) != Basename(fl.requested)) {
    // CuPy's optional backends (cupy_backends/cuda/libs/cutensor.*.so) need a CUDA-family
    // library the user may not have installed: CuPy tries the import and goes on.
    const elf::LibraryFamily missing = elf::ClassifyLibrary(Basename(facts.object));
    if (fl.api != format::LibApi::kDependency && !failed_after && !p.gpu_call_failed &&
        (missing.group == elf::LibraryGroup::kCudaToolkit || missing.group == elf::LibraryGroup::kNvidiaLibrary)) {
      return {Severity::kInfo, "an optional module whose " + missing.family + " dependency " + facts.object +
                                   " is not installed: the process went on without it, ended normally and "
                                   "no GPU call failed"};
    }
    return {Severity::kError, "the library was found but its dependency (DT_NEEDED) " + facts.object +
                                  " is missing"};
  }
  if (instead != nullptr) {
    const std::optional<int> wanted_major = elf::SonameMajor(Basename(fl.requested));
    const std::optional<int> got_major = elf::SonameMajor(NameOf(*instead));
    if (!wanted_major || !got_major || *wanted_major == *got_major) {
      return {Severity::kInfo, "a version probe: the same library (" + NameOf(*instead) + ") was loaded"};
    }
    if (!failed_after) {
      return {Severity::kInfo, "another version of the library (" + NameOf(*instead) +
                                   ") was loaded instead and the process went on"};
    }
  }
  if (failed_after && in_signal_handler && !FamilyMatters(fam)) {
    return {Severity::kInfo, "an optional load made inside a signal handler while the process was failing "
                             "(a crash reporter's plugin), not a cause of the failure"};
  }
  if (failed_after) return {Severity::kError, "the process failed after this load failed"};
  if (FamilyMatters(fam)) {
    const bool no_gpu = t.records.GpuDevice.empty() && t.records.GpuAlloc.empty();
    if (fam.group == elf::LibraryGroup::kCudaDriver && no_gpu) {
      return {Severity::kInfo, "no CUDA driver on this host and no GPU use recorded: a CPU-only run"};
    }
    if (p.gpu_call_failed) {
      return {Severity::kError, "a " + fam.family + " library (a family CUDA programs depend on), and a GPU "
                                "call failed in this process"};
    }
    return {Severity::kInfo, "an optional " + fam.family + " library: the process went on without it, "
                             "ended normally and no GPU call failed"};
  }
  if (!in_last_image) {
    return {Severity::kInfo, "an optional load: the image that made it went on and exec'd another program"};
  }
  return {Severity::kInfo, "an optional load: the process went on and ended normally"};
}

void LoadFailedOf(const ProcessLibraries& p, JobContext& ctx) {
  const ProcessTrace& t = *p.trace;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const FailedLoad*>> groups;
  for (const FailedLoad& fl : p.inv.failures) {
    if (fl.flags & RTLD_NOLOAD) continue;
    groups[{fl.requested, fl.requester, fl.error}].push_back(&fl);
  }
  if (groups.empty()) return;
  // Library names of the loaded objects, for "the same library loaded instead".
  std::map<std::string, std::vector<const LoadedLibrary*>> by_stem;
  for (const LoadedLibrary& o : p.inv.objects) by_stem[LibraryStem(NameOf(o))].push_back(&o);
  std::optional<LibrarySearch> search;
  if (p.host.same_host) search.emplace(t, p.inv);
  constexpr size_t kMaxSearched = 64;  // disk searches per process (each reads directories)
  size_t searched = 0;
  for (const auto& [key, calls] : groups) {
    const FailedLoad& fl = *calls.front();
    const DlerrorFacts facts = ParseDlerror(fl.error);
    const std::string wanted = std::string(Basename(fl.requested));
    std::vector<FoundCopy> copies, others;
    std::optional<LibrarySearch> s;
    if (!search) {
      ctx.files.Skipped(FindingName(FindingId::kAbiLoadFailed), "trace from another host: no search for copies", fl.requested);
    } else if (searched++ >= kMaxSearched) {
      ctx.files.Skipped(FindingName(FindingId::kAbiLoadFailed), "more than 64 in one process: no search for copies", fl.requested);
    } else {
      s = *search;
      if (!fl.requester.empty()) {
        FileFacts* rf = p.FileNamed(fl.requester, ctx.files);
        if (rf != nullptr && rf->image) s->AddFirst(RunpathDirs(fl.requester, rf->image->runpath(), rf->image->rpath()));
      }
      copies = s->FindCopies(wanted);
      others = s->FindOtherVersions(wanted);
    }
    const std::string stem = LibraryStem(wanted);
    const LoadedLibrary* later = nullptr;
    if (auto it = by_stem.find(stem); it != by_stem.end() && !stem.empty()) later = LoadedInstead(it->second, fl);
    const elf::LibraryFamily fam = elf::ClassifyLibrary(wanted);
    std::vector<std::string> stack;
    if (fl.stack != 0) stack = ctx.symbols.Stack(t, t.Stack(fl.stack));
    const bool in_signal_handler = std::any_of(stack.begin(), stack.end(), [](const std::string& frame) {
      return frame.starts_with(kSignalFrame);
    });
    Verdict verdict = Judge(p, fl, facts, fam, later, in_signal_handler);
    if (verdict.severity == Severity::kInfo && later == nullptr && !copies.empty() &&
        copies[0].why == "LD_LIBRARY_PATH set at run time") {
      // The program pointed LD_LIBRARY_PATH at the library itself: it wanted this load.
      verdict = {Severity::kWarning, "a copy is in a directory the program added to LD_LIBRARY_PATH at run time"};
    }
    Finding f = Finding::Of(FindingId::kAbiLoadFailed, t.pid());
    f.severity = verdict.severity;
    Json& ev = f.evidence;
    ev["requested"] = fl.requested;
    ev["requester"] = fl.requester;
    ev["error"] = fl.error;
    ev["flags"] = DlopenFlagNames(fl.flags);
    ev["api"] = std::string(LibApiName(fl.api));
    ev["count"] = static_cast<uint64_t>(calls.size());
    ev["severity_reason"] = verdict.reason;
    Json cj = Json::MakeArray();
    for (const FoundCopy& c : copies) {
      Json j = Json::MakeObject();
      j["path"] = c.path;
      j["found_via"] = c.why;
      cj.Append(std::move(j));
    }
    ev["copies_found"] = std::move(cj);
    Json oj = Json::MakeArray();
    for (const FoundCopy& c : others) oj.Append(c.path);
    ev["other_versions_found"] = std::move(oj);
    ev["directories_searched"] = static_cast<uint64_t>(s ? s->dirs().size() : 0);
    if (!p.host.same_host) ev["disk_checks"] = p.host.DiskChecksLabel();
    ev["loaded_later"] = later != nullptr ? Json(later->path) : Json();
    if (fl.stack != 0) {
      Json st = Json::MakeArray();
      for (const std::string& fr : stack) st.Append(fr);
      ev["stack"] = std::move(st);
    }
    f.summary = "loading " + fl.requested + (fl.requester.empty() ? "" : " (from " + std::string(Basename(fl.requester)) + ")") +
                " failed" + (calls.size() > 1 ? " " + std::to_string(calls.size()) + " times" : "") +
                ": " + fl.error;
    if (!copies.empty()) f.summary += "; a copy exists at " + copies[0].path;
    std::optional<int> major;
    if (fam.soname_major_is_cuda_major && fam.soname_major) major = *fam.soname_major;
    const std::string pkg = PipPackageFor(fam.family, major);
    if (verdict.severity == Severity::kInfo && copies.empty()) {
      f.advice = "Nothing to do if the program does not need " + wanted +
                 ": it tried the load and went on without it" +
                 (later != nullptr ? " (it loaded " + later->path + " instead)" : std::string()) + ".";
    } else if (facts.kind == DlerrorFacts::kVersionNotFound || facts.kind == DlerrorFacts::kUndefinedSymbol ||
               facts.kind == DlerrorFacts::kSymbolVersion) {
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
      for (const auto& o : others) list += (list.empty() ? "" : ", ") + std::string(Basename(o.path));
      f.advice = "Only other versions are installed (" + list + "): " +
                 (fl.requester.empty() ? std::string("the requester") : std::string(Basename(fl.requester))) +
                 " was built for " + wanted + ". Install the version it needs" +
                 (pkg.empty() ? "" : " (pip install " + pkg + ")") +
                 " or a build of the requester for the installed version, then restart the runtime.";
    } else {
      f.advice = std::string(s ? "No copy of " + wanted + " was found on this machine. "
                               : "The library was not found. ") +
                 "Install it" + (pkg.empty() ? "" : " (pip install " + pkg + ")") +
                 ", then restart the runtime.";
    }
    ctx.findings.Add(std::move(f), fl.requested + '\0' + fl.requester + '\0' + fl.error);
  }
}

void LoadFailedRule(RuleContext& rule) { ForEachProcessLibraries(rule, LoadFailedOf); }

const RuleRegistration kLoadFailedRuleRegistration(LoadFailedRule, {FindingId::kAbiLoadFailed});

}  // namespace

}  // namespace colabtrace::analyzer::abi
