// perf.step-slowdown (warning): after warm-up, the last third of the steps has a median at
// least twice (and 1 ms above) the first third's. Golden traces: a loop that loads each
// batch itself from NFS (num_workers=0) whose opens go from 2 ms to 40 ms halfway (the
// I/O latency grew); the same going to 3 ms (a near miss); a loop whose compute grew
// fourfold; a loop killed in the middle of a long step (interrupted, not slow); a loop
// known from its step aggregates' periods only, slowed threefold, and 1.5-fold (none).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "report/report.h"
#include "report_findings.h"
#include "step_trace_builder.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using steptest::TraceBuilder;

constexpr uint64_t kMs = 1'000'000;

// One iteration that reads its sample from NFS inside the batch wait (open_ms, then a
// 1 ms read), computes compute_ms, then steps the optimizer.
void LoadingIteration(TraceBuilder& b, int i, uint64_t open_ms, uint64_t compute_ms) {
  const uint64_t start = b.now(), wait = (open_ms + 1) * kMs + 200;
  format::BatchWait w;  // the wait's record first, then the reads inside it
  w.dur = wait;
  w.kind = static_cast<uint64_t>(format::BatchWaitKind::kDataLoader);
  w.n = static_cast<uint64_t>(i);
  b.Add(w);
  b.ReadWholeFile("/mnt/nfs/train/s" + std::to_string(i) + ".npy", 2, 5, 4096, open_ms * kMs, kMs);
  b.AdvanceTo(start + wait);
  b.Advance(compute_ms * kMs);
  steptest::StepBoundary(b, static_cast<uint64_t>(i + 1));
}

// 13 iterations: 0-6 with the first latency and compute, 7-12 with the second.
ProcessTrace Loop(uint64_t open_ms_before, uint64_t open_ms_after, uint64_t compute_before, uint64_t compute_after) {
  TraceBuilder b(100);
  iotest::Mounts(b);
  for (int i = 0; i < 13; ++i) {
    const bool later = i >= 7;
    LoadingIteration(b, i, later ? open_ms_after : open_ms_before, later ? compute_after : compute_before);
  }
  return b.Finish();
}

TEST(PerfStepSlowdown, NfsOpensTwentyTimesSlowerNameTheIoLatency) {
  auto traces = RunOf(Loop(2, 40, 10, 10));
  const auto f = FindingsOf(traces, "perf.step-slowdown");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 100);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["grew"].str(), "io_latency");
  EXPECT_EQ(ev["steps_analysed"].as_int(), 12);
  EXPECT_EQ(ev["steps_per_third"].as_int(), 4);
  // A step: the wait (open + 1 ms read + 200 ns) and 10 ms of compute, plus 1 ns.
  EXPECT_EQ(ev["early_median_ns"].as_int(), 13 * kMs + 201);
  EXPECT_EQ(ev["late_median_ns"].as_int(), 51 * kMs + 201);
  EXPECT_EQ(ev["parts"]["input_wait"]["early_mean_ns"].as_int(), 3 * kMs + 200);
  EXPECT_EQ(ev["parts"]["input_wait"]["late_mean_ns"].as_int(), 41 * kMs + 200);
  EXPECT_EQ(ev["parts"]["other"]["early_mean_ns"].as_int(), 10 * kMs + 1);
  EXPECT_EQ(ev["mountpoint"].str(), "/mnt/nfs");
  EXPECT_EQ(ev["fs_type"].str(), "nfs4");
  EXPECT_GE(ev["late_io_latency_ns"].as_int(), 2 * ev["early_io_latency_ns"].as_int());
  EXPECT_NE(f[0].summary.find("file I/O latency grew"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[0].summary.find("/mnt/nfs (nfs4)"), std::string::npos) << f[0].summary;
}

TEST(PerfStepSlowdown, OneAndAHalfTimesSlowerOpensAreNone) {
  auto traces = RunOf(Loop(2, 3, 10, 10));
  EXPECT_TRUE(FindingsOf(traces, "perf.step-slowdown").empty());
}

TEST(PerfStepSlowdown, ComputeThatGrewIsTheRest) {
  auto traces = RunOf(Loop(2, 2, 10, 40));
  const auto f = FindingsOf(traces, "perf.step-slowdown");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["grew"].str(), "other");
  EXPECT_NE(f[0].summary.find("host compute and Python grew"), std::string::npos) << f[0].summary;
}

// Two DataLoader workers prefetched 4 batches during the warm-up step: the 4 steps after
// it take 5 ms, the steady state 20 ms. Not a slowdown.
TEST(PerfStepSlowdown, StepsServedFromTheWorkersPrefetchAreNotTheBaseline) {
  std::vector<ProcessTrace> run;
  TraceBuilder b(100);
  steptest::Forked(b, 101);
  steptest::Forked(b, 102);
  for (int i = 0; i < 15; ++i) {
    const bool prefetched = i >= 1 && i <= 4;
    steptest::Iteration(b, static_cast<uint64_t>(i), prefetched ? 0 : 15 * kMs, 5 * kMs);
  }
  run.push_back(b.Finish());
  for (uint32_t pid : {101u, 102u}) {
    TraceBuilder w(pid, 100, 5000);
    steptest::WorkerRole(w, pid - 101);
    w.AdvanceTo(400 * kMs);
    run.push_back(w.Finish());
  }
  auto report = analyzer::BuildReport(run, {});
  for (const auto& f : report->findings()) EXPECT_NE(f.id, "perf.step-slowdown") << f.summary;
  // Without the workers, the same steps are a slowdown.
  run.resize(1);
  const auto f = FindingsOf(run, "perf.step-slowdown");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["prefetched_steps"].as_int(), 0);
  EXPECT_EQ(f[0].evidence["grew"].str(), "input_wait");
}

// A marker loop of 3,001 steps known only from its step aggregates (the window gave its
// records up; here COLABTRACE_ANALYZER_IGNORE_STEP_EVENTS=1): a 10 ms warm-up, then three
// periods of 1,000 steps, the first two of early_ms, the last of late_ms, all of it
// host compute (part "other").
ProcessTrace SummedLoop(uint64_t early_ms, uint64_t late_ms) {
  TraceBuilder b(100);
  const uint64_t start = b.now();
  format::StepAggInfo info{};
  info.source = static_cast<uint32_t>(format::StepSource::kMarker);
  info.tid = 100;
  info.boundaries = 3002;
  info.steps = 3001;
  info.period_steps = 1000;
  info.periods = 3;
  info.first_ticks = start;
  info.warmup = {start, start + 10 * kMs, {10 * kMs, 0, 0, 0, 10 * kMs, 0, 0, 0}};
  std::vector<format::StepAggPeriod> periods(3);
  std::vector<std::vector<uint64_t>> values(format::kStepHistParts);
  uint64_t at = start;
  for (uint32_t i = 0; i < 3; ++i) {
    const uint64_t step = (i < 2 ? early_ms : late_ms) * kMs, n = i == 0 ? 1001 : 1000;
    const uint64_t total = i == 0 ? 10 * kMs + 1000 * step : 1000 * step;
    periods[i] = {n, at, at + total, {total, 0, 0, 0, total, 0, 0, 0}};
    at += total;
    for (uint64_t k = 0; k < 1000; ++k) values[format::kStepTotal].push_back(step);
  }
  values[format::kStepTotal].push_back(10 * kMs);
  info.last_ticks = at;
  for (uint32_t k : {format::kStepTotal, format::kStepOther}) info.sums[k] = at - start;
  b.AdvanceTo(at);
  steptest::StepBoundary(b, 3002, format::StepSource::kMarker);  // the window holds the last
  b.raw().AddStepAggSeries(info, periods, values);
  return b.Finish();
}

// Sets COLABTRACE_ANALYZER_IGNORE_STEP_EVENTS=1 while it lives.
struct IgnoreStepEvents {
  IgnoreStepEvents() { setenv("COLABTRACE_ANALYZER_IGNORE_STEP_EVENTS", "1", 1); }
  ~IgnoreStepEvents() { unsetenv("COLABTRACE_ANALYZER_IGNORE_STEP_EVENTS"); }
};

TEST(PerfStepSlowdown, FromSummedPeriodsWhenTheWindowGaveStepsUp) {
  IgnoreStepEvents summed;
  auto traces = RunOf(SummedLoop(2, 6));
  const auto f = FindingsOf(traces, "perf.step-slowdown");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["grew"].str(), "other");
  EXPECT_TRUE(ev["from_periods"].boolean());
  EXPECT_EQ(ev["steps_analysed"].as_int(), 3000);
  EXPECT_EQ(ev["steps_per_third"].as_int(), 1000);  // periods 1-2 early (2,000), 3 late
  EXPECT_EQ(ev["early_typical_ns"].as_int(), 2 * kMs);
  EXPECT_EQ(ev["late_typical_ns"].as_int(), 6 * kMs);
  EXPECT_DOUBLE_EQ(ev["ratio"].number(), 3.0);
  EXPECT_EQ(ev["parts"]["other"]["late_mean_ns"].as_int(), 6 * kMs);
}

TEST(PerfStepSlowdown, FromSummedPeriodsOneAndAHalfTimesSlowerIsNone) {
  IgnoreStepEvents summed;
  auto traces = RunOf(SummedLoop(2, 3));
  EXPECT_TRUE(FindingsOf(traces, "perf.step-slowdown").empty());
}

TEST(PerfStepSlowdown, AStepCutShortByAKillIsInterruptedNotSlow) {
  TraceBuilder b(100, 1, 1000, /*killed=*/true);
  iotest::Mounts(b);
  for (int i = 0; i < 8; ++i) steptest::Iteration(b, static_cast<uint64_t>(i), 5 * kMs, 15 * kMs);
  steptest::BatchWait(b, 8, 5 * kMs);
  b.Advance(2000 * kMs);  // killed two seconds into this step
  steptest::CpuSample(b, 0);
  auto traces = RunOf(b.Finish());
  auto report = analyzer::BuildReport(traces, {});
  const analyzer::Json& doc = report->Finish();
  const analyzer::Json& steps = doc["processes"].array()[0]["steps"];
  EXPECT_EQ(steps["count"].as_int(), 8);
  EXPECT_EQ(steps["timed"].as_int(), 8);
  EXPECT_EQ(steps["median_ns"].as_int(), 20 * kMs + 1);
  EXPECT_TRUE(steps["interrupted"].boolean());
  EXPECT_EQ(steps["interrupted_ns"].as_int(), 2005 * kMs + 1);
  for (const auto& f : report->findings()) EXPECT_NE(f.id, "perf.step-slowdown");
}

}  // namespace
}  // namespace colabtrace::testing
