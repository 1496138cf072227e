// dist.collective-mismatch (error): ranks that called different collectives, counts or
// dtypes at one sequence number of one process group. Golden traces
// (tests/harness/collective_jobs.h), torchrun jobs started by launcher pid 50 on host a:
// - the metric job: rank 0 all-reduces a metric as #10 where ranks 1 and 2 run DDP's
//   gradient all-reduce; all three then time out in #11: the finding names rank 0, the
//   others' ends are its consequences, and there is neither dist.first-failure nor
//   dist.hang;
// - a tie (2 against 2): the side without the lowest rank is odd, unless one side is
//   DDP's gradient all-reduce (then the other side is);
// - a dtype that differs with the op and count the same;
// - none where the group carries send/recv (the counts drift apart per rank), nor where
//   every rank called the same.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "collective_jobs.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::Severity;
using format::CollectiveOp;
using ranktest::CollectiveCall;

// A call at train.py:30 (its seq is JobCalling's).
CollectiveCall Call(CollectiveOp op, std::string dtype = "torch.float32") {
  CollectiveCall c;
  c.op = op;
  c.dtype = std::move(dtype);
  c.where = "train.py:30 in main";
  return c;
}

// The odd ranks of a job whose rank r calls ops[r] as #11.
std::string OddRanks(const std::vector<CollectiveOp>& ops) {
  std::vector<std::vector<CollectiveCall>> calls;
  for (CollectiveOp op : ops) calls.push_back({Call(op)});
  auto traces = ranktest::Build(ranktest::JobCalling(calls));
  const auto f = FindingsOf(traces, "dist.collective-mismatch");
  if (f.size() != 1) return "findings: " + std::to_string(f.size());
  return f[0].evidence["ranks"].Dump(-1);
}

TEST(DistCollectiveMismatch, AMetricAllReduceOnRankZeroAgainstDdp) {
  auto traces = ranktest::Build(ranktest::MetricJob());
  const auto f = FindingsOf(traces, "dist.collective-mismatch");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 100);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["rank"].as_int(), 0);
  EXPECT_EQ(ev["ranks"].Dump(-1), "[0]");
  EXPECT_EQ(ev["seq"].as_int(), 10);
  EXPECT_EQ(ev["comm"].str(), "group 1");
  EXPECT_EQ(ev["job"].str(), "r1@127.0.0.1:29500");
  EXPECT_EQ(ev["calls"].Dump(-1),
            R"([{"host":"a","rank":0,"pid":100,"op":"all_reduce","count":1,"dtype":"torch.float32",)"
            R"("where":"train.py:13 in main","python_stack":["train.py:13 in main"]},)"
            R"({"host":"a","rank":1,"pid":101,"op":"ddp_all_reduce","count":9,"dtype":"torch.float32",)"
            R"("where":"train.py:20 in main","python_stack":["train.py:20 in main"]},)"
            R"({"host":"a","rank":2,"pid":102,"op":"ddp_all_reduce","count":9,"dtype":"torch.float32",)"
            R"("where":"train.py:20 in main","python_stack":["train.py:20 in main"]}])");
  // Every rank ended waiting: the others' ends (timed from rank 0's at 26.2 s), with their
  // timeouts' exceptions folded in, and the launcher's.
  EXPECT_EQ(ev["consequences"].Dump(-1),
            R"([{"host":"a","rank":1,"pid":101,"end":{"kind":"exited","code":1,"signal":null},"role":"rank",)"
            R"("after_ns":100000000,"folded":[{"id":"proc.python-exception","pid":101,"summary":"pid 101 (python3 )"
            R"(train.py) ended on an uncaught RuntimeError"}]},)"
            R"({"host":"a","rank":2,"pid":102,"end":{"kind":"exited","code":1,"signal":null},"role":"rank",)"
            R"("after_ns":200000000,"folded":[{"id":"proc.python-exception","pid":102,"summary":"pid 102 (python3 )"
            R"(train.py) ended on an uncaught RuntimeError"}]},)"
            R"({"host":"a","rank":null,"pid":50,"end":{"kind":"exited","code":1,"signal":null},"role":"launcher",)"
            R"("after_ns":null,"folded":[]}])");
  EXPECT_EQ(f[0].summary,
            "rank 0 called all_reduce at train.py:13 in main (1 element of torch.float32) as collective #10 of group "
            "1, where ranks 1 and 2 called DDP's gradient all-reduce in backward() at train.py:20 in main (9 "
            "elements of torch.float32); every rank then waited in a collective until the job ended");
  // No other verdict: every rank waited, none stopped first, none never entered; rank 0
  // keeps its own exception.
  EXPECT_TRUE(FindingsOf(traces, "dist.first-failure").empty());
  EXPECT_TRUE(FindingsOf(traces, "dist.hang").empty());
  EXPECT_EQ(ErrorsOf(traces), (std::vector<std::string>{"dist.collective-mismatch 100", "proc.python-exception 100"}));
}

// 2 against 2, neither DDP's: the majority is the side with the lowest rank, whichever
// op it called.
TEST(DistCollectiveMismatch, ATieNamesTheSideWithoutTheLowestRank) {
  EXPECT_EQ(OddRanks({CollectiveOp::kAllReduce, CollectiveOp::kBroadcast, CollectiveOp::kBroadcast,
                      CollectiveOp::kAllReduce}),
            "[1,2]");
  EXPECT_EQ(OddRanks({CollectiveOp::kBroadcast, CollectiveOp::kAllReduce, CollectiveOp::kAllReduce,
                      CollectiveOp::kBroadcast}),
            "[1,2]");
  auto traces = ranktest::Build(ranktest::JobCalling({{Call(CollectiveOp::kAllReduce)},
                                             {Call(CollectiveOp::kBroadcast)},
                                             {Call(CollectiveOp::kBroadcast)},
                                             {Call(CollectiveOp::kAllReduce)}}));
  const auto f = FindingsOf(traces, "dist.collective-mismatch");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pid, 101);
  EXPECT_EQ(f[0].evidence["rank"].as_int(), 1);
  EXPECT_EQ(f[0].evidence["seq"].as_int(), 11);
  EXPECT_EQ(f[0].evidence["consequences"].Dump(-1), "[]");
  EXPECT_EQ(f[0].summary,
            "ranks 1 and 2 called broadcast at train.py:30 in main (9 elements of torch.float32) as collective #11 of "
            "group 1, where ranks 0 and 3 called all_reduce at train.py:30 in main (9 elements of torch.float32)");
}

// On a tie, the side that is not DDP's gradient all-reduce is odd, the lowest rank with it.
TEST(DistCollectiveMismatch, ATieAgainstDdpNamesTheOtherSide) {
  EXPECT_EQ(OddRanks({CollectiveOp::kAllReduce, CollectiveOp::kAllReduce, CollectiveOp::kDdpAllReduce,
                      CollectiveOp::kDdpAllReduce}),
            "[0,1]");
}

TEST(DistCollectiveMismatch, ADtypeThatDiffers) {
  auto traces = ranktest::Build(ranktest::JobCalling({{Call(CollectiveOp::kAllReduce)},
                                             {Call(CollectiveOp::kAllReduce)},
                                             {Call(CollectiveOp::kAllReduce, "torch.float16")}}));
  const auto f = FindingsOf(traces, "dist.collective-mismatch");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pid, 102);
  EXPECT_EQ(f[0].evidence["ranks"].Dump(-1), "[2]");
  EXPECT_EQ(f[0].evidence["seq"].as_int(), 11);
  EXPECT_EQ(f[0].summary,
            "rank 2 called all_reduce at train.py:30 in main (9 elements of torch.float16) as collective #11 of group "
            "1, where ranks 0 and 1 called all_reduce at train.py:30 in main (9 elements of torch.float32)");
}

// Rank 0 sends to rank 1 as #11; both then all-reduce as #12, which is rank 2's #11: the
// numbers differ by rank, so the group is not compared.
TEST(DistCollectiveMismatch, NoneInAGroupWithSendAndRecv) {
  auto traces = ranktest::Build(ranktest::JobCalling({{Call(CollectiveOp::kSend), Call(CollectiveOp::kAllReduce)},
                                             {Call(CollectiveOp::kRecv), Call(CollectiveOp::kAllReduce)},
                                             {Call(CollectiveOp::kAllReduce)}}));
  EXPECT_TRUE(FindingsOf(traces, "dist.collective-mismatch").empty());
}

TEST(DistCollectiveMismatch, NoneWhereEveryRankCalledTheSame) {
  auto traces = ranktest::Build(ranktest::JobCalling({{Call(CollectiveOp::kAllReduce), Call(CollectiveOp::kBroadcast)},
                                             {Call(CollectiveOp::kAllReduce), Call(CollectiveOp::kBroadcast)},
                                             {Call(CollectiveOp::kAllReduce), Call(CollectiveOp::kBroadcast)}}));
  EXPECT_TRUE(FindingsOf(traces, "dist.collective-mismatch").empty());
  EXPECT_TRUE(FindingsOf(traces, "dist.hang").empty());
  EXPECT_TRUE(FindingsOf(traces, "dist.first-failure").empty());
}

}  // namespace
}  // namespace colabtrace::testing
