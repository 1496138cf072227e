// gpu.near-capacity (warning): a device's peak reached 95% of its memory. Golden traces:
// 19 GiB allocated on a 20 GiB device (exactly 95%); 19 GiB less 1 MiB (94.995%) is not.
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

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
constexpr uint64_t kBase = 0x200000000000ull;

std::vector<ProcessTrace> Peak(uint64_t second) {
  TraceBuilder b(130);
  b.Device(0, "Test GPU", 20 * kGiB);
  b.Alloc(Api::kCudaMalloc, kBase, 16 * kGiB);
  b.Alloc(Api::kCudaMalloc, kBase + 16 * kGiB, second);
  b.Free(Api::kCudaFree, kBase + 16 * kGiB);
  return RunOf(b.Finish());
}

TEST(GpuNearCapacity, PeakAtNinetyFivePercent) {
  auto traces = Peak(3 * kGiB);
  const auto f = FindingsOf(traces, "gpu.near-capacity");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 130);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["device"].as_int(), 0);
  EXPECT_EQ(ev["peak_bytes"].as_int(), static_cast<int64_t>(19 * kGiB));
  EXPECT_EQ(ev["total_bytes"].as_int(), static_cast<int64_t>(20 * kGiB));
  EXPECT_DOUBLE_EQ(ev["percent_of_device"].number(), 95.0);
  EXPECT_EQ(ev["segments_at_peak"].as_int(), 2);
  EXPECT_EQ(f[0].summary, "this process's GPU memory peaked at 19.0 GiB, 95.0% of GPU 0 (Test GPU)'s 20.0 GiB");
}

TEST(GpuNearCapacity, JustUnderNinetyFivePercentIsNone) {
  auto traces = Peak(3 * kGiB - kMiB);
  EXPECT_TRUE(FindingsOf(traces, "gpu.near-capacity").empty());
}

}  // namespace
}  // namespace colabtrace::testing
