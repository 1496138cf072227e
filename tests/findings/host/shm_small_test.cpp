// host.shm-small (warning): /dev/shm too small for the processes that use it, or writes
// there failed. Golden traces: two DataLoader workers on a host whose /dev/shm is 64 MiB
// each write 16 MiB through it (half its size: too small); 16 MiB less one byte is not;
// a write failing with ENOSPC is, whatever the sizes.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <string>
#include <vector>

#include "host_traces.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using hosttest::HostIdentity;
using hosttest::kStart;

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;

// A worker on host "a" (/dev/shm of 64 MiB) that opens a /dev/shm file and writes to it:
// `result` is what the write returned (bytes, or -errno).
ProcessTrace Worker(uint32_t pid, int64_t result) {
  TraceBytesBuilder b(pid, kStart);
  format::ProcessStart ps;
  ps.ts = kStart;
  ps.pid = pid;
  ps.ppid = 1;
  ps.exe = b.AppendString("/usr/bin/python3", kStart);
  b.Append(ps);
  HostIdentity(b, "a", 16 * kGiB);
  format::HostNum shm;
  shm.ts = kStart;
  shm.key = b.AppendString("shm_size", kStart);
  shm.value = 64 * kMiB;
  b.Append(shm);
  format::IoOpen o;
  o.ts = kStart + 1000;
  o.api = static_cast<uint64_t>(format::IoApi::kOpen64);
  o.fd = 40;
  o.path = b.AppendString("/dev/shm/torch_" + std::to_string(pid) + "_1", o.ts);
  o.dur = 500;
  b.Append(o);
  format::IoWrite w;
  w.ts = kStart + 2000;
  w.api = static_cast<uint64_t>(format::IoApi::kWrite);
  w.fd = 40;
  w.result = result;
  w.dur = 1000;
  b.Append(w);
  format::Exit e;
  e.ts = kStart + 10000;
  b.Append(e);
  return b.Parse();
}

TEST(HostShmSmall, TwoWorkersPutHalfOfASmallShmThroughIt) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Worker(300, 16 * kMiB));
  traces.push_back(Worker(301, 16 * kMiB));
  const auto f = FindingsOf(traces, "host.shm-small");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 0);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["host"].str(), "a");
  EXPECT_EQ(ev["shm_size_bytes"].as_int(), static_cast<int64_t>(64 * kMiB));
  EXPECT_EQ(ev["processes_using_shm"].as_int(), 2);
  EXPECT_EQ(ev["bytes_written_or_mapped"].as_int(), static_cast<int64_t>(32 * kMiB));
  EXPECT_TRUE(ev["failures"].array().empty());
  EXPECT_EQ(f[0].summary, "/dev/shm is 64.0 MiB and 2 processes use it");
}

TEST(HostShmSmall, LessThanHalfOfItIsNone) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Worker(300, 16 * kMiB));
  traces.push_back(Worker(301, 16 * kMiB - 1));
  EXPECT_TRUE(FindingsOf(traces, "host.shm-small").empty());
}

TEST(HostShmSmall, AFailedWriteIsEnoughAlone) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Worker(300, -ENOSPC));
  const auto f = FindingsOf(traces, "host.shm-small");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["processes_using_shm"].as_int(), 1);
  EXPECT_EQ(ev["bytes_written_or_mapped"].as_int(), 0);
  ASSERT_EQ(ev["failures"].array().size(), 1u);
  EXPECT_EQ(ev["failures"].array()[0].str(), "pid 300: a write to /dev/shm failed with ENOSPC");
  EXPECT_EQ(f[0].summary, "/dev/shm is 64.0 MiB and 1 process uses it; shared-memory writes failed");
}

}  // namespace
}  // namespace colabtrace::testing
