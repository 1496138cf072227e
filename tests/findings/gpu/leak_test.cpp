// gpu.leak (warning): allocations from one site that keep coming after warm-up and are
// never freed. Golden trace: two 64 MiB cache buffers at the start (held, not a leak),
// then a 4 MiB allocation from another site every 200 ms, ten times, none freed. Every
// 150 ms instead, the allocations after warm-up span under a second: too short to tell
// from setup, no leak.
#include <gtest/gtest.h>

#include <vector>

#include "gpu_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using gputest::Steps;
using gputest::TraceBuilder;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x200000000000ull;

std::vector<ProcessTrace> Growing(uint64_t gap_ns) {
  TraceBuilder b(120);
  const uint64_t leak = b.Stack({0x401000}), cache = b.Stack({0x402000});
  uint64_t addr = kBase;
  Steps(b, cache, &addr, 2, 64 * kMiB, 0);
  Steps(b, leak, &addr, 10, 4 * kMiB, gap_ns);
  return RunOf(b.Finish());
}

TEST(GpuLeak, TenAllocationsFromOneSiteEvery200msNeverFreed) {
  auto traces = Growing(200'000'000);
  const auto f = FindingsOf(traces, "gpu.leak");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 120);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["growth_bytes"].as_int(), static_cast<int64_t>(40 * kMiB));
  EXPECT_EQ(ev["allocations"].as_int(), 10);
  // 9 x 4 MiB over 9 steps of 200 ms and 101 ns (each record's 100 ns call and 1 ns):
  // 20 MiB/s less 0.5 ppm.
  EXPECT_EQ(ev["growth_rate_bytes_per_s"].as_int(), 20971509);
  EXPECT_EQ(ev["held_at_exit_bytes"].as_int(), static_cast<int64_t>(128 * kMiB));
  EXPECT_EQ(ev["leaked_bytes"].as_int(), static_cast<int64_t>(168 * kMiB));
  EXPECT_EQ(ev["at"].str(), "exit");
  EXPECT_EQ(ev["groups"].as_int(), 1);
  const auto& by = ev["by_stack"].array();
  ASSERT_EQ(by.size(), 1u);
  EXPECT_EQ(by[0]["bytes"].as_int(), static_cast<int64_t>(40 * kMiB));
  EXPECT_EQ(by[0]["count"].as_int(), 10);
  EXPECT_EQ(by[0]["after_warmup_count"].as_int(), 7);
  EXPECT_EQ(by[0]["rate_bytes_per_s"].as_int(), 20971509);
  EXPECT_EQ(by[0]["api"].str(), "cudaMalloc");
  EXPECT_EQ(by[0]["stack"].array().size(), 1u);
  EXPECT_EQ(f[0].summary,
            "GPU memory kept growing: 10 allocation(s), 40.0 MiB, from 1 allocation site(s) were never freed "
            "(about 20.0 MiB/s) and still allocated at exit");
}

TEST(GpuLeak, GrowthOverLessThanASecondAfterWarmupIsNone) {
  auto traces = Growing(150'000'000);
  EXPECT_TRUE(FindingsOf(traces, "gpu.leak").empty());
}

}  // namespace
}  // namespace colabtrace::testing
