// RunMetrics: the numbers of one run that CI budgets (`baseline`, `check`) and `diff`
// compare.
//
// A run is the set of traces of one job, one per process. Its processes are grouped by
// role: a key that stays the same from run to run although pids change (see ProcessRole).
// Every number is read from the report document that BuildReport produces
// (processes[].gpu, processes[].io, processes[].peak_rss_bytes, gpu, findings[]), so
// `check` and `diff` always agree with `colabtrace report`.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "model/process_role.h"
#include "report/report.h"

namespace colabtrace::analyzer {

enum class MetricUnit { kCount, kBytes, kNanoseconds };

// How `baseline` derives a metric's default limit from the value it observed.
enum class MetricLimitRule {
  kExact,      // must not grow at all (failures, leaks, process counts)
  kTolerance,  // value + tolerance percent, rounded down
  kTimed,      // value + tolerance percent + the time slack (timer and scheduler noise)
  kResident,   // value + tolerance percent + the RSS slack (sampled RSS moves with timing)
  // Step time: twice the value plus 1 ms (perf.step-slowdown's own threshold), so timer
  // noise never fails a run but a run whose steps got twice as slow does.
  kTwiceAsSlow,
  // A share in percent: value + kSharePointsSlack points (at most 100).
  kSharePoints,
  // Recorded and shown by diff, never checked by default (max null): a run that takes more
  // steps is not a regression by itself.
  kUnchecked,
};

// kSharePoints: how many percentage points a share may grow before `check` fails.
inline constexpr uint64_t kSharePointsSlack = 15;

// How the figures of several processes that share a role combine.
enum class MetricMerge { kSum, kMax };

struct MetricSpec {
  std::string_view name;  // the key in budget.json and the tables: "gpu.allocations"
  MetricUnit unit;
  MetricLimitRule rule;
  MetricMerge merge;
  std::string_view meaning;  // one line, for --help
  // Where processes[] holds it ("io.data_opens": processes[].io.data_opens); the name
  // when empty.
  std::string_view source = {};
};

// Every metric, in the order budgets and tables list them.
inline constexpr MetricSpec kMetrics[] = {
    {"processes", MetricUnit::kCount, MetricLimitRule::kExact, MetricMerge::kSum,
     "number of processes"},
    {"duration_ns", MetricUnit::kNanoseconds, MetricLimitRule::kTimed, MetricMerge::kMax,
     "wall time (the run's span; per role, its longest process)"},
    {"peak_rss_bytes", MetricUnit::kBytes, MetricLimitRule::kResident, MetricMerge::kMax,
     "highest RSS of any one process"},
    {"gpu.allocations", MetricUnit::kCount, MetricLimitRule::kTolerance, MetricMerge::kSum,
     "GPU allocations that succeeded"},
    {"gpu.frees", MetricUnit::kCount, MetricLimitRule::kTolerance, MetricMerge::kSum,
     "GPU frees"},
    {"gpu.failed_allocations", MetricUnit::kCount, MetricLimitRule::kExact, MetricMerge::kSum,
     "GPU allocations that failed"},
    {"gpu.peak_bytes", MetricUnit::kBytes, MetricLimitRule::kTolerance, MetricMerge::kMax,
     "highest sum of live GPU allocations"},
    {"gpu.leak_growth_bytes", MetricUnit::kBytes, MetricLimitRule::kExact, MetricMerge::kSum,
     "GPU bytes never freed that kept growing after warm-up (gpu.leak)"},
    // Data files only: the interpreter's own start-up and caches (.py or .pyc, libraries,
    // /etc, /proc) differ between identical runs, a first run compiling what the next
    // reads from __pycache__.
    {"io.opens", MetricUnit::kCount, MetricLimitRule::kTolerance, MetricMerge::kSum,
     "opens of data files (not code, libraries, configuration, /proc)", "io.data_opens"},
    {"io.reads", MetricUnit::kCount, MetricLimitRule::kTolerance, MetricMerge::kSum,
     "read calls on data files", "io.data_reads"},
    {"io.bytes_read", MetricUnit::kBytes, MetricLimitRule::kTolerance, MetricMerge::kSum,
     "bytes read from data files", "io.data_bytes_read"},
    // Steps (processes[].steps; 0 for a process that does not step).
    {"steps.count", MetricUnit::kCount, MetricLimitRule::kUnchecked, MetricMerge::kSum,
     "training steps taken (not checked: more steps is no regression)"},
    {"steps.median_ns", MetricUnit::kNanoseconds, MetricLimitRule::kTwiceAsSlow, MetricMerge::kMax,
     "median step time after warm-up"},
    {"steps.input_wait_percent", MetricUnit::kCount, MetricLimitRule::kSharePoints, MetricMerge::kMax,
     "percent of step time waiting for the next batch (input_wait_fraction)"},
    {"steps.gpu_allocations_per_step", MetricUnit::kCount, MetricLimitRule::kTolerance, MetricMerge::kMax,
     "GPU allocations per step (gpu.allocations / steps.count)"},
};
inline constexpr size_t kMetricCount = std::size(kMetrics);

// The index of a metric in kMetrics, or nullopt for an unknown name.
std::optional<size_t> FindMetric(std::string_view name);

using MetricValues = std::array<uint64_t, kMetricCount>;

// The processes of one role and their combined figures.
struct RoleMetrics {
  std::string role;
  std::vector<int64_t> pids;
  MetricValues values{};
};

// One finding id present in the run.
struct FindingPresence {
  std::string id;
  Severity severity = Severity::kInfo;  // the highest among its instances
  uint64_t count = 0;                   // instances (one per pid, usually)
  std::vector<int64_t> pids;            // non-zero pids, in report order
  std::string summary;                  // the first instance's summary
};

// What a run ran on and with, for `diff` ("works on my runtime, not yours"): each key's
// distinct values over the run's processes.
//   host: processes[].host (os_release, kernel, glibc, hostname, ...) plus cuda.driver and
//         cuda.runtime from processes[].gpu.versions;
//   libraries: soname (else the file name) -> the paths loaded under it (libraries[]);
//   python_packages: name -> versions (python.packages[]).
struct RunEnvironment {
  std::map<std::string, std::set<std::string>> host, libraries, python_packages;
};

struct RunMetrics {
  RunEnvironment environment;
  RoleMetrics total;               // role "total": the whole run
  std::vector<RoleMetrics> roles;  // sorted by role
  std::vector<FindingPresence> findings;  // sorted by id
  std::vector<std::string> warnings;      // the report's warnings (partial traces...)

  const RoleMetrics* FindRole(std::string_view role) const;
  const FindingPresence* FindFinding(std::string_view id) const;
};

// Measures a finished report (BuildReport's result).
RunMetrics MeasureRun(const ReportBuilder& report);

// Loads the traces named on a command line (files and directories) and measures them
// as one run. nullopt, with one line per problem in *errors, when an input cannot be
// read or no trace was found: a budget or a diff of part of a run would mislead. Damage
// inside a readable trace is not an error; it is in RunMetrics::warnings.
std::optional<RunMetrics> MeasureInputs(const std::vector<std::string>& inputs,
                                        const ReportOptions& options,
                                        std::vector<std::string>* errors);

// Formats a metric value for tables: the integer, exactly.
std::string FormatMetric(uint64_t v);

}  // namespace colabtrace::analyzer
