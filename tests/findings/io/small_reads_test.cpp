// io.small-reads (info): most of at least 1,000 system-call reads on data files of 1 MiB
// or more returned 4 KiB or less. Golden traces: a 4 MiB /data/big.bin stat'ed, opened
// and read in 1,000 reads of 1 KiB; 999 such reads are not enough.
#include <gtest/gtest.h>

#include <vector>

#include "io_trace_builder.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using format::IoApi;
using iotest::Mounts;
using iotest::TraceBuilder;

constexpr uint64_t kSize = 4 << 20;

std::vector<ProcessTrace> SmallReads(int n) {
  TraceBuilder b(400);
  Mounts(b);
  const uint64_t path = b.Str("/data/big.bin");
  b.StatPath(path, kSize, 1000);
  b.Open(path, 7, 1, 1000, IoApi::kOpen);
  for (int i = 0; i < n; ++i) b.Read(7, 1024, 100);
  b.Close(7);
  return RunOf(b.Finish());
}

TEST(IoSmallReads, AThousandOneKibReadsOfAFourMibFile) {
  auto traces = SmallReads(1000);
  const auto f = FindingsOf(traces, "io.small-reads");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].pid, 0);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["small_reads"].as_int(), 1000);
  EXPECT_EQ(ev["reads_on_large_files"].as_int(), 1000);
  EXPECT_DOUBLE_EQ(ev["share"].number(), 1.0);
  const auto& files = ev["files"].array();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0]["path"].str(), "/data/big.bin");
  EXPECT_EQ(files[0]["size"].as_int(), static_cast<int64_t>(kSize));
  EXPECT_EQ(files[0]["reads"].as_int(), 1000);
  EXPECT_EQ(files[0]["mean_read_bytes"].as_int(), 1024);
  EXPECT_EQ(f[0].summary, "100% of 1000 reads on files of 1 MiB or more returned 4 KiB or less, e.g. /data/big.bin");
}

TEST(IoSmallReads, NineHundredNinetyNineReadsAreNone) {
  auto traces = SmallReads(999);
  EXPECT_TRUE(FindingsOf(traces, "io.small-reads").empty());
}

}  // namespace
}  // namespace colabtrace::testing
