// dist.straggler (warning): one rank makes every step slow while the others wait for it in
// their collectives. Golden traces (tests/harness/rank_traces.h): a 3-rank torchrun job
// started by launcher pid 50 on host a; each rank steps once a second from 11 s to 20 s
// (10 optimizer steps: 9 after warm-up) and runs DDP's gradient all-reduce #(10 + i) in
// step i. Ranks 0 and 2 enter it 300 ms into the step and leave 600 ms later; rank 1, the
// straggler, enters 895 ms in and leaves 5 ms later (the others were waiting for it). A
// job whose ranks all spend 600 ms gets none, nor does one where a rank stepped too few
// times to judge.
#include <gtest/gtest.h>

#include <vector>

#include "collective_jobs.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::Severity;
using ranktest::kMs;
using ranktest::kSec;
using ranktest::Proc;

// The job: rank r enters step i's all-reduce at enter_ms[r] and leaves after dur_ms[r].
std::vector<Proc> Job(const std::vector<uint64_t>& enter_ms, const std::vector<uint64_t>& dur_ms,
                      size_t steps = 10) {
  std::vector<Proc> job{ranktest::CollectiveLauncher(23 * kSec, 0)};
  for (size_t r = 0; r < enter_ms.size(); ++r) {
    Proc p = ranktest::Rank(static_cast<int>(r), static_cast<int>(enter_ms.size()));
    p.steps = steps;
    p.stop_ns = 22 * kSec;
    for (size_t i = 1; i < steps; ++i) {
      ranktest::CollectiveCall c;
      c.ts = (10 + i) * kSec + enter_ms[r] * kMs;
      c.dur = dur_ms[r] * kMs;
      c.seq = 10 + i;
      p.collectives.push_back(c);
    }
    job.push_back(p);
  }
  return job;
}

TEST(DistStraggler, TheRankTheOthersWaitFor) {
  auto traces = ranktest::Build(Job({300, 895, 300}, {600, 5, 600}));
  const auto f = FindingsOf(traces, "dist.straggler");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 101);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["rank"].as_int(), 1);
  EXPECT_EQ(ev["ranks"].Dump(-1), "[1]");
  EXPECT_EQ(ev["host"].str(), "a");
  EXPECT_EQ(ev["job"].str(), "r1@127.0.0.1:29500");
  EXPECT_EQ(ev["steps_analysed"].as_int(), 9);
  EXPECT_EQ(ev["step_ns"].as_int(), static_cast<int64_t>(kSec));
  // Its step is all "other" (no batch waits, file calls or GPU syncs in these traces) and
  // 5 ms of collective.
  EXPECT_EQ(ev["split"].Dump(-1),
            "{\"input_wait_ns\":0,\"gpu_sync_ns\":0,\"io_ns\":0,\"other_ns\":1000000000,\"collective_ns\":5000000}");
  EXPECT_EQ(ev["io"].Dump(-1), "[]");
  // The others spend 595 ms more in the same all-reduce than it does.
  EXPECT_EQ(ev["waiting"].Dump(-1),
            "{\"ranks\":[0,2],\"wait_ns\":595000000,\"wait_fraction\":0.595,\"collective\":\"ddp_all_reduce\","
            "\"where\":\"train.py:20 in main\"}");
  EXPECT_EQ(f[0].summary,
            "rank 1 (host a, pid 101) makes every step slow: its steps take 1000 ms, 1000 ms of them computing (CPU "
            "and Python); ranks 0 and 2 spend 60% of each step (595 ms) waiting for it in DDP's gradient all-reduce at "
            "train.py:20 in main");
  // A warning: the job's verdict stays healthy as far as errors go.
  EXPECT_EQ(ErrorsOf(traces), std::vector<std::string>{});
}

TEST(DistStraggler, NoneWhenEveryRankWaitsAlike) {
  auto traces = ranktest::Build(Job({300, 300, 310}, {600, 600, 590}));
  EXPECT_TRUE(FindingsOf(traces, "dist.straggler").empty());
}

TEST(DistStraggler, NoneWhenARankSteppedTooFewTimes) {
  // 5 optimizer steps: 4 after warm-up, one short of what the rule asks of every rank.
  auto traces = ranktest::Build(Job({300, 895, 300}, {600, 5, 600}, 5));
  EXPECT_TRUE(FindingsOf(traces, "dist.straggler").empty());
}

TEST(DistStraggler, NoneWhenHalfTheRanksStraggle) {
  // Two of four ranks arrive late: not "one or a few" (at most a quarter of the ranks).
  auto traces = ranktest::Build(Job({300, 895, 300, 895}, {600, 5, 600, 5}));
  EXPECT_TRUE(FindingsOf(traces, "dist.straggler").empty());
}

}  // namespace
}  // namespace colabtrace::testing
