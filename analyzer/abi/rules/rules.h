// The abi.* rules (and gpu.coverage-incomplete's library causes), one file per finding
// id in this folder, each with its rule, thresholds and advice beside it. Each reads the
// typed model of one process (ProcessLibraries) and adds findings; LibraryAnalysis
// (analyzer/abi/library_analysis.cpp) computes the model once and runs them in order.
#pragma once

#include <optional>

#include "abi/file_facts.h"
#include "abi/library_model.h"
#include "elf/cuda_arch.h"
#include "report/report.h"

namespace colabtrace::analyzer::abi {

// What the rules share across processes: the file cache and the --gpu-arch what-if.
struct RuleContext {
  FileFactsCache& files;
  std::optional<elf::GpuArch> what_if;
};

void DuplicateLibraryRule(const ProcessLibraries& p, ReportBuilder& report);       // abi.duplicate-library
void MixedCudaMajorsRule(const ProcessLibraries& p, ReportBuilder& report);        // abi.mixed-cuda-majors
void DriverTooOldRule(const ProcessLibraries& p, ReportBuilder& report);           // abi.driver-too-old
void NoKernelImageRule(const ProcessLibraries& p, RuleContext& ctx, ReportBuilder& report);
void LoadFailedRule(const ProcessLibraries& p, RuleContext& ctx, ReportBuilder& report);
void SymbolVersionMissingRule(const ProcessLibraries& p, RuleContext& ctx, ReportBuilder& report);
void StaleLibraryRule(const ProcessLibraries& p, ReportBuilder& report);           // abi.stale-library
void SystemVsPipRule(const ProcessLibraries& p, ReportBuilder& report);            // abi.system-vs-pip
void CoverageIncompleteRule(const ProcessLibraries& p, ReportBuilder& report);     // gpu.coverage-incomplete

}  // namespace colabtrace::analyzer::abi
