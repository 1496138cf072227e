// abi.stale-library (warning): a loaded file changed on disk while the process ran.
// Golden traces: /opt/app/lib/libfoo.so.1 loaded as inode 42 (dev 7, 100 bytes); the
// shim's re-check at exit finds inode 43 of 4096 bytes at that path (replaced, as `pip
// install` into a running notebook does). A re-check that finds the file removed
// (ENOENT) is no mix of versions: no finding.
#include <gtest/gtest.h>

#include <cerrno>
#include <vector>

#include "abi_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using abitest::TraceBuilder;
using analyzer::ProcessTrace;
using analyzer::Severity;
using format::LibApi;

constexpr char kLib[] = "/opt/app/lib/libfoo.so.1";

std::vector<ProcessTrace> Rechecked(int64_t err) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
  b.Load(LibApi::kDlopen, kLib, 0x6000, "/bin/prog", 1, RTLD_NOW, 42);
  format::LibCheck c;
  c.base = 0x6000;
  c.path = b.Str(kLib);
  c.dev = 7;
  c.ino = err == 0 ? 43 : 0;
  c.size = err == 0 ? 4096 : 0;
  c.mtime_ns = err == 0 ? 1'700'000'000'000'000'000ull : 0;
  c.err = err;
  c.when = static_cast<uint64_t>(format::LibCheckWhen::kExit);
  b.Add(c);
  b.Exit(0);
  return RunOf(b.Finish());
}

TEST(AbiStaleLibrary, ReplacedOnDiskWhileLoaded) {
  auto traces = Rechecked(0);
  const auto f = FindingsOf(traces, "abi.stale-library");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 10);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["path"].str(), kLib);
  EXPECT_TRUE(ev["loaded_build_id"].is_null());
  EXPECT_EQ(ev["loaded_file"]["dev"].as_int(), 7);
  EXPECT_EQ(ev["loaded_file"]["inode"].as_int(), 42);
  EXPECT_EQ(ev["loaded_file"]["size"].as_int(), 100);
  EXPECT_EQ(ev["loaded_file"]["mtime_ns"].as_int(), 0);
  const auto& changes = ev["changes"].array();
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0]["seen_at"].str(), "exit");
  EXPECT_EQ(changes[0]["inode"].as_int(), 43);
  EXPECT_EQ(changes[0]["size"].as_int(), 4096);
  EXPECT_EQ(changes[0]["mtime_ns"].as_int(), 1'700'000'000'000'000'000ll);
  EXPECT_EQ(changes[0]["at_ns_after_start"].as_int(), 2000);  // the third record, 1 us apart
  EXPECT_TRUE(ev["on_disk_now"].is_null());  // nothing at that path on this machine
  EXPECT_EQ(f[0].summary, std::string(kLib) + " was replaced on disk while the process had it loaded");
}

TEST(AbiStaleLibrary, RemovedIsNotReplaced) {
  auto traces = Rechecked(-ENOENT);
  EXPECT_TRUE(FindingsOf(traces, "abi.stale-library").empty());
}

}  // namespace
}  // namespace colabtrace::testing
