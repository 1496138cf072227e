// abi.system-vs-pip (warning): one library family resolved from system directories and
// from site-packages. Golden traces: cuDNN from /usr/lib/x86_64-linux-gnu and its ops
// library from the nvidia-cudnn wheel; both from the wheel is one source.
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

constexpr char kWheel[] = "/p/lib/python3.11/site-packages/nvidia/cudnn/lib";

std::vector<ProcessTrace> Cudnn(const std::string& main_dir) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, main_dir + "/libcudnn.so.9", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(LibApi::kDlopen, std::string(kWheel) + "/libcudnn_ops.so.9", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
  b.Load(LibApi::kDlopen, "/usr/lib/x86_64-linux-gnu/libm.so.6", 0x4000, "/bin/prog", 1, RTLD_NOW, 3);
  return RunOf(b.Finish());
}

TEST(AbiSystemVsPip, CudnnFromTheSystemAndFromAWheel) {
  auto traces = Cudnn("/usr/lib/x86_64-linux-gnu");
  const auto f = FindingsOf(traces, "abi.system-vs-pip");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 10);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["family"].str(), "cudnn");
  ASSERT_EQ(ev["pip"].array().size(), 1u);
  EXPECT_EQ(ev["pip"].array()[0]["path"].str(), std::string(kWheel) + "/libcudnn_ops.so.9");
  ASSERT_EQ(ev["system"].array().size(), 1u);
  EXPECT_EQ(ev["system"].array()[0]["path"].str(), "/usr/lib/x86_64-linux-gnu/libcudnn.so.9");
  EXPECT_EQ(f[0].summary, "cudnn libraries come both from site-packages (" + std::string(kWheel) +
                              "/libcudnn_ops.so.9) and from the system (/usr/lib/x86_64-linux-gnu/libcudnn.so.9)");
}

TEST(AbiSystemVsPip, BothFromTheWheelIsNone) {
  auto traces = Cudnn(kWheel);
  EXPECT_TRUE(FindingsOf(traces, "abi.system-vs-pip").empty());
}

}  // namespace
}  // namespace colabtrace::testing
