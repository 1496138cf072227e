// dist.hang (error): ranks ended waiting in a collective that another rank never entered.
// Golden traces (tests/harness/collective_jobs.h): a 3-rank torchrun job started by
// launcher pid 50 on host a, whose ranks meet in DDP's gradient all-reduce #11 at 16 s
// while rank 1 sits in a read of /mnt/slow/x.bin it began at 15.5 s:
// - the waiters time out and exit 1 first, then the launcher sends rank 1 SIGTERM: the
//   culprit is rank 1, not the first to exit; no dist.first-failure; the waiters' errors
//   fold in;
// - the same with rank 1 in no call the shim notes (state "stopped");
// - everything SIGKILLed with no sender while the waiters are still in it: rank 1's last
//   record is the earliest, but it was blocked since before they entered;
// - the OOM shape: rank 1 SIGKILLed in a read it began 400 ms after they entered, which
//   had lasted 600 ms by the job's end: dist.first-failure, no dist.hang;
// - rank 2 with no trace ("missing"), or gone with exit 0 before the collective
//   ("exited");
// - a healthy job gets no dist.* finding.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collective_jobs.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::Json;
using analyzer::Severity;
using ranktest::HangJob;
using ranktest::HangShape;
using ranktest::kMs;
using ranktest::kSec;

std::string Compact(const Json& j) { return j.Dump(-1); }

std::string Join(const std::vector<std::string>& items) {
  std::string s = "[";
  for (const std::string& i : items) s += (s.size() > 1 ? "," : "") + i;
  return s + "]";
}

constexpr const char* kCollective =
    R"({"op":"ddp_all_reduce","seq":11,"comm":"group 1","count":9,"dtype":"torch.float32",)"
    R"("where":"train.py:20 in main"})";
constexpr const char* kExited1 = R"({"kind":"exited","code":1,"signal":null})";
constexpr const char* kKilled = R"({"kind":"killed","code":null,"signal":null})";
constexpr const char* kSigterm = R"({"kind":"signaled","code":null,"signal":15,"signal_name":"SIGTERM"})";

// Rank 1's read of /mnt/slow/x.bin (fd 7), blocked for blocked_ns.
std::string StalledRead(uint64_t blocked_ns) {
  return R"({"tid":101,"call":"read","api":"read","level":0,"blocked_ns":)" + std::to_string(blocked_ns) +
         R"(,"path":"/mnt/slow/x.bin","fd":7,"mount":null,"fs_type":null,"stream":null,"python_stack":null,)"
         R"("comm":null})";
}

// One entry of `waiting`: rank r (pid 100 + r) in #11 for waited_ns.
std::string Waiting(int r, uint64_t waited_ns, bool raised) {
  return R"({"host":"a","rank":)" + std::to_string(r) + R"(,"pid":)" + std::to_string(100 + r) +
         R"(,"waited_ns":)" + std::to_string(waited_ns) + R"(,"raised":)" + (raised ? "true" : "false") +
         R"(,"op":"ddp_all_reduce","seq":11,"python_stack":["train.py:20 in main"]})";
}

// One rank's entry of `consequences`.
std::string RankEnd(int r, const char* end, uint64_t after_ns, const std::string& folded = "[]") {
  return R"({"host":"a","rank":)" + std::to_string(r) + R"(,"pid":)" + std::to_string(100 + r) + R"(,"end":)" +
         end + R"(,"role":"rank","after_ns":)" + std::to_string(after_ns) + R"(,"folded":)" + folded + "}";
}

// Rank r's RuntimeError (gloo's timeout), folded into its consequence.
std::string FoldedTimeout(int r) {
  const std::string pid = std::to_string(100 + r);
  return R"([{"id":"proc.python-exception","pid":)" + pid + R"(,"summary":"pid )" + pid +
         R"( (python3 train.py) ended on an uncaught RuntimeError"}])";
}

std::string LauncherEnd(const char* end) {
  return R"({"host":"a","rank":null,"pid":50,"end":)" + std::string(end) +
         R"(,"role":"launcher","after_ns":null,"folded":[]})";
}

// The consequences when ranks a and b timed out in #11 (16 s) and exited 1 at 26.2 s and
// 26.3 s, and the launcher exited 1.
std::string TimedOutEnds(int a, int b) {
  return Join({RankEnd(a, kExited1, 10 * kSec + 200 * kMs, FoldedTimeout(a)),
               RankEnd(b, kExited1, 10 * kSec + 300 * kMs, FoldedTimeout(b)), LauncherEnd(kExited1)});
}

// The head of the evidence when rank r (pid 100 + r, host a) never entered.
std::string Culprit(int r) {
  const std::string n = std::to_string(r);
  return R"("rank":)" + n + R"(,"ranks":[)" + n + R"(],"missing_ranks":[],"job":"r1@127.0.0.1:29500","pid":)" +
         std::to_string(100 + r) + R"(,"host":"a")";
}

// blocked_in of a rank with 5 steps that ended `end`, in `state`, in `call`.
std::string BlockedIn(const char* end, const char* state, const std::string& call = "null") {
  return std::string(R"({"end":)") + end + R"(,"steps":5,"state":")" + state + R"(","call":)" + call +
         R"(,"python_stack":null})";
}

// The whole evidence of a hang in #11.
std::string Evidence(const std::string& culprit, const std::string& blocked_in, const std::string& waiting,
                     const std::string& consequences) {
  return "{" + culprit + R"(,"blocked_in":)" + blocked_in + R"(,"collective":)" + kCollective +
         R"(,"waiting":)" + waiting + R"(,"consequences":)" + consequences + "}";
}

// The job's one dist.hang (on pid, with this evidence and summary), no dist.first-failure,
// and the report's errors after the folding.
void ExpectHang(std::vector<analyzer::ProcessTrace>& traces, int64_t pid, const std::string& evidence,
                const std::string& summary, const std::vector<std::string>& errors) {
  const auto f = FindingsOf(traces, "dist.hang");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, pid);
  EXPECT_EQ(Compact(f[0].evidence), evidence);
  EXPECT_EQ(f[0].summary, summary);
  EXPECT_TRUE(FindingsOf(traces, "dist.first-failure").empty());
  EXPECT_EQ(ErrorsOf(traces), errors);
}

// Ranks 0 and 2 timed out in #11 and exited first; rank 1, blocked in its read from 15.5 s,
// got the launcher's SIGTERM at 27 s. Their timeouts' exceptions fold into their ends
// (timed from 16 s); rank 1 keeps its own proc.hang (its read).
TEST(DistHang, TheStalledRankNotTheRanksThatTimedOutFirst) {
  auto traces = ranktest::Build(HangJob(HangShape::kTimedOut));
  ExpectHang(traces, 101,
             Evidence(Culprit(1), BlockedIn(kSigterm, "blocked", StalledRead(11'500 * kMs)),
                      Join({Waiting(0, 10 * kSec, true), Waiting(2, 10 * kSec, true)}), TimedOutEnds(0, 2)),
             "rank 1 (host a, pid 101) never entered DDP's gradient all-reduce #11 in backward() at train.py:20 in "
             "main: it was blocked 11.5 s in read() of /mnt/slow/x.bin at step 6; ranks 0 and 2 waited in it up to "
             "10.0 s and gave up (exited 1)",
             {"dist.hang 101", "proc.hang 101"});
}

// Rank 1 busy in code the shim does not note (no call in flight) until the launcher's
// SIGTERM.
TEST(DistHang, ARankStoppedFromOutsideInNoCall) {
  std::vector<ranktest::Proc> procs = HangJob(HangShape::kTimedOut);
  procs[2].read_in_flight.reset();
  auto traces = ranktest::Build(procs);
  ExpectHang(traces, 101,
             Evidence(Culprit(1), BlockedIn(kSigterm, "stopped"),
                      Join({Waiting(0, 10 * kSec, true), Waiting(2, 10 * kSec, true)}), TimedOutEnds(0, 2)),
             "rank 1 (host a, pid 101) never entered DDP's gradient all-reduce #11 in backward() at train.py:20 in "
             "main: it was in no call the shim notes until it was stopped (SIGTERM from pid 50) at step 6; ranks 0 "
             "and 2 waited in it up to 10.0 s and gave up (exited 1)",
             {"dist.hang 101"});
}

// Nobody sent the SIGKILLs and rank 1's last record (15.5 s) is the earliest: it would be
// the first failure, but it sat in a read it began before the others entered, for far
// longer than a second (until the job's last record on the host, the launcher's at
// 40.3 s). The waiters were in #11 until their last records (40 s, 40.2 s). The job's
// proc.hang is about its stepping process, rank 0: it folds in there.
TEST(DistHang, EverythingKilledWhileTheOthersWereStillInIt) {
  auto traces = ranktest::Build(HangJob(HangShape::kKilledInFlight));
  const std::string hang =
      R"([{"id":"proc.hang","pid":100,"summary":"no step for 25.3 s after step 5 (median step 1.00 s): the main )"
      R"(process (pid 100) was blocked 24.3 s in DDP's gradient all-reduce #11 in backward() at train.py:20 in )"
      R"(main; pid 101 (python3) was blocked 24.8 s in read() of /mnt/slow/x.bin; pid 102 (python3) was blocked )"
      R"(24.3 s in DDP's gradient all-reduce #11 in backward() at train.py:20 in main; then the job was killed"}])";
  ExpectHang(traces, 101,
             Evidence(Culprit(1), BlockedIn(kKilled, "blocked", StalledRead(24'800 * kMs)),
                      Join({Waiting(0, 24 * kSec, false), Waiting(2, 24'200 * kMs, false)}),
                      Join({RankEnd(0, kKilled, 24 * kSec, hang), RankEnd(2, kKilled, 24'200 * kMs),
                            LauncherEnd(kKilled)})),
             "rank 1 (host a, pid 101) never entered DDP's gradient all-reduce #11 in backward() at train.py:20 in "
             "main: it was blocked 24.8 s in read() of /mnt/slow/x.bin at step 6; ranks 0 and 2 waited in it up to "
             "24.2 s",
             {"dist.hang 101"});
}

// The OOM killer took rank 1 in a read it began within a second of the others entering,
// but that had lasted 600 ms by the job's end (the launcher's exit at 17 s): not stuck
// there. They lost their peer at once: rank 1 failed first, nobody hung.
TEST(DistHang, AnOomKillWhileTheOthersWaitedIsTheFirstFailure) {
  auto traces = ranktest::Build(HangJob(HangShape::kOomKilled));
  EXPECT_TRUE(FindingsOf(traces, "dist.hang").empty());
  const auto f = FindingsOf(traces, "dist.first-failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pid, 101);
  const Json& ev = f[0].evidence;
  EXPECT_EQ(ev["rank"].as_int(), 1);
  EXPECT_EQ(ev["cause"].str(), "killed");
  EXPECT_EQ(ev["at_ns"].as_int(), static_cast<int64_t>(6'500 * kMs));
  EXPECT_EQ(Compact(ev["consequences"]),
            Join({RankEnd(0, kExited1, 300 * kMs, FoldedTimeout(0)), RankEnd(2, kExited1, 400 * kMs, FoldedTimeout(2)),
                  LauncherEnd(kExited1)}));
  // The culprit keeps its own proc.killed.
  EXPECT_EQ(ErrorsOf(traces), (std::vector<std::string>{"dist.first-failure 101", "proc.killed 101"}));
}

// The OOM shape, but the launcher, seeing rank 1 die, ends ranks 0 and 2 with SIGTERM
// while they are still in #11 (torchrun's teardown): rank 1's death is what it reacted
// to, so it failed first, however long its read seems to have lasted (a killed trace's
// calls run to the host's last record).
TEST(DistHang, AnOomKillTheLauncherToreTheJobDownAfterIsTheFirstFailure) {
  std::vector<ranktest::Proc> job = HangJob(HangShape::kOomKilled);
  job[0].kills = {{100, 15}, {102, 15}};
  job[0].stop_ns = 21 * kSec + 500 * kMs;
  for (size_t i : {1u, 3u}) {  // ranks 0 and 2: in #11 until the SIGTERM at 21 s
    ranktest::Proc& r = job[i];
    r.collectives.back() = ranktest::Step6AllReduce(0);
    r.exception.clear();
    r.end = ranktest::End::kSignal;
    r.signo = 15;
    r.stop_ns = 21 * kSec;
  }
  auto traces = ranktest::Build(job);
  EXPECT_TRUE(FindingsOf(traces, "dist.hang").empty());
  const auto f = FindingsOf(traces, "dist.first-failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pid, 101);
  EXPECT_EQ(f[0].evidence["cause"].str(), "killed");
  EXPECT_EQ(f[0].evidence["consequences"].array().size(), 3u);  // ranks 0 and 2, the launcher
}

// Rank 2 has no trace: the finding is on the first waiter's pid, and says nothing of rank
// 2 but that it is missing.
TEST(DistHang, AMissingRankNeverEntered) {
  auto traces = ranktest::Build(HangJob(HangShape::kMissingRank));
  ExpectHang(traces, 100,
             Evidence(R"("rank":2,"ranks":[2],"missing_ranks":[2],"job":"r1@127.0.0.1:29500","pid":null,"host":null)",
                      R"({"state":"missing","call":null,"end":null,"steps":null,"python_stack":null})",
                      Join({Waiting(0, 10 * kSec, true), Waiting(1, 10 * kSec, true)}), TimedOutEnds(0, 1)),
             "rank 2 never entered DDP's gradient all-reduce #11 in backward() at train.py:20 in main: it has no "
             "trace (its host's folder is missing, or it was never traced); ranks 0 and 1 waited in it up to 10.0 s "
             "and gave up (exited 1)",
             {"dist.hang 100"});
}

TEST(DistHang, ARankThatExitedBeforeTheCollective) {
  auto traces = ranktest::Build(HangJob(HangShape::kExitedEarly));
  ExpectHang(traces, 102,
             Evidence(Culprit(2), BlockedIn(R"({"kind":"exited","code":0,"signal":null})", "exited"),
                      Join({Waiting(0, 10 * kSec, true), Waiting(1, 10 * kSec, true)}), TimedOutEnds(0, 1)),
             "rank 2 (host a, pid 102) never entered DDP's gradient all-reduce #11 in backward() at train.py:20 in "
             "main: it exited 0 after 5 steps without entering it; ranks 0 and 1 waited in it up to 10.0 s and gave "
             "up (exited 1)",
             {"dist.hang 102"});
}

TEST(DistHang, AHealthyJobHasNone) {
  auto traces = ranktest::Build(HangJob(HangShape::kHealthy));
  EXPECT_EQ(ErrorsOf(traces), std::vector<std::string>{});
  for (const char* id : {"dist.hang", "dist.first-failure", "dist.collective-mismatch"}) {
    EXPECT_TRUE(FindingsOf(traces, id).empty()) << id;
  }
}

}  // namespace
}  // namespace colabtrace::testing
