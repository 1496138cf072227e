// Crafted traces the issue-9 audit found (tens of thousands of copies of one library, a
// long RTLD_DEEPBIND chain, thousands of CUDA majors as JSON keys, thousands of mounts,
// INT64_MIN errno fields, invalid UTF-8 and control characters, thousands of failed
// loads): each must give a valid report quickly (the old code was O(n^2)-O(n^3) or UB on
// them). With COLABTRACE_WRITE_FUZZ_CORPUS=DIR the traces are also written to DIR as
// fuzz seeds; tests/core/fuzz/corpus/shape-* came from there.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <functional>

#include "../../harness/trace_builder.h"
#include "render/render.h"
#include "report/report.h"

namespace {

using colabtrace::analyzer::BuildReport;
using colabtrace::analyzer::Json;
using colabtrace::analyzer::ProcessTrace;
using colabtrace::testing::TraceBytesBuilder;
namespace ctf = colabtrace::format;

// The builder plus the shape's name; Check() reports it and saves the seed.
struct Shape {
  std::string name;
  TraceBytesBuilder b{4242, 1000};
  uint64_t now = 1000;
  uint64_t Str(const std::string& s) { return b.AppendString(s, now); }
  template <class R> void Add(R r) {
    r.ts = ++now;
    b.Append(r);
  }
  void Load(ctf::LibApi api, const std::string& path, uint64_t base, const std::string& requester,
            int64_t flags = RTLD_NOW, uint64_t ino = 0, bool ok = true, const std::string& error = "") {
    ctf::LibLoad r;
    r.api = static_cast<uint64_t>(api);
    r.path = ok ? Str(path) : 0;
    r.requested = Str(path);
    r.soname = ok ? Str(path.substr(path.rfind('/') + 1)) : 0;
    r.requester = Str(requester);
    r.error = error.empty() ? 0 : Str(error);
    r.base = base;
    r.fresh = ok ? 1 : 0;
    r.flags = flags;
    r.ok = ok ? 1 : 0;
    r.ino = ino;
    r.dev = ino != 0 ? 7 : 0;
    r.size = ino != 0 ? 100 : 0;
    Add(r);
  }
};

// Builds the report (every analysis, every renderer) and saves the seed.
void Check(Shape& s, double max_seconds = 10.0) {
  const std::vector<uint8_t>& bytes = s.b.bytes();
  if (const char* dir = std::getenv("COLABTRACE_WRITE_FUZZ_CORPUS")) {
    std::ofstream(std::string(dir) + "/shape-" + s.name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<ProcessTrace> traces;
  traces.push_back(s.b.Parse());
  auto report = BuildReport(traces, {});
  const std::string json = colabtrace::analyzer::RenderJson(*report);
  (void)colabtrace::analyzer::RenderText(*report, /*color=*/true);
  const std::string text = colabtrace::analyzer::RenderText(*report, /*color=*/false);
  (void)colabtrace::analyzer::RenderHtml(*report);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, max_seconds) << s.name;
  std::string err;
  EXPECT_TRUE(Json::Parse(json, &err).has_value()) << s.name << ": " << err;
  for (char c : text) EXPECT_FALSE(c == '\x1b' || c == '\r') << s.name;
}

TEST(CraftedShapes, TwentyThousandCopiesOfOneLibrary) {
  Shape s{"dup-stem"};
  s.Load(ctf::LibApi::kStartup, "/bin/prog", 0x1000, "");
  for (uint64_t i = 0; i < 20000; ++i) {
    s.Load(ctf::LibApi::kDlopen, "/d" + std::to_string(i) + "/libfoo.so.1", 0x10000 + i * 0x1000, "/bin/prog",
           RTLD_NOW, i + 1);
  }
  Check(s);
}

TEST(CraftedShapes, LongDeepbindChainWrittenBackwards) {
  Shape s{"deepbind-chain"};
  for (int i = 5000; i >= 1; --i) {  // dependencies first, as the shim writes them
    s.Load(ctf::LibApi::kDependency, "/x/lib" + std::to_string(i) + ".so", 0x10000 + i * 0x1000,
           "/x/lib" + std::to_string(i - 1) + ".so");
  }
  s.Load(ctf::LibApi::kDlopen, "/x/lib0.so", 0x8000, "/bin/prog", RTLD_NOW | RTLD_DEEPBIND);
  Check(s);
}

TEST(CraftedShapes, ThousandsOfCudaMajorsAsJsonKeys) {
  Shape s{"cuda-majors"};
  for (int i = 1; i <= 5000; ++i) {
    s.Load(ctf::LibApi::kDlopen, "/gone/libcudart.so." + std::to_string(i), 0x10000 + i * 0x1000ull, "/bin/prog",
           RTLD_NOW, static_cast<uint64_t>(i));
  }
  Check(s);
}

TEST(CraftedShapes, ThousandsOfMountsAndFiles) {
  Shape s{"mounts"};
  for (uint64_t i = 0; i < 5000; ++i) {
    ctf::Mount m;
    m.id = i + 1;
    m.fstype = s.Str(i % 2 ? "nfs4" : "fuse.drive");
    m.mountpoint = s.Str("/m/" + std::to_string(i));
    m.source = s.Str("server:/e" + std::to_string(i));
    s.Add(m);
  }
  for (int64_t i = 0; i < 5000; ++i) {
    ctf::IoOpen o;
    o.fd = 100 + i;
    o.path = s.Str("/m/" + std::to_string(i) + "/a/b/file.bin");
    o.size = 4096;
    o.ftype = 8;
    s.Add(o);
    ctf::IoRead r;
    r.fd = 100 + i;
    r.result = 4096;
    r.dur = 1000;
    s.Add(r);
  }
  Check(s);
}

TEST(CraftedShapes, Int64MinErrnoFields) {
  Shape s{"int64-min"};
  s.Load(ctf::LibApi::kDlopen, "/x/libz.so", 0x2000, "/bin/prog", RTLD_NOW, 5);
  ctf::LibCheck c;
  c.base = 0x2000;
  c.path = s.Str("/x/libz.so");
  c.err = INT64_MIN;
  s.Add(c);
  ctf::IoOpen o;
  o.fd = INT64_MIN;
  o.path = s.Str("/data/x");
  s.Add(o);
  ctf::IoOpen ok;
  ok.fd = 7;
  ok.path = s.Str("/data/y");
  s.Add(ok);
  for (int64_t v : {INT64_MIN, INT64_MIN + 1, int64_t{-4096}, int64_t{-1}}) {
    ctf::IoRead r;
    r.fd = 7;
    r.result = v;
    s.Add(r);
    ctf::IoWrite w;
    w.fd = 7;
    w.result = v;
    s.Add(w);
  }
  Check(s);
}

TEST(CraftedShapes, InvalidUtf8AndControlCharacters) {
  Shape s{"bad-strings"};
  const std::string bad[] = {"\xff\xfe", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "\x1b[2J\r\n\x07",
                             std::string("nul\0inside", 10), "\xc2\x9b" "6n", "\xe2\x82"};
  ctf::ProcessStart ps;
  s.Add(ps);
  for (uint64_t i = 0; i < std::size(bad); ++i) {
    ctf::Argv a;
    a.index = i;
    a.value = s.Str(bad[i]);
    s.Add(a);
    s.Load(ctf::LibApi::kDlopen, "/x/" + bad[i] + ".so", 0x2000 + i * 0x1000, bad[i], RTLD_NOW, i + 1);
    s.Load(ctf::LibApi::kDlopen, bad[i], 0, bad[i], RTLD_NOW, 0, false, bad[i] + ": cannot open shared object file");
  }
  Check(s);
}

TEST(CraftedShapes, ThousandsOfFailedLoads) {
  Shape s{"failed-loads"};
  for (int i = 0; i < 3000; ++i) {
    const std::string name = "libnope" + std::to_string(i) + ".so.1";
    s.Load(ctf::LibApi::kDlopen, name, 0, "/bin/prog", RTLD_NOW, 0, false,
           name + ": cannot open shared object file: No such file or directory");
  }
  Check(s, 20.0);  // each distinct name is one bounded directory search
}

}  // namespace
