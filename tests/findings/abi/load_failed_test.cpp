// abi.load-failed (error, or info when the program handled it): a library load failed.
// Golden traces: /bin/prog dlopen()s libmissing.so.8, which is nowhere, and then exits
// with 1; the same failure in a process that ended normally after loading another
// version (libmissing.so.9) is info; a failed RTLD_NOLOAD probe is no load at all.
#include <gtest/gtest.h>

#include <vector>

#include "abi_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using abitest::TraceBuilder;
using analyzer::Severity;
using format::LibApi;

constexpr char kMissing[] = "libmissing.so.8: cannot open shared object file: No such file or directory";

TEST(AbiLoadFailed, AMissingLibraryThenTheProcessFailed) {
  TraceBuilder b(10);
  b.Load(LibApi::kStartup, "/bin/prog", 0x1000, "");
  b.Load(LibApi::kDlopen, "libmissing.so.8", 0, "/bin/prog", 0, RTLD_NOW, 0, false, kMissing);
  b.Exit(1);
  auto traces = RunOf(b.Finish());
  const auto f = FindingsOf(traces, "abi.load-failed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].pid, 10);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["requested"].str(), "libmissing.so.8");
  EXPECT_EQ(ev["requester"].str(), "/bin/prog");
  EXPECT_EQ(ev["error"].str(), kMissing);
  EXPECT_EQ(ev["api"].str(), "dlopen");
  EXPECT_EQ(ev["flags"].str(), "RTLD_NOW");
  EXPECT_EQ(ev["count"].as_int(), 1);
  EXPECT_EQ(ev["severity_reason"].str(), "the process failed after this load failed");
  EXPECT_TRUE(ev["loaded_later"].is_null());
  EXPECT_TRUE(ev["copies_found"].array().empty());  // no libmissing.so.8 on any search path
}

TEST(AbiLoadFailed, AnotherVersionLoadedInsteadIsInfo) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "libmissing.so.8", 0, "/bin/prog", 0, RTLD_NOW, 0, false, kMissing);
  b.Load(LibApi::kDlopen, "/x/libmissing.so.9", 0x2000, "/bin/prog", 1, RTLD_NOW, 1);
  b.Exit(0);
  auto traces = RunOf(b.Finish());
  const auto f = FindingsOf(traces, "abi.load-failed");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].evidence["severity_reason"].str(),
            "another version of the library (libmissing.so.9) was loaded instead and the process went on");
  EXPECT_EQ(f[0].evidence["loaded_later"].str(), "/x/libmissing.so.9");
}

TEST(AbiLoadFailed, AFailedNoloadProbeIsNone) {
  TraceBuilder b(10);
  b.Load(LibApi::kDlopen, "libmissing.so.8", 0, "/bin/prog", 0, RTLD_NOW | RTLD_NOLOAD, 0, false, "");
  b.Exit(1);
  auto traces = RunOf(b.Finish());
  EXPECT_TRUE(FindingsOf(traces, "abi.load-failed").empty());
}

}  // namespace
}  // namespace colabtrace::testing
