// perf.gpu-unused (warning): a process that imported a framework and stepped never used a
// GPU on a machine that has one. Golden traces: torch 2.3.0+cpu stepping on a host whose
// shim saw an H100 under /proc/driver/nvidia/gpus, with CUDA_VISIBLE_DEVICES empty; the
// same on a machine without a GPU (none), and the same after a device allocation (none).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report_findings.h"
#include "step_trace_builder.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using steptest::TraceBuilder;

constexpr uint64_t kMs = 1'000'000;

ProcessTrace TorchLoop(bool gpu_on_host, bool allocated) {
  TraceBuilder b(100);
  if (gpu_on_host) {
    steptest::HostInfo(b, "nvidia_gpus", "NVIDIA H100 80GB HBM3");
    steptest::HostNum(b, "nvidia_dev_nodes", 1);
  }
  format::EnvVar env;
  env.name = b.Str("CUDA_VISIBLE_DEVICES");
  env.value = b.Str("");
  b.Add(env);
  if (allocated) {
    format::GpuAlloc a;
    a.size = 1 << 20;
    a.addr = 0x7f0000000000;
    b.Add(a);
  }
  for (int i = 0; i < 5; ++i) steptest::Iteration(b, static_cast<uint64_t>(i), kMs, 20 * kMs);
  format::PyPackage p;
  p.name = b.Str("torch");
  p.version = b.Str("2.3.0+cpu");
  p.modules = b.Str("torch");
  b.Add(p);
  return b.Finish();
}

TEST(PerfGpuUnused, ACpuBuildOfTorchNextToAnH100) {
  auto traces = RunOf(TorchLoop(true, false));
  const auto f = FindingsOf(traces, "perf.gpu-unused");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 100);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["gpus"].str(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(ev["steps"].as_int(), 5);
  ASSERT_EQ(ev["frameworks"].array().size(), 1u);
  EXPECT_EQ(ev["frameworks"].array()[0]["name"].str(), "torch");
  EXPECT_EQ(ev["frameworks"].array()[0]["version"].str(), "2.3.0+cpu");
  ASSERT_EQ(ev["causes"].array().size(), 2u);
  EXPECT_EQ(ev["causes"].array()[0].str(), "a CPU-only build (torch 2.3.0+cpu)");
  EXPECT_EQ(ev["causes"].array()[1].str(), "CUDA_VISIBLE_DEVICES= hides every GPU");
  EXPECT_NE(f[0].summary.find("NVIDIA H100 80GB HBM3"), std::string::npos) << f[0].summary;
}

TEST(PerfGpuUnused, NoGpuOnTheMachineIsNone) {
  auto traces = RunOf(TorchLoop(false, false));
  EXPECT_TRUE(FindingsOf(traces, "perf.gpu-unused").empty());
}

TEST(PerfGpuUnused, AProcessThatAllocatedOnTheGpuIsNone) {
  auto traces = RunOf(TorchLoop(true, true));
  EXPECT_TRUE(FindingsOf(traces, "perf.gpu-unused").empty());
}

}  // namespace
}  // namespace colabtrace::testing
