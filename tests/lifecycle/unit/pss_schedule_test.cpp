// The PSS schedule of `colabtrace run`'s sampler (analyzer/model/pss_schedule.h): which
// processes get an smaps_rollup read in a round, driven here by a simulated clock and
// simulated read costs (no /proc).
#include "model/pss_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

namespace colabtrace::analyzer {
namespace {

constexpr uint64_t kMs = 1000000ull;
constexpr uint64_t kS = 1000 * kMs;
constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

struct SimProcess {
  uint64_t rss;
  uint64_t cost_ns;  // what one smaps_rollup read of it takes
  uint64_t pss;      // what that read gives
};

// Rounds every 100 ms from t=1 s for `seconds`; returns each process's read times.
std::map<pid_t, std::vector<uint64_t>> Simulate(PssSchedule& sched, const std::map<pid_t, SimProcess>& procs,
                                                 uint64_t seconds, uint64_t limit = UINT64_MAX) {
  std::map<pid_t, std::vector<uint64_t>> reads;
  for (uint64_t now = kS; now < kS + seconds * kS; now += 100 * kMs) {
    std::vector<PssSchedule::Candidate> round;
    for (const auto& [pid, p] : procs) round.push_back({pid, p.rss});
    for (pid_t pid : sched.Choose(now, round, limit)) {
      const SimProcess& p = procs.at(pid);
      sched.Record(pid, now, p.cost_ns, p.cost_ns, p.rss, p.pss);
      reads[pid].push_back(now);
    }
  }
  return reads;
}

uint64_t MaxGap(const std::vector<uint64_t>& times, uint64_t start, uint64_t end) {
  uint64_t gap = 0, prev = start;
  for (uint64_t t : times) gap = std::max(gap, t - prev), prev = t;
  return std::max(gap, end - prev);
}

TEST(PssSchedule, CarriedPssIsTheLatestReadingCappedAtRss) {
  EXPECT_EQ(CarriedPss(UINT64_MAX, 700 * kMiB), 700 * kMiB);  // never read: RSS
  EXPECT_EQ(CarriedPss(100 * kMiB, 500 * kMiB), 100 * kMiB);
  EXPECT_EQ(CarriedPss(390 * kMiB, 300 * kMiB), 300 * kMiB);  // shrank below it: RSS caps
}

TEST(PssSchedule, UnderTheVerdictAProcessThatMovedIsReadAgainWhateverTheBucket) {
  // Four processes read at 1 GiB RSS, 300 MiB PSS each (60 ms of CPU a read: the bucket
  // is deep in debt; 20 ms of lock: 1 s to wait), under a 6 GiB limit. Then each grows to
  // 1.5 GiB: their RSS sums to 6 GiB, over 90% of the limit, so the verdict needs PSS and
  // every process that moved is read again once its lock allows, whatever the bucket.
  PssSchedule sched;
  std::vector<PssSchedule::Candidate> round;
  for (pid_t p = 1; p <= 4; ++p) round.push_back({p, 1 * kGiB});
  const uint64_t limit = 6 * kGiB;
  for (pid_t p = 1; p <= 4; ++p) sched.Record(p, kS, 20 * kMs, 60 * kMs, 1 * kGiB, 300 * kMiB);
  EXPECT_LT(sched.bucket_ns(), 0);
  EXPECT_TRUE(sched.Choose(kS + kS / 2, round, limit).empty());  // below: the bucket decides
  for (auto& c : round) c.rss = 1 * kGiB + 512 * kMiB;
  EXPECT_EQ(sched.EstimatedTreePss(round), 4 * 300 * kMiB);
  EXPECT_TRUE(sched.Choose(kS + kS * 9 / 10, round, limit).empty());  // the lock: 1 s after the read
  EXPECT_EQ(sched.Choose(kS + 2 * kS, round, limit).size(), 4u);
}

TEST(PssSchedule, SixteenBigProcessesStayWithinTheCpuBudget) {
  // 16 processes of 4 GiB, 40 ms a read: reading them all at 10 Hz would take 6.4 cores.
  PssSchedule sched;
  std::map<pid_t, SimProcess> procs;
  for (pid_t p = 100; p < 116; ++p) procs[p] = {4 * kGiB, 40 * kMs, 1 * kGiB};
  const uint64_t seconds = 600;
  const auto reads = Simulate(sched, procs, seconds);
  // The reads' CPU over 10 minutes: the budget's share, plus the bucket's first fill and
  // the first sight of each process (read whatever the bucket holds: 16 x 40 ms).
  const auto share = static_cast<uint64_t>(PssSchedule::kCpuShare * seconds * kS);
  EXPECT_LE(sched.spent_ns(), share + 20 * kMs + 16 * 40 * kMs);
  EXPECT_GE(sched.spent_ns(), share - 40 * kMs);
  // Every process is read, in turn: 16 x 40 ms a cycle at 10 ms/s is 64 s a cycle, and
  // no process waits more than two (the first sights' debt, then its turn).
  for (const auto& [pid, p] : procs) {
    ASSERT_TRUE(reads.contains(pid)) << pid;
    EXPECT_GE(reads.at(pid).size(), 8u) << pid;
    EXPECT_LE(MaxGap(reads.at(pid), kS, kS + seconds * kS), 2 * 64 * kS) << pid;
  }
}

TEST(PssSchedule, TheFloorGivesWayWhenTheBudgetCannotPayForIt) {
  // 16 x 4 GiB cannot each be read every 30 s within 1% of a core (16 x 40 ms = 640 ms
  // per 30 s is 2.1%): the floor gives way, never the budget.
  PssSchedule sched;
  std::map<pid_t, SimProcess> procs;
  for (pid_t p = 100; p < 116; ++p) procs[p] = {4 * kGiB, 40 * kMs, 1 * kGiB};
  const auto reads = Simulate(sched, procs, 300);
  uint64_t worst = 0;
  for (const auto& [pid, v] : reads) worst = std::max(worst, MaxGap(v, kS, kS + 300 * kS));
  EXPECT_GT(worst, PssSchedule::kFloorNs);
}

TEST(PssSchedule, EveryProcessAtLeastEveryThirtySecondsWhereTheBudgetAllows) {
  // Four processes of 1 GiB (10 ms a read) and one small one: the small one is read more
  // than twice as often as each big one, and each big one at least every 30 s.
  PssSchedule sched;
  std::map<pid_t, SimProcess> procs;
  for (pid_t p = 100; p < 104; ++p) procs[p] = {1 * kGiB, 10 * kMs, 512 * kMiB};
  procs[200] = {16 * kMiB, 300'000, 8 * kMiB};
  const uint64_t seconds = 300;
  const auto reads = Simulate(sched, procs, seconds);
  for (pid_t p = 100; p < 104; ++p) {
    EXPECT_LE(MaxGap(reads.at(p), kS, kS + seconds * kS), PssSchedule::kFloorNs + kS) << p;
  }
  EXPECT_GT(reads.at(200).size(), 2 * reads.at(100).size());
}

TEST(PssSchedule, NoProcessHoldsItsLockMoreThanTwoPercentOfTheTime) {
  // One process alone, with all the budget to itself: its reads still wait 50 times
  // their cost. A small one: 1 ms reads, at most one per 50 ms (here every 100 ms round).
  for (const uint64_t cost : {1 * kMs, 13 * kMs, 40 * kMs}) {
    PssSchedule sched;
    std::map<pid_t, SimProcess> procs = {{7, {cost / kMs * 100 * kMiB, cost, 50 * kMiB}}};
    const auto reads = Simulate(sched, procs, 120);
    const std::vector<uint64_t>& v = reads.at(7);
    for (size_t k = 1; k < v.size(); ++k) {
      EXPECT_GE(v[k] - v[k - 1], static_cast<uint64_t>(cost / PssSchedule::kLockShare)) << cost;
    }
    const double held = static_cast<double>(v.size() * cost) / static_cast<double>(120 * kS);
    EXPECT_LE(held, PssSchedule::kLockShare) << cost;
    EXPECT_GE(v.size(), 2u) << cost;
  }
}

TEST(PssSchedule, OverTheThresholdInRssTheReadingsAreKeptFresh) {
  // Eight processes that each map one shared 3 GiB region: RSS 3 GiB each, PSS 384 MiB.
  // Their RSS sums to 24 GiB, over 90% of a 24 GiB limit, so the verdict needs PSS: each
  // is read at first sight (240 ms of reads, twelve times what the bucket held), then
  // again every kVerdictRefreshNs while its RSS stands still, whatever the bucket holds.
  PssSchedule sched;
  std::vector<PssSchedule::Candidate> round;
  for (pid_t p = 1; p <= 8; ++p) round.push_back({p, 3 * kGiB});
  const uint64_t limit = 24 * kGiB;
  EXPECT_EQ(sched.EstimatedTreePss(round), 24 * kGiB);  // nothing read yet: RSS
  std::vector<pid_t> first = sched.Choose(kS, round, limit);
  EXPECT_EQ(first.size(), 8u);
  for (pid_t p : first) sched.Record(p, kS, 30 * kMs, 30 * kMs, 3 * kGiB, 384 * kMiB);
  EXPECT_EQ(sched.EstimatedTreePss(round), 3 * kGiB);
  EXPECT_LT(sched.bucket_ns(), 0);
  for (uint64_t now = kS + 100 * kMs; now < kS + PssSchedule::kVerdictRefreshNs; now += 100 * kMs) {
    EXPECT_TRUE(sched.Choose(now, round, limit).empty()) << now;
  }
  EXPECT_EQ(sched.Choose(kS + PssSchedule::kVerdictRefreshNs, round, limit).size(), 8u);
  // Without a limit the same first round reads them all too (each at first sight), into
  // the same debt; then nothing while the bucket is in debt.
  PssSchedule unlimited;
  EXPECT_EQ(unlimited.Choose(kS, round, UINT64_MAX).size(), 8u);
  for (pid_t p = 1; p <= 8; ++p) unlimited.Record(p, kS, 30 * kMs, 30 * kMs, 3 * kGiB, 384 * kMiB);
  EXPECT_TRUE(unlimited.Choose(kS + 10 * kS, round, UINT64_MAX).empty());
}

TEST(PssSchedule, AboveTheThresholdTheLockStillHolds) {
  // A process whose RSS alone exceeds the threshold: read at once, then not again before
  // 50 times its read's hold, however long the pressure lasts.
  PssSchedule sched;
  std::vector<PssSchedule::Candidate> round = {{9, 20 * kGiB}};
  ASSERT_EQ(sched.Choose(kS, round, 21 * kGiB).size(), 1u);
  sched.Record(9, kS, 100 * kMs, 100 * kMs, 20 * kGiB, 20 * kGiB);
  EXPECT_TRUE(sched.Choose(kS + 4 * kS, round, 21 * kGiB).empty());
  EXPECT_EQ(sched.Choose(kS + 5 * kS, round, 21 * kGiB).size(), 1u);
}

TEST(PssSchedule, TheLockWaitsForTheHoldTheBucketPaysTheCpu) {
  // A read of 524 MiB that held the lock 12 ms and cost 3 ms of CPU: the next waits
  // 50 x 12 ms; the bucket pays the 3 ms; at 3 GiB a read is expected to cost 3 ms scaled
  // by the RSS.
  PssSchedule sched;
  std::vector<PssSchedule::Candidate> round = {{3, 524 * kMiB}};
  ASSERT_EQ(sched.Choose(kS, round, UINT64_MAX).size(), 1u);
  const int64_t before = sched.bucket_ns() + static_cast<int64_t>(sched.PredictedCostNs(3, 524 * kMiB));
  sched.Record(3, kS, 12 * kMs, 3 * kMs, 524 * kMiB, 150 * kMiB);
  EXPECT_EQ(sched.bucket_ns(), before - static_cast<int64_t>(3 * kMs));
  EXPECT_EQ(sched.LockIntervalNs(3), static_cast<uint64_t>(12 * kMs / PssSchedule::kLockShare));
  EXPECT_NEAR(static_cast<double>(sched.PredictedCostNs(3, 3 * kGiB)), 3.0 * kMs * 3072 / 524, 1000);
  // The same read slowed by a busy machine (180 ms of wall time for the 3 ms of CPU):
  // counted as at most 4 x its CPU, so a growing worker is not left unread for 9 s.
  sched.Record(3, kS, 180 * kMs, 3 * kMs, 524 * kMiB, 150 * kMiB);
  EXPECT_EQ(sched.LockIntervalNs(3), static_cast<uint64_t>(4 * 3 * kMs / PssSchedule::kLockShare));
  // Never past the floor.
  sched.Record(3, kS, 2 * kS, 2 * kS, 524 * kMiB, 150 * kMiB);
  EXPECT_EQ(sched.LockIntervalNs(3), PssSchedule::kFloorNs);
}

TEST(PssSchedule, TheRoundsArePaidFromTheSameBudgetAsTheReads) {
  // Rounds that use the whole 1% themselves (1 ms every 100 ms) leave nothing for the
  // reads once the bucket's first fill is spent: one process read at first sight, then
  // no more; rounds that use a tenth of it leave the rest.
  for (const uint64_t round_cost : {uint64_t{1 * kMs}, uint64_t{100'000}}) {
    PssSchedule sched;
    std::vector<PssSchedule::Candidate> round = {{8, 64 * kMiB}};
    int reads = 0;
    for (uint64_t now = kS; now < 61 * kS; now += 100 * kMs) {
      for (pid_t p : sched.Choose(now, round, UINT64_MAX)) {
        sched.Record(p, now, 400'000, 400'000, 64 * kMiB, 32 * kMiB);
        ++reads;
      }
      sched.ChargeRound(round_cost);
    }
    if (round_cost == 1 * kMs) {
      EXPECT_LE(reads, 60) << "the first fill (20 ms) and rounding, no more";
    } else {
      // 9 ms/s left for 0.4 ms reads, each waiting 20 ms for its lock: one every round.
      EXPECT_GE(reads, 500);
    }
  }
}

TEST(PssSchedule, NeverReadProcessesComeFirstBiggestFirst) {
  PssSchedule sched;
  std::vector<PssSchedule::Candidate> round = {{1, 10 * kMiB}, {2, 600 * kMiB}, {3, 50 * kMiB}};
  EXPECT_EQ(sched.Choose(kS, round, UINT64_MAX), (std::vector<pid_t>{2, 3, 1}));
}

TEST(PssSchedule, AnUnreadableProcessIsTriedAgainOnlyAtTheFloor) {
  PssSchedule sched;
  std::vector<PssSchedule::Candidate> round = {{4, 100 * kMiB}};
  ASSERT_EQ(sched.Choose(kS, round, UINT64_MAX).size(), 1u);
  sched.Record(4, kS, 20'000, 20'000, 100 * kMiB, UINT64_MAX);  // permission denied
  EXPECT_TRUE(sched.Choose(kS + PssSchedule::kFloorNs - kMs, round, UINT64_MAX).empty());
  EXPECT_EQ(sched.Choose(kS + PssSchedule::kFloorNs, round, UINT64_MAX).size(), 1u);
}

TEST(PssSchedule, AFixedPeriodReadsEveryProcessAtItWhateverItCosts) {
  PssSchedule sched(200 * kMs);  // COLABTRACE_PSS_MS=200
  std::map<pid_t, SimProcess> procs;
  for (pid_t p = 100; p < 104; ++p) procs[p] = {8 * kGiB, 80 * kMs, 1 * kGiB};
  const auto reads = Simulate(sched, procs, 10);
  for (const auto& [pid, v] : reads) EXPECT_EQ(v.size(), 50u) << pid;  // 10 s at 200 ms
}

TEST(PssSchedule, ProcessesThatEndedAreForgotten) {
  PssSchedule sched;
  std::vector<PssSchedule::Candidate> round = {{5, 10 * kMiB}};
  ASSERT_EQ(sched.Choose(kS, round, UINT64_MAX).size(), 1u);
  sched.Record(5, kS, 100'000, 100'000, 10 * kMiB, 5 * kMiB);
  sched.Retain({});
  // The pid, reused by a new process, is new again: read first, whatever the old one's lock.
  EXPECT_EQ(sched.Choose(kS + kMs, round, UINT64_MAX).size(), 1u);
}

}  // namespace
}  // namespace colabtrace::analyzer
