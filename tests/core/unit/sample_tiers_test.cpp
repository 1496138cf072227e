// The thinned-sample tiers (include/colabtrace/format/sample_tiers.h) on plain memory:
// merging within an interval, the rings moving their oldest entry on, tier 2's folds, and
// that no sample is lost or counted twice on the way; and the reader's records made of
// them for the part of a run the window gave up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "colabtrace/format/sample_tiers.h"
#include "../../harness/trace_builder.h"

namespace {

namespace fmt = colabtrace::format;

constexpr uint64_t kSec = 1'000'000'000ull;

class Tiers {
 public:
  Tiers() {
    for (auto& c : chunks_) c = std::make_unique<uint8_t[]>(fmt::kChunkSize);  // zeroed
  }
  // A sample at t_ns after the base (ticks = ns + 1, so never 0) with RSS rss.
  void Add(uint64_t t_ns, uint64_t rss, uint64_t tid = 7) {
    tiers_.AddSample(t_ns + 1, t_ns, tid, rss, rss * 2, 3, rss + 100, 40, 5, t_ns / 2, t_ns / 4, alloc_);
  }
  std::vector<fmt::ThinEntry> Valid(int k) const {
    std::vector<fmt::ThinEntry> out;
    if (tiers_.chunk[k] == nullptr) return out;
    for (uint32_t i = 0; i < fmt::kThinEntriesPerChunk; ++i) {
      if (tiers_.Entries(k)[i].start_ticks != 0) out.push_back(tiers_.Entries(k)[i]);
    }
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.start_ticks < b.start_ticks; });
    return out;
  }
  const fmt::ThinTier& Tier(int k) const { return *tiers_.Tier(k); }
  bool Has(int k) const { return tiers_.chunk[k] != nullptr; }
  int allocations = 0;

 private:
  std::unique_ptr<uint8_t[]> chunks_[fmt::kThinTiers];
  fmt::ThinTiers tiers_;
  std::function<uint8_t*(int)> alloc_ = [this](int k) {
    ++allocations;
    fmt::ThinTiers::InitChunk(chunks_[k].get(), k);
    return chunks_[k].get();
  };
};

TEST(SampleTiersTest, SamplesOfOneIntervalMergeIntoOneEntry) {
  Tiers t;
  // 10 s entries: samples at 1, 2, 3, 4 s (peak at 2 s), then one at 12 s.
  t.Add(1 * kSec, 500);
  t.Add(2 * kSec, 900);
  t.Add(3 * kSec, 700);
  t.Add(4 * kSec, 600);
  t.Add(12 * kSec, 400, 8);
  EXPECT_EQ(t.allocations, 1) << "tier 0 only";
  const auto e = t.Valid(0);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].count, 4u);
  EXPECT_EQ(e[0].start_ticks, 1 * kSec + 1);
  EXPECT_EQ(e[0].end_ticks, 4 * kSec + 1);
  EXPECT_EQ(e[0].max_rss, 900u);
  EXPECT_EQ(e[0].peak_ticks, 2 * kSec + 1);
  EXPECT_EQ(e[0].max_vm, 1800u);
  EXPECT_EQ(e[0].max_cgroup, 1000u);
  EXPECT_EQ(e[0].max_working_set, 960u);  // cgroup 1000 - inactive 40
  EXPECT_EQ(e[0].last_rss, 600u);
  EXPECT_EQ(e[0].last_utime_ns, 2 * kSec);
  EXPECT_EQ(e[0].last_stime_ns, 1 * kSec);
  EXPECT_EQ(e[0].tid, 7u);
  EXPECT_EQ(e[1].count, 1u);
  EXPECT_EQ(e[1].bucket, 1u);
  EXPECT_EQ(e[1].tid, 8u);
  EXPECT_EQ(t.Tier(0).written, 2u);
}

TEST(SampleTiersTest, AFullRingMovesItsOldestEntryOnBeforeReusingItsSlot) {
  Tiers t;
  const uint32_t cap = fmt::kThinEntriesPerChunk;
  // One sample per 10 s entry: cap + 7 of them. The first 7 move on to tier 1 (one minute:
  // buckets 0 and 1 of 60 s hold entries 0-5 and 6).
  for (uint64_t i = 0; i < cap + 7; ++i) t.Add(i * 10 * kSec, 1000 + i);
  EXPECT_EQ(t.allocations, 2);
  EXPECT_EQ(t.Valid(0).size(), cap);
  const auto one = t.Valid(1);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].count, 6u);
  EXPECT_EQ(one[0].max_rss, 1005u);
  EXPECT_EQ(one[0].last_rss, 1005u);
  EXPECT_EQ(one[0].peak_ticks, 50 * kSec + 1);
  EXPECT_EQ(one[1].count, 1u);
  EXPECT_EQ(one[1].bucket, 1u);
  EXPECT_EQ(t.Valid(0).front().start_ticks, 70 * kSec + 1) << "the oldest left in tier 0 is the eighth";
}

TEST(SampleTiersTest, TierTwoFoldsWhenFullAndNothingIsLostOrCountedTwice) {
  Tiers t;
  const uint32_t cap = fmt::kThinEntriesPerChunk;
  // One sample every 10 s for long enough to fill tier 2 (10 min entries) twice over:
  // cap * 60 samples fill it once, on top of what tiers 0 and 1 hold.
  const uint64_t n = cap + cap * 6 + 2 * cap * 60 + 123;
  const uint64_t spike_at = 777;  // an early sample with the largest RSS
  for (uint64_t i = 0; i < n; ++i) t.Add(i * 10 * kSec, i == spike_at ? 1'000'000 : 1000 + i % 97);
  ASSERT_TRUE(t.Has(2));
  EXPECT_EQ(t.Tier(2).folds, 2u);
  EXPECT_EQ(t.Tier(2).interval_ns, 4 * 600 * kSec);
  uint64_t count = 0, peak = 0, peak_ticks = 0, latest_end = 0;
  for (int k = 0; k < fmt::kThinTiers; ++k) {
    const auto v = t.Valid(k);
    // Within a tier, entries are in time order and do not overlap.
    for (size_t i = 1; i < v.size(); ++i) EXPECT_GT(v[i].start_ticks, v[i - 1].end_ticks) << "tier " << k;
    for (const auto& e : v) {
      count += e.count;
      if (e.max_rss > peak) peak = e.max_rss, peak_ticks = e.peak_ticks;
      latest_end = std::max(latest_end, e.end_ticks);
    }
  }
  EXPECT_EQ(count, n) << "every sample in exactly one entry";
  EXPECT_EQ(peak, 1'000'000u);
  EXPECT_EQ(peak_ticks, spike_at * 10 * kSec + 1);
  EXPECT_EQ(latest_end, (n - 1) * 10 * kSec + 1);
  // Tier 2's entries after two folds are 40 minutes wide (240 samples), the newest partly.
  const auto two = t.Valid(2);
  ASSERT_GE(two.size(), 2u);
  EXPECT_LE(two.size(), cap / 2 + 1);
  EXPECT_EQ(two[1].count, 240u);
}

TEST(SampleTiersTest, UnknownFiguresStayUnknownAndNeverHideKnownOnes) {
  fmt::ThinEntry a{}, b{};
  a.start_ticks = 1, a.end_ticks = 1, a.peak_ticks = 1, a.count = 1;
  a.max_rss = fmt::kThinUnknown, a.max_cgroup = fmt::kThinUnknown, a.max_working_set = fmt::kThinUnknown;
  b = a;
  b.start_ticks = b.end_ticks = b.peak_ticks = 5;
  b.max_rss = 300, b.max_cgroup = 400;
  fmt::ThinTiers::Merge(a, b);
  EXPECT_EQ(a.max_rss, 300u);
  EXPECT_EQ(a.peak_ticks, 5u);
  EXPECT_EQ(a.max_cgroup, 400u);
  EXPECT_EQ(a.max_working_set, fmt::kThinUnknown);
  EXPECT_EQ(a.count, 2u);
  EXPECT_EQ(a.start_ticks, 1u);
  EXPECT_EQ(a.end_ticks, 5u);
}

TEST(SampleTiersTest, TheRunHalfIsPublishedAfterItIsWhole) {
  alignas(8) uint8_t mem[sizeof(fmt::ThinRun)] = {};
  auto* run = reinterpret_cast<fmt::ThinRun*>(mem);
  fmt::ThinRunHalf h{};
  fmt::ThinNotePeak(h.peak_rss, h.peak_rss_ticks, 100, 10);
  fmt::ThinNotePeak(h.peak_rss, h.peak_rss_ticks, fmt::kThinUnknown, 20);
  fmt::ThinNotePeak(h.peak_rss, h.peak_rss_ticks, 50, 30);
  h.samples = 3;
  fmt::ThinPublishRun(run, h);
  EXPECT_EQ(run->seq, 1u);
  EXPECT_EQ(run->half[1].peak_rss, 100u);
  EXPECT_EQ(run->half[1].peak_rss_ticks, 10u);
  EXPECT_EQ(run->half[0].samples, 0u) << "the other half untouched";
  h.samples = 4;
  fmt::ThinPublishRun(run, h);
  EXPECT_EQ(run->seq, 2u);
  EXPECT_EQ(run->half[0].samples, 4u);
  EXPECT_EQ(run->half[1].samples, 3u);
}

// A trace built in memory: one raw (periodic) sample at tick 51000, and a tier-0 chunk of two
// entries: ticks 3000-5000 (RSS 500, 900, 300) and 61000 (RSS 700, 20 s later by its clock).
std::vector<uint8_t> TierChunk() {
  std::vector<uint8_t> c(fmt::kChunkSize);
  fmt::ThinTiers tiers;
  auto alloc = [&](int k) {
    fmt::ThinTiers::InitChunk(c.data(), k);
    return k == 0 ? c.data() : nullptr;
  };
  tiers.AddSample(3000, 2000, 41, 500, 1, 1, 50, 10, 0, 100, 0, alloc);
  tiers.AddSample(4000, 3000, 41, 900, 1, 1, 60, 10, 0, 200, 0, alloc);
  tiers.AddSample(5000, 4000, 42, 300, 1, 1, 70, 10, 2, 300, 0, alloc);
  tiers.AddSample(61000, 20 * kSec, 42, 700, 1, 1, 80, 10, 2, 400, 0, alloc);
  fmt::ThinRunHalf h{};
  h.samples = 4;
  h.peak_rss = 900, h.peak_rss_ticks = 4000;
  fmt::ThinPublishRun(tiers.Run(), h);
  return c;
}

colabtrace::analyzer::ProcessTrace TraceWithTiers(uint64_t dropped_until) {
  colabtrace::testing::TraceBytesBuilder b(4321, 1000);
  fmt::Sample raw;
  raw.ts = 51000;
  raw.rss_bytes = 10;
  b.Append(raw);
  const std::vector<uint8_t> c = TierChunk();
  b.AddThinChunk(c.data(), 0);
  b.SetDroppedUntil(dropped_until);
  return b.Parse();
}

TEST(SampleTiersTest, TheReaderMakesSamplesOfTheEntriesTheWindowGaveUpOnly) {
  const auto t = TraceWithTiers(10000);
  ASSERT_EQ(t.thinned.images.size(), 1u);
  EXPECT_EQ(t.thinned.images[0].entries[0], 2u);
  EXPECT_EQ(t.thinned.images[0].run.peak_rss, 900u);
  EXPECT_EQ(t.thinned.made_samples, 2u) << "the first entry: its peak and its last sample";
  ASSERT_EQ(t.records.Sample.size(), 3u);
  // Ticks are ns here, counted from the trace's start (1000).
  EXPECT_EQ(t.records.Sample[0].ts, 4000u);
  EXPECT_EQ(t.records.Sample[0].rss_bytes, 900u);
  EXPECT_EQ(t.records.Sample[0].cgroup_current, 70u) << "the interval's maximum";
  EXPECT_EQ(t.records.Sample[0].cgroup_inactive_file, 10u) << "working set 60: its maximum";
  EXPECT_EQ(t.records.Sample[0].oom_kill, UINT64_MAX);
  EXPECT_EQ(t.records.Sample[0].utime_ns, 0u);
  EXPECT_EQ(t.records.Sample[1].ts, 5000u);
  EXPECT_EQ(t.records.Sample[1].rss_bytes, 300u);
  EXPECT_EQ(t.records.Sample[1].oom_kill, 2u);
  EXPECT_EQ(t.records.Sample[1].utime_ns, 300u);
  EXPECT_EQ(t.records.Sample[1].tid, 42u);
  EXPECT_EQ(t.records.Sample[2].ts, 51000u);
  EXPECT_EQ(t.records.Sample[2].rss_bytes, 10u) << "the raw sample, kept as it is";
}

TEST(SampleTiersTest, NothingGivenUpNothingMadeAndHalfWrittenEntriesAreSkipped) {
  EXPECT_EQ(TraceWithTiers(0).records.Sample.size(), 1u);
  EXPECT_EQ(TraceWithTiers(0).thinned.made_samples, 0u);
  // An entry whose peak lies outside its interval (a crafted or torn slot) is not read.
  std::vector<uint8_t> c = TierChunk();
  auto* e = reinterpret_cast<fmt::ThinEntry*>(c.data() + fmt::kThinEntriesOffset);
  e[0].peak_ticks = e[0].end_ticks + 1;
  e[1].start_ticks = 0;
  colabtrace::testing::TraceBytesBuilder b(4321, 1000);
  b.AddThinChunk(c.data(), 0);
  b.SetDroppedUntil(UINT64_MAX);
  const auto t = b.Parse();
  EXPECT_EQ(t.thinned.images[0].entries[0], 0u);
  EXPECT_TRUE(t.records.Sample.empty());
}

}  // namespace
