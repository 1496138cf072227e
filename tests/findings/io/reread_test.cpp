// io.reread (info): on slow storage, at least 20 files read through two or more separate
// opens, or 64 MiB read more than once. Golden traces: 20 files of 64 KiB on NFS, each
// read whole in two epochs; 19 files (1.2 MiB read again) are not enough.
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

std::vector<ProcessTrace> TwoEpochs(int files) {
  TraceBuilder b(100);
  Mounts(b);
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int i = 0; i < files; ++i) {
      b.ReadWholeFile("/mnt/nfs/train/f" + std::to_string(i) + ".npy", 2, 5, 65536, 2'000'000, 1'000'000);
    }
  }
  return RunOf(b.Finish());
}

TEST(IoReread, TwentyFilesReadAgainInASecondEpoch) {
  auto traces = TwoEpochs(20);
  const auto f = FindingsOf(traces, "io.reread");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kInfo);
  EXPECT_EQ(f[0].pid, 0);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["files_read_more_than_once"].as_int(), 20);
  EXPECT_EQ(ev["reread_bytes"].as_int(), 20 * 65536);
  const auto& ex = ev["examples"].array();
  ASSERT_EQ(ex.size(), 10u);  // the first ten
  EXPECT_EQ(ex[0]["path"].str(), "/mnt/nfs/train/f0.npy");
  EXPECT_EQ(ex[0]["passes"].as_int(), 2);
  EXPECT_EQ(ex[0]["fs_type"].str(), "nfs4");
  EXPECT_EQ(f[0].summary, "20 files on slow storage were read again in later passes (1.2 MiB read more than once)");
}

TEST(IoReread, NineteenFilesAreNone) {
  auto traces = TwoEpochs(19);
  EXPECT_TRUE(FindingsOf(traces, "io.reread").empty());
}

}  // namespace
}  // namespace colabtrace::testing
