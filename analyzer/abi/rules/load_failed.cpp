// abi.load-failed (error, or info for an optional load the program handled)
//
// Rule: a dlopen/dlmopen call (without RTLD_NOLOAD) returned NULL. Calls with the same
// name, requester and error are one finding with a count. The evidence lists copies of
// the file found elsewhere on this machine (LibrarySearch; skipped for a trace from
// another host) and other versions of it.
//
// Severity (evidence.severity_reason says which case applied):
//   error when
//     - the process then failed (non-zero exit, a fatal signal, or killed) in the image
//       that made the load: an image that exec'd another program did not end the process
//       (pyenv's bash shim probes `enable -f` and execs python, whose exit is python's);
//     - the requested file was found but a library it needs (DT_NEEDED) is missing, or a
//       symbol or symbol version it needs is missing (see abi.symbol-version-missing);
//     - the library belongs to a family that matters here: a CUDA library, cuDNN, NCCL
//       and the other NVIDIA libraries, torch, libstdc++ (a warning when another
//       version of it was loaded afterwards: a fallback that worked);
//   warning when a copy is in a directory the program itself added to LD_LIBRARY_PATH
//     at run time (the loader ignores that: a notebook's os.environ mistake);
//   info when the load was made inside a signal handler (its stack passes the signal
//     trampoline) of a process that then failed: a crash reporter's optional plugin, such
//     as the JVM's disassembler (hsdis) while it writes hs_err, not the cause of the crash;
//   info otherwise: programs probe optional libraries and go on without them (bash's
//   `enable -f` in pyenv's shims, plugin scans). Also info: the CUDA driver (libcuda,
//   libnvidia-*) not found in a run that recorded no GPU and went on normally, which is
//   how a CUDA build of a framework finds out it is on a CPU-only host.
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "abi/dlerror_text.h"
#include "abi/library_search.h"
#include "abi/rules/rules.h"
#include "analyses/process_facts.h"
#include "analyses/symbolize.h"

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

Verdict Judge(const ProcessLibraries& p, const FailedLoad& fl, const DlerrorFacts& facts,
              const elf::LibraryFamily& fam, const LoadedLibrary* later, bool in_signal_handler) {
  const ProcessTrace& t = *p.trace;
  const bool in_last_image = InLastImage(t, fl.ts);
  const bool failed_after = p.process_failed && in_last_image;
  if (failed_after && in_signal_handler && !FamilyMatters(fam)) {
    return {Severity::kInfo, "an optional load made inside a signal handler while the process was failing "
                             "(a crash reporter's plugin), not a cause of the failure"};
  }
  if (failed_after) return {Severity::kError, "the process failed after this load failed"};
  if (facts.kind == DlerrorFacts::kVersionNotFound || facts.kind == DlerrorFacts::kUndefinedSymbol ||
      facts.kind == DlerrorFacts::kSymbolVersion) {
    return {Severity::kError, "the library was found but a symbol or version it needs is missing"};
  }
  if (facts.kind == DlerrorFacts::kNotFound && !facts.object.empty() &&
      Basename(facts.object) != Basename(fl.requested)) {
    return {Severity::kError, "the library was found but its dependency (DT_NEEDED) " + facts.object +
                                  " is missing"};
  }
  if (FamilyMatters(fam)) {
    const bool no_gpu = t.records.GpuDevice.empty() && t.records.GpuAlloc.empty();
    if (fam.group == elf::LibraryGroup::kCudaDriver && no_gpu) {
      return {Severity::kInfo, "no CUDA driver on this host and no GPU use recorded: a CPU-only run"};
    }
    if (later != nullptr) {
      return {Severity::kWarning, "a " + fam.family + " library; another version (" + NameOf(*later) +
                                      ") was loaded instead"};
    }
    return {Severity::kError, "a " + fam.family + " library (a family CUDA programs depend on)"};
  }
  if (!in_last_image) {
    return {Severity::kInfo, "an optional load: the image that made it went on and exec'd another program"};
  }
  return {Severity::kInfo, "an optional load: the process went on and ended normally"};
}

}  // namespace

void LoadFailedRule(const ProcessLibraries& p, RuleContext& ctx, ReportBuilder& report) {
  const ProcessTrace& t = *p.trace;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<const FailedLoad*>> groups;
  for (const FailedLoad& fl : p.inv.failures) {
    if (fl.flags & RTLD_NOLOAD) continue;
    groups[{fl.requested, fl.requester, fl.error}].push_back(&fl);
  }
  if (groups.empty()) return;
  // Library names of the loaded objects, for "a library of the same stem loaded later".
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
    if (search && searched++ < kMaxSearched) {
      s = *search;
      if (!fl.requester.empty()) {
        FileFacts& rf = ctx.files.Get(fl.requester);
        if (rf.image) s->AddFirst(RunpathDirs(fl.requester, rf.image->runpath(), rf.image->rpath()));
      }
      copies = s->FindCopies(wanted);
      others = s->FindOtherVersions(wanted);
    }
    const std::string stem = LibraryStem(wanted);
    const LoadedLibrary* later = nullptr;
    if (auto it = by_stem.find(stem); it != by_stem.end() && !stem.empty()) {
      for (const LoadedLibrary* o : it->second) {
        if (o->loaded_ns >= fl.ts) {
          later = o;
          break;
        }
      }
    }
    const elf::LibraryFamily fam = elf::ClassifyLibrary(wanted);
    std::vector<std::string> stack;
    if (fl.stack != 0) stack = SymbolizeStack(t, t.Stack(fl.stack));
    const bool in_signal_handler = std::any_of(stack.begin(), stack.end(), [](const std::string& frame) {
      return frame.starts_with(kSignalFrame);
    });
    Verdict verdict = Judge(p, fl, facts, fam, later, in_signal_handler);
    if (verdict.severity == Severity::kInfo && !copies.empty() && copies[0].why == "LD_LIBRARY_PATH set at run time") {
      // The program pointed LD_LIBRARY_PATH at the library itself: it wanted this load.
      verdict = {Severity::kWarning, "a copy is in a directory the program added to LD_LIBRARY_PATH at run time"};
    }
    Finding f;
    f.id = "abi.load-failed";
    f.severity = verdict.severity;
    f.pid = t.pid();
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
    report.AddFinding(std::move(f));
  }
}

}  // namespace colabtrace::analyzer::abi
