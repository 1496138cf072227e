// The library / ABI analysis: libraries[] and the abi.* findings, plus
// gpu.coverage-incomplete for its library-derived causes (RTLD_DEEPBIND loads of CUDA
// users, statically linked cudart).
//
// It builds the typed model of each process once (abi::ProcessLibraries) and runs the
// rules in analyzer/abi/rules/ over it, one file per finding id, each with its exact rule
// written above it; docs/ARCHITECTURE.md lists them too. The abi.* findings are merged
// across processes (one per cause for the job, abi::JobFindings). This file only writes
// the libraries[] rows, the libraries_files summary (which recorded library files could
// be read, and which file-based checks were skipped: abi::LibraryFiles) and the text
// section.
#include <dlfcn.h>

#include <algorithm>
#include <map>

#include "abi/job_findings.h"
#include "abi/library_files.h"
#include "abi/library_model.h"
#include "abi/rules/rules.h"
#include "report/analyses.h"
#include "model/process_facts.h"
#include "model/process_role.h"
#include "elf/cuda_arch.h"
#include "report/report.h"

namespace colabtrace::analyzer {
namespace {

using abi::FailedLoad;
using abi::LoadedLibrary;
using format::LibApi;

// One process's part of the Libraries text section.
struct ProcessLibrariesText {
  int64_t pid = 0;
  std::string role;  // ProcessRole of its processes[] row
  size_t objects = 0, cuda = 0, failed = 0;
  std::vector<std::string> lines;  // its CUDA-related objects and failed loads, indented
};

// "5" or "5-7": the range of a count over a group.
std::string Range(size_t lo, size_t hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

// One paragraph per process, or past kProcessRowsBeforeGrouping one per role: its
// processes' counts (a range where they differ) and every line any of them has, with the
// number of processes that have it where that is not all of them.
std::string LibrariesText(const std::vector<ProcessLibrariesText>& procs) {
  std::string text;
  if (procs.size() <= kProcessRowsBeforeGrouping) {
    for (const ProcessLibrariesText& p : procs) {
      text += "pid " + std::to_string(p.pid) + ": " + std::to_string(p.objects) + " objects loaded, " +
              std::to_string(p.cuda) + " CUDA-related, " + std::to_string(p.failed) + " failed loads\n";
      for (const std::string& l : p.lines) text += l;
    }
    return text;
  }
  struct Group {
    std::vector<int64_t> pids;
    size_t objects_lo = SIZE_MAX, objects_hi = 0, cuda_lo = SIZE_MAX, cuda_hi = 0, failed_lo = SIZE_MAX,
           failed_hi = 0;
    std::vector<std::string> lines;      // first-seen order
    std::map<std::string, size_t> seen;  // line -> processes that have it
  };
  std::map<std::string, Group> groups;
  for (const ProcessLibrariesText& p : procs) {
    Group& g = groups[p.role];
    g.pids.push_back(p.pid);
    g.objects_lo = std::min(g.objects_lo, p.objects), g.objects_hi = std::max(g.objects_hi, p.objects);
    g.cuda_lo = std::min(g.cuda_lo, p.cuda), g.cuda_hi = std::max(g.cuda_hi, p.cuda);
    g.failed_lo = std::min(g.failed_lo, p.failed), g.failed_hi = std::max(g.failed_hi, p.failed);
    std::map<std::string, bool> mine;  // a line twice in one process counts once
    for (const std::string& l : p.lines) {
      if (!mine.emplace(l, true).second) continue;
      if (g.seen[l]++ == 0) g.lines.push_back(l);
    }
  }
  std::vector<std::pair<const std::string*, const Group*>> order;
  for (const auto& [role, g] : groups) order.emplace_back(&role, &g);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->pids.size() > b.second->pids.size(); });
  text += std::to_string(procs.size()) + " processes in " + std::to_string(groups.size()) +
          " groups (by command and role; `report --format json` lists each process's libraries)\n";
  for (const auto& [role, g] : order) {
    const size_t n = g->pids.size();
    text += EscapeForTerminal(*role).substr(0, 64) + ": " + std::to_string(n) +
            (n == 1 ? " process (pid " : " processes (pids ") + PidSample(g->pids) + "), " +
            Range(g->objects_lo, g->objects_hi) + " objects loaded, " + Range(g->cuda_lo, g->cuda_hi) +
            " CUDA-related, " + Range(g->failed_lo, g->failed_hi) + " failed loads\n";
    for (const std::string& l : g->lines) {
      const size_t have = g->seen.at(l);
      if (have == n) {
        text += l;
      } else {
        text += l.substr(0, l.size() - 1) + "  (" + std::to_string(have) + " of " + std::to_string(n) + ")\n";
      }
    }
  }
  return text;
}

class LibraryAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "libraries"; }

  void Run(ReportBuilder& report) override {
    abi::LibraryFiles files(report.options().sysroot);
    abi::JobFindings findings;
    abi::RuleContext ctx{files, ParseTargetArch(report), findings, report.run().symbols()};
    Json rows = Json::MakeArray();
    std::vector<ProcessLibrariesText> text;
    const auto& traces = report.traces();
    for (size_t i = 0; i < traces.size(); ++i) {
      const abi::ProcessLibraries p = abi::ProcessLibraries::Of(report.run(), traces[i], files);
      AddRows(p, rows);
      // `colabtrace run`'s own trace loads nothing of the job's: no line for it.
      if (!IsRunWrapper(traces[i])) text.push_back(TextOf(p, ProcessRole(report.process(i))));
      abi::DuplicateLibraryRule(p, ctx);
      abi::MixedCudaMajorsRule(p, ctx);
      abi::DriverTooOldRule(p, ctx);
      abi::NoKernelImageRule(p, ctx);
      abi::LoadFailedRule(p, ctx);
      abi::SymbolVersionMissingRule(p, ctx);
      abi::StaleLibraryRule(p, ctx);
      abi::SystemVsPipRule(p, ctx);
      abi::CoverageIncompleteRule(p, ctx, report);
      Json& proc = report.process(i);
      Json summary = Json::MakeObject();
      summary["loaded"] = static_cast<uint64_t>(p.inv.objects.size());
      summary["failed_loads"] = static_cast<uint64_t>(p.inv.failures.size());
      summary["dlclose_calls"] = p.inv.dlclose_calls;
      if (!p.host.same_host) summary["disk_checks"] = p.host.DiskChecksLabel();
      proc["libraries"] = std::move(summary);
    }
    // A child that ran a program the shim could not follow (a processes[] row of its
    // parent's making, traced: false) had that program mapped, and nothing ld.so loaded
    // that a trace could show.
    for (Json* row : report.UntracedProcesses()) {
      Json& proc = *row;
      const Json* exe = ReportBuilder::UntracedProgram(proc);
      if (exe == nullptr) continue;
      Json r = Json::MakeObject();  // every field a traced row has; unknown ones null
      r["pid"] = proc["pid"];
      r["path"] = *exe;
      for (const char* k : {"soname", "build_id", "loaded_by", "requested"}) r[k] = Json();
      r["how"] = std::string(abi::LibApiName(LibApi::kStartup));
      r["flags"] = Json();
      r["namespace"] = 0;
      r["base"] = Json();
      r["ok"] = true;
      r["error"] = Json();
      r["family"] = Json();
      r["group"] = std::string(abi::GroupName(elf::LibraryGroup::kUnknown));
      r["cuda_major"] = Json();
      r["cuda_major_evidence"] = Json();
      r["deepbind"] = false;
      r["executable"] = true;
      r["image"] = 0;
      r["loaded_at_ns"] = 0;
      r["unloaded"] = false;
      r["file"] = Json();
      r["on_disk"] = "unknown";
      rows.Append(std::move(r));
      Json summary = Json::MakeObject();
      summary["loaded"] = 1;
      summary["failed_loads"] = 0;
      summary["dlclose_calls"] = 0;
      proc["libraries"] = std::move(summary);
    }
    findings.MoveTo(report);
    report.root()["libraries"] = std::move(rows);
    report.root()["libraries_files"] = files.Summary();
    if (!text.empty()) report.AddText("Libraries", files.SummaryText() + LibrariesText(text));
  }

 private:
  static std::optional<elf::GpuArch> ParseTargetArch(ReportBuilder& report) {
    const auto& opt = report.options().gpu_arch;
    if (!opt) return std::nullopt;
    absl::StatusOr<elf::ArchSpec> a = elf::ParseArch(*opt);
    if (!a.ok()) {
      report.AddWarning("--gpu-arch " + *opt + ": " + std::string(a.status().message()));
      return std::nullopt;
    }
    return elf::GpuArch{a->arch.sm, elf::ArchVariant::kNone};
  }

  void AddRows(const abi::ProcessLibraries& p, Json& rows) {
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
      r["group"] = std::string(abi::GroupName(p.family[i].group));
      r["cuda_major"] = p.cuda[i] ? Json(static_cast<int64_t>(p.cuda[i]->major)) : Json();
      r["cuda_major_evidence"] = p.cuda[i] ? Json(p.cuda[i]->evidence) : Json();
      r["deepbind"] = o.deepbind;
      r["executable"] = o.is_executable;
      r["image"] = o.image;
      r["loaded_at_ns"] = o.loaded_ns >= t.start_ns() ? o.loaded_ns - t.start_ns() : 0;
      r["unloaded"] = o.unloaded_ns.has_value();
      Json file = Json::MakeObject();
      file["dev"] = o.identity.dev;
      file["inode"] = o.identity.ino;
      file["size"] = o.identity.size;
      file["mtime_ns"] = o.identity.mtime_ns;
      r["file"] = std::move(file);
      r["on_disk"] = abi::DiskState(o, p.on_disk[i], p.end_realtime_ns);
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

  static ProcessLibrariesText TextOf(const abi::ProcessLibraries& p, std::string role) {
    ProcessLibrariesText out;
    out.pid = p.trace->pid();
    out.role = std::move(role);
    out.objects = p.inv.objects.size();
    out.failed = p.inv.failures.size();
    for (size_t i = 0; i < p.inv.objects.size(); ++i) {
      if (!p.cuda[i] && p.family[i].group != elf::LibraryGroup::kCudaDriver) continue;
      ++out.cuda;
      const LoadedLibrary& o = p.inv.objects[i];
      out.lines.push_back("    " + o.path + (p.cuda[i] ? "  [CUDA " + std::to_string(p.cuda[i]->major) + "]" : "") +
                          (o.loaded_by.empty() ? "" : "  by " + std::string(Basename(o.loaded_by))) + "\n");
    }
    for (const FailedLoad& f : p.inv.failures) {
      if (f.flags & RTLD_NOLOAD) continue;
      out.lines.push_back("    FAILED " + f.requested + "  by " + std::string(Basename(f.requester)) + ": " +
                          f.error + "\n");
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Analysis> MakeLibraryAnalysis() { return std::make_unique<LibraryAnalysis>(); }

}  // namespace colabtrace::analyzer
