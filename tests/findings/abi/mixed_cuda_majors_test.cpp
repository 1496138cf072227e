// abi.mixed-cuda-majors (error): CUDA libraries of two CUDA majors in one process.
// Golden traces (files gone: the sonames name the majors): libcudart.so.12 next to
// libcublasLt.so.13; the same with libcudart.so.13 is one major.
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
using format::LibApi;

std::vector<ProcessTrace> Cudart(const std::string& cudart) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, cudart, 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(LibApi::kDlopen, "/gone/libcublasLt.so.13", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
  return RunOf(b.Finish());
}

TEST(AbiMixedCudaMajors, Cuda12RuntimeNextToACuda13Library) {
  auto traces = Cudart("/gone/libcudart.so.12");
  const auto f = FindingsOf(traces, "abi.mixed-cuda-majors");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 10);
  const auto& majors = f[0].evidence["majors"];
  ASSERT_EQ(majors["12"].array().size(), 1u);
  EXPECT_EQ(majors["12"].array()[0]["path"].str(), "/gone/libcudart.so.12");
  EXPECT_EQ(majors["12"].array()[0]["evidence"].str(), "soname libcudart.so.12");
  ASSERT_EQ(majors["13"].array().size(), 1u);
  EXPECT_EQ(majors["13"].array()[0]["path"].str(), "/gone/libcublasLt.so.13");
  EXPECT_EQ(majors["13"].array()[0]["evidence"].str(), "soname libcublasLt.so.13");
  EXPECT_EQ(f[0].evidence["pids"].array().size(), 1u);
  EXPECT_EQ(f[0].summary,
            "libraries built for 2 CUDA majors are loaded together (CUDA 12: libcudart.so.12; CUDA 13: "
            "libcublasLt.so.13)");
}

TEST(AbiMixedCudaMajors, OneMajorIsNone) {
  auto traces = Cudart("/gone/libcudart.so.13");
  EXPECT_TRUE(FindingsOf(traces, "abi.mixed-cuda-majors").empty());
}

}  // namespace
}  // namespace colabtrace::testing
