// Budget: the metrics of a good run with an allowed maximum for each (budget.json), and
// the check of a new run against it.
//
// `colabtrace baseline` writes a budget; users may edit it by hand (loosen a "max", set
// it to null to stop checking a metric, list a finding id to allow it), and
// `colabtrace check` honours exactly what the file says.
//
// budget.json, schema "colabtrace.budget.v1":
//   {
//     "schema": "colabtrace.budget.v1",
//     "tolerance_percent": 10, "time_slack_ns": 1000000000,   (how the maxima were made)
//     "rss_slack_bytes": 1048576,
//     "gpu_arch": "sm_75",                                      (only when given)
//     "total": { "<metric>": {"value": N, "max": M|null}, ... },
//     "roles": { "<role>": { "<metric>": {"value": N, "max": M|null}, ... }, ... },
//     "findings": { "<finding id>": "error"|"warning"|"info", ... }
//   }
// A metric may also be written as a bare number: its max.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "report/report.h"
#include "ci/run_metrics.h"

namespace colabtrace::analyzer {

inline constexpr std::string_view kBudgetSchema = "colabtrace.budget.v1";

// How `baseline` turns observed values into maxima (see MetricLimitRule).
struct BudgetPolicy {
  double tolerance_percent = 10;
  uint64_t time_slack_ns = 1000000000;  // 1 s
  // Peak RSS is the highest of the samples the shim takes (at start, every period, at
  // exit), and what a sample finds moves with timing: the same small C program ends at
  // 2.17-2.33 MiB on a loaded machine, 14% apart once. So its max gets 1 MiB more.
  uint64_t rss_slack_bytes = 1 << 20;
};

// The default maximum of a metric observed at `value`; nullopt for a metric not checked
// by default (MetricLimitRule::kUnchecked).
std::optional<uint64_t> DefaultLimit(const MetricSpec& spec, uint64_t value, const BudgetPolicy& policy);

struct MetricBudget {
  std::string metric;             // a kMetrics name
  std::optional<uint64_t> value;  // what the good run measured
  std::optional<uint64_t> max;    // nullopt: not checked
};

struct ScopeBudget {
  std::string scope;  // "total" or a role
  std::vector<MetricBudget> metrics;
};

struct AllowedFinding {
  std::string id;
  Severity severity = Severity::kWarning;
};

struct Budget {
  BudgetPolicy policy;
  std::optional<std::string> gpu_arch;  // the --gpu-arch the good run was analysed with
  ScopeBudget total;
  std::vector<ScopeBudget> roles;
  std::vector<AllowedFinding> findings;
};

// The budget of a good run: every metric of the total and of each role, with its
// default max, and every finding present.
Budget MakeBudget(const RunMetrics& run, const BudgetPolicy& policy,
                  std::optional<std::string> gpu_arch);

Json BudgetToJson(const Budget& budget);
// The text of budget.json: BudgetToJson, indented, one line per metric.
std::string FormatBudget(const Budget& budget);

// Reads a budget file's text. nullopt, with *error set to one sentence naming the bad
// field, when it is not a valid budget. Unknown metric names are skipped with a line in
// *warnings (a newer colabtrace may have written them).
std::optional<Budget> ParseBudget(std::string_view text, std::string* error,
                                  std::vector<std::string>* warnings);

enum class Verdict {
  kOk,          // at or under its max; an allowed finding
  kRegression,  // over its max; a new finding at or above the failing severity
  kUnchecked,   // max is null
  kNewRole,     // a role the good run did not have (its figures are in the total)
  kAbsent,      // a role of the good run that this run does not have
  kNewInfo,     // a new finding below the failing severity
  kGone,        // an allowed finding that is no longer present
};
std::string_view VerdictName(Verdict v);

struct MetricCheck {
  std::string scope;
  std::string metric;
  std::optional<uint64_t> baseline, max, now;
  Verdict verdict = Verdict::kOk;
  std::string message;  // one line saying why, for failures
};

struct FindingCheck {
  std::string id;
  std::optional<Severity> baseline;  // severity allowed by the budget
  std::optional<Severity> now;       // severity in this run
  uint64_t count = 0;
  std::string summary;
  Verdict verdict = Verdict::kOk;
  std::string message;
};

struct CheckResult {
  std::vector<MetricCheck> metrics;
  std::vector<FindingCheck> findings;
  size_t regressions = 0;
};

// Compares a run with a budget. A metric over its max is a regression; so is a finding
// whose id the budget does not list (or lists at a lower severity) when its severity is
// at or above `fail_on`.
CheckResult CheckRun(const Budget& budget, const RunMetrics& run, Severity fail_on);

// The text table `check` prints: scope, metric, baseline, limit, now, verdict.
std::string RenderCheckText(const CheckResult& result, std::string_view budget_path, bool color);

// JUnit XML: one testcase per metric check and per finding check; regressions carry a
// <failure> with the message.
std::string RenderCheckJUnit(const CheckResult& result, std::string_view budget_path);

// A GitHub-flavoured Markdown summary (for $GITHUB_STEP_SUMMARY): a heading with the
// outcome, then one table row per metric and per finding: metric, baseline, value, band
// (the allowed range), verdict. Text from the run (roles, ids) is escaped.
std::string RenderCheckMarkdown(const CheckResult& result, std::string_view budget_path);

}  // namespace colabtrace::analyzer
