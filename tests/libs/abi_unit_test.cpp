// Unit and golden tests of analyzer/abi: dlerror parsing, names, ld.so.cache parsing,
// RUNPATH expansion, the inventory rebuilt from records, and the findings computed from
// small traces built inline (files that do not exist, so only trace facts count).
#include <dlfcn.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "../harness/trace_builder.h"
#include "abi/dlerror_text.h"
#include "abi/library_inventory.h"
#include "abi/library_model.h"
#include "abi/library_search.h"
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

// ---- traces built inline --------------------------------------------------------------------

class TraceBuilder {
 public:
  explicit TraceBuilder(uint32_t pid) : b_(pid, 1000) {}
  void Tick() { now_ += 1000; }
  uint64_t Str(const std::string& s) { return s.empty() ? 0 : b_.AppendString(s, now_); }
  template <class R> void Add(R r) {
    r.ts = now_;
    b_.Append(r);
  }
  // An object record (fresh) or a call record.
  void Load(ctf::LibApi api, const std::string& path, uint64_t base, const std::string& requester,
            uint64_t fresh = 1, int64_t flags = 0, uint64_t ino = 0, bool ok = true,
            const std::string& error = "", const std::string& requested = "") {
    ctf::LibLoad r;
    r.api = static_cast<uint64_t>(api);
    r.path = Str(path);
    r.soname = Str(path.substr(path.rfind('/') + 1));
    r.requester = Str(requester);
    r.requested = Str(requested.empty() ? path : requested);
    r.error = Str(error);
    r.base = base;
    r.fresh = fresh;
    r.flags = flags;
    r.ok = ok ? 1 : 0;
    r.ino = ino;
    r.dev = ino != 0 ? 7 : 0;
    r.size = ino != 0 ? 100 : 0;
    Add(r);
    Tick();
  }
  void Unmap(uint64_t base) {
    ctf::LibUnload u;
    u.base = base;
    u.api = static_cast<uint64_t>(ctf::LibUnloadApi::kUnmapped);
    Add(u);
    Tick();
  }
  ProcessTrace Finish() { return b_.Parse(); }

 private:
  ::colabtrace::testing::TraceBytesBuilder b_;
  uint64_t now_ = 1000;
};

using ctf::LibApi;

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

std::vector<Finding> FindingsOf(std::vector<ProcessTrace>& traces, const char* id,
                                ReportOptions options = {}) {
  auto report = BuildReport(traces, options);
  std::vector<Finding> out;
  for (const Finding& f : report->findings()) {
    if (f.id == id) out.push_back(f);
  }
  return out;
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

TEST(Findings, LoadFailedIsAWarningWhenAFallbackLoaded) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "libcudart.so.12", 0, "/bin/prog", 0, RTLD_NOW, 0, false,
         "libcudart.so.12: cannot open shared object file: No such file or directory");
  b.Load(LibApi::kDlopen, "/x/libcudart.so.13", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Load(LibApi::kDlopen, "libnope.so", 0, "/bin/prog", 0, RTLD_NOW | RTLD_NOLOAD, 0, false, "");
  std::vector<ProcessTrace> traces;
  traces.push_back(b.Finish());
  const auto f = FindingsOf(traces, "abi.load-failed");
  ASSERT_EQ(f.size(), 1u);  // the RTLD_NOLOAD probe is not a failure
  EXPECT_EQ(f[0].severity, colabtrace::analyzer::Severity::kWarning);
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
