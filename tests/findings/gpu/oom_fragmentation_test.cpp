// gpu.oom-fragmentation (error): an allocation failed while at least the request was
// free. Golden trace: a 4 GiB device filled with eight 512 MiB segments; freeing the
// second and the fifth leaves two 512 MiB gaps. A 1 GiB request with 1 GiB free fails
// for fragmentation; with one byte less free than asked it is a plain gpu.oom.
#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "gpu_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using gputest::TraceBuilder;
using Api = format::GpuApi;

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
constexpr uint64_t kBase = 0x200000000000ull;

std::vector<ProcessTrace> TwoGaps(uint64_t free_after_failure) {
  TraceBuilder b(101);
  b.Device(0, "Test GPU", 4 * kGiB);
  for (uint64_t i = 0; i < 8; ++i) b.Alloc(Api::kCudaMalloc, kBase + i * 512 * kMiB, 512 * kMiB);
  b.Free(Api::kCudaFree, kBase + 1 * 512 * kMiB);
  b.Free(Api::kCudaFree, kBase + 4 * 512 * kMiB);
  b.FailedAlloc(Api::kCudaMalloc, kGiB, free_after_failure, 4 * kGiB);
  return RunOf(b.Finish());
}

TEST(GpuOomFragmentation, FreeMemoryInTwoGapsNeitherLargeEnough) {
  auto traces = TwoGaps(kGiB);
  const auto f = FindingsOf(traces, "gpu.oom-fragmentation");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 101);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["request_bytes"].as_int(), static_cast<int64_t>(kGiB));
  EXPECT_EQ(ev["free_bytes"].as_int(), static_cast<int64_t>(kGiB));
  EXPECT_EQ(ev["largest_free_extent_bytes"].as_int(), static_cast<int64_t>(512 * kMiB));
  EXPECT_EQ(ev["free_extents"].as_int(), 2);
  EXPECT_EQ(ev["free_extent_bytes"].as_int(), static_cast<int64_t>(kGiB));
  EXPECT_EQ(ev["free_outside_segments_bytes"].as_int(), 0);
  EXPECT_DOUBLE_EQ(ev["fragmentation"].number(), 0.5);
  EXPECT_EQ(ev["process_segments"].as_int(), 6);
  EXPECT_EQ(ev["process_live_bytes"].as_int(), static_cast<int64_t>(3 * kGiB));
  // The segments either side of each gap: 0 | 2 and 3 | 5.
  const auto& holders = ev["segments_holding_gaps"].array();
  ASSERT_EQ(holders.size(), 4u);
  const uint64_t segment[] = {0, 2, 3, 5};
  for (size_t i = 0; i < 4; ++i) {
    char addr[32];
    std::snprintf(addr, sizeof(addr), "0x%llx", static_cast<unsigned long long>(kBase + segment[i] * 512 * kMiB));
    EXPECT_EQ(holders[i]["address"].str(), addr) << i;
    EXPECT_EQ(holders[i]["size"].as_int(), static_cast<int64_t>(512 * kMiB)) << i;
    EXPECT_EQ(holders[i]["api"].str(), "cudaMalloc") << i;
  }
  EXPECT_EQ(ev.Find("cause"), nullptr);
  EXPECT_EQ(f[0].summary,
            "cudaMalloc of 1.0 GiB failed on GPU 0 (Test GPU) although 1.0 GiB were free: the free memory lies "
            "in 2 gaps between this process's 6 segments, the largest 512.0 MiB");
  EXPECT_TRUE(FindingsOf(traces, "gpu.oom").empty());
}

TEST(GpuOomFragmentation, LessFreeThanTheRequestIsAPlainOom) {
  auto traces = TwoGaps(kGiB - 1);
  EXPECT_TRUE(FindingsOf(traces, "gpu.oom-fragmentation").empty());
  EXPECT_EQ(FindingsOf(traces, "gpu.oom").size(), 1u);
}

}  // namespace
}  // namespace colabtrace::testing
