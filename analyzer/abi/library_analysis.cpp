// The library / ABI analysis: libraries[] and the abi.* findings.
//
// It reads the typed model of each process (abi::ProcessLibraries, the run model's
// LibraryModels) and runs the abi.* rules of analyzer/abi/rules/ (RunRules), one file
// per finding id, each with its exact rule written above it; docs/ARCHITECTURE.md lists
// them too (gpu.coverage-incomplete, in that folder too, is run by the GPU analysis).
// The abi.* findings are merged across processes (one per cause for the job,
// abi::JobFindings). This file only writes the libraries[] rows, the libraries_files
// summary (which recorded library files could be read, and which file-based checks were
// skipped: abi::LibraryFiles); the text section is
// render/text/libraries_section.cpp.
#include <dlfcn.h>

#include "abi/job_findings.h"
#include "abi/library_files.h"
#include "abi/library_model.h"
#include "abi/rules/rules.h"
#include "report/analyses.h"
#include "model/process_facts.h"
#include "elf/cuda_arch.h"
#include "report/report.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer {
namespace {

using abi::FailedLoad;
using abi::LoadedLibrary;
using format::LibApi;

class LibraryAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "libraries"; }

  void Run(ReportBuilder& report) override {
    const abi::LibraryModels& libraries = report.run().Get<abi::LibraryModels>();
    if (!libraries.what_if_error.empty()) report.AddWarning(libraries.what_if_error);
    abi::LibraryFiles& files = *libraries.files;
    Json rows = Json::MakeArray();
    const auto& traces = report.traces();
    for (size_t i = 0; i < traces.size(); ++i) {
      const abi::ProcessLibraries& p = libraries.of_trace[i];
      AddRows(p, rows);
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
    RunRules(report, FindingArea::kAbi);
    report.root()["libraries"] = std::move(rows);
    report.root()["libraries_files"] = files.Summary();
  }

 private:
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

};

}  // namespace

std::unique_ptr<Analysis> MakeLibraryAnalysis() { return std::make_unique<LibraryAnalysis>(); }

}  // namespace colabtrace::analyzer
