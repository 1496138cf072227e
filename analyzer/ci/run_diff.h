// RunDiff: two runs side by side (`colabtrace diff A B`): the metrics of the whole run
// and of each role in two columns with their deltas, and which finding ids appear only in
// A, only in B, or in both.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "ci/run_metrics.h"

namespace colabtrace::analyzer {

struct MetricDelta {
  std::string metric;
  std::optional<uint64_t> a, b;  // nullopt where the role is absent from that run
  bool changed() const { return a != b; }
};

struct RoleDelta {
  std::string role;  // "total" first, then the union of both runs' roles, sorted
  std::vector<MetricDelta> metrics;
};

struct FindingSides {
  std::string id;
  std::optional<Severity> a, b;
  uint64_t count_a = 0, count_b = 0;
  std::string summary;  // B's when present, else A's
};

// One key of the runs' environments side by side: its distinct values in each run (an
// empty set: absent from that run).
struct SideBySide {
  std::string key;
  std::set<std::string> a, b;
  bool same() const { return a == b; }
};

struct RunDiff {
  std::string name_a, name_b;  // what the user named on the command line
  std::vector<RoleDelta> roles;
  std::vector<FindingSides> only_a, only_b, both;
  // RunEnvironment side by side, every key of either run, sorted.
  std::vector<SideBySide> host, libraries, python_packages;
};

RunDiff DiffRuns(const RunMetrics& a, const RunMetrics& b, std::string name_a, std::string name_b);

std::string RenderDiffText(const RunDiff& diff, bool color);

// {"schema": "colabtrace.diff.v1", "a", "b", "roles": [{"role", "metrics": [{"metric",
//  "a", "b", "delta", "percent"}]}], "findings": {"only_in_a", "only_in_b", "in_both"},
//  "environment": {"host", "libraries", "python_packages": [{"key", "a": [..], "b": [..],
//  "same"}]}}
Json RenderDiffJson(const RunDiff& diff);

}  // namespace colabtrace::analyzer
