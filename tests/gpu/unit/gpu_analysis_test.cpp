// Golden tests of the GPU memory analysis on traces built inline (trace_builder.h): the
// counters, the timeline, the verdicts and every gpu.* rule, plus hostile input.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu/allocation_timeline.h"
#include "gpu/cuda_errors.h"
#include "gpu/gpu_api.h"
#include "report/report.h"
#include "gpu_trace_builder.h"

namespace colabtrace::analyzer {
namespace {

using gputest::RingEntry;
using gputest::Steps;
using gputest::TraceBuilder;
using Api = format::GpuApi;
using Why = format::GpuMemInfoWhy;

constexpr uint64_t MiB = 1ull << 20, GiB = 1ull << 30;
constexpr uint64_t kBase = 0x200000000000ull;

const Json& Gpu(const Json& root, size_t i = 0) { return root["processes"].array().at(i)["gpu"]; }

std::vector<const Json*> Findings(const Json& root, const std::string& id) {
  std::vector<const Json*> out;
  for (const Json& f : root["findings"].array()) {
    if (f["id"].str() == id) out.push_back(&f);
  }
  return out;
}

std::unique_ptr<ReportBuilder> Report(std::vector<ProcessTrace>& traces) { return BuildReport(traces, {}); }

TEST(GpuAnalysis, CountsPeakAndLeakOfASimpleRun) {
  TraceBuilder b(100);
  b.Device(0, "Test GPU", 16 * GiB);
  b.Alloc(Api::kCudaMalloc, kBase, 10 * MiB);
  b.Alloc(Api::kCudaMalloc, kBase + 10 * MiB, 20 * MiB);
  b.Free(Api::kCudaFree, kBase);
  b.Alloc(Api::kCudaMalloc, kBase, 5 * MiB);
  b.Alloc(Api::kCudaMallocHost, 0x7f0000000000, 3 * MiB);  // pinned host: kept apart
  b.Free(Api::kCudaFreeHost, 0x7f0000000000);
  b.Alloc(Api::kCudaMalloc, 0, 0);  // cudaMalloc(&p, 0): success without memory
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const Json& g = Gpu(r->root());
  EXPECT_EQ(g["allocations"].as_int(), 3);
  EXPECT_EQ(g["frees"].as_int(), 1);
  EXPECT_EQ(g["failed_allocations"].as_int(), 0);
  EXPECT_EQ(g["peak_bytes"].as_int(), static_cast<int64_t>(30 * MiB));
  EXPECT_EQ(g["leaked_bytes"].as_int(), static_cast<int64_t>(25 * MiB));
  EXPECT_EQ(g["zero_size_allocations"].as_int(), 1);
  EXPECT_EQ(g["host_pinned"]["allocations"].as_int(), 1);
  EXPECT_EQ(g["host_pinned"]["peak_bytes"].as_int(), static_cast<int64_t>(3 * MiB));
  EXPECT_EQ(r->root()["gpu"]["peak_bytes"].as_int(), static_cast<int64_t>(30 * MiB));
  const Json& dev = g["devices"].array().at(0);
  EXPECT_EQ(dev["name"].str(), "Test GPU");
  EXPECT_EQ(dev["total_bytes"].as_int(), static_cast<int64_t>(16 * GiB));
  ASSERT_FALSE(dev["timeline"].array().empty());
  EXPECT_EQ(dev["timeline"].array().back().array().at(1).as_int(), static_cast<int64_t>(25 * MiB));
  // Held at exit, never growing: context, not gpu.leak (issue 9).
  EXPECT_TRUE(Findings(r->root(), "gpu.leak").empty());
  EXPECT_EQ(g["leak_growth_bytes"].as_int(), 0);
  EXPECT_EQ(g["held_at_exit_bytes"].as_int(), static_cast<int64_t>(25 * MiB));
  EXPECT_TRUE(Findings(r->root(), "gpu.oom").empty());
}

// ---- gpu.leak: growth after warm-up (gpu/leak_growth.h) -----------------------------------

TEST(GpuLeak, GrowingSiteIsALeakWithExactCountBytesAndRate) {
  TraceBuilder b(120);
  const uint64_t leak = b.Stack({0x401000}), cache = b.Stack({0x402000});
  uint64_t addr = kBase;
  Steps(b, cache, &addr, 2, 64 * MiB, 0);              // warm-up: a cache, held
  Steps(b, leak, &addr, 10, 4 * MiB, 200'000'000);    // 10 steps of 200 ms
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const auto leaks = Findings(r->root(), "gpu.leak");
  ASSERT_EQ(leaks.size(), 1u);
  const Json& ev = (*leaks[0])["evidence"];
  EXPECT_EQ(ev["growth_bytes"].as_int(), static_cast<int64_t>(40 * MiB));
  EXPECT_EQ(ev["allocations"].as_int(), 10);
  EXPECT_EQ(ev["held_at_exit_bytes"].as_int(), static_cast<int64_t>(128 * MiB));
  EXPECT_EQ(ev["groups"].as_int(), 1);
  const Json& g0 = ev["by_stack"].array().at(0);
  EXPECT_EQ(g0["count"].as_int(), 10);
  // 9 x 4 MiB over 9 x 200 ms (plus the 100 ns each record takes): 20 MiB/s.
  EXPECT_NEAR(static_cast<double>(g0["rate_bytes_per_s"].as_int()), 20.0 * MiB, 0.001 * MiB);
  EXPECT_EQ(Gpu(r->root())["leak_growth_bytes"].as_int(), static_cast<int64_t>(40 * MiB));
  EXPECT_EQ(r->root()["gpu"]["leak_growth_bytes"].as_int(), static_cast<int64_t>(40 * MiB));
}

TEST(GpuLeak, WarmupOnlyOrLateBurstOrFreedStepsAreNotLeaks) {
  // (a) everything allocated at warm-up and held; (b) a burst at the very end;
  // (c) per-step allocations that are freed again; (d) the growing shape, but all within
  // 100 ms (worker threads each keeping a buffer as they finish).
  for (int shape = 0; shape < 4; ++shape) {
    TraceBuilder b(121 + static_cast<uint32_t>(shape));
    const uint64_t site = b.Stack({0x401000});
    uint64_t addr = kBase;
    if (shape == 0) {
      Steps(b, site, &addr, 8, MiB, 1000);
      b.Advance(1'000'000'000);
    } else if (shape == 1) {
      b.Alloc(Api::kCudaMalloc, kBase + GiB, MiB);
      b.Free(Api::kCudaFree, kBase + GiB);
      b.Advance(1'000'000'000);
      Steps(b, site, &addr, 8, MiB, 1000);
    } else if (shape == 3) {
      Steps(b, site, &addr, 10, MiB, 10'000'000);
    } else {
      for (int i = 0; i < 10; ++i) {
        b.Alloc(Api::kCudaMalloc, kBase, MiB, 0, 0, 0, site);
        b.Free(Api::kCudaFree, kBase);
        b.Advance(100'000'000);
      }
    }
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    auto r = Report(traces);
    EXPECT_TRUE(Findings(r->root(), "gpu.leak").empty()) << shape;
    EXPECT_EQ(Gpu(r->root())["leak_growth_bytes"].as_int(), 0) << shape;
  }
}

// Leaks are grouped by Python stack before the native one: one framework allocator
// site (one native stack) serving two Python call sites gives two groups.
TEST(GpuLeak, GroupsByPythonStackFirst) {
  TraceBuilder b(124);
  const uint64_t native = b.Stack({0x401000});
  const uint64_t py_a = b.Str("train.py:10 in step\nmain.py:3 in <module>"),
                 py_b = b.Str("train.py:20 in log\nmain.py:3 in <module>");
  uint64_t addr = kBase;
  for (int i = 0; i < 12; ++i) {
    for (uint64_t py : {py_a, py_b}) {
      format::GpuAlloc a;
      a.api = static_cast<uint64_t>(Api::kCudaMalloc);
      a.addr = addr;
      a.size = MiB;
      a.stack = native;  // one native site (the framework's allocator) for both
      a.py_stack = py;
      b.Add(a);
      addr += MiB;
    }
    b.Advance(200'000'000);
  }
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const auto leaks = Findings(r->root(), "gpu.leak");
  ASSERT_EQ(leaks.size(), 1u);
  const Json& by = (*leaks[0])["evidence"]["by_stack"];
  ASSERT_EQ(by.array().size(), 2u);
  EXPECT_EQ(by.array()[0]["count"].as_int(), 12);
  EXPECT_EQ(by.array()[1]["count"].as_int(), 12);
  // Each group carries its Python stack as a list of frames, innermost first.
  std::vector<std::string> firsts;
  for (const Json& g : by.array()) {
    const Json& ps = g["python_stack"];
    ASSERT_TRUE(ps.is_array());
    ASSERT_EQ(ps.array().size(), 2u);
    EXPECT_EQ(ps.array()[1].str(), "main.py:3 in <module>");
    firsts.push_back(ps.array()[0].str());
  }
  std::sort(firsts.begin(), firsts.end());
  EXPECT_EQ(firsts, (std::vector<std::string>{"train.py:10 in step", "train.py:20 in log"}));
}

// ---- gpu.launch-failed ------------------------------------------------------------------------

TEST(GpuLaunch, OneFindingPerKernelAndErrorNamedFromTheFunctionRecords) {
  TraceBuilder b(125);
  format::GpuFunction fn;
  fn.api = static_cast<uint64_t>(Api::kCuModuleGetFunction);
  fn.handle = 0x5000;
  fn.module = 0x6000;
  fn.name = b.Str("saxpy");
  b.Add(fn);
  for (int i = 0; i < 3; ++i) {
    format::GpuLaunchFailed l;
    l.api = static_cast<uint64_t>(Api::kCuLaunchKernel);
    l.layer = 1;
    l.rc = 701;
    l.func = 0x5000;
    l.device = 0;
    b.Add(l);
  }
  format::GpuLaunchFailed other;
  other.api = static_cast<uint64_t>(Api::kCuLaunchKernel);
  other.layer = 1;
  other.rc = 209;
  other.func = 0x5000;
  other.name = b.Str("saxpy");
  b.Add(other);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const auto fs = Findings(r->root(), "gpu.launch-failed");
  ASSERT_EQ(fs.size(), 2u);
  const Json& a = (*fs[0])["evidence"];
  EXPECT_EQ((*fs[0])["severity"].str(), "error");
  EXPECT_EQ(a["kernel"].str(), "saxpy");
  EXPECT_EQ(a["error"].as_int(), 701);
  EXPECT_EQ(a["error_name"].str(), "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES");
  EXPECT_EQ(a["count"].as_int(), 3);
  const Json& c = (*fs[1])["evidence"];
  EXPECT_EQ(c["error_name"].str(), "CUDA_ERROR_NO_BINARY_FOR_GPU");
  EXPECT_EQ(c["count"].as_int(), 1);
  // A missing image also raises abi.no-kernel-image, citing the launch.
  const auto img = Findings(r->root(), "abi.no-kernel-image");
  ASSERT_EQ(img.size(), 1u);
  EXPECT_EQ((*img[0])["evidence"]["errors"].array().at(0)["api"].str(), "cuLaunchKernel");
}

// Every CUDA 13 error code has its name at both layers (issue 21: 710 had none).
TEST(GpuErrorNames, EveryCodeHasAName) {
  EXPECT_EQ(gpu::GpuErrorName(710, false), "CUDA_ERROR_ASSERT");
  EXPECT_EQ(gpu::GpuErrorName(710, true), "cudaErrorAssert");
  EXPECT_EQ(gpu::GpuErrorName(700, true), "cudaErrorIllegalAddress");
  EXPECT_EQ(gpu::GpuErrorName(719, false), "CUDA_ERROR_LAUNCH_FAILED");
  EXPECT_EQ(gpu::GpuErrorName(9, false), "cudaErrorInvalidConfiguration");  // runtime-only number
  EXPECT_EQ(gpu::GpuErrorName(12345, true), "");
  int codes = 0;
#define CT_EXPECT_NAMED(code, name, description)                 \
  EXPECT_EQ(gpu::GpuErrorName(code, true).empty(), false) << code; \
  EXPECT_EQ(gpu::GpuErrorName(code, false).empty(), false) << code; \
  ++codes;
  CT_CUDART_ERRORS(CT_EXPECT_NAMED)
  CT_CU_ERRORS(CT_EXPECT_NAMED)
#undef CT_EXPECT_NAMED
  EXPECT_GT(codes, 200);
}

// A launch that failed with a sticky error did not fail for its own sake (issue 23: PyTorch's
// next torch.ones launch failed with 710 after an index kernel's device-side assert, and was
// blamed). A trace of a shim without fault records: the first such launch is where the fault
// surfaced, and no gpu.launch-failed is raised for it.
TEST(GpuLaunch, StickyLaunchFailuresBelongToTheDeviceFault) {
  TraceBuilder b(126);
  format::GpuFunction fn;
  fn.api = static_cast<uint64_t>(Api::kCuLibraryGetKernel);
  fn.handle = 0x5000;
  fn.name = b.Str("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_");
  b.Add(fn);
  for (int i = 0; i < 4; ++i) {
    format::GpuLaunchFailed l;
    l.api = static_cast<uint64_t>(Api::kCuLaunchKernel);
    l.layer = 1;
    l.rc = 710;
    l.func = 0x5000;
    l.device = 0;
    b.Add(l);
  }
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  EXPECT_TRUE(Findings(r->root(), "gpu.launch-failed").empty());
  const auto df = Findings(r->root(), "gpu.device-fault");
  ASSERT_EQ(df.size(), 1u);
  const Json& ev = (*df[0])["evidence"];
  EXPECT_EQ(ev["error"].as_int(), 710);
  EXPECT_EQ(ev["error_name"].str(), "CUDA_ERROR_ASSERT");
  EXPECT_EQ(ev["api"].str(), "cuLaunchKernel");
  EXPECT_EQ(ev["reported_by_launch_of"].str(),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int, "
            "at::native::FillFunctor<float>)");
  EXPECT_TRUE(ev["kernels"].array().empty());
  EXPECT_TRUE(ev["culprit"].is_null());
  EXPECT_FALSE(ev["ring_recorded"].boolean());
}

// ---- gpu.device-fault -------------------------------------------------------------------------

// The kernels in flight on one stream, newest first: tests/findings/gpu/device_fault_test.cpp.

// A device-wide call (cudaDeviceSynchronize) lists every stream's kernels in flight; under
// CUDA_LAUNCH_BLOCKING=1 a launch that reports the fault ran the faulting kernel itself.
TEST(GpuDeviceFault, DeviceWideAndLaunchBlocking) {
  for (const bool blocking : {false, true}) {
    TraceBuilder b(128);
    format::GpuFunction fn;
    fn.api = static_cast<uint64_t>(Api::kCuModuleGetFunction);
    fn.handle = 0x2000;
    fn.name = b.Str("index_kernel");
    b.Add(fn);
    format::GpuFault f;
    f.order = 1;
    f.layer = 1;
    f.rc = 710;
    f.device_wide = 1;
    if (blocking) {
      f.api = static_cast<uint64_t>(Api::kCuLaunchKernel);
      f.func = 0x2000;
      f.launch_blocking = 1;
    } else {
      f.api = static_cast<uint64_t>(Api::kCuCtxSynchronize);
    }
    b.Add(f);
    b.Add(RingEntry(1, 1, 0, 0x2000, 0xA));
    b.Add(RingEntry(2, 1, 0, 0x2000, 0xB));
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    auto r = Report(traces);
    const auto df = Findings(r->root(), "gpu.device-fault");
    ASSERT_EQ(df.size(), 1u);
    const Json& ev = (*df[0])["evidence"];
    EXPECT_EQ(ev["scope"].str(), "device");
    EXPECT_EQ(ev["error_name"].str(), "CUDA_ERROR_ASSERT");
    EXPECT_EQ(ev["kernels"].array().size(), blocking ? 3u : 2u);
    EXPECT_TRUE(ev["kernels_on_other_streams"].array().empty());
    EXPECT_EQ(ev["culprit"]["kernel"].str(), "index_kernel");
    EXPECT_EQ(ev["culprit"].Find("reported_by_its_own_launch") != nullptr, blocking);
    EXPECT_NE((*df[0])["advice"].str().find("device-side assert"), std::string::npos);
  }
}

// No sticky error: no finding, even with a launch ring written at a fatal signal.
TEST(GpuDeviceFault, NothingWithoutAStickyError) {
  TraceBuilder b(129);
  format::GpuLaunchRing r = RingEntry(1, 1, 0, 0x2000, 0xA);
  r.why = 2;
  b.Add(r);
  format::GpuLaunchFailed l;
  l.api = static_cast<uint64_t>(Api::kCuLaunchKernel);
  l.layer = 1;
  l.rc = 209;
  b.Add(l);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto rep = Report(traces);
  EXPECT_TRUE(Findings(rep->root(), "gpu.device-fault").empty());
  EXPECT_EQ(Findings(rep->root(), "gpu.launch-failed").size(), 1u);
}

TEST(GpuAnalysis, FragmentationVerdictNeedsFreeAtLeastTheRequest) {
  for (const bool fragmented : {true, false}) {
    TraceBuilder b(101);
    b.Device(0, "Test GPU", 4 * GiB);
    for (int i = 0; i < 8; ++i) b.Alloc(Api::kCudaMalloc, kBase + i * 512 * MiB, 512 * MiB);
    b.Free(Api::kCudaFree, kBase + 1 * 512 * MiB);
    b.Free(Api::kCudaFree, kBase + 4 * 512 * MiB);
    // Two 512 MiB holes: 1 GiB free. Ask for 1 GiB (fragmentation) or 2 GiB (not).
    const uint64_t request = fragmented ? GiB : 2 * GiB;
    b.FailedAlloc(Api::kCudaMalloc, request, GiB, 4 * GiB);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    auto r = Report(traces);
    const auto frag = Findings(r->root(), "gpu.oom-fragmentation");
    const auto oom = Findings(r->root(), "gpu.oom");
    ASSERT_EQ(frag.size(), fragmented ? 1u : 0u);
    ASSERT_EQ(oom.size(), fragmented ? 0u : 1u);
    if (fragmented) {
      const Json& ev = (*frag[0])["evidence"];
      EXPECT_EQ(ev["largest_free_extent_bytes"].as_int(), static_cast<int64_t>(512 * MiB));
      EXPECT_EQ(ev["free_extents"].as_int(), 2);
      EXPECT_EQ(ev["free_outside_segments_bytes"].as_int(), 0);
      EXPECT_EQ(ev["segments_holding_gaps"].array().size(), 4u);  // 0|2 and 3|5
      EXPECT_DOUBLE_EQ(ev["fragmentation"].number(), 0.5);
    } else {
      EXPECT_EQ((*oom[0])["evidence"]["cause"].str(), "this-process");
    }
  }
}

TEST(GpuAnalysis, OomCauses) {
  struct Case {
    uint64_t total;
    uint64_t baseline_used;  // used memory at the first reading, beyond our first block
    uint64_t live;           // our live bytes at the failure
    uint64_t free;           // free bytes after the failure
    uint64_t request;
    const char* cause;
  } cases[] = {
      {8 * GiB, 512 * MiB, 7 * GiB, 512 * MiB, GiB, "this-process"},
      {8 * GiB, 5 * GiB + 512 * MiB, GiB, 1536 * MiB, 2 * GiB, "other-process"},
      {2 * GiB, 900 * MiB, 600 * MiB, 548 * MiB, 600 * MiB, "context"},
      {8 * GiB, 512 * MiB, GiB, 6 * GiB, 9 * GiB, "larger-than-device"},
  };
  for (const Case& c : cases) {
    TraceBuilder b(102);
    b.Device(0, "Test GPU", c.total);
    b.Alloc(Api::kCudaMalloc, kBase, c.live);
    b.MemInfo(c.total - c.baseline_used - c.live, c.total, Why::kFirstUse);
    b.FailedAlloc(Api::kCudaMalloc, c.request, c.free, c.total);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    auto r = Report(traces);
    const auto oom = Findings(r->root(), "gpu.oom");
    ASSERT_EQ(oom.size(), 1u) << c.cause;
    EXPECT_EQ((*oom[0])["evidence"]["cause"].str(), c.cause);
  }
}

TEST(GpuAnalysis, FailureWithoutAReadingHasAnUnknownCause) {
  TraceBuilder b(103);
  b.Alloc(Api::kCuMemAlloc_v2, 0, GiB, 2, 0, 1);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const auto oom = Findings(r->root(), "gpu.oom");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_EQ((*oom[0])["evidence"]["cause"].str(), "unknown");
  EXPECT_TRUE((*oom[0])["evidence"]["free_bytes"].is_null());
}

TEST(GpuAnalysis, NonOomFailuresAreCountedButNotJudged) {
  TraceBuilder b(104);
  b.Alloc(Api::kCudaMalloc, 0, MiB, 35);
  b.Alloc(Api::kCudaMalloc, 0, MiB, 1);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  EXPECT_EQ(Gpu(r->root())["failed_allocations"].as_int(), 2);
  EXPECT_EQ(Gpu(r->root())["failures_by_code"]["35"].as_int(), 1);
  EXPECT_TRUE(Findings(r->root(), "gpu.oom").empty());
}

TEST(GpuAnalysis, RetryEpisodesAndRecovery) {
  TraceBuilder b(105);
  b.Device(0, "Test GPU", 4 * GiB);
  for (int i = 0; i < 8; ++i) b.Alloc(Api::kCudaMalloc, kBase + i * 512 * MiB, 512 * MiB);
  b.FailedAlloc(Api::kCudaMalloc, GiB, 0, 4 * GiB);
  b.Free(Api::kCudaFree, kBase);
  b.Free(Api::kCudaFree, kBase + 512 * MiB);
  b.Alloc(Api::kCudaMalloc, kBase, GiB);  // the retry succeeds
  b.FailedAlloc(Api::kCudaMalloc, 2 * GiB, 0, 4 * GiB);  // a different request later
  b.Free(Api::kCudaFree, kBase + 7 * 512 * MiB);
  b.FailedAlloc(Api::kCudaMalloc, 2 * GiB, 512 * MiB, 4 * GiB);  // its retry fails
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const Json& failures = Gpu(r->root())["failures"];
  ASSERT_EQ(failures.array().size(), 3u);
  EXPECT_TRUE(failures.array()[0]["recovered"].boolean());
  EXPECT_FALSE(failures.array()[1]["recovered"].boolean());
  EXPECT_EQ(failures.array()[2]["retry_of"].as_int(), 1);
  EXPECT_EQ(failures.array()[2]["frees_before_retry"].as_int(), 1);
  const auto oom = Findings(r->root(), "gpu.oom");
  ASSERT_EQ(oom.size(), 1u);
  EXPECT_EQ((*oom[0])["evidence"]["unrecovered_failures"].as_int(), 1);
  EXPECT_EQ((*oom[0])["evidence"]["cache_flush_and_retry"]["freed_bytes_before_retry"].as_int(),
            static_cast<int64_t>(512 * MiB));
}

TEST(GpuAnalysis, VmmMemoryReturnsWhenReleasedAndUnmapped) {
  TraceBuilder b(106);
  b.Vmm(Api::kCuMemAddressReserve, 0, 0x400000000000, GiB);
  b.Vmm(Api::kCuMemCreate, 0x1111, 0, 20 * MiB);
  b.Vmm(Api::kCuMemMap, 0x1111, 0x400000000000, 20 * MiB);
  b.Vmm(Api::kCuMemCreate, 0x2222, 0, 20 * MiB);
  b.Vmm(Api::kCuMemMap, 0x2222, 0x400000000000 + 20 * MiB, 20 * MiB);
  b.Vmm(Api::kCuMemRelease, 0x1111, 0, 0);  // still mapped: memory stays
  b.Vmm(Api::kCuMemRelease, 0x2222, 0, 0);
  b.Vmm(Api::kCuMemUnmap, 0, 0x400000000000, 40 * MiB);  // now it goes
  b.Vmm(Api::kCuMemCreate, 0x3333, 0, 20 * MiB);           // never released: leaked
  b.Vmm(Api::kCuMemRelease, 0x9999, 0, 0);                 // unknown handle
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const Json& g = Gpu(r->root());
  EXPECT_EQ(g["allocations"].as_int(), 3);
  EXPECT_EQ(g["frees"].as_int(), 2);
  EXPECT_EQ(g["unmatched_frees"].as_int(), 1);
  EXPECT_EQ(g["peak_bytes"].as_int(), static_cast<int64_t>(40 * MiB));
  EXPECT_EQ(g["leaked_bytes"].as_int(), static_cast<int64_t>(20 * MiB));
  const Json& tl = g["devices"].array().at(0)["timeline"];
  std::vector<int64_t> bytes;
  for (const Json& p : tl.array()) bytes.push_back(p.array().at(1).as_int());
  const int64_t m20 = static_cast<int64_t>(20 * MiB);
  EXPECT_EQ(bytes, (std::vector<int64_t>{m20, 2 * m20, m20, 0, m20}));  // the unmap frees both
  ASSERT_EQ(Findings(r->root(), "gpu.coverage-incomplete").size(), 1u);
}

TEST(GpuAnalysis, ChurnThreshold) {
  for (const uint64_t pairs : {999u, 1000u}) {
    TraceBuilder b(107);
    for (uint64_t i = 0; i < pairs; ++i) {
      b.Alloc(Api::kCudaMalloc, kBase, MiB);
      b.Free(Api::kCudaFree, kBase);
    }
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    auto r = Report(traces);
    EXPECT_EQ(Findings(r->root(), "gpu.churn").size(), pairs >= 1000 ? 1u : 0u) << pairs;
    EXPECT_EQ(Gpu(r->root())["churn"]["raw_pairs"].as_int(), static_cast<int64_t>(pairs));
  }
  // Stream-ordered allocations reuse a pool: they are not churn.
  TraceBuilder b(108);
  for (int i = 0; i < 2000; ++i) {
    b.Alloc(Api::kCudaMallocAsync, kBase, MiB);
    b.Free(Api::kCudaFreeAsync, kBase);
  }
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  EXPECT_TRUE(Findings(r->root(), "gpu.churn").empty());
}

// torch_frag on the H200: thousands of cached segments kept, then one flush of half of
// them at once (PyTorch's free-and-retry after an out-of-memory failure). The flush is a
// cache release, not churn; the same number of pairs interleaved is.
TEST(GpuAnalysis, ACacheReleaseAtOnceIsNotChurn) {
  constexpr uint64_t kSegments = 3000;
  TraceBuilder b(109);
  for (uint64_t i = 0; i < kSegments; ++i) b.Alloc(Api::kCudaMalloc, kBase + i * 32 * MiB, 20 * MiB);
  for (uint64_t i = 0; i < kSegments; i += 2) b.Free(Api::kCudaFree, kBase + i * 32 * MiB);
  b.Alloc(Api::kCudaMalloc, kBase + kSegments * 32 * MiB, 8 * GiB);  // the retry
  // Then 31 frees in a row, 31 times: each run too short to be a release.
  for (uint64_t k = 0; k < 31; ++k) {
    for (uint64_t i = 0; i < 31; ++i) b.Free(Api::kCudaFree, kBase + (2 * (k * 31 + i) + 1) * 32 * MiB);
    b.Alloc(Api::kCudaMalloc, kBase + (kSegments + 1 + k) * 32 * MiB, MiB);
  }
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const Json& churn = Gpu(r->root())["churn"];
  // The run of 1500 frees is a release; 31 runs of 31 frees are 961 pairs (without the
  // release rule: 2461 pairs, churn).
  EXPECT_EQ(churn["cache_releases"].as_int(), 1);
  EXPECT_EQ(churn["released_pairs"].as_int(), static_cast<int64_t>(kSegments / 2));
  EXPECT_EQ(churn["raw_pairs"].as_int(), 31 * 31);
  EXPECT_TRUE(Findings(r->root(), "gpu.churn").empty());
}

TEST(GpuAnalysis, KilledProcessLeaksWhatWasLive) {
  TraceBuilder b(109);
  b.Alloc(Api::kCudaMalloc, kBase, 100 * MiB);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish(/*killed=*/true));
  auto r = Report(traces);
  // One allocation held at the kill: leaked_bytes counts it, gpu.leak needs growth.
  EXPECT_TRUE(Findings(r->root(), "gpu.leak").empty());
  EXPECT_EQ(Gpu(r->root())["leaked_bytes"].as_int(), static_cast<int64_t>(100 * MiB));
  EXPECT_EQ(Gpu(r->root())["held_at_exit_bytes"].as_int(), static_cast<int64_t>(100 * MiB));
}

// A trace without an end record whose process its parent reaped with exit status 0 (a
// trace cut short, e.g. by a full disk): gpu.leak reads its end as processes[] does,
// from the reaper's wait status, not as a kill.
TEST(GpuLeak, AProcessItsParentSawExitIsNotCalledKilled) {
  TraceBuilder child(121);
  const uint64_t leak = child.Stack({0x401000});
  uint64_t addr = kBase;
  Steps(child, leak, &addr, 10, 4 * MiB, 200'000'000);
  TraceBuilder parent(122, /*start_ns=*/500);
  parent.SetNow(child.now() + 1000);
  format::WaitStatus w;
  w.pid = 121;
  w.status = 0;  // exited 0
  parent.Add(w);
  std::vector<ProcessTrace> traces;
  traces.push_back(child.Finish(/*killed=*/true));
  traces.push_back(parent.Finish());
  auto r = Report(traces);
  EXPECT_EQ(r->root()["processes"].array().at(0)["end"]["kind"].str(), "exited");
  const auto leaks = Findings(r->root(), "gpu.leak");
  ASSERT_EQ(leaks.size(), 1u);
  EXPECT_EQ((*leaks[0])["evidence"]["at"].str(), "exit");
}

TEST(GpuAnalysis, XlaPreallocationContradictsTheSetting) {
  for (const bool late : {false, true}) {
    TraceBuilder b(110);
    b.Module("/venv/lib/python3.11/site-packages/jaxlib/xla_extension.so", 0x7f0000000000, 0x1000000);
    b.Env("XLA_PYTHON_CLIENT_PREALLOCATE", "false", format::EnvSource::kStartup);
    b.Device(0, "Test GPU", 16 * GiB);
    b.Alloc(Api::kCuMemAlloc_v2, kBase, 12 * GiB, 0, 0, 1);  // 75%: preallocated anyway
    if (late) b.Env("XLA_PYTHON_CLIENT_MEM_FRACTION", ".5", format::EnvSource::kPutenv);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    auto r = Report(traces);
    const auto f = Findings(r->root(), "gpu.allocator-config-ignored");
    ASSERT_EQ(f.size(), 1u);
    const Json& ev = (*f[0])["evidence"];
    ASSERT_EQ(ev["contradicted_by_calls"].array().size(), 1u);
    EXPECT_EQ(ev["contradicted_by_calls"].array()[0]["variable"].str(), "XLA_PYTHON_CLIENT_PREALLOCATE");
    EXPECT_EQ(ev["set_after_first_allocation"].array().size(), late ? 1u : 0u);
  }
}

TEST(GpuAnalysis, DriverAllocationsByLibcudartMeanTheRuntimeLayerWasBypassed) {
  TraceBuilder b(111);
  b.Module("/usr/lib/libcudart.so.12", 0x7f1000000000, 0x100000);
  b.Alloc(Api::kCuMemAlloc_v2, kBase, MiB, 0, 0, /*layer=*/1, 0, /*caller=*/0x7f1000001234);
  b.Alloc(Api::kCuMemAlloc_v2, kBase + 2 * MiB, MiB, 0, 0, 1, 0, /*caller=*/0x555500001234);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const auto f = Findings(r->root(), "gpu.coverage-incomplete");
  ASSERT_EQ(f.size(), 1u);
  const Json& cause = (*f[0])["evidence"]["causes"].array().at(0);
  EXPECT_EQ(cause["cause"].str(), "runtime-layer-bypassed");
  EXPECT_EQ(cause["allocations"].as_int(), 1);
  EXPECT_EQ(cause["library"].str(), "/usr/lib/libcudart.so.12");
}

// ---- CUPTI's memory records (gpu/cupti_merge.h) -------------------------------------------

// One cupti_memory record: source 1 an activity record of `kind`, 2 a driver API callback.
void CuptiMem(TraceBuilder& b, uint64_t source, uint64_t kind, uint64_t addr, uint64_t bytes,
              uint64_t op = 1, uint64_t correlation = 7) {
  format::CuptiMemory m;
  m.op = op;
  m.addr = addr;
  m.bytes = bytes;
  m.device = source == 1 ? 0 : -1;
  m.memory_kind = kind;
  m.correlation = correlation;
  m.source = source;
  b.Add(m);
}

void CuptiState(TraceBuilder& b, format::CuptiStateCode code, int64_t rc = 0, uint64_t records = 0) {
  format::CuptiState s;
  s.state = static_cast<uint64_t>(code);
  s.rc = rc;
  s.records = records;
  b.Add(s);
}

TEST(GpuCupti, OnlyAllocationsThroughAnApiCountNeverTheDriversModuleStatics) {
  constexpr uint64_t kDevice = 3, kPinned = 2, kManaged = 5, kDeviceStatic = 6, kManagedStatic = 7,
                     kArray = 4;
  TraceBuilder b(120);
  CuptiState(b, format::CuptiStateCode::kInjected);
  CuptiState(b, format::CuptiStateCode::kSubscribed);
  b.Alloc(Api::kCuMemAlloc_v2, kBase, 4 * MiB, 0, 0, /*layer=*/1);  // the hooks saw it
  CuptiMem(b, 2, 0, kBase, 4 * MiB);                                 // and CUPTI, twice
  CuptiMem(b, 1, kDevice, kBase, 4 * MiB);
  // The driver's memory for lazily loaded modules (torch_cupti: 940 of them, ~475 B each,
  // correlation 0): never the program's allocations.
  for (int i = 0; i < 5; ++i) CuptiMem(b, 1, kDeviceStatic, 0x7f0000000000 + 0x1000 * i, 475, 1, 0);
  CuptiMem(b, 1, kManagedStatic, 0x7f0000100000, 64, 1, 0);
  CuptiMem(b, 1, kPinned, 0x7e0000000000, 2 * MiB);  // cudaHostAlloc: host memory
  CuptiMem(b, 1, kArray, 0x7d0000000000, MiB);       // cuArrayCreate: not a device allocation
  // A statically linked cudart's allocation the hooks never saw: CUPTI alone, callback and
  // activity record of one allocation (counted once).
  CuptiMem(b, 2, 0, kBase + 8 * MiB, 16 * MiB);
  CuptiMem(b, 1, kDevice, kBase + 8 * MiB, 16 * MiB);
  CuptiMem(b, 1, kManaged, kBase + 32 * MiB, 2 * MiB);  // managed: an API allocation too
  CuptiMem(b, 1, kDevice, kBase, 4 * MiB, /*op=*/2);    // a release: never an allocation
  CuptiState(b, format::CuptiStateCode::kFlushed, 0, 12);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const Json& g = Gpu(r->root());
  EXPECT_EQ(g["allocations"].as_int(), 3);  // 1 hooked + 2 CUPTI-only, no static, host or array
  EXPECT_EQ(r->root()["gpu"]["allocations"].as_int(), 3);
  const Json& c = g["cupti"];
  EXPECT_EQ(c["state"].str(), "subscribed");
  EXPECT_EQ(c["merged_allocations"].as_int(), 1);
  EXPECT_EQ(c["cupti_only_allocations"].as_int(), 2);
  EXPECT_EQ(c["cupti_only_bytes"].as_int(), static_cast<int64_t>(18 * MiB));
  EXPECT_EQ(c["driver_static_allocations"].as_int(), 6);
  EXPECT_EQ(c["driver_static_bytes"].as_int(), 5 * 475 + 64);
  EXPECT_EQ(c["host_allocations"].as_int(), 1);
  EXPECT_TRUE(c["handed_over_at_ns"].is_null());
  const auto f = Findings(r->root(), "gpu.coverage-incomplete");
  ASSERT_EQ(f.size(), 1u);
  const Json& causes = (*f[0])["evidence"]["causes"];
  ASSERT_EQ(causes.array().size(), 1u);
  EXPECT_EQ(causes.array()[0]["cause"].str(), "allocations-seen-only-by-cupti");
  EXPECT_EQ(causes.array()[0]["allocations"].as_int(), 2);
}

TEST(GpuCupti, ModuleStaticsAloneAddNothingAndRaiseNoFinding) {
  TraceBuilder b(121);
  CuptiState(b, format::CuptiStateCode::kInjected);
  CuptiState(b, format::CuptiStateCode::kSubscribed);
  b.Alloc(Api::kCudaMalloc, kBase, MiB);
  CuptiMem(b, 2, 0, kBase, MiB);
  CuptiMem(b, 1, 3, kBase, MiB);
  for (int i = 0; i < 940; ++i) CuptiMem(b, 1, 6, 0x7f0000000000 + 0x200 * i, 475, 1, 0);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  EXPECT_EQ(Gpu(r->root())["allocations"].as_int(), 1);
  EXPECT_EQ(Gpu(r->root())["cupti"]["driver_static_allocations"].as_int(), 940);
  EXPECT_TRUE(Findings(r->root(), "gpu.coverage-incomplete").empty());
}

TEST(GpuCupti, HandOverToTheProgramsProfilerIsReportedWithItsTime) {
  TraceBuilder b(122, /*start_ns=*/1000);
  CuptiState(b, format::CuptiStateCode::kInjected);
  CuptiState(b, format::CuptiStateCode::kSubscribed);
  b.Alloc(Api::kCuMemAlloc_v2, kBase, MiB, 0, 0, 1);
  CuptiMem(b, 1, 3, kBase, MiB);
  b.SetNow(1000 + 2500000000ull);  // 2.5 s after the start
  CuptiState(b, format::CuptiStateCode::kHandedOver, 0, 1);
  CuptiState(b, format::CuptiStateCode::kFlushed);  // another thread's flush, finished later
  b.Alloc(Api::kCuMemAlloc_v2, kBase + MiB, MiB, 0, 0, 1);  // the hooks go on
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const Json& g = Gpu(r->root());
  EXPECT_EQ(g["allocations"].as_int(), 2);
  EXPECT_EQ(g["cupti"]["state"].str(), "handed-over");
  EXPECT_EQ(g["cupti"]["handed_over_at_ns"].as_int(), 2500000000);
  const auto f = Findings(r->root(), "gpu.coverage-incomplete");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ((*f[0])["severity"].str(), "info");
  const Json& cause = (*f[0])["evidence"]["causes"].array().at(0);
  EXPECT_EQ(cause["cause"].str(), "cupti-handed-over");
  EXPECT_EQ(cause["at_ns"].as_int(), 2500000000);
  EXPECT_NE((*f[0])["summary"].str().find("handed over to the program's own profiler at +2.500 s"),
            std::string::npos)
      << (*f[0])["summary"].str();
}

TEST(GpuAnalysis, StreamOrderedFailureCountsThePoolsCacheAsThisProcess) {
  TraceBuilder b(112);
  b.Device(0, "Test GPU", 8 * GiB);
  b.Alloc(Api::kCudaMallocAsync, kBase, GiB);
  b.MemInfo(8 * GiB - 512 * MiB - GiB, 8 * GiB, Why::kFirstUse);
  const uint64_t ts = b.now();
  b.FailedAlloc(Api::kCudaMallocAsync, 2 * GiB, GiB, 8 * GiB);
  format::GpuPool p;
  p.ts = ts;
  p.api = static_cast<uint64_t>(Api::kPoolState);
  p.value = 6 * GiB + 512 * MiB;  // reserved
  p.used = GiB;
  b.Add(p);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const auto f = Findings(r->root(), "gpu.oom");
  ASSERT_EQ(f.size(), 1u);
  const Json& ev = (*f[0])["evidence"];
  EXPECT_EQ(ev["cause"].str(), "this-process");
  EXPECT_EQ(ev["pool_cached_bytes"].as_int(), static_cast<int64_t>(5 * GiB + 512 * MiB));
}

TEST(GpuAnalysis, TwoProcessesOnOneDevice) {
  TraceBuilder a(200, 1000), b(201, 1000);
  a.Device(0, "Test GPU", 8 * GiB);
  b.Device(0, "Test GPU", 8 * GiB);
  a.SetNow(10'000);
  a.Alloc(Api::kCudaMalloc, kBase, 3 * GiB);
  b.SetNow(20'000);
  b.Alloc(Api::kCudaMalloc, kBase, 2 * GiB);
  b.SetNow(30'000);
  b.FailedAlloc(Api::kCudaMalloc, 3 * GiB, 2 * GiB + 512 * MiB, 8 * GiB);
  b.SetNow(40'000);
  b.Free(Api::kCudaFree, kBase);
  a.SetNow(50'000);
  a.Free(Api::kCudaFree, kBase);
  std::vector<ProcessTrace> traces;
  traces.push_back(a.Finish());
  traces.push_back(b.Finish());
  auto r = Report(traces);
  EXPECT_EQ(r->root()["gpu"]["peak_bytes"].as_int(), static_cast<int64_t>(5 * GiB));
  ASSERT_EQ(r->root()["gpu"]["devices"].array().size(), 1u);
  EXPECT_EQ(r->root()["gpu"]["devices"].array()[0]["pids"].array().size(), 2u);
  const auto f = Findings(r->root(), "gpu.oom");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ((*f[0])["pid"].as_int(), 201);
  const Json& ev = (*f[0])["evidence"];
  EXPECT_EQ(ev["cause"].str(), "other-process");
  ASSERT_EQ(ev["other_traced_processes"].array().size(), 1u);
  EXPECT_EQ(ev["other_traced_processes"].array()[0]["pid"].as_int(), 200);
  EXPECT_EQ(ev["other_traced_processes"].array()[0]["bytes"].as_int(), static_cast<int64_t>(3 * GiB));
}

TEST(GpuAnalysis, HostileRecordsDoNotBreakTheAnalysis) {
  TraceBuilder b(113);
  for (int d = 0; d < 500; ++d) b.Alloc(Api::kCudaMalloc, kBase + d * 4096, 1, 0, d * 7919 - 100);
  b.Alloc(Api::kCudaMalloc, kBase, UINT64_MAX);           // a size no device has
  b.Alloc(static_cast<Api>(60000), kBase, 5);             // an api code nobody knows
  b.Free(Api::kCudaFree, 0);
  b.Free(Api::kCudaFree, 0xdeadbeef);
  b.Vmm(Api::kCuMemUnmap, 0, 0, UINT64_MAX);
  b.Vmm(Api::kCuMemRelease, 0, 0, 0);
  b.FailedAlloc(Api::kCudaMalloc, UINT64_MAX, UINT64_MAX, 0, -5);
  format::GpuMemInfo m;
  m.device = INT64_MIN;
  m.free = 5;
  m.total = 1;
  b.Add(m);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  auto r = Report(traces);
  const Json& g = Gpu(r->root());
  EXPECT_LE(g["devices"].array().size(), 65u);
  EXPECT_GE(g["allocations"].as_int(), 500);
  EXPECT_EQ(g["unmatched_frees"].as_int(), 2);  // 0xdeadbeef and the unknown VMM handle
}

}  // namespace
}  // namespace colabtrace::analyzer
