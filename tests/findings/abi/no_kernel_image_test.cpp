// abi.no-kernel-image (error): the GPU is covered by neither a loaded library's cubins
// nor PTX it can JIT. Golden traces: on an sm_90 GPU, a cudaLaunchKernel of
// scale(float*) fails with 209 (no binary for the GPU); a launch failing with 701 says
// nothing about images. And from the files: tests/libs' devcode/libct_sm75.so, whose
// only device code is one registered sm_75 cubin, loaded on the recorded sm_90 GPU;
// asked about sm_75 (--gpu-arch) it is covered.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "abi_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using abitest::Fixture;
using abitest::TraceBuilder;
using analyzer::ProcessTrace;
using analyzer::ReportOptions;
using analyzer::Severity;
using format::LibApi;

// An sm_90 GPU, the libraries `libs` loaded, and (rc != 0) a launch failing with rc.
std::vector<ProcessTrace> Sm90(const std::vector<std::string>& libs, int64_t rc) {
  TraceBuilder b(10);
  b.Device(9, 0);
  uint64_t base = 0x10000;
  for (const std::string& l : libs) b.Load(LibApi::kDlopen, l, base += 0x10000, "/bin/prog");
  if (rc != 0) {
    format::GpuLaunchFailed l;
    l.api = static_cast<uint64_t>(format::GpuApi::kCudaLaunchKernel);
    l.rc = rc;
    l.name = b.Str("scale(float*)");
    b.Add(l);
  }
  return RunOf(b.Finish());
}

TEST(AbiNoKernelImage, ALaunchFailedForWantOfAnImage) {
  auto traces = Sm90({}, 209);
  const auto f = FindingsOf(traces, "abi.no-kernel-image");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 10);
  const auto& errors = f[0].evidence["errors"].array();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0]["api"].str(), "cudaLaunchKernel");
  EXPECT_EQ(errors[0]["rc"].as_int(), 209);
  EXPECT_EQ(errors[0]["kernel"].str(), "scale(float*)");
  EXPECT_TRUE(errors[0]["caller"].is_null());
  EXPECT_TRUE(f[0].evidence["not_judged"].array().empty());
  EXPECT_EQ(f[0].summary, "a kernel had no image for this GPU (CUDA error 209)");
}

TEST(AbiNoKernelImage, ALaunchFailedForAnotherReasonIsNone) {
  auto traces = Sm90({}, 701);
  EXPECT_TRUE(FindingsOf(traces, "abi.no-kernel-image").empty());
}

TEST(AbiNoKernelImage, ALibraryWhoseOnlyCubinIsForAnotherArchitecture) {
  const std::string sm75 = Fixture("devcode/libct_sm75.so");
  ASSERT_FALSE(sm75.empty()) << "tests/libs did not build devcode/libct_sm75.so";
  auto traces = Sm90({sm75}, 0);
  const auto f = FindingsOf(traces, "abi.no-kernel-image");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 10);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["gpu_arch"].str(), "sm_90");
  ASSERT_EQ(ev["libraries"].array().size(), 1u);
  const auto& lib = ev["libraries"].array()[0];
  EXPECT_EQ(lib["path"].str(), sm75);
  ASSERT_EQ(lib["device_code"].array().size(), 1u);
  EXPECT_EQ(lib["device_code"].array()[0].str(), "sm_75");
  EXPECT_TRUE(ev["covered_libraries"].array().empty());
  EXPECT_TRUE(ev["not_judged"].array().empty());
  EXPECT_EQ(ev["libraries_with_device_code"].as_int(), 1);
  EXPECT_TRUE(ev["errors"].array().empty());
  EXPECT_EQ(f[0].summary,
            "no kernel image for sm_90 in libct_sm75.so: no cubin runs on it and no PTX can be JIT-compiled for it");
  // The same library on an sm_75 GPU runs.
  ReportOptions sm75_gpu;
  sm75_gpu.gpu_arch = "sm_75";
  EXPECT_TRUE(FindingsOf(traces, "abi.no-kernel-image", sm75_gpu).empty());
}

}  // namespace
}  // namespace colabtrace::testing
