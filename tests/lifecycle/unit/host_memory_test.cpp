// Golden tests of host.memory-pressure where a real run cannot reach the threshold here:
// the MemTotal path (no cgroup limit) needs a tree whose PSS fills 90% of the machine,
// which CI machines cannot afford. The traces are what `colabtrace run` writes
// (run_info, proc_sample) plus the job processes' own traces; everything else
// (reader, analyses, report) is the real code.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "report/report.h"
#include "host_traces.h"

namespace colabtrace {
namespace {

using analyzer::ProcessTrace;
using testing::TraceBytesBuilder;

constexpr uint64_t kGiB = 1ull << 30;
using hosttest::Figures;
using hosttest::HostIdentity;
using hosttest::Job;
using hosttest::kSampleNs;
using hosttest::kStart;
using hosttest::Wrapper;

std::vector<const analyzer::Finding*> Pressure(const analyzer::ReportBuilder& r) {
  std::vector<const analyzer::Finding*> out;
  for (const auto& f : r.findings()) {
    if (f.id == "host.memory-pressure") out.push_back(&f);
  }
  return out;
}

// A parent and four forked workers sharing its pages: RSS sums to 5x the parent, PSS
// to about 1x. 12 GiB of PSS on a 16 GiB host is 75%: no finding.
TEST(HostMemory, SharedPagesAreCountedOnce) {
  std::vector<Figures> procs = {{100, 99, 12 * kGiB, 8 * kGiB}};
  for (uint32_t w = 0; w < 4; ++w) procs.push_back({101 + w, 100, 12 * kGiB, 1 * kGiB});
  std::vector<ProcessTrace> traces;
  traces.push_back(Wrapper(99, "a", 16 * kGiB, 5, procs));
  traces.push_back(Job(100, 99, "a", 16 * kGiB, 5, false));
  for (uint32_t w = 0; w < 4; ++w) traces.push_back(Job(101 + w, 100, "a", 16 * kGiB, 5, true));
  auto report = analyzer::BuildReport(traces, {});
  EXPECT_TRUE(Pressure(*report).empty());
  const auto& hosts = report->root()["memory"]["hosts"].array();
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0]["peak_bytes"].as_int(), static_cast<int64_t>(12 * kGiB));
  EXPECT_EQ(hosts[0]["rss_sum_at_peak_bytes"].as_int(), static_cast<int64_t>(60 * kGiB));
  // The wrapper is reported under "run", not as a process.
  EXPECT_EQ(report->root()["processes"].array().size(), 5u);
  EXPECT_EQ(report->root()["run"].array().size(), 1u);
}

// 15 GiB of PSS on a 16 GiB host: 93.75% of MemTotal.
TEST(HostMemory, PssNearMemTotalIsPressure) {
  std::vector<Figures> procs = {{100, 99, 14 * kGiB, 13 * kGiB}, {101, 100, 14 * kGiB, 2 * kGiB}};
  std::vector<ProcessTrace> traces;
  traces.push_back(Wrapper(99, "a", 16 * kGiB, 3, procs));
  traces.push_back(Job(100, 99, "a", 16 * kGiB, 3, false));
  traces.push_back(Job(101, 100, "a", 16 * kGiB, 3, true));
  auto report = analyzer::BuildReport(traces, {});
  auto found = Pressure(*report);
  ASSERT_EQ(found.size(), 1u);
  const auto& ev = found[0]->evidence;
  EXPECT_EQ(ev["basis"].str(), "pss");
  EXPECT_EQ(ev["limit_source"].str(), "MemTotal");
  EXPECT_EQ(ev["peak_bytes"].as_int(), static_cast<int64_t>(15 * kGiB));
  EXPECT_NEAR(ev["percent_of_limit"].number(), 93.75, 0.01);
  EXPECT_EQ(ev["processes"].array().size(), 2u);
}

// Two hosts at 60% each: never merged into one 120% tree.
TEST(HostMemory, HostsAreNotMerged) {
  std::vector<ProcessTrace> traces;
  traces.push_back(Wrapper(99, "a", 16 * kGiB, 3, {{100, 99, 10 * kGiB, 9600ull << 20}}));
  traces.push_back(Job(100, 99, "a", 16 * kGiB, 3, false));
  traces.push_back(Wrapper(99, "b", 16 * kGiB, 3, {{100, 99, 10 * kGiB, 9600ull << 20}}));
  traces.push_back(Job(100, 99, "b", 16 * kGiB, 3, false));
  auto report = analyzer::BuildReport(traces, {});
  EXPECT_TRUE(Pressure(*report).empty());
  EXPECT_EQ(report->root()["memory"]["hosts"].array().size(), 2u);
  EXPECT_EQ(report->root()["processes"].array().size(), 2u);
}

// Without outside samples, the processes' own RSS samples stand in, leaving out fork
// children that never exec'd (their RSS is the parent's shared pages).
TEST(HostMemory, WithoutPssForkChildrenAreLeftOut) {
  std::vector<ProcessTrace> traces;
  for (uint32_t pid : {100u, 101u, 102u}) {
    TraceBytesBuilder b(pid, kStart);
    format::ProcessStart ps;
    ps.ts = kStart;
    ps.pid = pid;
    ps.ppid = pid == 100 ? 1 : 100;
    ps.origin = static_cast<uint64_t>(pid == 100 ? format::ProcessOrigin::kInitial
                                                 : format::ProcessOrigin::kForkChild);
    b.Append(ps);
    HostIdentity(b, "a", 16 * kGiB);
    format::Sample s;
    s.ts = kStart + kSampleNs;
    s.rss_bytes = 10 * kGiB;
    s.cgroup_current = UINT64_MAX;
    s.oom_kill = UINT64_MAX;
    b.Append(s);
    format::Exit e;
    e.ts = kStart + 2 * kSampleNs;
    b.Append(e);
    traces.push_back(b.Parse());
  }
  auto report = analyzer::BuildReport(traces, {});
  EXPECT_TRUE(Pressure(*report).empty());  // a sum of RSS would say 30 GiB, 187%
  const auto& hosts = report->root()["memory"]["hosts"].array();
  ASSERT_EQ(hosts.size(), 1u);
  EXPECT_EQ(hosts[0]["basis"].str(), "rss, fork children excluded");
  EXPECT_EQ(hosts[0]["peak_bytes"].as_int(), static_cast<int64_t>(10 * kGiB));
}

}  // namespace
}  // namespace colabtrace
