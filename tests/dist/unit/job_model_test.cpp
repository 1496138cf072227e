// The job model (analyzer/dist/job_model.h) and what the report makes of it, over traces
// built in memory (tests/harness/rank_traces.h): launcher variables read (torchrun,
// Slurm, Open MPI, PMI) and refused when they are garbage or contradict each other;
// workers that inherit RANK; jobs told apart; a missing rank; clocks of two hosts that
// disagree by seconds, aligned by wall time; the launcher's teardown never the culprit.
// Each bad input gets a statement in the report and no culprit. The hang verdict over
// collectives (tests/harness/collective_jobs.h): who waited, in what, and who never entered.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "collective_jobs.h"
#include "dist/job_model.h"
#include "dist/launcher_identity.h"
#include "report/report.h"

namespace colabtrace::analyzer::dist {
namespace {

using ranktest::Build;
using ranktest::End;
using ranktest::HangJob;
using ranktest::HangShape;
using ranktest::kMs;
using ranktest::kSec;
using ranktest::Proc;
using ranktest::Rank;
using ranktest::TorchrunEnv;

Proc Launcher() {
  Proc p;
  p.pid = 50;
  p.ppid = 1;
  p.start_ns = 9 * kSec;
  p.stop_ns = 25 * kSec;
  return p;
}

struct Built {
  std::vector<ProcessTrace> traces;
  std::unique_ptr<ReportBuilder> report;
  const JobModel& model() const { return report->run().Get<JobModel>(); }
  std::vector<Finding> Findings(std::string_view id) const {
    std::vector<Finding> out;
    for (const Finding& f : report->findings()) {
      if (f.id == id) out.push_back(f);
    }
    return out;
  }
  bool Warns(std::string_view text) const {
    return std::any_of(report->warnings().begin(), report->warnings().end(),
                       [&](const std::string& w) { return w.find(text) != std::string::npos; });
  }
  std::string Warnings() const {
    std::string s;
    for (const std::string& w : report->warnings()) s += w + "\n";
    return s;
  }
};

Built Report(const std::vector<Proc>& procs) {
  Built b;
  for (const Proc& p : procs) b.traces.push_back(Build(p));
  b.report = BuildReport(b.traces, ReportOptions{});
  return b;
}

TEST(LauncherIdentity, Torchrun) {
  const LauncherIdentity id = IdentityOf({{"RANK", "2"}, {"LOCAL_RANK", "0"}, {"WORLD_SIZE", "4"},
                                          {"LOCAL_WORLD_SIZE", "2"}, {"GROUP_RANK", "1"},
                                          {"TORCHELASTIC_RUN_ID", "abc"}, {"TORCHELASTIC_RESTART_COUNT", "1"},
                                          {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}});
  EXPECT_EQ(id.launcher, "torchrun");
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.local_rank, 0);
  EXPECT_EQ(id.world_size, 4);
  EXPECT_EQ(id.local_world_size, 2);
  EXPECT_EQ(id.group_rank, 1);
  EXPECT_EQ(id.restart, 1);
  EXPECT_EQ(id.job, "abc@10.0.0.1:29500");
  EXPECT_TRUE(id.problems.empty());
  EXPECT_TRUE(id.usable());
}

TEST(LauncherIdentity, SlurmMpiAndPmiWhereTorchrunsAreAbsent) {
  LauncherIdentity id = IdentityOf({{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS", "8"},
                                    {"SLURM_JOB_ID", "777"}, {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(id.launcher, "slurm");
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.job, "slurm:777.0");
  id = IdentityOf({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}});
  EXPECT_EQ(id.launcher, "mpi");
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.world_size, 2);
  id = IdentityOf({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}});
  EXPECT_EQ(id.launcher, "pmi");
  EXPECT_EQ(id.rank, 0);
  // torchrun's RANK wins over Slurm's when both are there (torchrun inside srun).
  id = IdentityOf({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"SLURM_PROCID", "0"}});
  EXPECT_EQ(id.launcher, "torchrun");
  EXPECT_EQ(id.rank, 3);
  EXPECT_FALSE(IdentityOf({{"HOME", "/root"}}).present());
}

TEST(LauncherIdentity, GarbageAndContradictionsAreProblemsNotRanks) {
  LauncherIdentity id = IdentityOf({{"RANK", "one"}, {"WORLD_SIZE", "3"}});
  EXPECT_FALSE(id.rank.has_value());
  EXPECT_EQ(id.problems, std::vector<std::string>{"RANK=\"one\" is not a rank (a whole number from 0)"});
  EXPECT_FALSE(id.usable());
  id = IdentityOf({{"RANK", "3"}, {"WORLD_SIZE", "3"}});
  EXPECT_EQ(id.problems, std::vector<std::string>{"RANK=3 is not below WORLD_SIZE=3"});
  id = IdentityOf({{"RANK", "-1"}, {"WORLD_SIZE", "0"}, {"LOCAL_RANK", "2"}, {"LOCAL_WORLD_SIZE", "2"}});
  EXPECT_EQ(id.problems, (std::vector<std::string>{"RANK=\"-1\" is not a rank (a whole number from 0)",
                                                   "WORLD_SIZE=\"0\" is not a size (a whole number from 1)",
                                                   "LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2"}));
  id = IdentityOf({{"RANK", "1"}, {"WORLD_SIZE", "99999999999999999999"}});
  EXPECT_EQ(id.problems.size(), 1u);
}

TEST(JobModel, ARankAndTheWorkerThatInheritedItsVariables) {
  Proc worker = Rank(0);
  worker.pid = 200;
  worker.ppid = 100;  // forked by rank 0: same variables
  worker.steps = 0;
  const Built b = Report({Launcher(), Rank(0), Rank(1), Rank(2), worker});
  const JobModel& m = b.model();
  ASSERT_EQ(m.processes.size(), 4u);
  ASSERT_EQ(m.jobs.size(), 1u);
  const Job& job = m.jobs[0];
  EXPECT_EQ(job.job, "r1@127.0.0.1:29500");
  EXPECT_EQ(job.ranks.size(), 3u);
  EXPECT_EQ(job.ranks[0].workers, std::vector<size_t>{4});
  EXPECT_EQ(job.launchers, std::vector<size_t>{0});
  EXPECT_TRUE(job.problems.empty());
  EXPECT_FALSE(job.failed());
  const auto& rows = b.report->document()["processes"].array();
  EXPECT_EQ(rows[1]["dist"]["role"].str(), "rank");
  EXPECT_EQ(rows[4]["dist"]["role"].str(), "worker");
  EXPECT_EQ(rows[4]["dist"]["rank"].as_int(), 0);
  EXPECT_EQ(rows[4]["dist"]["job"].str(), "r1@127.0.0.1:29500");
  EXPECT_EQ(rows[2]["dist"]["world_size"].as_int(), 3);
  EXPECT_EQ(rows[2]["dist"]["restart"].as_int(), 0);
  EXPECT_EQ(rows[0].Find("dist"), nullptr);  // the launcher is no rank
  EXPECT_TRUE(b.Findings("dist.first-failure").empty());
  EXPECT_TRUE(b.report->warnings().empty()) << b.Warnings();
}

// torchrun started a launch script (bash, with the rank variables) that started python:
// the script is part of the launch, python is the rank.
TEST(JobModel, ALaunchScriptIsNoRank) {
  Proc script = Rank(0, 1), python = Rank(0, 1);
  script.exe = "/usr/bin/bash";
  script.steps = 0;
  script.code = 1;
  script.stop_ns = 21 * kSec;
  python.pid = 300;
  python.ppid = 100;
  python.end = End::kSignal;  // SIGSEGV
  const Built b = Report({Launcher(), script, python});
  const JobModel& m = b.model();
  ASSERT_EQ(m.processes.size(), 1u);
  EXPECT_EQ(m.processes[0].trace, 2u);
  EXPECT_EQ(m.processes[0].role, Role::kRank);
  ASSERT_EQ(m.jobs.size(), 1u);
  EXPECT_EQ(m.jobs[0].launchers, std::vector<size_t>{1});
  const auto f = b.Findings("dist.first-failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pid, 300);
  EXPECT_EQ(f[0].evidence["consequences"].array()[0]["role"].str(), "launcher");
  EXPECT_EQ(f[0].evidence["consequences"].array()[0]["pid"].as_int(), 100);
}

// Rank 1 SIGKILLed at 15 s (its last record); ranks 0 and 2 exit 1 at 15.2 s, having
// lost their peer: rank 1 stopped first, though it was not the first to exit (its
// trace has no exit at all).
TEST(JobModel, TheRankThatStoppedFirstNotTheFirstToExit) {
  Proc r0 = Rank(0), r1 = Rank(1), r2 = Rank(2);
  r1.end = End::kKilled;
  r1.stop_ns = 15 * kSec;
  r0.code = r2.code = 1;
  r0.stop_ns = r2.stop_ns = 15 * kSec + 200'000'000;
  const Built b = Report({Launcher(), r0, r1, r2});
  const Job& job = b.model().jobs.at(0);
  ASSERT_TRUE(job.first_failure.has_value());
  EXPECT_EQ(job.ranks[*job.first_failure].rank, 1);
  EXPECT_EQ(job.consequences.size(), 2u);
  EXPECT_EQ(job.ranks[1].at_ns, static_cast<int64_t>(5 * kSec));  // from the job's first start (10 s)
  ASSERT_EQ(b.Findings("dist.first-failure").size(), 1u);
}

TEST(JobModel, GarbageRankVariablesGiveAStatementAndNoCulprit) {
  Proc r0 = Rank(0), r1 = Rank(1), r2 = Rank(2);
  r1.env[0].second = "x1";  // RANK=x1
  r0.end = End::kKilled;
  r0.stop_ns = 15 * kSec;
  const Built b = Report({Launcher(), r0, r1, r2});
  const Job& job = b.model().jobs.at(0);
  EXPECT_FALSE(job.first_failure.has_value());
  EXPECT_EQ(job.missing, std::vector<int64_t>{1});
  EXPECT_TRUE(b.Findings("dist.first-failure").empty());
  EXPECT_TRUE(b.Warns("job r1@127.0.0.1:29500 (restart 0): pid 101 on a: RANK=\"x1\" is not a rank (a whole number "
                      "from 0)"))
      << b.Warnings();
  EXPECT_TRUE(b.report->document()["processes"].array()[2]["dist"]["rank"].is_null());
  // proc.killed stays where no verdict could be given.
  EXPECT_EQ(b.Findings("proc.killed").size(), 1u);
}

TEST(JobModel, ContradictoryRankVariablesGiveAStatementAndNoCulprit) {
  Proc r0 = Rank(0), r1 = Rank(1), r2 = Rank(2);
  r2.env = TorchrunEnv(2, 4);  // WORLD_SIZE=4 where the others say 3
  r0.end = End::kKilled;
  r0.stop_ns = 15 * kSec;
  const Built b = Report({Launcher(), r0, r1, r2});
  EXPECT_FALSE(b.model().jobs.at(0).first_failure.has_value());
  EXPECT_TRUE(b.Warns("its ranks disagree on the world size (3, 4)")) << b.Warnings();
  EXPECT_TRUE(b.Findings("dist.first-failure").empty());

  Proc twice = Rank(1);
  twice.pid = 111;
  twice.ppid = 51;
  const Built b2 = Report({Launcher(), r0, Rank(1), Rank(2), twice});
  EXPECT_TRUE(b2.Warns("rank 1 appears in 2 processes (pids 101 on a, 111 on a): two runs with one job id in these "
                       "traces, or a launcher that gave one rank twice"))
      << b2.Warnings();
  EXPECT_TRUE(b2.Findings("dist.first-failure").empty());
}

// Rank 1's tracing stopped early (a full disk) at 12 s, long before the job's end: its
// trace looks like a kill at 12 s, but when it stopped is unknown.
TEST(JobModel, ATruncatedTraceGivesAStatementAndNoCulprit) {
  Proc r0 = Rank(0), r1 = Rank(1), r2 = Rank(2);
  r1.end = End::kKilled;
  r1.stop_ns = 12 * kSec;
  r1.truncated = true;
  r0.code = 1;
  const Built b = Report({Launcher(), r0, r1, r2});
  EXPECT_TRUE(b.Findings("dist.first-failure").empty());
  EXPECT_TRUE(b.Warns("rank 1's trace (pid 101 on a) stopped early (tracing stopped: a full disk or a size limit): "
                      "when it stopped is unknown, so the rank that failed first cannot be told"))
      << b.Warnings();
  // A healthy job says nothing of it.
  Proc h1 = Rank(1);
  h1.truncated = true;
  EXPECT_TRUE(Report({Launcher(), Rank(0), h1, Rank(2)}).model().jobs.at(0).problems.empty());
}

// Two jobs' traces in one folder: each judged on its own, and the report says so.
TEST(JobModel, TwoJobsInOneFolder) {
  std::vector<Proc> procs{Launcher(), Rank(0, 2), Rank(1, 2)};
  for (int r = 0; r < 2; ++r) {
    Proc p;
    p.pid = static_cast<uint32_t>(300 + r);
    p.ppid = 60;
    p.env = TorchrunEnv(r, 2, "r2", "29600");
    p.steps = 3;
    if (r == 1) {
      p.end = End::kSignal;  // SIGSEGV at 14 s
      p.stop_ns = 14 * kSec;
    } else {
      p.code = 1;
    }
    procs.push_back(p);
  }
  const Built b = Report(procs);
  ASSERT_EQ(b.model().jobs.size(), 2u);
  EXPECT_TRUE(b.Warns("2 jobs in these traces (r1@127.0.0.1:29500, r2@127.0.0.1:29600): each is judged on its own"))
      << b.Warnings();
  const auto f = b.Findings("dist.first-failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].pid, 301);
  EXPECT_EQ(f[0].evidence["cause"].str(), "fatal-signal");
  EXPECT_EQ(f[0].evidence["job"].str(), "r2@127.0.0.1:29600");
}

TEST(JobModel, AMissingRankGivesAStatementAndNoCulprit) {
  Proc r2 = Rank(2);
  r2.code = 1;
  const Built b = Report({Launcher(), Rank(0), r2});
  const Job& job = b.model().jobs.at(0);
  EXPECT_EQ(job.missing, std::vector<int64_t>{1});
  EXPECT_FALSE(job.first_failure.has_value());
  EXPECT_TRUE(b.Findings("dist.first-failure").empty());
  EXPECT_TRUE(b.Warns("job r1@127.0.0.1:29500 (restart 0): rank 1 of 3 has no trace here (a host's folder left "
                      "out, or a trace lost): the rank that failed first cannot be told"))
      << b.Warnings();
  EXPECT_EQ(b.report->document()["dist"]["jobs"].array()[0]["missing_ranks"].array()[0].as_int(), 1);
}

// Two hosts whose monotonic clocks are 7 s apart (different boots). Rank 0 on host a is
// SIGKILLed at wall +5 s; rank 1 on host b exits 1 at wall +5.5 s. By the monotonic
// clocks rank 1 would look 6.5 s earlier; by wall time (Clock records) rank 0 failed
// first.
TEST(JobModel, ClocksThatDisagreeBySecondsAreAlignedByWallTime) {
  Proc r0 = Rank(0, 2), r1 = Rank(1, 2);
  r0.end = End::kKilled;
  r0.stop_ns = 15 * kSec;  // host a: mono 10 s = wall base
  r1.host = "b";
  r1.ppid = 51;
  r1.start_ns = 3 * kSec;  // host b: mono 3 s = wall base
  r1.wall_minus_mono = static_cast<int64_t>(ranktest::kWallBase + 7 * kSec);
  r1.stop_ns = 3 * kSec + 5'500'000'000;
  r1.code = 1;
  const Built b = Report({r0, r1});
  const Job& job = b.model().jobs.at(0);
  EXPECT_TRUE(job.wall_clock);
  EXPECT_EQ(job.ranks[0].at_ns, static_cast<int64_t>(5 * kSec));
  EXPECT_EQ(job.ranks[1].at_ns, static_cast<int64_t>(5'500'000'000));
  const auto f = b.Findings("dist.first-failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["rank"].as_int(), 0);
  EXPECT_EQ(f[0].evidence["host"].str(), "a");
  EXPECT_EQ(f[0].evidence["consequences"].array()[0]["host"].str(), "b");
  EXPECT_EQ(f[0].evidence["consequences"].array()[0]["after_ns"].as_int(), 500'000'000);
  EXPECT_EQ(b.report->document()["dist"]["jobs"].array()[0]["clock"].str(), "wall");
  EXPECT_EQ(b.report->document()["dist"]["jobs"].array()[0]["clock_uncertainty_ns"].as_int(), 100'000'000);
  // A report of two hosts gives each finding its process's host (pids repeat across hosts).
  for (const Json& g : b.report->document()["findings"].array()) {
    EXPECT_EQ(g["host"]["hostname"].str(), g["pid"].as_int() == 100 ? "a" : "b") << g["id"].str();
    EXPECT_EQ(g["host"]["boot_id"].str(), g["pid"].as_int() == 100 ? "boot-a" : "boot-b");
  }

  // Both killed 40 ms apart on two hosts: closer than their clocks can order.
  r1.end = End::kKilled;
  r1.stop_ns = 3 * kSec + 5'040'000'000;
  const Built close = Report({r0, r1});
  EXPECT_TRUE(close.Findings("dist.first-failure").empty());
  EXPECT_TRUE(close.Warns("ranks 0 (a) and 1 (b) failed 40.0 ms apart, closer than two hosts' wall clocks can "
                          "order: the rank that failed first cannot be told"))
      << close.Warnings();
}

// The launcher's teardown: rank 2 was blocked (its last record at 12 s) and the launcher
// SIGKILLed it at 16 s after rank 0 exited 1 at 15 s. Rank 2's last record is the
// earliest, but the launcher ended it: rank 0 failed first.
TEST(JobModel, AnEndTheLauncherSentIsNeverTheCulprit) {
  Proc launcher = Launcher(), r0 = Rank(0), r1 = Rank(1), r2 = Rank(2);
  r0.code = 1;
  r0.stop_ns = 15 * kSec;
  r2.end = End::kKilled;
  r2.stop_ns = 12 * kSec;
  r2.steps = 1;
  launcher.kills = {{102, 9}};
  launcher.stop_ns = 17 * kSec;  // kill() at 16 s
  launcher.code = 1;
  const Built b = Report({launcher, r0, r1, r2});
  const auto f = b.Findings("dist.first-failure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["rank"].as_int(), 0);
  EXPECT_EQ(f[0].evidence["cause"].str(), "exit");
  const auto& c = f[0].evidence["consequences"].array();
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0]["rank"].as_int(), 2);
  EXPECT_EQ(c[0]["end"]["kind"].str(), "killed");
  // Its proc.killed folds into the consequence.
  EXPECT_EQ(c[0]["folded"].array()[0]["id"].str(), "proc.killed");
  EXPECT_EQ(c[0]["folded"].array()[0]["pid"].as_int(), 102);
  EXPECT_TRUE(std::none_of(b.report->findings().begin(), b.report->findings().end(),
                           [](const Finding& g) { return g.id == "proc.killed"; }));
  EXPECT_EQ(c[1]["role"].str(), "launcher");
  EXPECT_EQ(c[1]["pid"].as_int(), 50);

  // Every rank that failed was ended by the launcher: stopped from outside, no culprit.
  Proc s0 = Rank(0);
  s0.end = End::kKilled;
  s0.stop_ns = 12 * kSec;
  launcher.kills = {{100, 9}};
  const Built outside = Report({launcher, s0, Rank(1), Rank(2)});
  EXPECT_TRUE(outside.Findings("dist.first-failure").empty());
  EXPECT_TRUE(outside.model().jobs.at(0).stopped_from_outside);
  EXPECT_TRUE(outside.Warns("the job was stopped from outside")) << outside.Warnings();
}

// Ranks 0 and 2 timed out in DDP's all-reduce #11 and exited 1 first; rank 1, blocked in
// a read, was then sent SIGTERM by the launcher: rank 1 never entered, the waiters' exits
// are consequences, and no rank failed first.
TEST(JobModel, TheRankThatNeverEnteredTheCollectiveTheOthersTimedOutIn) {
  const Built b = Report(HangJob(HangShape::kTimedOut));
  const Job& job = b.model().jobs.at(0);
  EXPECT_EQ(job.waiters, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(job.hung, std::vector<size_t>{1});
  EXPECT_EQ(job.waited_in, std::optional<size_t>(0));
  EXPECT_FALSE(job.all_waiting);
  EXPECT_FALSE(job.first_failure.has_value());
  EXPECT_EQ(job.consequences, (std::vector<size_t>{0, 2}));
  const RankWait& w = job.ranks[0].waiting.value();
  EXPECT_EQ(w.op, "ddp_all_reduce");
  EXPECT_EQ(w.group, 1u);
  EXPECT_EQ(w.seq, 11u);
  EXPECT_EQ(w.count, 9u);
  EXPECT_EQ(w.dtype, "torch.float32");
  EXPECT_EQ(w.where, "train.py:20 in main");
  EXPECT_EQ(w.tid, 100u);
  EXPECT_EQ(w.since_ns, 16 * kSec);
  EXPECT_EQ(w.waited_ns, 10 * kSec);
  EXPECT_TRUE(w.raised);
  EXPECT_FALSE(job.ranks[1].waiting.has_value());
  EXPECT_EQ(job.ranks[1].entered, (std::map<uint64_t, uint64_t>{{1, 10}}));
  EXPECT_EQ(job.ranks[1].blame, Blame::kSent);
  EXPECT_EQ(job.ranks[1].sender_pid, 50);
  EXPECT_EQ(job.ranks[2].entered, (std::map<uint64_t, uint64_t>{{1, 11}}));
  // Per group, from the collective records (traces before 1.5 have no collective chunks):
  // rank 0 returned from #10 (200 ms) and raised in #11 after 10 s; rank 1 only #10.
  const GroupCollectives& g0 = job.ranks[0].groups.at(1);
  EXPECT_EQ(std::make_tuple(g0.collectives, g0.raised, g0.entered, g0.time_ns),
            std::make_tuple(2ull, 1ull, 11ull, 200 * kMs + 10 * kSec));
  const GroupCollectives& g1 = job.ranks[1].groups.at(1);
  EXPECT_EQ(std::make_tuple(g1.collectives, g1.raised, g1.entered, g1.time_ns),
            std::make_tuple(1ull, 0ull, 10ull, 200 * kMs));
  EXPECT_EQ(job.ranks[1].groups.size(), 1u);
  const Json& row = b.report->document()["dist"]["jobs"].array()[0];
  EXPECT_EQ(row["never_entered_ranks"].Dump(-1), "[1]");
  EXPECT_EQ(row["ranks"].array()[1]["collectives"].Dump(-1),
            "[{\"group\":1,\"collectives\":1,\"raised\":0,\"last_seq\":10,\"time_ns\":200000000}]");
  EXPECT_FALSE(row["all_waiting"].boolean());
}

// Everything SIGKILLed with no sender, the waiters still in #11: rank 1's last record
// (15.5 s) is the earliest and its kill its own, but it had been blocked since before
// they entered. The OOM shape instead: killed 100 ms into a read begun after they
// entered, it failed first.
TEST(JobModel, AKillOfTheWholeJobAgainstAnOomKill) {
  const Built killed = Report(HangJob(HangShape::kKilledInFlight));
  const Job& job = killed.model().jobs.at(0);
  EXPECT_EQ(job.ranks[1].blame, Blame::kOwn);
  EXPECT_EQ(job.waiters, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(job.hung, std::vector<size_t>{1});
  EXPECT_EQ(job.waited_in, std::optional<size_t>(0));
  EXPECT_FALSE(job.first_failure.has_value());
  EXPECT_EQ(job.consequences, (std::vector<size_t>{0, 2}));
  EXPECT_FALSE(job.ranks[2].waiting.value().raised);
  EXPECT_EQ(job.ranks[2].waiting.value().waited_ns, 24 * kSec + 200 * kMs);

  const Built oom = Report(HangJob(HangShape::kOomKilled));
  const Job& o = oom.model().jobs.at(0);
  EXPECT_EQ(o.waiters, (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(o.hung.empty());
  EXPECT_FALSE(o.waited_in.has_value());
  EXPECT_FALSE(o.all_waiting);
  EXPECT_EQ(o.first_failure, std::optional<size_t>(1));
  EXPECT_EQ(o.consequences, (std::vector<size_t>{0, 2}));
}

// A missing rank leaves the hang verdict standing: the waiters' collective, no rank with a
// trace that never entered, the missing one named by `missing`.
TEST(JobModel, AMissingRankAndRanksWaitingForIt) {
  const Built b = Report(HangJob(HangShape::kMissingRank));
  const Job& job = b.model().jobs.at(0);
  EXPECT_EQ(job.missing, std::vector<int64_t>{2});
  EXPECT_EQ(job.waiters, (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(job.hung.empty());
  EXPECT_EQ(job.waited_in, std::optional<size_t>(0));
  EXPECT_FALSE(job.first_failure.has_value());
  EXPECT_EQ(job.consequences, (std::vector<size_t>{0, 1}));
}

// Every rank timed out in #11 after rank 0's metric all-reduce: all waiting, no rank to
// blame for stopping first, none that never entered.
TEST(JobModel, EveryRankWaiting) {
  const Built b = Report(ranktest::MetricJob());
  const Job& job = b.model().jobs.at(0);
  EXPECT_EQ(job.waiters, (std::vector<size_t>{0, 1, 2}));
  EXPECT_TRUE(job.all_waiting);
  EXPECT_TRUE(job.hung.empty());
  EXPECT_FALSE(job.waited_in.has_value());
  EXPECT_FALSE(job.first_failure.has_value());
  EXPECT_TRUE(job.consequences.empty());
  EXPECT_TRUE(b.report->document()["dist"]["jobs"].array()[0]["all_waiting"].boolean());
}

}  // namespace
}  // namespace colabtrace::analyzer::dist
