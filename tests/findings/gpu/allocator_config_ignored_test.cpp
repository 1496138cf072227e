// gpu.allocator-config-ignored (warning): an allocator setting set after the first GPU
// allocation, or contradicted by the calls the framework made. Golden traces: a PyTorch
// process (libc10_cuda.so mapped) that sets PYTORCH_CUDA_ALLOC_CONF with setenv after
// its first cudaMalloc; set before it, the setting is in time and nothing is reported;
// expandable_segments:True from the start while the allocator makes plain cudaMalloc
// segments (no cuMemCreate/cuMemMap) is contradicted by the calls.
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
using format::EnvSource;

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
constexpr uint64_t kBase = 0x200000000000ull;

std::vector<ProcessTrace> Torch(bool env_late, EnvSource source, const char* value) {
  TraceBuilder b(110);
  b.Module("/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so", 0x7f0000000000, 0x100000);
  b.Device(0, "Test GPU", 16 * kGiB);
  if (!env_late) b.Env("PYTORCH_CUDA_ALLOC_CONF", value, source);
  b.Alloc(Api::kCudaMalloc, kBase, 20 * kMiB);
  if (env_late) b.Env("PYTORCH_CUDA_ALLOC_CONF", value, source);
  return RunOf(b.Finish());
}

TEST(GpuAllocatorConfigIgnored, SetAfterTheFirstAllocation) {
  auto traces = Torch(/*env_late=*/true, EnvSource::kSetenv, "max_split_size_mb:128");
  const auto f = FindingsOf(traces, "gpu.allocator-config-ignored");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 110);
  const auto& ev = f[0].evidence;
  const int64_t first = ev["first_allocation_at_ns"].as_int();
  const auto& late = ev["set_after_first_allocation"].array();
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0]["variable"].str(), "PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ(late[0]["value"].str(), "max_split_size_mb:128");
  EXPECT_EQ(late[0]["how"].str(), "setenv");
  EXPECT_GT(late[0]["set_at_ns"].as_int(), first);
  EXPECT_TRUE(ev["contradicted_by_calls"].array().empty());
  EXPECT_EQ(f[0].summary.rfind("PYTORCH_CUDA_ALLOC_CONF was set after the first GPU allocation (at ", 0), 0u)
      << f[0].summary;
}

TEST(GpuAllocatorConfigIgnored, SetBeforeTheFirstAllocationIsNone) {
  auto traces = Torch(/*env_late=*/false, EnvSource::kSetenv, "max_split_size_mb:128");
  EXPECT_TRUE(FindingsOf(traces, "gpu.allocator-config-ignored").empty());
}

TEST(GpuAllocatorConfigIgnored, ExpandableSegmentsContradictedByPlainSegments) {
  auto traces = Torch(/*env_late=*/false, EnvSource::kStartup, "expandable_segments:True");
  const auto f = FindingsOf(traces, "gpu.allocator-config-ignored");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 110);
  const auto& ev = f[0].evidence;
  EXPECT_TRUE(ev["set_after_first_allocation"].array().empty());
  const auto& c = ev["contradicted_by_calls"].array();
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]["variable"].str(), "PYTORCH_CUDA_ALLOC_CONF");
  EXPECT_EQ(c[0]["value"].str(), "expandable_segments:True");
  EXPECT_EQ(c[0]["why"].str(),
            "expandable_segments is on, but the allocator made 1 plain segment allocation(s) and no "
            "cuMemCreate/cuMemMap calls");
}

}  // namespace
}  // namespace colabtrace::testing
