// The abi.* rules (and gpu.coverage-incomplete, whose causes are partly the libraries a
// process loaded), one file per finding id in this folder, each with its rule and
// thresholds beside it and registered in the rule registry (report/rule_registry.h).
// Each reads the typed model of every process (ProcessLibraries, the run model's
// LibraryModels) through ForEachProcessLibraries; LibraryAnalysis
// (analyzer/abi/library_analysis.cpp) runs them with RunRules. The abi.* rules add their
// findings to ctx.findings with a cause, so that one cause is one finding for the whole
// job (JobFindings), whatever number of processes it touched; a rule that wanted a file
// it could not read says so (ctx.files.Skipped).
#pragma once

#include <optional>

#include "abi/file_facts.h"
#include "core/format.h"
#include "abi/job_findings.h"
#include "abi/library_files.h"
#include "abi/library_model.h"
#include "elf/cuda_arch.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer::abi {

// What an abi.* rule shares across the processes it looks at: the library files, the
// --gpu-arch what-if and the job's findings.
struct JobContext {
  LibraryFiles& files;
  std::optional<elf::GpuArch> what_if;
  JobFindings& findings;
  SymbolCache& symbols;  // the run model's
};

// Runs per_process(p, job) over every trace's ProcessLibraries, in trace order, then adds
// the job's findings (one per cause) through `rule`.
template <class PerProcess>
void ForEachProcessLibraries(RuleContext& rule, PerProcess&& per_process) {
  const LibraryModels& libraries = rule.run().Get<LibraryModels>();
  JobFindings findings;
  JobContext job{*libraries.files, libraries.what_if, findings, rule.run().symbols()};
  for (const ProcessLibraries& p : libraries.of_trace) per_process(p, job);
  findings.MoveTo(rule);
}

}  // namespace colabtrace::analyzer::abi
