// host.memory-pressure (warning): the tree's memory, shared pages counted once, reached
// 90% of the limit. Golden traces: `colabtrace run` samples a parent (8 GiB PSS) and a
// DataLoader worker forked from it on a host with 10 GiB MemTotal and no cgroup limit;
// a worker of 1 GiB PSS brings the tree to exactly 90%, one of 1 GiB less 1 MiB to 89.99%.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "host_traces.h"
#include "report_findings.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
using analyzer::Severity;
using hosttest::Job;
using hosttest::Wrapper;

constexpr uint64_t kGiB = 1ull << 30, kMiB = 1ull << 20;

std::vector<ProcessTrace> Tree(uint64_t worker_pss) {
  const std::vector<hosttest::Figures> procs = {{100, 99, 9 * kGiB, 8 * kGiB}, {101, 100, 9 * kGiB, worker_pss}};
  std::vector<ProcessTrace> traces;
  traces.push_back(Wrapper(99, "a", 10 * kGiB, 3, procs));
  traces.push_back(Job(100, 99, "a", 10 * kGiB, 3, false));
  traces.push_back(Job(101, 100, "a", 10 * kGiB, 3, true));
  return traces;
}

TEST(HostMemoryPressure, PssAtNinetyPercentOfMemTotal) {
  auto traces = Tree(1 * kGiB);
  const auto f = FindingsOf(traces, "host.memory-pressure");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kWarning);
  EXPECT_EQ(f[0].pid, 0);  // the host's, not one process's
  const auto& ev = f[0].evidence;
  EXPECT_EQ(ev["host"].str(), "a");
  EXPECT_EQ(ev["basis"].str(), "pss");
  EXPECT_EQ(ev["peak_bytes"].as_int(), static_cast<int64_t>(9 * kGiB));
  EXPECT_EQ(ev["limit_bytes"].as_int(), static_cast<int64_t>(10 * kGiB));
  EXPECT_EQ(ev["limit_source"].str(), "MemTotal");
  EXPECT_DOUBLE_EQ(ev["percent_of_limit"].number(), 90.0);
  EXPECT_EQ(ev["rss_sum_at_peak_bytes"].as_int(), static_cast<int64_t>(18 * kGiB));
  EXPECT_EQ(ev["processes_at_peak"].as_int(), 2);
  EXPECT_EQ(ev["at_ns_after_start"].as_int(), 1);  // the first round, 1 ns after the start
  const auto& procs = ev["processes"].array();
  ASSERT_EQ(procs.size(), 2u);
  EXPECT_EQ(procs[0]["pid"].as_int(), 100);
  EXPECT_EQ(procs[0]["pss_bytes"].as_int(), static_cast<int64_t>(8 * kGiB));
  EXPECT_EQ(procs[0]["rss_bytes"].as_int(), static_cast<int64_t>(9 * kGiB));
  EXPECT_EQ(procs[0]["uss_bytes"].as_int(), static_cast<int64_t>(4 * kGiB));
  EXPECT_EQ(procs[1]["pid"].as_int(), 101);
  EXPECT_EQ(procs[1]["pss_bytes"].as_int(), static_cast<int64_t>(1 * kGiB));
  EXPECT_TRUE(ev["growing_workers"].array().empty());  // USS constant: nobody grows
  EXPECT_EQ(f[0].summary,
            "the process tree's memory (PSS, shared pages counted once) reached 9.0 GiB, 90% of the host's "
            "MemTotal 10.0 GiB");
}

TEST(HostMemoryPressure, JustUnderNinetyPercentIsNone) {
  auto traces = Tree(1 * kGiB - kMiB);
  EXPECT_TRUE(FindingsOf(traces, "host.memory-pressure").empty());
}

}  // namespace
}  // namespace colabtrace::testing
