// The perf.* rules (one file per finding id in this folder), each registered in the rule
// registry (report/rule_registry.h). They read the run's steps (perf::StepModels,
// perf/step_model.h); PerfAnalysis (perf/perf_analysis.cpp) writes processes[].steps and
// processes[].workers and runs them. The thresholds are here, with what each rule means.
#pragma once

#include <cstdint>
#include <string>

#include "core/json.h"
#include "perf/step_model.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer::perf {

// ---- thresholds ---------------------------------------------------------------------------
// Verdicts look at the steps after the first (the warm-up: imports, compilation, cuDNN
// autotuning, the DataLoader's first batches) and need at least this many of them.
constexpr size_t kMinStepsAnalysed = 3;

// perf.input-bound: the step loop waited for its next batch for at least 20% of the step
// time (a warning: TensorFlow's "HIGHLY input-bound"), or at least 5% (information:
// "MODERATELY"). There is no floor on the total wait (PRODUCT.md has none): a floor made
// the same program's verdict flip between runs whose waits summed to 90 or 110 ms.
constexpr double kInputBoundWarning = 0.20;
constexpr double kInputBoundInfo = 0.05;
// The workers' time is "mostly file I/O" (the advice names storage) when file calls took
// at least this share of their time inside the steps; "CPU-bound" when their CPU time is.
constexpr double kWorkersMostly = 0.5;

// perf.step-slowdown: after warm-up, the typical step of the last third is at least twice
// the first third's, and at least 1 ms longer. "Typical" is the mean of the middle 80%
// of a third's step times (10% trimmed at each end): one checkpoint save is no slowdown,
// and steps that alternate (two workers handing over their batches together: 250 ms,
// 6 ms, 250 ms...) are judged by their mean, which a median would flip between (a 2 us step that
// became 5 us is noise), with at least 10 steps after warm-up. The first steps of a loop
// with DataLoader workers take the batches the workers prefetched during the warm-up
// (prefetch_factor, 2 by default, per worker) and so look fast: kPrefetchPerWorker steps
// per worker (at most a third of them) are left out of the first third.
constexpr double kSlowdownRatio = 2.0;
constexpr uint64_t kSlowdownMinGrowthNs = 1'000'000;
constexpr size_t kSlowdownMinSteps = 10;
constexpr size_t kPrefetchPerWorker = 2;
// "I/O latency grew": the mean time per file call (the step loop's, or its workers')
// grew at least this much between the two thirds.
constexpr double kLatencyGrowthRatio = 2.0;

// Shared by the rules: the evidence of one stepping process's steps and its workers.
Json WorkersJson(const StepWorkers& w);
// "[pid 1234] python3 train.py": who stepped.
std::string StepperName(const RunModel& run, const ProcessSteps& p);

}  // namespace colabtrace::analyzer::perf
