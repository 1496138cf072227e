// io.network-filesystem (warning): slow mounts took at least half of the data files' I/O
// time, with at least 10 files (or 16 MiB) read there. Golden traces: ten 64 KiB files
// on the NFS mount /mnt/nfs, each opened in 2 ms and read in 1 ms, and one local file;
// nine NFS files (under 16 MiB) are not enough.
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

// Per NFS file: a 1 us stat, a 2 ms open, a 100 ns fstat, a 1 ms read and a 100 ns read.
constexpr int64_t kNfsFileNs = 1000 + 2'000'000 + 100 + 1'000'000 + 100;
// The local file: the same with a 10 us open and a 5 us read.
constexpr int64_t kLocalFileNs = 1000 + 10000 + 100 + 5000 + 100;

std::vector<ProcessTrace> NfsFiles(int n) {
  TraceBuilder b(100);
  Mounts(b);
  for (int i = 0; i < n; ++i) {
    b.ReadWholeFile("/mnt/nfs/train/f" + std::to_string(i) + ".npy", 2, 5, 65536, 2'000'000, 1'000'000);
  }
  b.ReadWholeFile("/home/u/labels.csv", 1, 6, 5000, 10000, 5000);
  return RunOf(b.Finish());
}

TEST(IoNetworkFilesystem, TenFilesOnNfsTakeMostOfTheIoTime) {
  auto traces = NfsFiles(10);
  const auto f = FindingsOf(traces, "io.network-filesystem");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 0);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["slow_io_ns"].as_int(), 10 * kNfsFileNs);
  EXPECT_EQ(ev["total_io_ns"].as_int(), 10 * kNfsFileNs + kLocalFileNs);
  EXPECT_DOUBLE_EQ(ev["share"].number(),
                   static_cast<double>(10 * kNfsFileNs) / static_cast<double>(10 * kNfsFileNs + kLocalFileNs));
  EXPECT_EQ(ev["files_read"].as_int(), 10);
  EXPECT_EQ(ev["bytes_read"].as_int(), 10 * 65536);
  const auto& mounts = ev["mounts"].array();
  ASSERT_EQ(mounts.size(), 1u);
  EXPECT_EQ(mounts[0]["mountpoint"].str(), "/mnt/nfs");
  EXPECT_EQ(mounts[0]["fs_type"].str(), "nfs4");
  EXPECT_EQ(mounts[0]["files_read"].as_int(), 10);
  EXPECT_EQ(mounts[0]["bytes_read"].as_int(), 10 * 65536);
  EXPECT_EQ(mounts[0]["io_ns"].as_int(), 10 * kNfsFileNs);
  EXPECT_EQ(mounts[0]["reads"].as_int(), 20);  // each file's read and its end-of-file read
  EXPECT_NE(f[0].advice.find("Stage the dataset on local disk"), std::string::npos);
}

TEST(IoNetworkFilesystem, NineSmallFilesAreNone) {
  auto traces = NfsFiles(9);
  EXPECT_TRUE(FindingsOf(traces, "io.network-filesystem").empty());
}

}  // namespace
}  // namespace colabtrace::testing
