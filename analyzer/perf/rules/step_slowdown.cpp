// perf.step-slowdown (warning)
//
// Rule: after the warm-up step (and the steps served from the workers' prefetch, see
// rules.h), with at least kSlowdownMinSteps steps, the typical step (trimmed mean) of the
// last third of the run is at least kSlowdownRatio times the first third's and at least
// kSlowdownMinGrowthNs longer. The evidence names the part of the step whose
// mean grew most between the two thirds: input wait, GPU sync, file I/O or the rest; and
// "io_latency" when that part is input wait or file I/O and the mean time per file call
// (the step loop's own, or its workers') grew at least kLatencyGrowthRatio times (the page
// cache ran out, or the storage slowed down), with the mount that served those calls.
// When the window gave up steps (ProcessSteps::from_aggregates) and the aggregates hold at
// least three periods, the thirds are whole periods (the first periods holding a third of
// the steps, and the last ones) and "typical" and "median" are their mean step: the
// per-step times are gone (evidence "from_periods": true).
#include <algorithm>
#include <array>
#include <string>

#include "core/format.h"
#include "io/rules/rules.h"
#include "perf/rules/rules.h"

namespace colabtrace::analyzer::perf {
namespace {

struct Third {
  uint64_t a = 0, b = 0;  // its time span
  uint64_t median_ns = 0;
  uint64_t typical_ns = 0;  // the mean of the middle 80% (rules.h)
  std::array<uint64_t, 4> mean_ns{};  // input wait, GPU sync, file I/O, other
  uint64_t io_calls = 0, io_call_ns = 0;
};

Third ThirdOf(const std::vector<StepTime>& steps, size_t begin, size_t end) {
  Third t;
  t.a = steps[begin].start_ns;
  t.b = steps[end - 1].end_ns;
  std::vector<uint64_t> d;
  std::array<uint64_t, 4> sum{};
  for (size_t i = begin; i < end; ++i) {
    const StepTime& s = steps[i];
    d.push_back(s.duration_ns());
    sum[0] += s.input_wait_ns;
    sum[1] += s.gpu_sync_ns;
    sum[2] += s.io_ns;
    sum[3] += s.other_ns;
    t.io_calls += s.io_calls;
    t.io_call_ns += s.io_call_ns;
  }
  t.median_ns = PercentileOf(d, 0.5);
  std::sort(d.begin(), d.end());
  const size_t trim = d.size() / 10;
  uint64_t sum_mid = 0;
  for (size_t i = trim; i < d.size() - trim; ++i) sum_mid += d[i];
  t.typical_ns = sum_mid / (d.size() - 2 * trim);
  for (size_t k = 0; k < 4; ++k) t.mean_ns[k] = sum[k] / (end - begin);
  return t;
}

// The same from the periods [begin, end) (ProcessSteps::periods): a mean, not a median.
Third ThirdOfPeriods(const std::vector<StepPeriod>& periods, size_t begin, size_t end) {
  Third t;
  t.a = periods[begin].sum.start_ns;
  t.b = periods[end - 1].sum.end_ns;
  uint64_t steps = 0, total = 0;
  std::array<uint64_t, 4> sum{};
  for (size_t i = begin; i < end; ++i) {
    const StepPeriod& p = periods[i];
    steps += p.steps;
    total += p.sum.input_wait_ns + p.sum.gpu_sync_ns + p.sum.io_ns + p.sum.other_ns;
    sum[0] += p.sum.input_wait_ns;
    sum[1] += p.sum.gpu_sync_ns;
    sum[2] += p.sum.io_ns;
    sum[3] += p.sum.other_ns;
    t.io_calls += p.sum.io_calls;
    t.io_call_ns += p.sum.io_call_ns;
  }
  if (steps == 0) return t;
  t.typical_ns = t.median_ns = total / steps;
  for (size_t k = 0; k < 4; ++k) t.mean_ns[k] = sum[k] / steps;
  return t;
}

// The early and late thirds of p's steps and how many were analysed: from the periods
// when the steps are summed, else from each step. False when there are too few.
bool Thirds(const ProcessSteps& p, const StepWorkers& w, Third* early, Third* late, size_t* analysed,
            size_t* per_third, size_t* prefetched, bool* from_periods) {
  *from_periods = p.from_aggregates && p.periods.size() >= 3;
  if (*from_periods) {
    size_t n = 0;
    for (const StepPeriod& q : p.periods) n += q.steps;
    if (n < kSlowdownMinSteps) return false;
    // The first periods that hold a third of the steps, and the last ones; never shared.
    size_t e = 0, early_steps = 0, l = p.periods.size(), late_steps = 0;
    while (e < p.periods.size() && early_steps * 3 < n) early_steps += p.periods[e++].steps;
    while (l > e && late_steps * 3 < n) late_steps += p.periods[--l].steps;
    if (e == 0 || l == p.periods.size() || l < e) return false;
    *early = ThirdOfPeriods(p.periods, 0, e);
    *late = ThirdOfPeriods(p.periods, l, p.periods.size());
    *analysed = n;
    *per_third = std::min(early_steps, late_steps);
    *prefetched = 0;
    return true;
  }
  if (p.steps.size() < 1 + kSlowdownMinSteps) return false;
  // After warm-up, and after the batches the workers prefetched meanwhile.
  *prefetched = std::min(kPrefetchPerWorker * w.workers.size(), (p.steps.size() - 1) / 3);
  const size_t from = 1 + *prefetched, n = p.steps.size() - from;
  const size_t third = n / 3;
  *early = ThirdOf(p.steps, from, from + third);
  *late = ThirdOf(p.steps, p.steps.size() - third, p.steps.size());
  *analysed = n;
  *per_third = third;
  return true;
}

constexpr std::array<std::string_view, 4> kParts = {"input_wait", "gpu_sync", "io", "other"};

uint64_t PerCall(uint64_t ns, uint64_t calls) { return calls ? ns / calls : 0; }

void StepSlowdownRule(RuleContext& ctx) {
  const RunModel& run = ctx.run();
  const StepModels& m = run.Get<StepModels>();
  for (size_t k = 0; k < m.processes.size(); ++k) {
    const ProcessSteps& p = m.processes[k];
    const StepWorkers& w = m.workers[k];
    Third early, late;
    size_t n = 0, third = 0, prefetched = 0;
    bool from_periods = false;
    if (!Thirds(p, w, &early, &late, &n, &third, &prefetched, &from_periods)) continue;
    if (late.typical_ns < early.typical_ns + kSlowdownMinGrowthNs) continue;
    if (static_cast<double>(late.typical_ns) < kSlowdownRatio * static_cast<double>(early.typical_ns)) continue;

    size_t grew = 0;
    for (size_t i = 1; i < 4; ++i) {
      const auto growth = [&](size_t j) {
        return static_cast<int64_t>(late.mean_ns[j]) - static_cast<int64_t>(early.mean_ns[j]);
      };
      if (growth(i) > growth(grew)) grew = i;
    }
    std::string part(kParts[grew]);

    // Did file calls get slower? The step loop's own, and its workers'.
    uint64_t early_calls = early.io_calls, early_ns = early.io_call_ns;
    uint64_t late_calls = late.io_calls, late_ns = late.io_call_ns;
    for (const WorkerTime& wt : w.workers) {
      const ProcessTrace& t = run.traces()[wt.trace];
      const FileCallTime e = FileCallsIn(t, early.a, early.b), l = FileCallsIn(t, late.a, late.b);
      early_calls += e.calls;
      early_ns += e.ns;
      late_calls += l.calls;
      late_ns += l.ns;
    }
    const uint64_t early_latency = PerCall(early_ns, early_calls), late_latency = PerCall(late_ns, late_calls);
    const bool latency_grew = early_latency > 0 && late_latency > 0 &&
                              static_cast<double>(late_latency) >= kLatencyGrowthRatio * static_cast<double>(early_latency);
    if ((part == "input_wait" || part == "io") && latency_grew) part = "io_latency";

    Finding f = Finding::Of(FindingId::kPerfStepSlowdown, p.pid);
    Json& ev = f.evidence;
    ev["grew"] = part;
    ev["steps_analysed"] = static_cast<uint64_t>(n);
    ev["steps_per_third"] = static_cast<uint64_t>(third);
    ev["prefetched_steps"] = static_cast<uint64_t>(prefetched);
    if (from_periods) ev["from_periods"] = true;
    ev["early_median_ns"] = early.median_ns;
    ev["late_median_ns"] = late.median_ns;
    ev["early_typical_ns"] = early.typical_ns;
    ev["late_typical_ns"] = late.typical_ns;
    ev["ratio"] = early.typical_ns ? static_cast<double>(late.typical_ns) / static_cast<double>(early.typical_ns) : 0.0;
    Json parts = Json::MakeObject();
    for (size_t i = 0; i < 4; ++i) {
      Json j = Json::MakeObject();
      j["early_mean_ns"] = early.mean_ns[i];
      j["late_mean_ns"] = late.mean_ns[i];
      parts[kParts[i]] = std::move(j);
    }
    ev["parts"] = std::move(parts);
    ev["early_io_latency_ns"] = early_latency;
    ev["late_io_latency_ns"] = late_latency;
    std::string where;
    if (part == "io_latency") {
      // The mount that served the calls: the workers' busiest, else the process's own.
      std::vector<WorkerIo> dirs;
      for (const WorkerTime& wt : w.workers) dirs.insert(dirs.end(), wt.io.begin(), wt.io.end());
      if (dirs.empty()) dirs = DataIoOf(run, p.trace);
      std::sort(dirs.begin(), dirs.end(), [](const WorkerIo& x, const WorkerIo& y) { return x.io_ns() > y.io_ns(); });
      if (!dirs.empty()) {
        ev["mountpoint"] = dirs.front().mountpoint;
        ev["fs_type"] = dirs.front().fs_type;
        ev["directory"] = dirs.front().directory;
        where = " on " + dirs.front().mountpoint + (dirs.front().fs_type.empty() ? "" : " (" + dirs.front().fs_type + ")");
      }
    }
    Json thresholds = Json::MakeObject();
    thresholds["ratio"] = kSlowdownRatio;
    thresholds["min_growth_ns"] = kSlowdownMinGrowthNs;
    thresholds["min_steps"] = static_cast<uint64_t>(kSlowdownMinSteps);
    ev["thresholds"] = std::move(thresholds);

    std::string what;
    if (part == "io_latency") {
      what = "file I/O latency grew from " + FormatDurationNs(early_latency) + " to " + FormatDurationNs(late_latency) +
             " per call" + where;
    } else if (part == "input_wait") {
      what = "the wait for the next batch grew from " + FormatDurationNs(early.mean_ns[0]) + " to " +
             FormatDurationNs(late.mean_ns[0]) + " per step";
    } else if (part == "gpu_sync") {
      what = "GPU synchronisation grew from " + FormatDurationNs(early.mean_ns[1]) + " to " +
             FormatDurationNs(late.mean_ns[1]) + " per step";
    } else if (part == "io") {
      what = "file I/O in the step loop grew from " + FormatDurationNs(early.mean_ns[2]) + " to " +
             FormatDurationNs(late.mean_ns[2]) + " per step";
    } else {
      what = "host compute and Python grew from " + FormatDurationNs(early.mean_ns[3]) + " to " +
             FormatDurationNs(late.mean_ns[3]) + " per step";
    }
    f.summary = "Steps got " + std::to_string(static_cast<int>(ev["ratio"].number() * 10.0 + 0.5) / 10) + "." +
                std::to_string(static_cast<int>(ev["ratio"].number() * 10.0 + 0.5) % 10) + "x slower: " +
                FormatDurationNs(early.typical_ns) + " per step in the first third, " + FormatDurationNs(late.typical_ns) +
                " in the last; " + what;
    ctx.Add(std::move(f));
  }
}

const RuleRegistration kStepSlowdownRuleRegistration(StepSlowdownRule,
    {FindingId::kPerfStepSlowdown});

}  // namespace
}  // namespace colabtrace::analyzer::perf
