// io.small-files (warning): at least 1,000 small data files read, half or more of those
// read. Golden traces: 1,000 JPEGs of 4 KiB in /data/imgs on local ext4, each stat'ed,
// opened (10 us), read whole (5 us) and closed; 999 of them are not enough.
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

std::vector<ProcessTrace> Files(int n) {
  TraceBuilder b(100);
  Mounts(b);
  for (int i = 0; i < n; ++i) b.ReadWholeFile("/data/imgs/img" + std::to_string(i) + ".jpg", 1, 5, 4096, 10000, 5000);
  return RunOf(b.Finish());
}

TEST(IoSmallFiles, AThousandFourKibFiles) {
  auto traces = Files(1000);
  const auto f = FindingsOf(traces, "io.small-files");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 0);  // the run's, not one process's
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["count"].as_int(), 1000);
  EXPECT_EQ(ev["data_files_read"].as_int(), 1000);
  EXPECT_EQ(ev["median_size"].as_int(), 4096);
  EXPECT_EQ(ev["bytes_read"].as_int(), 4096000);
  // Per file: a 1 us stat, a 10 us open, a 100 ns fstat, a 5 us read and a 100 ns read.
  EXPECT_EQ(ev["io_ns"].as_int(), 1000 * (1000 + 10000 + 100 + 5000 + 100));
  EXPECT_EQ(ev["threshold_bytes"].as_int(), 1 << 20);
  ASSERT_EQ(ev["directories"].array().size(), 1u);
  EXPECT_EQ(ev["directories"].array()[0]["path"].str(), "/data/imgs");
  EXPECT_EQ(ev["directories"].array()[0]["files"].as_int(), 1000);
  EXPECT_EQ(ev["directory_count"].as_int(), 1);
  EXPECT_EQ(f[0].summary, "1000 small files read (median 4.0 KiB, 3.9 MiB in all) from 1 directory, e.g. /data/imgs");
}

TEST(IoSmallFiles, NineHundredNinetyNineAreNone) {
  auto traces = Files(999);
  EXPECT_TRUE(FindingsOf(traces, "io.small-files").empty());
}

}  // namespace
}  // namespace colabtrace::testing
