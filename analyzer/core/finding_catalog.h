// The finding catalogue: every finding id the analyzer reports, with its area, default
// severity, title and default advice, in one table (finding_catalog.cpp).
//
// It is the one list of ids. Rules build their findings from it (Finding::Of: the id,
// the default severity and the default advice) and register themselves against its ids
// (report/rule_registry.h); ReportBuilder::AddFinding refuses an id that is not in it;
// tests/core/finding_catalog_test.cpp holds README.md's stable ids and
// shared/PRODUCT.md's "Finding catalogue" to it. A new finding id is one row here, one
// enumerator below and one rule file in its area's rules/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/severity.h"

namespace colabtrace::analyzer {

// Every finding id, in the catalogue's order (the order of the table's rows).
enum class FindingId : uint8_t {
  kProcKilled,
  kProcHang,
  kProcFatalSignal,
  kProcPythonException,
  kHostMemoryPressure,
  kHostShmSmall,
  kGpuOom,
  kGpuOomFragmentation,
  kGpuLeak,
  kGpuChurn,
  kGpuDeviceFault,
  kGpuNearCapacity,
  kGpuAllocatorConfigIgnored,
  kGpuLaunchFailed,
  kGpuCoverageIncomplete,
  kAbiDuplicateLibrary,
  kAbiMixedCudaMajors,
  kAbiDriverTooOld,
  kAbiNoKernelImage,
  kAbiLoadFailed,
  kAbiSymbolVersionMissing,
  kAbiStaleLibrary,
  kAbiSystemVsPip,
  kIoSmallFiles,
  kIoNetworkFilesystem,
  kIoSmallReads,
  kIoReread,
  kIoMetadataHeavy,
  kIoErrors,
  kPerfInputBound,
  kPerfStepSlowdown,
  kPerfGpuUnused,
  kDistFirstFailure,
  kDistHang,
  kDistCollectiveMismatch,
  kDistStraggler,
};
inline constexpr size_t kFindingIdCount = static_cast<size_t>(FindingId::kDistStraggler) + 1;  // the last one's + 1

// The part of the analyzer whose rules decide a finding: the prefix of its id.
enum class FindingArea { kProcess, kHost, kGpu, kAbi, kIo, kPerf, kDist };
// "proc", "host", "gpu", "abi", "io", "perf", "dist"
std::string_view FindingAreaName(FindingArea a);

struct FindingSpec {
  FindingId id;
  std::string_view name;      // the stable id, "gpu.oom"
  FindingArea area;
  Severity severity;          // the default
  // The rule gives some findings another severity (abi.load-failed: information when the
  // program handled the failure). Otherwise every finding of this id has `severity`.
  bool severity_varies;
  std::string_view title;     // a few words: "Out of GPU memory"
  // What to do about it, in general; a rule may append the specifics of a finding, or
  // replace it for a cause that needs other advice (named in the rule's file).
  std::string_view advice;
};

// The whole table, in FindingId order.
std::span<const FindingSpec> FindingCatalog();
const FindingSpec& SpecOf(FindingId id);
// The row of a stable id, or nullptr when the catalogue has no such id.
const FindingSpec* FindFindingSpec(std::string_view name);
inline std::string_view FindingName(FindingId id) { return SpecOf(id).name; }

}  // namespace colabtrace::analyzer
