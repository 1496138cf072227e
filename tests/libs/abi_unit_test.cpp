// Unit and golden tests of analyzer/abi: dlerror parsing, names, ld.so.cache parsing,
// RUNPATH expansion, the inventory rebuilt from records, and the findings computed from
// small traces built inline (files that do not exist, so only trace facts count).
#include <dlfcn.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "abi_trace_builder.h"
#include "report_findings.h"
#include "abi/dlerror_text.h"
#include "abi/library_inventory.h"
#include "abi/library_model.h"
#include "abi/library_search.h"
#include "elf/elf_image.h"
#include "colabtrace/format/codec.h"
#include "gtest/gtest.h"
#include "report/report.h"
#include "trace/process_trace.h"

namespace {

namespace ctf = colabtrace::format;
using colabtrace::analyzer::BuildReport;
using colabtrace::analyzer::Finding;
using colabtrace::analyzer::ParseTrace;
using colabtrace::analyzer::ProcessTrace;
using colabtrace::analyzer::ReportOptions;
using namespace colabtrace::analyzer::abi;
using colabtrace::abitest::BuildIdOf;
using colabtrace::abitest::Fixture;
using colabtrace::abitest::TraceBuilder;
using colabtrace::testing::FindingsOf;

// ---- dlerror texts ------------------------------------------------------------------------

TEST(DlerrorText, NotFound) {
  const DlerrorFacts f = ParseDlerror("libcudnn.so.8: cannot open shared object file: No such file or directory");
  EXPECT_EQ(f.kind, DlerrorFacts::kNotFound);
  EXPECT_EQ(f.object, "libcudnn.so.8");
}

TEST(DlerrorText, VersionNotFound) {
  const DlerrorFacts f = ParseDlerror(
      "/usr/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found (required by "
      "/opt/x/_C.so)");
  EXPECT_EQ(f.kind, DlerrorFacts::kVersionNotFound);
  EXPECT_EQ(f.object, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
  EXPECT_EQ(f.version, "GLIBCXX_3.4.30");
  EXPECT_EQ(f.required_by, "/opt/x/_C.so");
}

TEST(DlerrorText, UndefinedSymbol) {
  DlerrorFacts f = ParseDlerror("/x/libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_4, version libnvJitLink.so.12");
  EXPECT_EQ(f.kind, DlerrorFacts::kUndefinedSymbol);
  EXPECT_EQ(f.object, "/x/libcusparse.so.12");
  EXPECT_EQ(f.symbol, "__nvJitLinkAddData_12_4");
  EXPECT_EQ(f.version, "libnvJitLink.so.12");
  f = ParseDlerror("/x/a.so: undefined symbol: _ZN3foo3barEv");
  EXPECT_EQ(f.kind, DlerrorFacts::kUndefinedSymbol);
  EXPECT_EQ(f.symbol, "_ZN3foo3barEv");
  EXPECT_EQ(f.version, "");
}

TEST(DlerrorText, SymbolVersionNotDefined) {
  const DlerrorFacts f =
      ParseDlerror("symbol cudaMalloc version libcudart.so.12 not defined in file libcudart.so.12 with link time reference");
  EXPECT_EQ(f.kind, DlerrorFacts::kSymbolVersion);
  EXPECT_EQ(f.symbol, "cudaMalloc");
  EXPECT_EQ(f.version, "libcudart.so.12");
  EXPECT_EQ(f.object, "libcudart.so.12");
}

TEST(DlerrorText, OtherAndGarbage) {
  EXPECT_EQ(ParseDlerror("/x: wrong ELF class: ELFCLASS32").kind, DlerrorFacts::kOther);
  EXPECT_EQ(ParseDlerror("").kind, DlerrorFacts::kOther);
  EXPECT_EQ(ParseDlerror("symbol ").kind, DlerrorFacts::kOther);
  EXPECT_EQ(ParseDlerror(": version `").kind, DlerrorFacts::kVersionNotFound);
}

// ---- names ------------------------------------------------------------------------------

TEST(LibraryNames, Stem) {
  EXPECT_EQ(LibraryStem("libcudart.so.12"), "cudart");
  EXPECT_EQ(LibraryStem("/usr/local/cuda/lib64/libcudart.so.13.0.48"), "cudart");
  EXPECT_EQ(LibraryStem("/sp/torch.libs/libcudart-1a2b3c4d.so.12"), "cudart");
  EXPECT_EQ(LibraryStem("libcudnn_ops.so.9"), "cudnn_ops");
  EXPECT_EQ(LibraryStem("libnvrtc-builtins.alt.so.13"), "nvrtc-builtins");
  EXPECT_EQ(LibraryStem("ld-linux-x86-64.so.2"), "ld-linux-x86-64");
  EXPECT_EQ(LibraryStem("libfoo.so"), "foo");
  EXPECT_EQ(LibraryStem(""), "");
}

TEST(LibraryNames, Flags) {
  EXPECT_EQ(DlopenFlagNames(RTLD_NOW | RTLD_GLOBAL | RTLD_DEEPBIND), "RTLD_NOW|RTLD_GLOBAL|RTLD_DEEPBIND");
  EXPECT_EQ(DlopenFlagNames(RTLD_LAZY | RTLD_NOLOAD), "RTLD_LAZY|RTLD_NOLOAD");
  EXPECT_EQ(DlopenFlagNames(0), "0");
}

// ---- ld.so.cache ------------------------------------------------------------------------

std::string NewCache(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string strings;
  std::vector<std::pair<uint32_t, uint32_t>> offs;
  const uint32_t header = 48, table = static_cast<uint32_t>(entries.size() * 24);
  for (const auto& [k, v] : entries) {
    const uint32_t ko = header + table + static_cast<uint32_t>(strings.size());
    strings += k + '\0';
    const uint32_t vo = header + table + static_cast<uint32_t>(strings.size());
    strings += v + '\0';
    offs.push_back({ko, vo});
  }
  std::string out = "glibc-ld.so.cache1.1";
  auto u32 = [&out](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); };
  u32(static_cast<uint32_t>(entries.size()));
  u32(static_cast<uint32_t>(strings.size()));
  out.append(20, '\0');  // flags, padding, extension offset, unused
  EXPECT_EQ(out.size(), 48u);
  for (const auto& [k, v] : offs) {
    u32(0x303);
    u32(k);
    u32(v);
    u32(0);
    out.append(8, '\0');
  }
  return out + strings;
}

TEST(LdSoCache, ParsesNewFormat) {
  const auto e = ParseLdSoCache(NewCache({{"libfoo.so.1", "/lib/libfoo.so.1"}, {"libbar.so", "/x/libbar.so"}}));
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0], std::make_pair(std::string("libfoo.so.1"), std::string("/lib/libfoo.so.1")));
  EXPECT_EQ(e[1].second, "/x/libbar.so");
}

TEST(LdSoCache, UntrustedBytes) {
  const std::string good = NewCache({{"libfoo.so.1", "/lib/libfoo.so.1"}});
  for (size_t n = 0; n < good.size(); ++n) {
    const auto e = ParseLdSoCache(std::string_view(good).substr(0, n));
    EXPECT_LE(e.size(), 1u);
  }
  std::string huge = good;
  const uint32_t many = 0x7fffffff;
  std::memcpy(&huge[20], &many, 4);
  EXPECT_TRUE(ParseLdSoCache(huge).empty());
  EXPECT_TRUE(ParseLdSoCache("ld.so-1.7.0").empty());
}

TEST(LdSoCache, ThisMachine) {
  std::ifstream in("/etc/ld.so.cache", std::ios::binary);
  if (!in) GTEST_SKIP() << "no /etc/ld.so.cache";
  std::stringstream ss;
  ss << in.rdbuf();
  bool libc = false;
  for (const auto& [k, v] : ParseLdSoCache(ss.str())) libc |= k == "libc.so.6" && v.ends_with("/libc.so.6");
  EXPECT_TRUE(libc);
}

TEST(Runpath, ExpandsOrigin) {
  auto d = RunpathDirs("/a/b/lib.so", "$ORIGIN/../lib:${ORIGIN}/x:/abs", "/ignored");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].path, "/a/b/../lib");
  EXPECT_EQ(d[1].path, "/a/b/x");
  EXPECT_EQ(d[2].path, "/abs");
  EXPECT_EQ(d[0].why, "requester's RUNPATH");
  d = RunpathDirs("/a/lib.so", "", "$ORIGIN");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "/a");
  EXPECT_EQ(d[0].why, "requester's RPATH");
}

// ---- traces built inline (abi_trace_builder.h) ----------------------------------------------

using ctf::LibApi;
using colabtrace::analyzer::Severity;

#define FIXTURE_OR_SKIP(var, rel) \
  const std::string var = Fixture(rel); \
  if (var.empty()) GTEST_SKIP() << rel << " was not built (objcopy missing?)"

TEST(Inventory, CallMergesIntoDiscoveredObjectEitherOrder) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
  b.Load(LibApi::kDiscovered, "/x/liba.so", 0x2000, "");           // another thread's sync
  b.Load(LibApi::kDlopen, "/x/liba.so", 0x2000, "/bin/prog", 0, RTLD_NOW);  // the call, not fresh
  b.Load(LibApi::kDlopen, "/x/libb.so", 0x3000, "/x/liba.so", 0, RTLD_NOW);  // call first...
  b.Load(LibApi::kDiscovered, "/x/libb.so", 0x3000, "");           // ...object later
  b.Load(LibApi::kDlopen, "libmissing.so.8", 0, "/bin/prog", 0, RTLD_NOW, 0, false,
         "libmissing.so.8: cannot open shared object file: No such file or directory");
  const ProcessTrace t = b.Finish();
  const LibraryInventory inv = LibraryInventory::Of(t);
  ASSERT_EQ(inv.objects.size(), 3u);
  EXPECT_TRUE(inv.objects[0].is_executable);
  EXPECT_EQ(inv.objects[1].api, LibApi::kDlopen);
  EXPECT_EQ(inv.objects[1].loaded_by, "/bin/prog");
  EXPECT_EQ(inv.objects[2].api, LibApi::kDlopen);
  EXPECT_EQ(inv.objects[2].loaded_by, "/x/liba.so");
  ASSERT_EQ(inv.failures.size(), 1u);
  EXPECT_EQ(inv.failures[0].requested, "libmissing.so.8");
}

TEST(Inventory, UnloadChecksAndDeepbindClosure) {
  TraceBuilder b(10);
  b.Load(LibApi::kDependency, "/x/libdep.so", 0x5000, "/x/libdeep.so");  // written before the call
  b.Load(LibApi::kDlopen, "/x/libdeep.so", 0x4000, "/bin/prog", 1, RTLD_NOW | RTLD_DEEPBIND);
  b.Load(LibApi::kDlopen, "/x/libc1.so", 0x6000, "/bin/prog", 1, RTLD_NOW, 42);
  ctf::LibCheck c;
  c.base = 0x6000;
  c.path = b.Str("/x/libc1.so");
  c.ino = 43;
  c.when = 1;
  b.Add(c);
  b.Tick();
  b.Unmap(0x6000);
  b.Load(LibApi::kDlopen, "/x/libc2.so", 0x6000, "/bin/prog");  // same base, new object
  const LibraryInventory inv = LibraryInventory::Of(b.Finish());
  ASSERT_EQ(inv.objects.size(), 4u);
  EXPECT_TRUE(inv.objects[0].deepbind);
  EXPECT_TRUE(inv.objects[1].deepbind);
  EXPECT_FALSE(inv.objects[2].deepbind);
  ASSERT_EQ(inv.objects[2].changes.size(), 1u);
  EXPECT_EQ(inv.objects[2].changes[0].now.ino, 43u);
  EXPECT_TRUE(inv.objects[2].unloaded_ns.has_value());
  EXPECT_FALSE(inv.objects[3].unloaded_ns.has_value());
  EXPECT_TRUE(inv.objects[3].changes.empty());
}

TEST(Findings, DuplicateNeedsTwoFilesAtOnce) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
  b.Load(LibApi::kDlopen, "/a/libfoo.so.1", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(LibApi::kDlopen, "/b/libfoo.so.1", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
  b.Load(LibApi::kDlopen, "/c/libbar.so.1", 0x4000, "/bin/prog", 1, RTLD_NOW, 3);
  b.Unmap(0x4000);
  b.Load(LibApi::kDlopen, "/d/libbar.so.2", 0x5000, "/bin/prog", 1, RTLD_NOW, 4);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.duplicate-library");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["library"].str(), "foo");
  EXPECT_EQ(f[0].evidence["copies"].array().size(), 2u);
  EXPECT_EQ(f[0].summary, "libfoo is loaded from 2 files: /a/libfoo.so.1 (by prog) and /b/libfoo.so.1 (by prog)");
}

TEST(Findings, MixedMajorsFromSonamesWhenFilesAreGone) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "/gone/libcudart.so.12", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(LibApi::kDlopen, "/gone/libcublasLt.so.13", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
  b.Load(LibApi::kDlopen, "/gone/libcufft.so.12", 0x4000, "/bin/prog", 1, RTLD_NOW, 3);  // not a CUDA major
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.mixed-cuda-majors");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["majors"]["12"].array().size(), 1u);
  EXPECT_EQ(f[0].evidence["majors"]["13"].array()[0]["path"].str(), "/gone/libcublasLt.so.13");
}

TEST(Findings, SystemVsPip) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "/usr/lib/x86_64-linux-gnu/libcudnn.so.9", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(LibApi::kDlopen, "/p/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn_ops.so.9", 0x3000,
         "/bin/prog", 1, RTLD_NOW, 2);
  b.Load(LibApi::kDlopen, "/usr/lib/x86_64-linux-gnu/libm.so.6", 0x4000, "/bin/prog", 1, RTLD_NOW, 3);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.system-vs-pip");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["family"].str(), "cudnn");
}

// ---- what colabtrace itself loaded (issue 21: the libcupti of COLABTRACE_CUPTI=1) ----------

constexpr char kShim[] = "/opt/ct/lib/libcolabtrace.so";
constexpr char kWheelCupti[] = "/v/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13";
constexpr char kToolkitCupti[] = "/usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13";

TEST(Inventory, ColabtraceLoadsAreLeftOutUnlessTheProgramLoadsThemToo) {
  for (const bool program_loads_it : {false, true}) {
    TraceBuilder b(10);
    b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
    b.Load(LibApi::kColabtrace, kToolkitCupti, 0x2000, kShim, 1, RTLD_NOW);
    b.Load(LibApi::kDependency, "/lib/libutil.so.1", 0x3000, kToolkitCupti);   // its DT_NEEDED
    b.Load(LibApi::kDlopen, "libnvperf.so", 0, kToolkitCupti, 0, RTLD_NOW, 0, false,
           "libnvperf.so: cannot open shared object file: No such file or directory");
    b.Load(LibApi::kDlopen, kToolkitCupti, 0x2000, "/bin/prog", 0, RTLD_NOW | RTLD_NOLOAD);  // a probe
    if (program_loads_it) b.Load(LibApi::kDlopen, kToolkitCupti, 0x2000, "/bin/prog", 0, RTLD_NOW);
    const LibraryInventory inv = LibraryInventory::Of(b.Finish());
    std::vector<std::string> paths;
    for (const LoadedLibrary& o : inv.objects) paths.push_back(o.path);
    if (!program_loads_it) {
      EXPECT_EQ(paths, std::vector<std::string>{"/bin/prog"});
      EXPECT_TRUE(inv.failures.empty());
    } else {
      // The program's own dlopen makes it the program's, with what it brought and tried.
      EXPECT_EQ(paths, (std::vector<std::string>{"/bin/prog", kToolkitCupti, "/lib/libutil.so.1"}));
      EXPECT_EQ(inv.objects[1].api, LibApi::kDlopen);
      EXPECT_EQ(inv.objects[1].loaded_by, "/bin/prog");
      EXPECT_EQ(inv.failures.size(), 1u);
    }
  }
}

// A process that loaded the wheel's libcupti itself, and a second copy from the toolkit.
std::vector<ProcessTrace> TwoCuptis(LibApi toolkit_api, const std::string& toolkit_requester) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
  b.Load(LibApi::kDlopen, kWheelCupti, 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(toolkit_api, kToolkitCupti, 0x3000, toolkit_requester, 1, RTLD_NOW, 2);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  return traces;
}

TEST(Findings, AColabtraceLoadIsNoDuplicateNorSystemVsPip) {
  auto own = TwoCuptis(LibApi::kColabtrace, kShim);
  EXPECT_TRUE(FindingsOf(own, "abi.duplicate-library").empty());
  EXPECT_TRUE(FindingsOf(own, "abi.system-vs-pip").empty());
  // The same two copies loaded by the program: both findings.
  auto programs = TwoCuptis(LibApi::kDlopen, "/bin/prog");
  EXPECT_EQ(FindingsOf(programs, "abi.duplicate-library").size(), 1u);
  EXPECT_EQ(FindingsOf(programs, "abi.system-vs-pip").size(), 1u);
}

// Traces of shims before LibApi::kColabtrace (the real-GPU corpus's torch_cupti): the toolkit
// libcupti the shim dlopen()ed appeared while its CUPTI subscriber started, credited by the
// loader to libtorch_cpu.so's DT_NEEDED (its soname is libcupti.so.13).
TEST(Findings, LegacyTraceTheLibcuptiThatAppearedWhileTheShimsCuptiStartedIsColabtraces) {
  for (const bool shim_cupti : {true, false}) {
    TraceBuilder b(10);
    auto state = [&](ctf::CuptiStateCode code) {
      ctf::CuptiState s;
      s.state = static_cast<uint64_t>(code);
      b.Add(s);
      b.Tick();
    };
    b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
    b.Load(LibApi::kDlopen, kWheelCupti, 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
    b.Load(LibApi::kDlopen, "/v/torch/lib/libtorch_cpu.so", 0x4000, "/bin/prog", 1, RTLD_NOW, 3);
    if (shim_cupti) state(ctf::CuptiStateCode::kInjected);
    b.Load(LibApi::kDependency, kToolkitCupti, 0x3000, "/v/torch/lib/libtorch_cpu.so", 1, 0, 2, true, "",
           "libcupti.so.13");
    if (shim_cupti) {
      state(ctf::CuptiStateCode::kSubscribed);
      state(ctf::CuptiStateCode::kFlushed);
    }
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    EXPECT_EQ(FindingsOf(traces, "abi.duplicate-library").size(), shim_cupti ? 0u : 1u);
    EXPECT_EQ(FindingsOf(traces, "abi.system-vs-pip").size(), shim_cupti ? 0u : 1u);
  }
}

TEST(Findings, DriverTooOldFromVersionsAndErrors) {
  {
    TraceBuilder b(10);
    ctf::GpuVersion v;
    v.runtime = 13000;
    v.driver = 12040;
    v.runtime_lib = b.Str("/usr/local/cuda/lib64/libcudart.so.13");
    b.Add(v);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    const auto f = FindingsOf(traces, "abi.driver-too-old");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].summary,
              "the CUDA runtime 13.0 (libcudart.so.13) is newer than the driver supports (CUDA 12.4)");
  }
  {
    TraceBuilder b(10);
    ctf::GpuVersion v;
    v.runtime = 12040;
    v.driver = 13000;
    b.Add(v);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    EXPECT_TRUE(FindingsOf(traces, "abi.driver-too-old").empty());
  }
  {
    TraceBuilder b(10);
    b.Load(LibApi::kDlopen, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x1000, "/x/libcudart.so.13", 1,
           RTLD_NOW, 1, true, "", "libcuda.so.1");
    ctf::GpuError e;
    e.api = static_cast<uint64_t>(ctf::GpuApi::kCudaMalloc);
    e.rc = 35;
    e.caller = b.Str("/x/libtorch_cuda.so");
    b.Add(e);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    const auto f = FindingsOf(traces, "abi.driver-too-old");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].evidence["errors"].array()[0]["api"].str(), "cudaMalloc");
  }
}

// The real libcudart.so.13 on a host without libcuda.so.1 fails with 35 too: the driver is
// missing, not too old; abi.load-failed names that cause.
TEST(Findings, NoDriverAtAllIsNotADriverTooOld) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "libcuda.so.1", 0, "/x/libcudart.so.13", 0, RTLD_NOW, 0, false,
         "libcuda.so.1: cannot open shared object file: No such file or directory");
  ctf::GpuVersion v;
  v.runtime = 13000;
  v.driver = 0;
  b.Add(v);
  ctf::GpuError e;
  e.api = static_cast<uint64_t>(ctf::GpuApi::kCudaMalloc);
  e.rc = 35;
  b.Add(e);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  EXPECT_TRUE(FindingsOf(traces, "abi.driver-too-old").empty());
  const auto f = FindingsOf(traces, "abi.load-failed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["requested"].str(), "libcuda.so.1");
}

TEST(Findings, NoKernelImageFromLaunchError) {
  TraceBuilder b(10);
  ctf::GpuError e;
  e.api = static_cast<uint64_t>(ctf::GpuApi::kCuModuleLoadData);
  e.rc = 209;
  e.caller = b.Str("/x/libmyext.so");
  b.Add(e);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.no-kernel-image");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].summary, "a kernel had no image for this GPU (CUDA error 209) in libmyext.so");
}

TEST(Findings, LoadFailedIsInfoWhenAnotherVersionLoaded) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "libcudart.so.12", 0, "/bin/prog", 0, RTLD_NOW, 0, false,
         "libcudart.so.12: cannot open shared object file: No such file or directory");
  b.Load(LibApi::kDlopen, "/x/libcudart.so.13", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(LibApi::kDlopen, "libnope.so", 0, "/bin/prog", 0, RTLD_NOW | RTLD_NOLOAD, 0, false, "");
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.load-failed");
  ASSERT_EQ(f.size(), 1u);  // the RTLD_NOLOAD probe is not a failure
  EXPECT_EQ(f[0].severity, colabtrace::analyzer::Severity::kInfo);
  EXPECT_EQ(f[0].evidence["severity_reason"].str(),
            "another version of the library (libcudart.so.13) was loaded instead and the process went on");
  EXPECT_EQ(f[0].evidence["loaded_later"].str(), "/x/libcudart.so.13");
}

TEST(Findings, DriverTooOldComparesCudaMajors) {
  auto versions = [](int64_t runtime, int64_t driver, int64_t failed_rc) {
    TraceBuilder b(10);
    ctf::GpuVersion v;
    v.runtime = runtime;
    v.driver = driver;
    b.Add(v);
    if (failed_rc != 0) {
      ctf::GpuError e;
      e.api = static_cast<uint64_t>(ctf::GpuApi::kCudaMalloc);
      e.rc = failed_rc;
      b.Add(e);
    }
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    return FindingsOf(traces, "abi.driver-too-old").size();
  };
  EXPECT_EQ(versions(12060, 12040, 0), 0u);  // a cu126 wheel on a 12.4 driver works
  EXPECT_EQ(versions(12090, 12000, 0), 0u);
  EXPECT_EQ(versions(13000, 12090, 0), 1u);  // a newer major does not
  EXPECT_EQ(versions(12060, 12040, 222), 1u);  // unless a call actually failed for it
  EXPECT_EQ(versions(12060, 12040, 804), 1u);
  EXPECT_EQ(versions(12060, 12040, 2), 0u);  // out of memory says nothing about the driver
}

TEST(Findings, VendoredCopiesAreNotDuplicatesButCudaOnesAre) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
  b.Load(LibApi::kDlopen, "/sp/numpy.libs/libgfortran-040039e1.so.5.0.0", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(LibApi::kDlopen, "/sp/scipy.libs/libgfortran-1a2b3c4d.so.5.0.0", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
  b.Load(LibApi::kDlopen, "/usr/lib/libgomp.so.1", 0x4000, "/bin/prog", 1, RTLD_NOW, 3);
  b.Load(LibApi::kDlopen, "/sp/torch/lib/libgomp-a34b3233.so.1", 0x5000, "/bin/prog", 1, RTLD_NOW, 4);
  b.Load(LibApi::kDlopen, "/sp/x.libs/libcudart-1a2b3c4d.so.12", 0x6000, "/bin/prog", 1, RTLD_NOW, 5);
  b.Load(LibApi::kDlopen, "/sp/nvidia/cuda_runtime/lib/libcudart.so.12", 0x7000, "/bin/prog", 1, RTLD_NOW, 6);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.duplicate-library");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].evidence["library"].str(), "cudart");
}

TEST(Findings, DuplicateCopiesOverlapInTime) {
  // a (file 1) [t1, t3), b (file 2) [t4, -), c (file 1) [t5, -): b and c overlap, a overlaps
  // nothing of another file.
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "/a/libfoo.so.1", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Unmap(0x2000);
  b.Load(LibApi::kDlopen, "/b/libfoo.so.1", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
  b.Load(LibApi::kDlopen, "/a/libfoo.so.1", 0x4000, "/bin/prog", 1, RTLD_NOW, 1);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.duplicate-library");
  ASSERT_EQ(f.size(), 1u);
  ASSERT_EQ(f[0].evidence["copies"].array().size(), 2u);
  EXPECT_EQ(f[0].evidence["copies"].array()[0]["path"].str(), "/b/libfoo.so.1");
  EXPECT_EQ(f[0].evidence["copies"].array()[1]["path"].str(), "/a/libfoo.so.1");
}

// ---- issue 21: the abi.* findings as real CUDA stacks need them --------------------------

TEST(Findings, MixedMajorsComeFromDtNeededNotFromPtx) {
  FIXTURE_OR_SKIP(user12, "cudauser/libct_cuda_user.so");  // DT_NEEDED libcudart.so.12
  FIXTURE_OR_SKIP(ptx71, "devcode/libct_ptx71.so");        // PTX ISA 7.1 only, needs no CUDA
  {
    TraceBuilder b(10);
    b.Load(LibApi::kDlopen, user12, 0x2000, "/bin/prog");
    b.Load(LibApi::kDlopen, "/gone/libcublasLt.so.13", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    const auto f = FindingsOf(traces, "abi.mixed-cuda-majors");
    ASSERT_EQ(f.size(), 1u);
    ASSERT_EQ(f[0].evidence["majors"]["12"].array().size(), 1u);
    EXPECT_EQ(f[0].evidence["majors"]["12"].array()[0]["path"].str(), user12);
    EXPECT_EQ(f[0].evidence["majors"]["12"].array()[0]["evidence"].str(), "needs libcudart.so.12");
    EXPECT_EQ(f[0].evidence["majors"]["13"].array()[0]["evidence"].str(), "soname libcublasLt.so.13");
  }
  {
    // The cu13 wheel's libcufile.so.0 case: PTX ISA 7.1 is CUDA 11's compiler, not a
    // dependency on CUDA 11.
    TraceBuilder b(10);
    b.Load(LibApi::kDlopen, ptx71, 0x2000, "/bin/prog");
    b.Load(LibApi::kDlopen, "/gone/libcudart.so.13", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    auto report = BuildReport(traces, {});
    for (const Finding& f : report->findings()) EXPECT_NE(f.id, "abi.mixed-cuda-majors") << f.summary;
    const colabtrace::analyzer::Json& rows = report->root()["libraries"];
    ASSERT_EQ(rows.array().size(), 2u);
    EXPECT_EQ(rows.array()[0]["path"].str(), ptx71);
    EXPECT_TRUE(rows.array()[0]["cuda_major"].is_null());
    EXPECT_EQ(rows.array()[1]["cuda_major"].as_int(), 13);
  }
}

TEST(Findings, OneFindingPerCauseAcrossProcessesListsEveryPid) {
  std::vector<ProcessTrace> traces;
  for (uint32_t pid : {20u, 21u, 22u}) {  // a DataLoader's parent and two workers
    TraceBuilder b(pid);
    b.Load(LibApi::kDlopen, "/gone/libcudart.so.12", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
    b.Load(LibApi::kDlopen, "/gone/libcublasLt.so.13", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
    b.Load(LibApi::kDlopen, "/a/libfoo.so.1", 0x4000, "/bin/prog", 1, RTLD_NOW, 3);
    b.Load(LibApi::kDlopen, "/b/libfoo.so.1", 0x5000, "/bin/prog", 1, RTLD_NOW, 4);
    if (pid != 21) b.Load(LibApi::kDlopen, "libcutensor.so.2", 0, "/bin/prog", 0, RTLD_NOW, 0, false,
                          "libcutensor.so.2: cannot open shared object file: No such file or directory");
    if (pid == 22) b.Exit(1);  // this worker failed after its probe: the probe is an error there
    traces.push_back(b.Finish());
  }
  auto pids = [](const Finding& f) {
    std::vector<int64_t> out;
    for (const auto& p : f.evidence["pids"].array()) out.push_back(p.as_int());
    return out;
  };
  const auto mixed = FindingsOf(traces, "abi.mixed-cuda-majors");
  ASSERT_EQ(mixed.size(), 1u);
  EXPECT_EQ(mixed[0].pid, 20);
  EXPECT_EQ(pids(mixed[0]), (std::vector<int64_t>{20, 21, 22}));
  EXPECT_EQ(mixed[0].summary,
            "libraries built for 2 CUDA majors are loaded together (CUDA 12: libcudart.so.12; CUDA 13: "
            "libcublasLt.so.13) (in 3 processes)");
  const auto dup = FindingsOf(traces, "abi.duplicate-library");
  ASSERT_EQ(dup.size(), 1u);
  EXPECT_EQ(pids(dup[0]), (std::vector<int64_t>{20, 21, 22}));
  const auto lf = FindingsOf(traces, "abi.load-failed");
  ASSERT_EQ(lf.size(), 1u);
  EXPECT_EQ(lf[0].pid, 20);  // the first process that had it
  EXPECT_EQ(pids(lf[0]), (std::vector<int64_t>{20, 22}));
  EXPECT_EQ(lf[0].severity, Severity::kError);  // the highest: pid 22 then failed
  EXPECT_EQ(lf[0].evidence["evidence_pid"].as_int(), 22);
  EXPECT_EQ(lf[0].evidence["severity_reason"].str(), "the process failed after this load failed");
}

TEST(Findings, VersionProbeThenSuccessIsInfo) {
  // cuDNN 9.19 tries libcudnn_graph.so.9.19 and .9.19.0 before .so.9, which loads; the
  // process is SIGKILLed later (no end record): the probes had nothing to do with it.
  TraceBuilder b(10, /*ended=*/false);
  for (const char* probe : {"libcudnn_graph.so.9.19", "libcudnn_graph.so.9.19.0"}) {
    b.Load(LibApi::kDlopen, probe, 0, "/sp/nvidia/cudnn/lib/libcudnn.so.9", 0, RTLD_NOW, 0, false,
           std::string(probe) + ": cannot open shared object file: No such file or directory");
  }
  b.Load(LibApi::kDlopen, "/sp/nvidia/cudnn/lib/libcudnn_graph.so.9", 0x2000, "/sp/nvidia/cudnn/lib/libcudnn.so.9", 1,
         RTLD_NOW, 1, true, "", "libcudnn_graph.so.9");
  // A probe made while the library is already mapped is handled too.
  b.Load(LibApi::kDlopen, "libcudnn_graph.so.9.19", 0, "/sp/nvidia/cudnn/lib/libcudnn.so.9", 0, RTLD_NOW, 0, false,
         "libcudnn_graph.so.9.19: cannot open shared object file: No such file or directory");
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.load-failed");
  ASSERT_EQ(f.size(), 2u);
  for (const Finding& x : f) {
    EXPECT_EQ(x.severity, Severity::kInfo) << x.summary;
    EXPECT_EQ(x.evidence["severity_reason"].str(), "a version probe: the same library (libcudnn_graph.so.9) was loaded");
    EXPECT_EQ(x.evidence["loaded_later"].str(), "/sp/nvidia/cudnn/lib/libcudnn_graph.so.9");
  }
  EXPECT_EQ(f[0].evidence["count"].as_int() + f[1].evidence["count"].as_int(), 3);
}

TEST(Findings, OptionalCudaLibraryProbeIsInfoInAHealthyProcessOnly) {
  auto probe = [](bool gpu_call_failed, int64_t exit_code) {
    TraceBuilder b(10);
    b.Load(LibApi::kDlopen, "libcutensor.so.2", 0, "/sp/cupy/_core/core.so", 0, RTLD_NOW, 0, false,
           "libcutensor.so.2: cannot open shared object file: No such file or directory");
    if (gpu_call_failed) {
      ctf::GpuError e;
      e.api = static_cast<uint64_t>(ctf::GpuApi::kCudaMalloc);
      e.rc = 2;
      b.Add(e);
    }
    b.Exit(exit_code);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    const auto f = FindingsOf(traces, "abi.load-failed");
    EXPECT_EQ(f.size(), 1u);
    return f.empty() ? std::make_pair(Severity::kWarning, std::string()) :
                       std::make_pair(f[0].severity, f[0].evidence["severity_reason"].str());
  };
  EXPECT_EQ(probe(false, 0), std::make_pair(Severity::kInfo, std::string(
                                 "an optional cutensor library: the process went on without it, ended normally and "
                                 "no GPU call failed")));
  EXPECT_EQ(probe(true, 0), std::make_pair(Severity::kError, std::string(
                                "a cutensor library (a family CUDA programs depend on), and a GPU call failed in "
                                "this process")));
  EXPECT_EQ(probe(false, 1), std::make_pair(Severity::kError, std::string("the process failed after this load failed")));
}

TEST(Findings, DtNeededFailureIsAnErrorEvenInAHealthyProcess) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "/sp/x/libplugin.so", 0, "/bin/prog", 0, RTLD_NOW, 0, false,
         "libct_missing_dep.so.1: cannot open shared object file: No such file or directory");
  // The same library loaded afterwards does not excuse a missing dependency.
  b.Load(LibApi::kDlopen, "/sp/y/libplugin.so", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Exit(0);
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.load-failed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].evidence["severity_reason"].str(),
            "the library was found but its dependency (DT_NEEDED) libct_missing_dep.so.1 is missing");
}

// CuPy on the H200: its optional cuTENSOR backend module needs libcutensor.so.2, which is
// not installed; CuPy catches the ImportError and runs on. Info in a healthy process; an
// error when the process then failed.
TEST(Findings, AnOptionalModuleMissingItsCudaFamilyDependencyIsInfo) {
  auto module = [](int exit_code) {
    TraceBuilder b(10);
    b.Load(LibApi::kDlopen, "/sp/cupy_backends/cuda/libs/cutensor.cpython-312-x86_64-linux-gnu.so", 0,
           "/usr/bin/python3.12", 0, RTLD_NOW, 0, false,
           "libcutensor.so.2: cannot open shared object file: No such file or directory");
    b.Exit(exit_code);
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    const auto f = FindingsOf(traces, "abi.load-failed");
    EXPECT_EQ(f.size(), 1u);
    return f.empty() ? std::make_pair(Severity::kWarning, std::string())
                     : std::make_pair(f[0].severity, f[0].evidence["severity_reason"].str());
  };
  EXPECT_EQ(module(0), std::make_pair(Severity::kInfo, std::string(
                           "an optional module whose cutensor dependency libcutensor.so.2 is not installed: the "
                           "process went on without it, ended normally and no GPU call failed")));
  EXPECT_EQ(module(1), std::make_pair(Severity::kError, std::string(
                           "the library was found but its dependency (DT_NEEDED) libcutensor.so.2 is missing")));
}

TEST(Findings, ExtensionModulesOfOneFileNameAreNotDuplicates) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/python3", 0x1000, "");
  const std::string core = "core.cpython-312-x86_64-linux-gnu.so";
  b.LoadObject(LibApi::kDlopen, "/sp/cupy/_core/" + core, 0x2000, "");
  b.LoadObject(LibApi::kDlopen, "/sp/cupy/cuda/" + core, 0x3000, "");
  b.LoadObject(LibApi::kDlopen, "/sp/jax_plugins/xla_cuda13/xla_cuda_plugin.so", 0x4000, "");
  b.LoadObject(LibApi::kDlopen, "/sp/jax_plugins/xla_cuda12/xla_cuda_plugin.so", 0x5000, "");
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  EXPECT_TRUE(FindingsOf(traces, "abi.duplicate-library").empty());
}

TEST(Findings, TwoCudartCopiesAndOneSonameFromTwoPathsStillAre) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/python3", 0x1000, "");
  // Two libcudart copies, one opened by path without a soname: still one CUDA runtime too many.
  b.LoadObject(LibApi::kDlopen, "/sp/nvidia/cu13/lib/libcudart.so.13", 0x2000, "libcudart.so.13");
  b.LoadObject(LibApi::kDlopen, "/usr/local/cuda/lib64/libcudart.so.13", 0x3000, "");
  // One soname from two paths.
  b.LoadObject(LibApi::kDlopen, "/a/libbar.so.1", 0x4000, "libbar.so.1");
  b.LoadObject(LibApi::kDlopen, "/b/libbar.so.1", 0x5000, "libbar.so.1");
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.duplicate-library");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].evidence["library"].str(), "bar");
  EXPECT_EQ(f[1].evidence["library"].str(), "cudart");
  EXPECT_EQ(f[1].severity, Severity::kError);
}

// A trace with an sm_90 GPU that loaded `libs` (paths of fixtures) and, if rc != 0, had a
// kernel launch fail with rc.
ProcessTrace Sm90Trace(const std::vector<std::string>& libs, int64_t rc = 0) {
  TraceBuilder b(10);
  b.Device(9, 0);
  uint64_t base = 0x10000;
  for (const std::string& l : libs) b.Load(LibApi::kDlopen, l, base += 0x10000, "/bin/prog");
  if (rc != 0) {
    ctf::GpuLaunchFailed l;
    l.api = static_cast<uint64_t>(ctf::GpuApi::kCudaLaunchKernel);
    l.rc = rc;
    l.name = b.Str("scale(float*)");
    b.Add(l);
  }
  return b.Finish();
}

TEST(Findings, DeviceCodeOutsideRegisteredFatbinsIsNotJudgedFromThemAlone) {
  FIXTURE_OR_SKIP(sm75, "devcode/libct_sm75.so");        // one registered sm_75 cubin, nothing else
  FIXTURE_OR_SKIP(outside, "devcode/libct_outside.so");  // the same, plus sm_90 code in .ldata (cuFFT)
  FIXTURE_OR_SKIP(lto, "devcode/libct_lto.so");          // the same, plus an LTO IR entry in .ldata
  {
    // cuFFT's case: its registered sm_75 cubin does not run on sm_90, the kernels it
    // keeps in .ldata do.
    std::vector<ProcessTrace> traces;
    traces.push_back(Sm90Trace({outside}));
    auto report = BuildReport(traces, {});
    for (const Finding& f : report->findings()) EXPECT_NE(f.id, "abi.no-kernel-image") << f.summary;
    EXPECT_TRUE(report->root()["libraries_files"]["skipped_checks"].array().empty());
  }
  {
    // Only the library whose whole device code is known and misses sm_90 is an error; the
    // one whose other code is of a kind this check cannot judge is listed as not judged.
    std::vector<ProcessTrace> traces;
    traces.push_back(Sm90Trace({outside, lto, sm75}));
    auto report = BuildReport(traces, {});
    std::vector<Finding> f;
    for (const Finding& x : report->findings()) {
      if (x.id == "abi.no-kernel-image") f.push_back(x);
    }
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].summary, "no kernel image for sm_90 in libct_sm75.so: no cubin runs on it and no PTX can be "
                            "JIT-compiled for it");
    ASSERT_EQ(f[0].evidence["covered_libraries"].array().size(), 1u);
    EXPECT_EQ(f[0].evidence["covered_libraries"].array()[0]["path"].str(), outside);
    EXPECT_EQ(f[0].evidence["covered_libraries"].array()[0]["via"].str(),
              "exact cubin sm_90 in 2 fatbin containers (2 in .ldata) outside its registered fatbins");
    ASSERT_EQ(f[0].evidence["not_judged"].array().size(), 1u);
    EXPECT_EQ(f[0].evidence["not_judged"].array()[0]["path"].str(), lto);
    EXPECT_EQ(f[0].evidence["not_judged"].array()[0]["why"].str(),
              "it carries 1 fatbin container (1 in .ldata) outside its registered fatbins, which it may load "
              "itself; nothing there runs on sm_90, but 1 of their entries are of a kind this check cannot judge "
              "(not cubin or PTX)");
    const auto& skipped = report->root()["libraries_files"]["skipped_checks"];
    ASSERT_EQ(skipped.array().size(), 1u);
    EXPECT_EQ(skipped.array()[0]["check"].str(), "abi.no-kernel-image");
    EXPECT_EQ(skipped.array()[0]["why"].str(), "device code outside its registered fatbins that this check cannot judge");
    EXPECT_EQ(skipped.array()[0]["count"].as_int(), 1);
  }
  {
    // On an sm_80 GPU nothing of libct_outside.so runs, registered or not: its whole
    // device code is known, so it is reported with both.
    std::vector<ProcessTrace> traces;
    traces.push_back(Sm90Trace({outside}));
    ReportOptions options;
    options.gpu_arch = "sm_80";
    const auto f = FindingsOf(traces, "abi.no-kernel-image", options);
    ASSERT_EQ(f.size(), 1u);
    const auto& lib = f[0].evidence["libraries"].array()[0];
    EXPECT_EQ(lib["path"].str(), outside);
    std::vector<std::string> archs;
    for (const auto& a : lib["device_code"].array()) archs.push_back(a.str());
    EXPECT_EQ(archs, (std::vector<std::string>{"compute_90", "sm_75", "sm_90"}));
    EXPECT_EQ(lib["outside_registered_fatbins"].str(),
              "2 fatbin containers (2 in .ldata) outside its registered fatbins: none of it runs either");
  }
  {
    // A launch that failed for want of an image is certain, whatever the files say.
    std::vector<ProcessTrace> traces;
    traces.push_back(Sm90Trace({lto}, 209));
    const auto f = FindingsOf(traces, "abi.no-kernel-image");
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].summary, "a kernel had no image for this GPU (CUDA error 209)");
    EXPECT_EQ(f[0].evidence["errors"].array()[0]["kernel"].str(), "scale(float*)");
    EXPECT_EQ(f[0].evidence["not_judged"].array()[0]["path"].str(), lto);
  }
}

TEST(LibraryFiles, SysrootFirstAndOnlyByBuildId) {
  FIXTURE_OR_SKIP(sm75, "devcode/libct_sm75.so");
  const std::string build_id = BuildIdOf(sm75);
  ASSERT_FALSE(build_id.empty());
  char tmpl[] = "/tmp/abi_sysroot_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string recorded = "/opt/recorded/lib/libct_sm75.so";  // where the other machine had it
  ASSERT_EQ(std::system(("mkdir -p " + root + "/opt/recorded/lib && ln -s " + sm75 + " " + root + recorded).c_str()), 0);
  auto run = [&](const std::string& recorded_build_id, const std::string& sysroot) {
    TraceBuilder b(10);
    b.Host("boot_id", "another-machine-boot");  // a trace from another host
    b.Device(9, 0);
    b.LoadObject(LibApi::kDlopen, recorded, 0x2000, "libct_sm75.so", recorded_build_id);
    b.LoadObject(LibApi::kDlopen, "/opt/recorded/lib/libct_gone.so", 0x3000, "libct_gone.so", "abcd");
    std::vector<ProcessTrace> traces;
    traces.push_back(b.Finish());
    ReportOptions options;
    options.sysroot = sysroot;
    return BuildReport(traces, options);
  };
  {
    auto report = run(build_id, root + "/");
    const auto& files = report->root()["libraries_files"];
    EXPECT_EQ(files["sysroot"].str(), root);
    EXPECT_EQ(files["recorded"].as_int(), 2);
    EXPECT_EQ(files["readable"].as_int(), 1);
    EXPECT_EQ(files["matched_by_build_id"].as_int(), 1);
    EXPECT_EQ(files["from_sysroot"].as_int(), 1);
    EXPECT_EQ(files["unreadable_sample"].array()[0].str(), "/opt/recorded/lib/libct_gone.so");
    size_t nki = 0;
    for (const Finding& f : report->findings()) nki += f.id == "abi.no-kernel-image";
    EXPECT_EQ(nki, 1u);
  }
  {
    // Another build at that path proves nothing: no file read, no finding, and the skipped
    // checks say so.
    auto report = run("00112233", root);
    const auto& files = report->root()["libraries_files"];
    EXPECT_EQ(files["readable"].as_int(), 0);
    for (const Finding& f : report->findings()) EXPECT_NE(f.id, "abi.no-kernel-image");
    bool listed = false;
    for (const auto& s : files["skipped_checks"].array()) {
      if (s["check"].str() == "abi.no-kernel-image" && s["why"].str() == "no readable file: device code not checked") {
        listed = true;
        EXPECT_EQ(s["count"].as_int(), 2);
      }
    }
    EXPECT_TRUE(listed);
  }
  {
    // Without a sysroot, nothing of another host is read.
    auto report = run(build_id, "");
    EXPECT_EQ(report->root()["libraries_files"]["readable"].as_int(), 0);
    EXPECT_TRUE(report->root()["libraries_files"]["sysroot"].is_null());
  }
  std::system(("rm -rf " + root).c_str());
}

TEST(HostOrigin, BootIdThenMachineIdThenHostname) {
  auto trace = [](std::vector<std::pair<std::string, std::string>> info) {
    TraceBuilder b(10);
    for (const auto& [k, v] : info) {
      ctf::HostInfo h;
      h.key = b.Str(k);
      h.value = b.Str(v);
      b.Add(h);
    }
    return b.Finish();
  };
  using colabtrace::analyzer::abi::HostOriginOf;
  using colabtrace::analyzer::abi::LocalHost;
  const LocalHost here{"boot-1", "machine-1", "colab"};
  EXPECT_TRUE(HostOriginOf(trace({{"boot_id", "boot-1"}, {"machine_id", "machine-1"}}), here).same_host);
  const auto rebooted = HostOriginOf(trace({{"boot_id", "boot-2"}, {"machine_id", "machine-1"}}), here);
  EXPECT_FALSE(rebooted.same_host);
  EXPECT_EQ(rebooted.why, "boot_id");
  EXPECT_EQ(HostOriginOf(trace({{"machine_id", "machine-2"}}), here).why, "machine_id");
  EXPECT_EQ(HostOriginOf(trace({{"hostname", "laptop"}}), here).why, "hostname");
  EXPECT_TRUE(HostOriginOf(trace({{"hostname", "colab"}}), here).same_host);
  EXPECT_TRUE(HostOriginOf(trace({}), here).same_host);  // nothing recorded: assume here
  EXPECT_EQ(rebooted.DiskChecksLabel(), "skipped: trace from another host (boot_id differs)");
}

}  // namespace
