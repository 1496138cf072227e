// The step aggregates (format/step_agg.h, shim/step_agg.cpp, issue 39): the histogram's
// buckets and the quantiles read from them against the exact ones over random data; the
// folding of the period table; and a round trip of 130,000 steps through the shim's real
// writer and the analyzer's reader (sums, counts, warm-up, folded periods exact); and
// threads that mark steps at once (also run under ThreadSanitizer: tsan.StepAggThreads.*).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "perf/step_model.h"
#include "step_agg.h"
#include "writer_session.h"

namespace colabtrace::testing {
namespace {

namespace fmt = ::colabtrace::format;
using analyzer::StepSeries;

std::vector<StepSeries::Bin> BinsOf(const std::vector<uint64_t>& values) {
  std::vector<uint64_t> counts(fmt::kStepHistBuckets, 0);
  for (uint64_t v : values) ++counts[fmt::StepHistBucket(v)];
  std::vector<StepSeries::Bin> bins;
  for (uint32_t b = 0; b < fmt::kStepHistBuckets; ++b) {
    if (counts[b] == 0) continue;
    const uint64_t high = b + 1 < fmt::kStepHistBuckets ? fmt::StepHistBucketLow(b + 1) : fmt::StepHistBucketLow(b);
    bins.push_back({b, fmt::StepHistBucketLow(b), high, counts[b]});
  }
  return bins;
}

TEST(StepAggHistogram, BucketsAreContiguousAndNarrow) {
  EXPECT_EQ(fmt::kStepHistBuckets, 3968u);
  EXPECT_EQ(fmt::StepHistBucket(0), 0u);
  EXPECT_EQ(fmt::StepHistBucket(63), 0u);
  EXPECT_EQ(fmt::StepHistBucket(64), 1u);
  EXPECT_EQ(fmt::StepHistBucket(8191), 127u);
  EXPECT_EQ(fmt::StepHistBucket(8192), 128u);
  EXPECT_EQ(fmt::StepHistBucket(8192 + 64), 129u);
  EXPECT_EQ(fmt::StepHistBucket(uint64_t{1} << 43), fmt::kStepHistBuckets - 1);
  EXPECT_EQ(fmt::StepHistBucket(UINT64_MAX), fmt::kStepHistBuckets - 1);
  for (uint32_t b = 0; b + 1 < fmt::kStepHistBuckets; ++b) {
    const uint64_t low = fmt::StepHistBucketLow(b), next = fmt::StepHistBucketLow(b + 1);
    ASSERT_LT(low, next) << b;
    ASSERT_EQ(fmt::StepHistBucket(low), b);
    ASSERT_EQ(fmt::StepHistBucket(next - 1), b);
    if (low >= 8192) ASSERT_LE((next - low) * 128, low) << b;  // at most 1/128 of its values wide
  }
}

TEST(StepAggHistogram, QuantilesWithinOnePercentOverRandomData) {
  std::mt19937_64 rng(39);
  // Log-uniform from 10 us to 100 s, a normal around 40 ms, and a bimodal mix.
  std::vector<std::vector<uint64_t>> sets(3);
  std::uniform_real_distribution<double> exp(std::log(1e4), std::log(1e11));
  std::normal_distribution<double> normal(4e7, 4e6);
  std::bernoulli_distribution coin(0.3);
  for (int i = 0; i < 200000; ++i) {
    sets[0].push_back(static_cast<uint64_t>(std::exp(exp(rng))));
    sets[1].push_back(static_cast<uint64_t>(std::max(1e4, normal(rng))));
    sets[2].push_back(coin(rng) ? 5000000 + rng() % 100000 : 90000000 + rng() % 9000000);
  }
  for (size_t k = 0; k < sets.size(); ++k) {
    const std::vector<StepSeries::Bin> bins = BinsOf(sets[k]);
    for (double p : {0.1, 0.5, 0.9, 0.99}) {
      const double exact = static_cast<double>(analyzer::perf::PercentileOf(sets[k], p));
      const double got = static_cast<double>(analyzer::perf::HistPercentile(bins, false, 0, p));
      EXPECT_LE(std::fabs(got - exact), exact * 0.01) << "set " << k << " p " << p;
      EXPECT_LE(std::fabs(got - exact), exact * 0.004) << "set " << k << " p " << p;  // half a bucket
    }
  }
  // Less one value: the warm-up, removed from its bucket.
  std::vector<uint64_t> v = {100000, 200000, 300000, 900000000};
  const std::vector<StepSeries::Bin> bins = BinsOf(v);
  const double without = static_cast<double>(
      analyzer::perf::HistPercentile(bins, true, fmt::StepHistBucket(900000000), 0.9));
  EXPECT_NEAR(without, 300000.0, 300000.0 * 0.004);
  EXPECT_EQ(analyzer::perf::HistPercentile(BinsOf({0, 0, 50}), false, 0, 0.5), 0u);
}

TEST(StepAggPeriods, FoldingPairsKeepsEverySum) {
  std::vector<fmt::StepAggPeriod> p(5);
  for (uint32_t i = 0; i < 5; ++i) {
    p[i].steps = 10 + i;
    p[i].start_ticks = 100 * i;
    p[i].end_ticks = 100 * i + 90;
    for (uint32_t k = 0; k < fmt::kStepParts; ++k) p[i].sums[k] = (i + 1) * 1000 + k;
  }
  EXPECT_EQ(fmt::FoldStepPeriods(p.data(), 5), 3u);
  EXPECT_EQ(p[0].steps, 21u);
  EXPECT_EQ(p[0].start_ticks, 0u);
  EXPECT_EQ(p[0].end_ticks, 190u);
  EXPECT_EQ(p[1].steps, 25u);
  EXPECT_EQ(p[1].start_ticks, 200u);
  EXPECT_EQ(p[1].end_ticks, 390u);
  EXPECT_EQ(p[2].steps, 14u);  // the odd one out, alone
  EXPECT_EQ(p[2].end_ticks, 490u);
  for (uint32_t k = 0; k < fmt::kStepParts; ++k) {
    EXPECT_EQ(p[0].sums[k], 3000u + 2 * k);
    EXPECT_EQ(p[1].sums[k], 7000u + 2 * k);
    EXPECT_EQ(p[2].sums[k], 5000u + k);
  }
  EXPECT_EQ(p[3].steps, 0u);  // cleared
  EXPECT_EQ(p[4].sums[0], 0u);
}

// 130,000 marker steps through the real writer: the table fills (128 periods of 1,000) and
// folds once into 64 of 2,000, then a 65th fills; every figure reads back exact.
TEST(StepAggRoundTrip, StepsSumsAndFoldedPeriods) {
  TempDir dir;
  const std::string path = dir.path() + "/steps.ctrace";
  WriterSession session(path);
  ASSERT_TRUE(session.Begin());
  shim::ResetStepAgg();
  fmt::Step first;
  first.ts = 1000;
  Put(first);  // the thread's first record: it has a tid now
  constexpr uint64_t kSteps = 130000;
  shim::ThreadState::StepSums sums{};
  uint64_t at = 1000, total = 0, wait = 0, io = 0, calls = 0;
  std::vector<uint64_t> durations;
  {
    shim::ShimScope scope;
    ASSERT_TRUE(scope.entered());
    shim::StepAggBoundary(0, at, sums);
    for (uint64_t k = 0; k < kSteps; ++k) {
      const uint64_t d = k == 0 ? 5000000 : 20000 + (k % 7) * 1000;  // a slow warm-up
      const uint64_t w = (k % 3) * 2000, f = 500;
      sums.part[fmt::kStepInputWait] += w;
      sums.part[fmt::kStepIo] += f;
      sums.part[fmt::kStepIoCalls] += 2;
      sums.part[fmt::kStepIoCallTicks] += f;
      at += d;
      shim::StepAggBoundary(0, at, sums);
      total += d;
      wait += w;
      io += f;
      calls += 2;
      durations.push_back(d);
    }
  }
  session.End();
  shim::ResetStepAgg();

  const analyzer::ProcessTrace t = MustRead(path);
  ASSERT_TRUE(t.step_aggregates.present);
  ASSERT_EQ(t.step_aggregates.series.size(), 1u);
  const StepSeries& s = t.step_aggregates.series[0];
  EXPECT_EQ(s.source, 0u);
  EXPECT_EQ(s.boundaries, kSteps + 1);
  EXPECT_EQ(s.steps, kSteps);
  EXPECT_EQ(s.first_ns, 1000u);
  EXPECT_EQ(s.last_ns, at);
  EXPECT_EQ(s.all.sums[fmt::kStepTotal], total);
  EXPECT_EQ(s.all.sums[fmt::kStepInputWait], wait);
  EXPECT_EQ(s.all.sums[fmt::kStepIo], io);
  EXPECT_EQ(s.all.sums[fmt::kStepIoCalls], calls);
  EXPECT_EQ(s.all.sums[fmt::kStepOther], total - wait - io);
  EXPECT_EQ(s.warmup.sums[fmt::kStepTotal], 5000000u);
  EXPECT_EQ(s.warmup.start_ns, 1000u);
  EXPECT_EQ(s.folds, 1u);
  EXPECT_EQ(s.period_steps, 2000u);
  ASSERT_EQ(s.periods.size(), 65u);
  uint64_t period_steps = 0, period_total = 0;
  for (const StepSeries::Span& p : s.periods) {
    EXPECT_EQ(p.steps, 2000u);
    period_steps += p.steps;
    period_total += p.sums[fmt::kStepTotal];
  }
  EXPECT_EQ(period_steps, kSteps);
  EXPECT_EQ(period_total, total);
  EXPECT_EQ(s.periods.front().start_ns, 1000u);
  EXPECT_EQ(s.periods.back().end_ns, at);
  uint64_t counted = 0;
  for (const auto& b : s.hist[fmt::kStepTotal]) counted += b.count;
  EXPECT_EQ(counted, kSteps);
  // The median and p90 after warm-up, from the histogram, against the exact ones.
  durations.erase(durations.begin());
  for (double p : {0.5, 0.9}) {
    const double exact = static_cast<double>(analyzer::perf::PercentileOf(durations, p));
    const double got = static_cast<double>(analyzer::perf::HistPercentile(
        s.hist[fmt::kStepTotal], true, s.warmup_bucket[fmt::kStepTotal], p));
    EXPECT_LE(std::fabs(got - exact), exact * 0.01) << p;
  }
}

// Six threads mark steps of two sources at once (markers and batch waits), three each: the
// first to mark a source owns its series, whose steps are summed exactly; the others' marks
// are only counted, each at most once (not before the owner published the chunks). Under
// ThreadSanitizer (tsan.StepAggThreads.*) no race among them, the owner and the writer.
TEST(StepAggThreads, ManyThreadsMarkingStepsAtOnce) {
  TempDir dir;
  const std::string path = dir.path() + "/threads.ctrace";
  WriterSession session(path);
  ASSERT_TRUE(session.Begin());
  shim::ResetStepAgg();
  constexpr int kThreads = 6;
  constexpr uint64_t kMarks = 2000;
  constexpr uint32_t kSources[2] = {0, 2};
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      fmt::Step first;
      first.ts = 1000;
      Put(first);  // a tid
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      shim::ShimScope scope;
      if (!scope.entered()) return;
      shim::ThreadState::StepSums sums{};
      uint64_t at = 1000;
      for (uint64_t k = 0; k <= kMarks; ++k) {
        sums.part[fmt::kStepIo] += 10;
        at += 100;
        shim::StepAggBoundary(kSources[i % 2], at, sums);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  session.End();
  shim::ResetStepAgg();

  const analyzer::ProcessTrace t = MustRead(path);
  ASSERT_EQ(t.step_aggregates.series.size(), 2u);
  for (const StepSeries& s : t.step_aggregates.series) {
    EXPECT_EQ(s.boundaries, kMarks + 1) << s.source;
    EXPECT_EQ(s.steps, kMarks) << s.source;
    EXPECT_EQ(s.all.sums[fmt::kStepTotal], kMarks * 100) << s.source;
    EXPECT_EQ(s.all.sums[fmt::kStepIo], kMarks * 10) << s.source;
    EXPECT_LE(s.other_threads, (kThreads / 2 - 1) * (kMarks + 1)) << s.source;
  }
}

}  // namespace
}  // namespace colabtrace::testing
