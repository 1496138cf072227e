// io.errors (warning): failed reads or writes, opens failing with a storage error, or at
// least 10 failed opens of data files that never existed. Golden traces: a read of an
// NFS file failing with EIO (one is enough); opens of 10 missing PNGs in /data/imgs
// failing with ENOENT, where 9 are programs probing for optional files.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <vector>

#include "io_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using iotest::Mounts;
using iotest::TraceBuilder;

TEST(IoErrors, AReadFailingWithEioOnNfs) {
  TraceBuilder b(600);
  Mounts(b);
  b.Open(b.Str("/mnt/nfs/train/shard0.tar"), 9, 2, 1000);
  b.Read(9, -EIO, 1000);
  auto traces = RunOf(b.Finish());
  const auto f = FindingsOf(traces, "io.errors");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 0);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["by_errno"]["EIO"].as_int(), 1);
  EXPECT_EQ(ev["storage_errors"].as_int(), 1);
  EXPECT_EQ(ev["lookup_errors"].as_int(), 0);
  EXPECT_EQ(ev["limit_errors"].as_int(), 0);
  EXPECT_EQ(ev["space_errors"].as_int(), 0);
  const auto& paths = ev["paths"].array();
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0]["path"].str(), "/mnt/nfs/train/shard0.tar");
  EXPECT_EQ(paths[0]["open_errors"].as_int(), 0);
  EXPECT_EQ(paths[0]["read_errors"].as_int(), 1);
  EXPECT_EQ(paths[0]["write_errors"].as_int(), 0);
  EXPECT_EQ(f[0].summary, "file operations failed: 1 EIO; e.g. /mnt/nfs/train/shard0.tar");
  EXPECT_NE(f[0].advice.find("storage errors"), std::string::npos);
}

std::vector<ProcessTrace> MissingOpens(int n) {
  TraceBuilder b(601);
  Mounts(b);
  for (int i = 0; i < n; ++i) b.Open(b.Str("/data/imgs/missing" + std::to_string(i) + ".png"), -ENOENT, 0, 0);
  return RunOf(b.Finish());
}

TEST(IoErrors, TenMissingDataFiles) {
  auto traces = MissingOpens(10);
  const auto f = FindingsOf(traces, "io.errors");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["by_errno"]["ENOENT"].as_int(), 10);
  EXPECT_EQ(ev["storage_errors"].as_int(), 0);
  EXPECT_EQ(ev["lookup_errors"].as_int(), 10);
  ASSERT_EQ(ev["paths"].array().size(), 10u);
  EXPECT_EQ(ev["paths"].array()[0]["open_errors"].as_int(), 1);
  EXPECT_NE(f[0].advice.find("Many opens failed on data paths"), std::string::npos);
}

TEST(IoErrors, NineMissingFilesAreProbes) {
  auto traces = MissingOpens(9);
  EXPECT_TRUE(FindingsOf(traces, "io.errors").empty());
}

}  // namespace
}  // namespace colabtrace::testing
