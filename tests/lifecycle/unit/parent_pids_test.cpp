// ParentPids: a trace's parent is the traced process whose fork or posix_spawn record
// names it, within the trace's own time window; a reused pid never inherits an earlier
// process's parent. The real runs (a daemon's double fork) are in test_run.py; pid reuse
// cannot be forced on a real machine.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/process_facts.h"
#include "trace_builder.h"

namespace colabtrace {
namespace {

using analyzer::ProcessTrace;
using testing::TraceBytesBuilder;

constexpr uint64_t kSecond = 1'000'000'000;

// A trace of `pid` starting at `start` whose getppid() said `ppid`; `forks` lists
// (child pid, when) fork records.
ProcessTrace Trace(uint32_t pid, uint32_t ppid, uint64_t start, std::vector<std::pair<int64_t, uint64_t>> forks = {}) {
  TraceBytesBuilder b(pid, start);
  format::ProcessStart ps;
  ps.ts = start;
  ps.pid = pid;
  ps.ppid = ppid;
  ps.exe = b.AppendString("/bin/sh", start);
  b.Append(ps);
  format::HostInfo h;
  h.ts = start;
  h.key = b.AppendString("hostname", start);
  h.value = b.AppendString("host", start);
  b.Append(h);
  for (const auto& [child, ts] : forks) {
    format::Fork f;
    f.ts = ts;
    f.child_pid = child;
    b.Append(f);
  }
  format::Exit e;
  e.ts = start + kSecond / 2;
  b.Append(e);
  return b.Parse();
}

TEST(ParentPids, ForkRecordNamesTheParentAndReusedPidsKeepTheirOwn) {
  std::vector<ProcessTrace> traces;
  // pid 100 forks 200 at 10 s; 200's trace starts at 10.3 s after its parent exited
  // (getppid: the reaper, 1).
  traces.push_back(Trace(100, 50, 10 * kSecond, {{200, 10 * kSecond}}));
  traces.push_back(Trace(200, 1, 10 * kSecond + 3 * kSecond / 10));
  // pid 200 again at 20 s, started by an untraced process 300: no record names it.
  traces.push_back(Trace(200, 300, 20 * kSecond));
  // pid 200 a third time at 30 s: 400's fork record is written just after the child's
  // start record.
  traces.push_back(Trace(400, 50, 29 * kSecond, {{200, 30 * kSecond + 1000}}));
  traces.push_back(Trace(200, 400, 30 * kSecond));
  std::vector<const ProcessTrace*> all;
  for (const ProcessTrace& t : traces) all.push_back(&t);
  EXPECT_EQ(analyzer::ParentPids(all), (std::vector<int64_t>{50, 100, 300, 50, 400}));
}

}  // namespace
}  // namespace colabtrace
