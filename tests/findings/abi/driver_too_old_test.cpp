// abi.driver-too-old (error): the runtime's CUDA major is newer than the driver's, or a
// CUDA call failed for want of a newer driver. Golden traces: the CUDA 13.0 runtime on a
// 12.4 driver; a 12.9 runtime on a 12.0 driver is fine (minor-version compatibility);
// on that same pair a cudaMalloc failing with 222 (PTX too new for the driver) is not.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "abi_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using abitest::TraceBuilder;
using analyzer::ProcessTrace;
using analyzer::Severity;

std::vector<ProcessTrace> Versions(int64_t runtime, int64_t driver, int64_t failed_rc) {
  TraceBuilder b(10);
  format::GpuVersion v;
  v.runtime = runtime;
  v.driver = driver;
  v.runtime_lib = b.Str("/usr/local/cuda/lib64/libcudart.so." + std::to_string(runtime / 1000));
  v.driver_lib = b.Str("/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  b.Add(v);
  if (failed_rc != 0) {
    format::GpuError e;
    e.api = static_cast<uint64_t>(format::GpuApi::kCudaMalloc);
    e.rc = failed_rc;
    e.caller = b.Str("/x/libtorch_cuda.so");
    b.Add(e);
  }
  return RunOf(b.Finish());
}

TEST(AbiDriverTooOld, Cuda13RuntimeOnA124Driver) {
  auto traces = Versions(13000, 12040, 0);
  const auto f = FindingsOf(traces, "abi.driver-too-old");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 10);
  const auto& ev = f[0].evidence;
  ASSERT_EQ(ev["versions"].array().size(), 1u);
  const auto& v = ev["versions"].array()[0];
  EXPECT_EQ(v["runtime"].str(), "13.0");
  EXPECT_EQ(v["driver"].str(), "12.4");
  EXPECT_EQ(v["runtime_lib"].str(), "/usr/local/cuda/lib64/libcudart.so.13");
  EXPECT_EQ(v["driver_lib"].str(), "/usr/lib/x86_64-linux-gnu/libcuda.so.1");
  EXPECT_TRUE(ev["errors"].array().empty());
  EXPECT_EQ(ev["compared"].str(), "CUDA major (minor-version compatibility)");
  EXPECT_EQ(f[0].summary, "the CUDA runtime 13.0 (libcudart.so.13) is newer than the driver supports (CUDA 12.4)");
}

TEST(AbiDriverTooOld, ANewerMinorOfTheDriversMajorIsNone) {
  auto traces = Versions(12090, 12000, 0);
  EXPECT_TRUE(FindingsOf(traces, "abi.driver-too-old").empty());
}

TEST(AbiDriverTooOld, ACallFailingWithUnsupportedPtxVersionWithinOneMajor) {
  auto traces = Versions(12090, 12000, 222);
  const auto f = FindingsOf(traces, "abi.driver-too-old");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  const auto& errors = f[0].evidence["errors"].array();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["api"].str(), "cudaMalloc");
  EXPECT_EQ(errors[0]["rc"].as_int(), 222);
  EXPECT_EQ(errors[0]["caller"].str(), "/x/libtorch_cuda.so");
  EXPECT_EQ(f[0].summary, "CUDA calls failed because the driver is too old for the loaded runtime or its PTX");
}

}  // namespace
}  // namespace colabtrace::testing
