// gpu.device-fault (error): a sticky device error surfaced at a later call. Golden trace:
// cudaStreamSynchronize of stream 0xa returns 700 (illegal address) from train.py:42; the
// launch ring the shim wrote then holds `old` (completed by an earlier synchronisation of
// 0xa), `fill` and `gather` in flight on 0xa (gather the newest: the culprit) and `reduce`
// in flight on 0xb; a later cudaMalloc fails with 700 too. A launch that failed with a
// non-sticky error (209) is no device fault.
#include <gtest/gtest.h>

#include <vector>

#include "gpu_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::Severity;
using gputest::RingEntry;
using gputest::TraceBuilder;
using Api = format::GpuApi;

constexpr uint64_t kGiB = 1ull << 30;

TEST(GpuDeviceFault, IllegalAddressAtASynchronisationNamesTheNewestKernelOnItsStream) {
  TraceBuilder b(127);
  b.Device(0, "Test GPU", 4 * kGiB);
  b.Function(0x1000, "_Z4fillPf");
  b.Function(0x1001, "_Z6gatherPfPKl");
  b.Function(0x1002, "_Z6reducePf");
  b.Function(0x1003, "_Z3oldPf");
  format::GpuFault surfaced;
  surfaced.order = 1;
  surfaced.api = static_cast<uint64_t>(Api::kCudaStreamSynchronize);
  surfaced.rc = 700;
  surfaced.stream = 0xA;
  surfaced.py_stack = b.Str("train.py:42 in step\ntrain.py:90 in <module>");
  b.Add(surfaced);
  b.Add(RingEntry(1, 2, 3, 0x1003, 0xA));  // old: launched in epoch 2, synchronised in 3
  b.Add(RingEntry(2, 3, 3, 0x1000, 0xA));  // fill
  format::GpuLaunchRing gather = RingEntry(3, 3, 3, 0x1001, 0xA);
  gather.py_stack = b.Str("train.py:17 in gather_rows");
  b.Add(gather);
  b.Add(RingEntry(4, 3, 3, 0x1002, 0xB));  // reduce, on another stream
  format::GpuFault later;
  later.order = 2;
  later.api = static_cast<uint64_t>(Api::kCudaMalloc);
  later.rc = 700;
  later.device_wide = 1;
  b.Add(later);
  auto traces = RunOf(b.Finish());
  const auto fd = FindingsOf(traces, "gpu.device-fault");
  ASSERT_EQ(fd.size(), 1u);
  EXPECT_EQ(fd[0].severity, Severity::kError);
  EXPECT_EQ(fd[0].pid, 127);
  const auto& ev = fd[0].evidence;
  EXPECT_EQ(ev["error"].as_int(), 700);
  EXPECT_EQ(ev["error_name"].str(), "cudaErrorIllegalAddress");
  EXPECT_EQ(ev["api"].str(), "cudaStreamSynchronize");
  EXPECT_EQ(ev["device"].as_int(), 0);
  EXPECT_EQ(ev["stream"].str(), "0xa");
  EXPECT_EQ(ev["scope"].str(), "stream");
  ASSERT_EQ(ev["python_stack"].array().size(), 2u);
  EXPECT_EQ(ev["python_stack"].array()[0].str(), "train.py:42 in step");
  EXPECT_EQ(ev["python_stack"].array()[1].str(), "train.py:90 in <module>");
  const auto& k = ev["kernels"].array();
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[0]["kernel"].str(), "gather(float*, long const*)");
  EXPECT_EQ(k[0]["python_line"].str(), "train.py:17 in gather_rows");
  EXPECT_EQ(k[0]["api"].str(), "cuLaunchKernel");
  EXPECT_EQ(k[0]["stream"].str(), "0xa");
  EXPECT_EQ(k[0]["grid"].array()[0].as_int(), 1);
  EXPECT_EQ(k[0]["block"].array()[0].as_int(), 128);
  EXPECT_EQ(k[0]["tid"].as_int(), 127);
  EXPECT_TRUE(k[0]["library"].is_null());
  EXPECT_EQ(k[1]["kernel"].str(), "fill(float*)");
  EXPECT_TRUE(k[1]["python_line"].is_null());
  EXPECT_EQ(ev["culprit"]["kernel"].str(), "gather(float*, long const*)");
  const auto& others = ev["kernels_on_other_streams"].array();
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(others[0]["kernel"].str(), "reduce(float*)");
  EXPECT_EQ(others[0]["stream"].str(), "0xb");
  EXPECT_FALSE(ev["launch_blocking"].boolean());
  EXPECT_EQ(ev["launches_kept_per_thread"].as_int(), 32);
  EXPECT_TRUE(ev["ring_recorded"].boolean());
  EXPECT_EQ(ev["later_call"]["api"].str(), "cudaMalloc");
  EXPECT_NE(fd[0].summary.find("gather(float*, long const*)"), std::string::npos) << fd[0].summary;
  for (const char* how : {"CUDA_LAUNCH_BLOCKING=1", "compute-sanitizer --tool memcheck",
                          "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1"}) {
    EXPECT_NE(fd[0].advice.find(how), std::string::npos) << how;
  }
}

TEST(GpuDeviceFault, ANonStickyLaunchFailureIsNone) {
  TraceBuilder b(129);
  format::GpuLaunchFailed l;
  l.api = static_cast<uint64_t>(Api::kCuLaunchKernel);
  l.layer = 1;
  l.rc = 209;
  b.Add(l);
  auto traces = RunOf(b.Finish());
  EXPECT_TRUE(FindingsOf(traces, "gpu.device-fault").empty());
}

}  // namespace
}  // namespace colabtrace::testing
