// gpu.churn (warning): at least 1,000 raw allocate/free pairs at 100 or more per second.
// Golden traces: 1,000 pairs of a 1 MiB cudaMalloc and its cudaFree, one every 1 ms, with
// PYTORCH_NO_CUDA_MEMORY_CACHING=1 set at start; 999 pairs, or 1,000 pairs one every
// 11 ms (about 91 per second), are not churn.
#include <gtest/gtest.h>

#include <vector>

#include "gpu_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using gputest::TraceBuilder;
using Api = format::GpuApi;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x200000000000ull;

std::vector<ProcessTrace> Pairs(uint64_t pairs, uint64_t gap_ns) {
  TraceBuilder b(107);
  b.Env("PYTORCH_NO_CUDA_MEMORY_CACHING", "1", format::EnvSource::kStartup);
  for (uint64_t i = 0; i < pairs; ++i) {
    b.Alloc(Api::kCudaMalloc, kBase, kMiB);
    b.Free(Api::kCudaFree, kBase);
    b.Advance(gap_ns);
  }
  return RunOf(b.Finish());
}

TEST(GpuChurn, AThousandRawPairsAMillisecondApart) {
  auto traces = Pairs(1000, 1'000'000);
  const auto f = FindingsOf(traces, "gpu.churn");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 107);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["raw_pairs"].as_int(), 1000);
  // Each pair takes 1 ms and 152 ns (a 100 ns call, 1 ns, a 50 ns call, 1 ns): 1,000
  // pairs over 999 of them, 1000.85 per second, rounded to 1000.8.
  EXPECT_DOUBLE_EQ(ev["rate_per_s"].number(), 1000.8);
  EXPECT_EQ(ev["median_lifetime_ns"].as_int(), 101);
  EXPECT_EQ(ev["time_in_calls_ns"].as_int(), 150000);
  EXPECT_EQ(ev["cache_releases"].as_int(), 0);
  EXPECT_TRUE(ev["pytorch_no_cuda_memory_caching"].boolean());
  EXPECT_NE(f[0].advice.find("PYTORCH_NO_CUDA_MEMORY_CACHING=1 turns PyTorch's cache off"), std::string::npos);
}

TEST(GpuChurn, NineHundredNinetyNinePairsAreNone) {
  auto traces = Pairs(999, 1'000'000);
  EXPECT_TRUE(FindingsOf(traces, "gpu.churn").empty());
}

TEST(GpuChurn, AThousandPairsUnderAHundredPerSecondAreNone) {
  auto traces = Pairs(1000, 11'000'000);
  EXPECT_TRUE(FindingsOf(traces, "gpu.churn").empty());
}

}  // namespace
}  // namespace colabtrace::testing
