// dist.first-failure (error): the rank of a multi-rank job that stopped first. Golden
// traces (tests/harness/rank_traces.h): a 3-rank torchrun job started by launcher pid 50
// on host a. Rank 1 is SIGKILLed at 15 s (its last record; no exit record: the OOM
// killer); ranks 0 and 2 exit 1 at 15.2 s and 15.3 s (gloo lost its peer: the first to
// exit is not the first to fail); the launcher exits 1 at 16 s. A healthy job gets none.
#include <gtest/gtest.h>

#include <vector>

#include "rank_traces.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using ranktest::Build;
using ranktest::End;
using ranktest::kSec;
using ranktest::Proc;

std::vector<ProcessTrace> Job(bool fails) {
  Proc launcher;
  launcher.pid = 50;
  launcher.start_ns = 9 * kSec;
  launcher.stop_ns = 16 * kSec;
  launcher.code = fails ? 1 : 0;
  std::vector<ProcessTrace> traces{Build(launcher)};
  for (int r = 0; r < 3; ++r) {
    Proc p;
    p.pid = static_cast<uint32_t>(100 + r);
    p.ppid = 50;
    p.env = ranktest::TorchrunEnv(r, 3);
    p.steps = 5;
    p.stop_ns = 15 * kSec + 200'000'000 + (r == 2 ? 100'000'000 : 0);
    if (fails) {
      p.code = 1;
      if (r == 1) {
        p.end = End::kKilled;
        p.stop_ns = 15 * kSec;
      }
    }
    traces.push_back(Build(p));
  }
  return traces;
}

TEST(DistFirstFailure, TheKilledRankNotTheFirstToExit) {
  auto traces = Job(true);
  const auto f = FindingsOf(traces, "dist.first-failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 101);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["rank"].as_int(), 1);
  EXPECT_EQ(ev["pid"].as_int(), 101);
  EXPECT_EQ(ev["host"].str(), "a");
  EXPECT_EQ(ev["cause"].str(), "killed");
  EXPECT_EQ(ev["at_ns"].as_int(), static_cast<int64_t>(5 * kSec));
  EXPECT_EQ(ev["end"]["kind"].str(), "killed");
  EXPECT_EQ(ev["steps"].as_int(), 5);
  EXPECT_EQ(ev["job"].str(), "r1@127.0.0.1:29500");
  EXPECT_EQ(ev["restart"].as_int(), 0);
  EXPECT_EQ(ev["world_size"].as_int(), 3);
  const auto& c = ev["consequences"].array();
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0]["rank"].as_int(), 0);
  EXPECT_EQ(c[0]["pid"].as_int(), 100);
  EXPECT_EQ(c[0]["host"].str(), "a");
  EXPECT_EQ(c[0]["end"]["kind"].str(), "exited");
  EXPECT_EQ(c[0]["end"]["code"].as_int(), 1);
  EXPECT_EQ(c[0]["after_ns"].as_int(), 200'000'000);
  EXPECT_EQ(c[1]["rank"].as_int(), 2);
  EXPECT_EQ(c[1]["after_ns"].as_int(), 300'000'000);
  EXPECT_EQ(c[2]["role"].str(), "launcher");
  EXPECT_TRUE(c[2]["rank"].is_null());
  EXPECT_EQ(c[2]["pid"].as_int(), 50);
  EXPECT_EQ(f[0].summary,
            "rank 1 (host a, pid 101) failed first: it was killed by SIGKILL with no exit record (the OOM killer, or "
            "a kill from outside the job) after 5 steps at 5.00 s into the job; ranks 0 and 2 ended after it "
            "(exited 1) as its consequences");
  // The culprit keeps its own proc.killed beside it.
  const auto killed = FindingsOf(traces, "proc.killed");
  ASSERT_EQ(killed.size(), 1u);
  EXPECT_EQ(killed[0].pid, 101);
}

TEST(DistFirstFailure, AHealthyJobHasNone) {
  auto traces = Job(false);
  EXPECT_TRUE(FindingsOf(traces, "dist.first-failure").empty());
}

}  // namespace
}  // namespace colabtrace::testing
