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
// "MODERATELY").
constexpr double kInputBoundWarning = 0.20;
constexpr double kInputBoundInfo = 0.05;
// The workers' time is "mostly file I/O" (the advice names storage) when file calls took
// at least this share of their time inside the steps; "CPU-bound" when their CPU time is.
constexpr double kWorkersMostly = 0.5;

// perf.step-slowdown: after warm-up, the median of the last third of the steps is at
// least twice the median of the first third, and at least 1 ms longer (a 2 us step that
// became 5 us is noise), with at least 6 steps after warm-up.
constexpr double kSlowdownRatio = 2.0;
constexpr uint64_t kSlowdownMinGrowthNs = 1'000'000;
constexpr size_t kSlowdownMinSteps = 6;
// "I/O latency grew": the mean time per file call (the step loop's, or its workers')
// grew at least this much between the two thirds.
constexpr double kLatencyGrowthRatio = 2.0;

// Shared by the rules: the evidence of one stepping process's steps and its workers.
Json WorkersJson(const StepWorkers& w, const RunModel& run);
// "[pid 1234] python3 train.py": who stepped.
std::string StepperName(const RunModel& run, const ProcessSteps& p);

}  // namespace colabtrace::analyzer::perf
