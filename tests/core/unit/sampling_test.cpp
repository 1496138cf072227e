// The periodic sample's gate (shim/sampling.cpp) under many recording threads: Emit
// hands the first record whose timestamp reaches g_sample_due_ticks to g_sample_hook,
// which claims the sample with one compare-and-swap, so each due sample is taken by one
// thread only, however many reach the gate at once. Built twice: as core.SamplingGate*
// in core_unit_test, and as tsan.SamplingGate* under ThreadSanitizer (tests/core/tsan),
// which fails on any race among the threads that race for the gate.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "config.h"
#include "sampling.h"
#include "writer_session.h"

// sampling.cpp's links without the shim's start-up: its settings (no environment read),
// and no Python to sample.
namespace colabtrace::shim {
Config g_config;
namespace python {
uint64_t EmitPythonSample(uint64_t, bool) { return 0; }
}  // namespace python
}  // namespace colabtrace::shim

namespace {

namespace fmt = colabtrace::format;
namespace shim = colabtrace::shim;
using colabtrace::analyzer::ProcessTrace;
using namespace colabtrace::testing;  // TempDir, WriterSession, MustRead

// Records from `threads` threads at once for `run_ms`, with the periodic sample armed
// every `period_ms`, and one more thread taking event samples (fork, exec and exit take
// theirs on whichever thread gets there) meanwhile. While a sample is armed, the threads
// wait at the gate and all record the moment it is due, so they reach it together;
// otherwise they record in bursts. Returns the trace.
ProcessTrace RecordWithSamples(const std::string& path, int threads, uint32_t period_ms, int run_ms) {
  WriterSession s(path);
  EXPECT_TRUE(s.Begin());
  {
    shim::ShimScope scope;
    shim::TakeSample();  // start-up's own sample, before any other thread
  }
  shim::g_config.sample_ms = period_ms;
  shim::ArmPeriodicSamples();
  std::atomic<int> ready{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();
      for (uint64_t k = 0; !stop.load(std::memory_order_relaxed); ++k) {
        if (period_ms != 0) {
          const uint64_t due = __atomic_load_n(&shim::g_sample_due_ticks, __ATOMIC_ACQUIRE);
          if (due == UINT64_MAX || shim::Ticks() < due) continue;  // not due: wait at the gate
        } else if (k % 64 == 63) {
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        }
        fmt::ShimNote n;
        n.ts = shim::Ticks();
        n.code = static_cast<uint64_t>(i);
        n.value = k;
        shim::ShimScope scope;
        shim::Emit(n);
      }
    });
  }
  pool.emplace_back([&] {
    while (!stop.load()) {
      {
        shim::ShimScope scope;
        shim::TakeSample();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(7));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(run_ms));
  stop.store(true);
  for (auto& th : pool) th.join();
  // Disarmed, so that later tests of this binary record without samples.
  __atomic_store_n(&shim::g_sample_due_ticks, UINT64_MAX, __ATOMIC_RELEASE);
  s.End();
  std::string err;
  auto t = colabtrace::analyzer::ReadTraceFile(path, &err);
  EXPECT_TRUE(t.has_value()) << err;
  return t ? std::move(*t) : ProcessTrace();
}

// The periodic samples of t, in time order: a periodic sample (and only it) is followed on
// its thread by a Clock record, before any other record of that thread; for each Clock,
// its thread's last Sample at or before it.
std::vector<uint64_t> PeriodicSampleTimes(const ProcessTrace& t) {
  std::vector<uint64_t> out;
  for (const auto& c : t.records.Clock) {
    uint64_t at = 0;
    bool found = false;
    for (const auto& s : t.records.Sample) {
      if (s.tid == c.tid && s.ts <= c.ts && (!found || s.ts > at)) at = s.ts, found = true;
    }
    EXPECT_TRUE(found) << "a Clock record without its sample";
    if (found) out.push_back(at);
  }
  std::sort(out.begin(), out.end());
  return out;
}

class SamplingGateTest : public ::testing::Test {
 protected:
  std::string TracePath() { return dir_.path() + "/sampling.ctrace"; }
  TempDir dir_;
};

TEST_F(SamplingGateTest, EachDueSampleIsTakenByOneThreadOnly) {
  // Ticks are CLOCK_MONOTONIC nanoseconds here (WriterSession never calls
  // InitTicks), so a sample's ts is the time it was taken.
  ASSERT_FALSE(shim::g_ticks_are_tsc);
  constexpr uint32_t kPeriodMs = 10;
  constexpr int kRunMs = 500;
  const ProcessTrace t = RecordWithSamples(TracePath(), 4, kPeriodMs, kRunMs);
  ASSERT_GE(t.records.ShimNote.size(), 20u) << "the threads recorded at the gate";
  const std::vector<uint64_t> periodic = PeriodicSampleTimes(t);
  // Each sample sets the next one due a period after it began: two threads taking one
  // due sample would leave two samples microseconds apart. (A quarter period of slack:
  // the taker may be preempted between reading the clock and stamping its sample.)
  ASSERT_GE(periodic.size(), 3u) << "samples were due about every " << kPeriodMs << " ms";
  EXPECT_LE(periodic.size(), static_cast<size_t>(kRunMs / kPeriodMs + 2));
  for (size_t i = 1; i < periodic.size(); ++i) {
    EXPECT_GE(periodic[i] - periodic[i - 1], kPeriodMs * 1'000'000ull / 4)
        << "samples " << i - 1 << " and " << i << " were taken for one due time";
  }
  // The samples that are not periodic are the event ones: start-up's and the event thread's.
  EXPECT_GE(t.records.Sample.size() - periodic.size(), 2u);
}

TEST_F(SamplingGateTest, ADisarmedGateTakesNoPeriodicSample) {
  // COLABTRACE_SAMPLE_MS=0: samples only at start, fork, exec and exit.
  const ProcessTrace t = RecordWithSamples(TracePath(), 4, 0, 100);
  ASSERT_GE(t.records.ShimNote.size(), 100u);
  EXPECT_TRUE(PeriodicSampleTimes(t).empty());
  EXPECT_TRUE(t.thinned.images.empty()) << "no periodic sample, no thinned-sample chunk";
}

TEST_F(SamplingGateTest, EveryPeriodicSampleIsInTheThinnedTiersWithTheExactPeak) {
  // The window gave nothing up, so the reader reads the tiers' run state but makes no
  // record of their entries: the trace's periodic samples are the ground truth.
  const ProcessTrace t = RecordWithSamples(TracePath(), 2, 5, 300);
  const std::vector<uint64_t> periodic = PeriodicSampleTimes(t);
  ASSERT_GE(periodic.size(), 10u);
  ASSERT_EQ(t.thinned.images.size(), 1u);
  const auto& im = t.thinned.images[0];
  ASSERT_TRUE(im.run_known);
  EXPECT_EQ(t.thinned.made_samples, 0u);
  EXPECT_EQ(im.run.samples, periodic.size());
  EXPECT_EQ(im.entries[0], 1u) << "300 ms of samples: one 10 s entry";
  EXPECT_EQ(im.interval_ns[0], 10'000'000'000ull);
  uint64_t peak = 0, peak_ts = 0;
  for (uint64_t ts : periodic) {
    for (const auto& s : t.records.Sample) {
      if (s.ts == ts && s.rss_bytes > peak) peak = s.rss_bytes, peak_ts = s.ts;
    }
  }
  EXPECT_EQ(im.run.peak_rss, peak);
  EXPECT_EQ(im.run.peak_rss_ticks, peak_ts);
  EXPECT_EQ(im.run.clock_ticks, t.records.Clock.back().ts) << "the last periodic clock";
}

}  // namespace
