// io.metadata-heavy (info): at least 2,000 path-based metadata calls, 5 or more per data
// read. Golden traces: 2,000 stats (500 ns each) of 200 files in /data/imgs with no data
// read at all (os.path.exists checks in a loop); 1,999 stats are not enough.
#include <gtest/gtest.h>

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

std::vector<ProcessTrace> Stats(int n) {
  TraceBuilder b(500);
  Mounts(b);
  for (int i = 0; i < n; ++i) {
    b.StatPath(b.Str("/data/imgs/x" + std::to_string(i % 200) + ".png"), 100, 500);
  }
  return RunOf(b.Finish());
}

TEST(IoMetadataHeavy, TwoThousandStatsAndNoRead) {
  auto traces = Stats(2000);
  const auto f = FindingsOf(traces, "io.metadata-heavy");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].pid, 0);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["metadata_calls"].as_int(), 2000);
  EXPECT_EQ(ev["path_stats"].as_int(), 2000);
  EXPECT_EQ(ev["open_attempts"].as_int(), 0);
  EXPECT_EQ(ev["directory_scans"].as_int(), 0);
  EXPECT_EQ(ev["data_reads"].as_int(), 0);
  EXPECT_EQ(ev["metadata_ns"].as_int(), 2000 * 500);
  ASSERT_EQ(ev["directories"].array().size(), 1u);
  EXPECT_EQ(ev["directories"].array()[0]["path"].str(), "/data/imgs");
  EXPECT_EQ(ev["directories"].array()[0]["metadata_calls"].as_int(), 2000);
  EXPECT_EQ(f[0].summary, "2000 metadata calls (stats, opens, directory scans) against 0 data reads; most in /data/imgs");
}

TEST(IoMetadataHeavy, NineteenNinetyNineStatsAreNone) {
  auto traces = Stats(1999);
  EXPECT_TRUE(FindingsOf(traces, "io.metadata-heavy").empty());
}

}  // namespace
}  // namespace colabtrace::testing
