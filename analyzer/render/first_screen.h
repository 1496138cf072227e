// The report's first screen, which the text and HTML renderers both open with: the
// verdict (healthy in one line, else the worst findings first), the run's vital signs,
// and the findings in reading order with info findings folded under their id. Worked out
// from the finished report (its findings and JSON document: processes[] with their
// steps, gpu.devices, memory.hosts, the I/O totals); the JSON keeps every finding.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/report.h"

namespace colabtrace::analyzer {

// The errors and warnings the verdict names, at most.
inline constexpr size_t kVerdictFindings = 3;
// Stepping processes (and GPU devices, hosts) the vital signs list one by one, at most.
inline constexpr size_t kVitalRows = 3;

// One vital sign: "wall time" / "12.4 s". Values may hold trace strings (a GPU's name, a
// host): renderers escape them.
struct VitalSign {
  std::string label;
  std::string value;
  // Worth a look: memory at 90% or more of its limit, a process that did not exit 0,
  // 20% or more of the step time waiting for input.
  bool alarm = false;
};

// Findings of one id and severity, in report order: every error and warning is a fold of
// its own; the info findings of one id share one.
struct FindingFold {
  std::string_view id;
  Severity severity = Severity::kInfo;
  std::vector<const Finding*> findings;
};

struct FirstScreen {
  size_t processes = 0;  // processes[] rows (the job's processes)
  size_t errors = 0, warnings = 0, infos = 0;
  // Up to kVerdictFindings errors and warnings, in reading order.
  std::vector<const Finding*> worst;
  std::vector<VitalSign> vitals;

  // The main processes (processes[] rows whose parent is no row: the job's roots) that
  // exited with a non-zero code, as (pid, code). Such a job is never healthy, even when no
  // finding explains why.
  std::vector<std::pair<int64_t, int64_t>> failed_main;

  bool healthy() const { return errors == 0 && warnings == 0 && failed_main.empty(); }
  // "Healthy: no errors or warnings in 3 processes", or
  // "Failed: the main process (pid 42) exited 1, and no finding says why"
  // (no error or warning, but a failed main process), or
  // "2 errors, 1 warning in 3 processes: gpu.oom, abi.duplicate-library" (the distinct ids
  // of the errors and warnings, worst first, at most kVerdictFindings, then "+N more").
  std::string VerdictLine() const;

  static FirstScreen Of(const ReportBuilder& report);
};

// The report's findings in reading order: its own order (errors first, then by id and
// pid), except that a GPU device fault leads: it explains the crash and the CUDA errors
// every later call reported.
std::vector<const Finding*> FindingsInReadingOrder(const std::vector<Finding>& findings);

// The findings in reading order, folded: each error and warning alone, the info findings
// of one id together (where the first of them stands).
std::vector<FindingFold> FoldFindings(const std::vector<Finding>& findings);

}  // namespace colabtrace::analyzer
