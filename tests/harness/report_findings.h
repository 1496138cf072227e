// The findings of one id that the real report builder gives for a set of traces, for the
// golden tests that assert them (tests/libs, tests/findings).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/report.h"
#include "trace/process_trace.h"

namespace colabtrace::testing {

// The run of one process (one trace), as the golden tests hand it to FindingsOf.
inline std::vector<analyzer::ProcessTrace> RunOf(analyzer::ProcessTrace trace) {
  std::vector<analyzer::ProcessTrace> run;
  run.push_back(std::move(trace));
  return run;
}

// Builds the report over traces (as `colabtrace report` does) and returns its findings
// whose id is `id`, in the report's order.
inline std::vector<analyzer::Finding> FindingsOf(std::vector<analyzer::ProcessTrace>& traces,
                                                 std::string_view id,
                                                 analyzer::ReportOptions options = {}) {
  auto report = analyzer::BuildReport(traces, options);
  std::vector<analyzer::Finding> out;
  for (const analyzer::Finding& f : report->findings()) {
    if (f.id == id) out.push_back(f);
  }
  return out;
}

// The "id pid" of every error finding of the report over traces, in the report's order.
inline std::vector<std::string> ErrorsOf(std::vector<analyzer::ProcessTrace>& traces,
                                         analyzer::ReportOptions options = {}) {
  auto report = analyzer::BuildReport(traces, options);
  std::vector<std::string> out;
  for (const analyzer::Finding& f : report->findings()) {
    if (f.severity == analyzer::Severity::kError) out.push_back(f.id + " " + std::to_string(f.pid));
  }
  return out;
}

}  // namespace colabtrace::testing
