// gpu.coverage-incomplete (info): the GPU memory trace may miss allocations. Golden
// traces: a cudaFree of an address never seen allocated; a driver allocation that
// libcudart.so.12 made past the runtime hooks (its return address inside libcudart).
// Frees of what was allocated, and driver allocations the program made itself, are
// complete coverage.
#include <gtest/gtest.h>

#include <vector>

#include "gpu_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::Severity;
using gputest::TraceBuilder;
using Api = format::GpuApi;

constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kBase = 0x200000000000ull;

TEST(GpuCoverageIncomplete, AFreeOfAnAddressNeverSeenAllocated) {
  TraceBuilder b(140);
  b.Alloc(Api::kCudaMalloc, kBase, kMiB);
  b.Free(Api::kCudaFree, kBase);
  b.Free(Api::kCudaFree, kBase + 64 * kMiB);  // allocated before tracing started
  auto traces = RunOf(b.Finish());
  const auto f = FindingsOf(traces, "gpu.coverage-incomplete");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].pid, 140);
  const auto& causes = f[0].evidence["causes"].array();
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0]["cause"].str(), "frees-of-unseen-allocations");
  EXPECT_EQ(causes[0]["frees"].as_int(), 1);
  EXPECT_EQ(f[0].summary, "the GPU memory trace may be incomplete: 1 GPU free(s) of addresses never seen allocated");
}

TEST(GpuCoverageIncomplete, DriverAllocationsByLibcudartBypassedTheRuntimeHooks) {
  TraceBuilder b(141);
  b.Module("/usr/lib/libcudart.so.12", 0x7f1000000000, 0x100000);
  b.Alloc(Api::kCuMemAlloc_v2, kBase, kMiB, 0, 0, /*layer=*/1, 0, /*caller=*/0x7f1000001234);
  auto traces = RunOf(b.Finish());
  const auto f = FindingsOf(traces, "gpu.coverage-incomplete");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  const auto& causes = f[0].evidence["causes"].array();
  ASSERT_EQ(causes.size(), 1u);
  EXPECT_EQ(causes[0]["cause"].str(), "runtime-layer-bypassed");
  EXPECT_EQ(causes[0]["allocations"].as_int(), 1);
  EXPECT_EQ(causes[0]["bytes"].as_int(), static_cast<int64_t>(kMiB));
  EXPECT_EQ(causes[0]["library"].str(), "/usr/lib/libcudart.so.12");
}

TEST(GpuCoverageIncomplete, MatchedFreesAndTheProgramsOwnDriverCallsAreNone) {
  TraceBuilder b(142);
  b.Module("/usr/lib/libcudart.so.12", 0x7f1000000000, 0x100000);
  b.Alloc(Api::kCudaMalloc, kBase, kMiB);
  b.Free(Api::kCudaFree, kBase);
  b.Alloc(Api::kCuMemAlloc_v2, kBase + 2 * kMiB, kMiB, 0, 0, 1, 0, /*caller=*/0x555500001234);
  auto traces = RunOf(b.Finish());
  EXPECT_TRUE(FindingsOf(traces, "gpu.coverage-incomplete").empty());
}

}  // namespace
}  // namespace colabtrace::testing
