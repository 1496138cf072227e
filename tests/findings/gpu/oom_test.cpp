// gpu.oom (error): an allocation failed for lack of memory and was never recovered, the
// cause named from the free memory read right after. Golden trace: an 8 GiB device whose
// first reading shows 512 MiB used outside this process, 7 GiB allocated by it, then a
// 1 GiB cudaMalloc that fails with 512 MiB free: this process fills the device. The same
// failure followed by a successful retry of the same size is handled, not an OOM.
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

std::vector<ProcessTrace> FailedRequest(bool retried) {
  TraceBuilder b(102);
  b.Device(0, "Test GPU", 8 * kGiB);
  b.Alloc(Api::kCudaMalloc, kBase, 7 * kGiB);
  b.MemInfo(512 * kMiB, 8 * kGiB, format::GpuMemInfoWhy::kFirstUse);
  b.FailedAlloc(Api::kCudaMalloc, kGiB, 512 * kMiB, 8 * kGiB);
  if (retried) {
    b.Free(Api::kCudaFree, kBase);
    b.Alloc(Api::kCudaMalloc, kBase, kGiB);
  }
  return RunOf(b.Finish());
}

TEST(GpuOom, ThisProcessFillsTheDevice) {
  auto traces = FailedRequest(/*retried=*/false);
  const auto f = FindingsOf(traces, "gpu.oom");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 102);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["cause"].str(), "this-process");
  EXPECT_EQ(ev["api"].str(), "cudaMalloc");
  EXPECT_EQ(ev["layer"].str(), "runtime");
  EXPECT_EQ(ev["rc"].as_int(), 2);
  EXPECT_EQ(ev["rc_name"].str(), "cudaErrorMemoryAllocation");
  EXPECT_EQ(ev["device"].as_int(), 0);
  EXPECT_EQ(ev["request_bytes"].as_int(), static_cast<int64_t>(kGiB));
  EXPECT_EQ(ev["free_bytes"].as_int(), static_cast<int64_t>(512 * kMiB));
  EXPECT_EQ(ev["total_bytes"].as_int(), static_cast<int64_t>(8 * kGiB));
  EXPECT_EQ(ev["process_live_bytes"].as_int(), static_cast<int64_t>(7 * kGiB));
  EXPECT_EQ(ev["process_allocations"].as_int(), 1);
  EXPECT_EQ(ev["process_segments"].as_int(), 1);
  EXPECT_EQ(ev["held_elsewhere_bytes"].as_int(), static_cast<int64_t>(512 * kMiB));
  EXPECT_EQ(ev["unrecovered_failures"].as_int(), 1);
  EXPECT_TRUE(ev["other_traced_processes"].array().empty());
  EXPECT_EQ(f[0].summary,
            "cudaMalloc of 1.0 GiB failed on GPU 0 (Test GPU): this process's 1 allocation(s) hold 7.0 GiB of "
            "8.0 GiB; 512.0 MiB free");
  EXPECT_TRUE(FindingsOf(traces, "gpu.oom-fragmentation").empty());
}

TEST(GpuOom, ARetryThatSucceedsIsNone) {
  auto traces = FailedRequest(/*retried=*/true);
  EXPECT_TRUE(FindingsOf(traces, "gpu.oom").empty());
}

}  // namespace
}  // namespace colabtrace::testing
