// perf.input-bound (warning from 20% of step time after warm-up, information from 5%).
// Golden traces: a step loop (pid 100) of 11 iterations, each a batch wait then compute
// then an optimizer step, fed by two DataLoader workers (101, 102) that read 4 KiB files
// from a FUSE mount with 12 ms opens; the same loop waiting 6% (information), 2% (none),
// and 83% of a tiny loop that waited 50 ms in all (none); workers that compute instead of reading, with idle or busy CPUs; a loop with
// no steps.
#include <gtest/gtest.h>

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
constexpr uint64_t kLoopStart = 10 * kMs;
constexpr int kIterations = 11;

// What the workers do: read 40 files each from the FUSE mount, compute, or wait (5% on
// the CPU, no file I/O: a lock, a queue, a remote service, a sleep).
enum class WorkerWork { kReadSlowFiles, kCompute, kWait };

// The main process: mounts, two forked workers, then the loop of 11 iterations
// (wait_ms + compute_ms each). cpus: its affinity count (0: not recorded).
ProcessTrace MainProcess(uint64_t wait_ms, uint64_t compute_ms, uint64_t cpus = 0) {
  TraceBuilder b(100);
  iotest::Mounts(b);
  b.Mount(6, "fuse.slowfs", "/mnt/slow", "slowfs");
  if (cpus) steptest::HostNum(b, "cpu_count", cpus);
  steptest::Forked(b, 101);
  steptest::Forked(b, 102);
  const uint64_t where = b.Str("train.py:25 in main");
  b.AdvanceTo(kLoopStart);
  for (int i = 0; i < kIterations; ++i) steptest::Iteration(b, i, wait_ms * kMs, compute_ms * kMs, where);
  b.Advance(5 * kMs);
  return b.Finish();
}

// A worker started at start_ns (5 ms: before the loop; later: started again mid-run, as
// persistent_workers=False does every epoch).
ProcessTrace Worker(uint32_t pid, uint64_t id, WorkerWork work, uint64_t start_ns = 5 * kMs) {
  TraceBuilder b(pid, 100, start_ns);
  iotest::Mounts(b);
  b.Mount(6, "fuse.slowfs", "/mnt/slow", "slowfs");
  steptest::WorkerRole(b, id);
  steptest::CpuSample(b, 0);
  if (work == WorkerWork::kReadSlowFiles) {
    for (int i = 0; i < 40; ++i) {
      b.ReadWholeFile("/mnt/slow/train/f" + std::to_string(id * 40 + i) + ".bin", 6, 7, 4096, 12 * kMs, kMs);
    }
  }
  b.AdvanceTo(600 * kMs);
  // Computing: 90% of its 595 ms on the CPU; reading: 5%.
  steptest::CpuSample(b, work == WorkerWork::kCompute ? 535 * kMs : 30 * kMs);
  return b.Finish();
}

std::vector<ProcessTrace> Job(uint64_t wait_ms, uint64_t compute_ms, WorkerWork work = WorkerWork::kReadSlowFiles,
                              uint64_t cpus = 0, uint64_t workers_start_ns = 5 * kMs) {
  std::vector<ProcessTrace> run;
  run.push_back(MainProcess(wait_ms, compute_ms, cpus));
  run.push_back(Worker(101, 0, work, workers_start_ns));
  run.push_back(Worker(102, 1, work, workers_start_ns));
  return run;
}

TEST(PerfInputBound, WorkersOnASlowMountMakeTheLoopWait) {
  auto traces = Job(40, 10);
  const auto f = FindingsOf(traces, "perf.input-bound");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 100);
  const auto& ev = f[0].evidence;
  // 40 ms of each 50 ms (+1 ns) step after the warm-up one.
  EXPECT_DOUBLE_EQ(ev["input_wait_fraction"].number(), 0.8);
  EXPECT_EQ(ev["steps_analysed"].as_int(), kIterations - 1);
  EXPECT_EQ(ev["source"].str(), "optimizer");
  EXPECT_EQ(ev["median_step_ns"].as_int(), 50 * kMs + 1);
  EXPECT_EQ(ev["median_wait_ns"].as_int(), 40 * kMs);
  EXPECT_EQ(ev["wait_site"].str(), "train.py:25 in main");
  ASSERT_EQ(ev["worker_pids"].array().size(), 2u);
  EXPECT_EQ(ev["worker_pids"].array()[0].as_int(), 101);
  EXPECT_EQ(ev["worker_pids"].array()[1].as_int(), 102);
  EXPECT_EQ(ev["cause"].str(), "storage");
  EXPECT_GT(ev["workers_io_share"].number(), 0.9);
  const auto& storage = ev["storage"].array();
  ASSERT_EQ(storage.size(), 1u);
  EXPECT_EQ(storage[0]["mountpoint"].str(), "/mnt/slow");
  EXPECT_EQ(storage[0]["fs_type"].str(), "fuse.slowfs");
  EXPECT_EQ(storage[0]["directory"].str(), "/mnt/slow/train");
  EXPECT_EQ(storage[0]["files"].as_int(), 80);
  EXPECT_EQ(storage[0]["open_latency_ns"].as_int(), 12 * kMs);
  const auto& w0 = ev["workers"].array()[0];
  EXPECT_EQ(w0["pid"].as_int(), 101);
  EXPECT_EQ(w0["worker_id"].as_int(), 0);
  EXPECT_TRUE(w0["dataloader_worker"].boolean());
  // Alive inside the steps: from the first batch wait to the last optimizer step.
  EXPECT_EQ(w0["alive_ns"].as_int(), kIterations * 50 * kMs + (kIterations - 1));
  EXPECT_NE(f[0].summary.find("80% of step time waited for the next batch"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[0].summary.find("at train.py:25 in main"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[0].summary.find("workers 101, 102"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[0].summary.find("/mnt/slow (fuse.slowfs)"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[0].advice.find("Stage the data on local disk"), std::string::npos);
  EXPECT_EQ(f[0].advice.find("persistent_workers"), std::string::npos);
}

TEST(PerfInputBound, TheStepsAreInTheProcessRow) {
  auto traces = Job(40, 10);
  auto report = analyzer::BuildReport(traces, {});
  const analyzer::Json& doc = report->Finish();
  const analyzer::Json& steps = doc["processes"].array()[0]["steps"];
  EXPECT_EQ(steps["count"].as_int(), kIterations);
  EXPECT_EQ(steps["source"].str(), "optimizer");
  EXPECT_EQ(steps["timed"].as_int(), kIterations);
  EXPECT_EQ(steps["analysed"].as_int(), kIterations - 1);
  EXPECT_EQ(steps["warmup_ns"].as_int(), 50 * kMs);
  EXPECT_DOUBLE_EQ(steps["input_wait_fraction"].number(), 0.8);
  EXPECT_DOUBLE_EQ(steps["gpu_sync_fraction"].number(), 0.0);
  EXPECT_DOUBLE_EQ(steps["io_fraction"].number(), 0.0);
  EXPECT_DOUBLE_EQ(steps["other_fraction"].number(), 0.2);
  EXPECT_EQ(steps["batch_waits"].as_int(), kIterations);
  EXPECT_FALSE(steps["interrupted"].boolean());
  EXPECT_EQ(doc["processes"].array()[0]["workers"].array().size(), 2u);
  // Workers do not step.
  EXPECT_EQ(doc["processes"].array()[1].Find("steps"), nullptr);
}

TEST(PerfInputBound, SixPercentIsInformation) {
  auto traces = Job(12, 188);
  const auto f = FindingsOf(traces, "perf.input-bound");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_NEAR(f[0].evidence["input_wait_fraction"].number(), 0.06, 0.0001);
}

// 83% of a tiny loop's time, 50 ms of waiting in all: the share decides, not the total.
TEST(PerfInputBound, ATinyLoopIsJudgedByItsShareAlone) {
  auto traces = Job(5, 1);
  const auto f = FindingsOf(traces, "perf.input-bound");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_NEAR(f[0].evidence["input_wait_fraction"].number(), 0.8333, 0.0001);
}

TEST(PerfInputBound, TwoPercentIsNone) {
  auto traces = Job(1, 49);
  EXPECT_TRUE(FindingsOf(traces, "perf.input-bound").empty());
}

TEST(PerfInputBound, ComputingWorkersWithIdleCpusWantMoreWorkers) {
  auto traces = Job(40, 10, WorkerWork::kCompute, 8);
  const auto f = FindingsOf(traces, "perf.input-bound");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["cause"].str(), "cpu-idle-cpus");
  EXPECT_EQ(f[0].evidence["busy_workers"].as_int(), 2);
  EXPECT_DOUBLE_EQ(f[0].evidence["cpus_allowed"].number(), 8.0);
  EXPECT_EQ(f[0].evidence.Find("storage"), nullptr);
  EXPECT_NE(f[0].advice.find("raise num_workers"), std::string::npos);
}

// Found on an H200: workers that slept 96% of their time, 4% on the CPU and 0.2% in file
// I/O, were called busy computing (the CPU beat the I/O) with advice to raise num_workers.
TEST(PerfInputBound, WorkersThatMostlyWaitAreNotCalledBusy) {
  auto traces = Job(40, 10, WorkerWork::kWait, 8);
  const auto f = FindingsOf(traces, "perf.input-bound");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["cause"].str(), "workers-wait");
  EXPECT_EQ(f[0].evidence["busy_workers"].as_int(), 0);
  EXPECT_LT(f[0].evidence["workers_cpu_share"].number(), 0.06);
  EXPECT_GT(f[0].evidence["workers_wait_share"].number(), 0.9);
  EXPECT_NE(f[0].summary.find("of their time waiting"), std::string::npos) << f[0].summary;
  EXPECT_NE(f[0].advice.find("mostly wait themselves"), std::string::npos) << f[0].advice;
}

TEST(PerfInputBound, ComputingWorkersOnEveryCpuWantLighterTransforms) {
  auto traces = Job(40, 10, WorkerWork::kCompute, 2);
  const auto f = FindingsOf(traces, "perf.input-bound");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["cause"].str(), "cpu-all-busy");
  EXPECT_NE(f[0].advice.find("lighter"), std::string::npos);
}

// Workers that started after the loop's second step began: started again (each epoch).
TEST(PerfInputBound, WorkersStartedAgainMidRunAskForPersistentWorkers) {
  auto traces = Job(40, 10, WorkerWork::kReadSlowFiles, 0, 200 * kMs);
  const auto f = FindingsOf(traces, "perf.input-bound");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["restarted_workers"].as_int(), 2);
  EXPECT_NE(f[0].advice.find("persistent_workers=True"), std::string::npos) << f[0].advice;
}

TEST(PerfInputBound, AProcessWithoutStepsHasNoStepsAndNoFinding) {
  TraceBuilder b(100);
  iotest::Mounts(b);
  for (int i = 0; i < 20; ++i) b.ReadWholeFile("/mnt/nfs/f" + std::to_string(i), 2, 5, 4096, 10 * kMs, kMs);
  auto traces = RunOf(b.Finish());
  auto report = analyzer::BuildReport(traces, {});
  const analyzer::Json& doc = report->Finish();
  EXPECT_EQ(doc["processes"].array()[0].Find("steps"), nullptr);
  for (const auto& f : report->findings()) EXPECT_NE(f.id.rfind("perf.", 0), 0u) << f.id;
}

}  // namespace
}  // namespace colabtrace::testing
