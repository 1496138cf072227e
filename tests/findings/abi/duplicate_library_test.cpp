// abi.duplicate-library (error): one library loaded from two files at once. Golden
// traces: /a/libfoo.so.1 and /b/libfoo.so.1 (different inodes) both mapped; when the
// first is unmapped before the second is loaded the copies never overlap: no finding.
#include <gtest/gtest.h>

#include <vector>

#include "abi_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using abitest::TraceBuilder;
using analyzer::ProcessTrace;
using analyzer::Severity;
using format::LibApi;

std::vector<ProcessTrace> TwoCopies(bool first_unmapped) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
  b.Load(LibApi::kDlopen, "/a/libfoo.so.1", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  if (first_unmapped) b.Unmap(0x2000);
  b.Load(LibApi::kDlopen, "/b/libfoo.so.1", 0x3000, "/bin/prog", 1, RTLD_NOW, 2);
  return RunOf(b.Finish());
}

TEST(AbiDuplicateLibrary, OneSonameFromTwoFilesAtOnce) {
  auto traces = TwoCopies(false);
  const auto f = FindingsOf(traces, "abi.duplicate-library");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 10);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["family"].str(), "foo");
  EXPECT_EQ(ev["library"].str(), "foo");
  EXPECT_EQ(ev["namespace"].as_int(), 0);
  const auto& copies = ev["copies"].array();
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0]["path"].str(), "/a/libfoo.so.1");
  EXPECT_EQ(copies[1]["path"].str(), "/b/libfoo.so.1");
  ASSERT_EQ(ev["pids"].array().size(), 1u);
  EXPECT_EQ(ev["pids"].array()[0].as_int(), 10);
  EXPECT_EQ(f[0].summary, "libfoo is loaded from 2 files: /a/libfoo.so.1 (by prog) and /b/libfoo.so.1 (by prog)");
}

TEST(AbiDuplicateLibrary, CopiesThatNeverOverlapAreNone) {
  auto traces = TwoCopies(true);
  EXPECT_TRUE(FindingsOf(traces, "abi.duplicate-library").empty());
}

}  // namespace
}  // namespace colabtrace::testing
