// gpu.launch-failed (error): kernel launches that returned an error, one finding per
// (kernel, error). Golden trace: the driver names handle 0x5000 `saxpy`
// (cuModuleGetFunction); three cuLaunchKernel calls of it fail with 701 (too many
// resources requested). A launch that fails with a sticky error (710) belongs to
// gpu.device-fault, never to this finding.
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

std::vector<ProcessTrace> Launches(int64_t rc) {
  TraceBuilder b(125);
  b.Function(0x5000, "saxpy", Api::kCuModuleGetFunction, 0x6000);
  b.SetNow(5000);
  for (int i = 0; i < 3; ++i) {
    format::GpuLaunchFailed l;
    l.api = static_cast<uint64_t>(Api::kCuLaunchKernel);
    l.layer = 1;
    l.rc = rc;
    l.func = 0x5000;
    l.device = 0;
    b.Add(l);
  }
  return RunOf(b.Finish());
}

TEST(GpuLaunchFailed, ThreeFailedLaunchesOfOneKernelAreOneFinding) {
  auto traces = Launches(701);
  const auto f = FindingsOf(traces, "gpu.launch-failed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 125);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["error"].as_int(), 701);
  EXPECT_EQ(ev["error_name"].str(), "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
  EXPECT_EQ(ev["kernel"].str(), "saxpy");
  EXPECT_TRUE(ev["library"].is_null());  // no module map names the handle's library
  EXPECT_EQ(ev["count"].as_int(), 3);
  EXPECT_EQ(ev["first_at_ns"].as_int(), 4000);  // the trace started at 1000 ns
  EXPECT_EQ(ev["api"].str(), "cuLaunchKernel");
  EXPECT_EQ(ev["device"].as_int(), 0);
  EXPECT_EQ(f[0].summary, "kernel saxpy failed to launch 3 time(s): CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES (701)");
}

TEST(GpuLaunchFailed, AStickyErrorIsTheDeviceFaultsNotALaunchFailure) {
  auto traces = Launches(710);
  EXPECT_TRUE(FindingsOf(traces, "gpu.launch-failed").empty());
  EXPECT_EQ(FindingsOf(traces, "gpu.device-fault").size(), 1u);
}

}  // namespace
}  // namespace colabtrace::testing
