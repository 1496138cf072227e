// proc.killed (error): a job process whose trace ends with no end record. Golden trace: a
// worker (pid 201) sampled at 3 GiB RSS in a 4 GiB cgroup, whose trace just stops; its
// parent (pid 200) outlives it and reads the cgroup's oom_kill count risen from 0 to 1.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "host_traces.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using hosttest::HostIdentity;
using hosttest::kSampleNs;
using hosttest::kStart;

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;

// pid (child of ppid) on host "a" with a 4 GiB cgroup limit: one sample at kStart +
// sample_at * kSampleNs, then an exit record unless `killed`.
ProcessTrace Process(uint32_t pid, uint32_t ppid, uint64_t rss, uint64_t cgroup_current, uint64_t oom_kill,
                     uint64_t sample_at, bool killed) {
  TraceBytesBuilder b(pid, kStart, /*ended=*/!killed);
  hosttest::ProcessStartRecords(b, pid, ppid, {"python3", "train.py"});
  HostIdentity(b, "a", 16 * kGiB);
  format::HostNum max;
  max.ts = kStart;
  max.key = b.AppendString("cgroup_memory_max", kStart);
  max.value = 4 * kGiB;
  b.Append(max);
  format::Sample s;
  s.ts = kStart + sample_at * kSampleNs;
  s.rss_bytes = rss;
  s.cgroup_current = cgroup_current;
  s.oom_kill = oom_kill;
  s.cgroup_inactive_file = 0;
  b.Append(s);
  if (!killed) {
    format::Exit e;
    e.ts = s.ts + kSampleNs;
    b.Append(e);
  }
  return b.Parse();
}

TEST(ProcKilled, NoEndRecordAndTheOomKillCountRoseInTheParentsLaterSample) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Process(200, 1, 100 * kMiB, 1 * kGiB, 1, 3, /*killed=*/false));
  traces.push_back(Process(201, 200, 3 * kGiB, 3584 * kMiB, 0, 1, /*killed=*/true));
  const auto f = FindingsOf(traces, "proc.killed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 201);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["last_rss_bytes"].as_int(), static_cast<int64_t>(3 * kGiB));
  EXPECT_EQ(ev["peak_rss_bytes"].as_int(), static_cast<int64_t>(3 * kGiB));
  EXPECT_EQ(ev["cgroup_memory_max"].as_int(), static_cast<int64_t>(4 * kGiB));
  EXPECT_EQ(ev["cgroup_memory_current"].as_int(), static_cast<int64_t>(3584 * kMiB));
  EXPECT_EQ(ev["oom_kill_before"].as_int(), 0);
  EXPECT_EQ(ev["oom_kill_after"].as_int(), 1);
  EXPECT_TRUE(ev["oom_kill_rose"].boolean());
  EXPECT_EQ(ev["oom_kill_seen_by"].str(), "the samples of pid 200, which outlived it");
  EXPECT_EQ(ev["last_event_after_start_ns"].as_int(), static_cast<int64_t>(kSampleNs));
  EXPECT_TRUE(ev["reaped_by"].is_null());
  EXPECT_TRUE(ev["signal"].is_null());
  EXPECT_FALSE(ev["still_running"].boolean());
  EXPECT_EQ(ev.Find("sender"), nullptr);
  EXPECT_EQ(f[0].summary,
            "pid 201 (python3 train.py) was killed: its trace ends with no exit record; the cgroup's oom_kill "
            "count rose from 0 to 1 (seen in the samples of pid 200, which outlived it), so the OOM killer "
            "took it");
}

// Killed from outside while memory was low (300 MiB RSS, the cgroup at 1 GiB of 4 GiB,
// no OOM kill): the advice speaks of what sends SIGKILL and of hangs, not of memory.
TEST(ProcKilled, KilledWithLowMemoryGetsNoMemoryAdvice) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Process(200, 1, 100 * kMiB, 1 * kGiB, 0, 3, /*killed=*/false));
  traces.push_back(Process(201, 200, 300 * kMiB, 1 * kGiB, 0, 1, /*killed=*/true));
  const auto f = FindingsOf(traces, "proc.killed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_FALSE(f[0].evidence["memory_high"].is_null());
  EXPECT_FALSE(f[0].evidence["memory_high"].boolean());
  EXPECT_FALSE(f[0].evidence["oom_kill_rose"].boolean());
  EXPECT_NE(f[0].advice.find("Memory was not high"), std::string::npos) << f[0].advice;
  EXPECT_EQ(f[0].advice.find("DataLoader workers"), std::string::npos) << f[0].advice;
}

// The cgroup at 3.5 GiB of 4 GiB (over 90%) when it died, with no OOM kill count to tell:
// memory was high, and the advice keeps the catalogue's memory clause.
TEST(ProcKilled, KilledWithHighMemoryKeepsTheMemoryAdvice) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Process(201, 1, 3 * kGiB, 3700 * kMiB, UINT64_MAX, 1, /*killed=*/true));
  const auto f = FindingsOf(traces, "proc.killed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_TRUE(f[0].evidence["memory_high"].boolean());
  EXPECT_NE(f[0].advice.find("If memory was high, reduce DataLoader workers"), std::string::npos) << f[0].advice;
}

// The same worker with its exit record: it ended, nothing was killed.
TEST(ProcKilled, AnExitRecordIsNoKill) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Process(200, 1, 100 * kMiB, 1 * kGiB, 1, 3, /*killed=*/false));
  traces.push_back(Process(201, 200, 3 * kGiB, 3584 * kMiB, 0, 1, /*killed=*/false));
  EXPECT_TRUE(FindingsOf(traces, "proc.killed").empty());
}

}  // namespace
}  // namespace colabtrace::testing
