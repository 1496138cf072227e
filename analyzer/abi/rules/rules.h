// The abi.* rules (and gpu.coverage-incomplete's library causes), one file per finding
// id in this folder, each with its rule, thresholds and advice beside it. Each reads the
// typed model of one process (ProcessLibraries); LibraryAnalysis
// (analyzer/abi/library_analysis.cpp) computes the model once per process and runs them
// in order. The abi.* rules add their findings to ctx.findings with a cause, so that one
// cause is one finding for the whole job (JobFindings), whatever number of processes it
// touched; a rule that wanted a file it could not read says so (ctx.files.Skipped).
#pragma once

#include <optional>

#include "abi/file_facts.h"
#include "abi/job_findings.h"
#include "abi/library_files.h"
#include "abi/library_model.h"
#include "elf/cuda_arch.h"
#include "report/report.h"

namespace colabtrace::analyzer::abi {

// What the rules share across processes: the library files, the --gpu-arch what-if and
// the job's findings.
struct RuleContext {
  LibraryFiles& files;
  std::optional<elf::GpuArch> what_if;
  JobFindings& findings;
  SymbolCache& symbols;  // the run model's
};

void DuplicateLibraryRule(const ProcessLibraries& p, RuleContext& ctx);      // abi.duplicate-library
void MixedCudaMajorsRule(const ProcessLibraries& p, RuleContext& ctx);       // abi.mixed-cuda-majors
void DriverTooOldRule(const ProcessLibraries& p, RuleContext& ctx);          // abi.driver-too-old
void NoKernelImageRule(const ProcessLibraries& p, RuleContext& ctx);         // abi.no-kernel-image
void LoadFailedRule(const ProcessLibraries& p, RuleContext& ctx);            // abi.load-failed
void SymbolVersionMissingRule(const ProcessLibraries& p, RuleContext& ctx);  // abi.symbol-version-missing
void StaleLibraryRule(const ProcessLibraries& p, RuleContext& ctx);          // abi.stale-library
void SystemVsPipRule(const ProcessLibraries& p, RuleContext& ctx);           // abi.system-vs-pip
// gpu.coverage-incomplete: one finding per process (the GPU totals it qualifies are too).
void CoverageIncompleteRule(const ProcessLibraries& p, RuleContext& ctx, ReportBuilder& report);

}  // namespace colabtrace::analyzer::abi
