// Builds the traces of a job's processes and of `colabtrace run` (run_info, proc_sample)
// in memory, for golden tests of the host analysis (tests/lifecycle and
// tests/findings/host): each process starts at kStart; `colabtrace run` samples every
// kSampleNs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "colabtrace/format/codec.h"
#include "trace/process_trace.h"
#include "trace_builder.h"

namespace colabtrace::hosttest {

using analyzer::ProcessTrace;
using testing::TraceBytesBuilder;

inline constexpr uint64_t kStart = 1'000'000'000;
inline constexpr uint64_t kSampleNs = 100'000'000;

// The records a process's trace starts with: process_start (pid, ppid, exe) and its argv,
// at ts (kStart unless given).
inline void ProcessStartRecords(TraceBytesBuilder& b, uint32_t pid, uint32_t ppid,
                                const std::vector<std::string>& argv, uint64_t ts = kStart,
                                const std::string& exe = "/usr/bin/python3") {
  format::ProcessStart ps;
  ps.ts = ts;
  ps.pid = pid;
  ps.ppid = ppid;
  ps.exe = b.AppendString(exe, ts);
  b.Append(ps);
  for (size_t i = 0; i < argv.size(); ++i) {
    format::Argv a;
    a.ts = ts;
    a.index = i;
    a.value = b.AppendString(argv[i], ts);
    b.Append(a);
  }
}

// The host identity records the shim writes at start: hostname, boot_id ("boot-" + host)
// and MemTotal (mem_total).
inline void HostIdentity(TraceBytesBuilder& b, const std::string& host, uint64_t mem_total) {
  format::HostInfo h;
  h.ts = kStart;
  h.key = b.AppendString("hostname", kStart);
  h.value = b.AppendString(host, kStart);
  b.Append(h);
  h.key = b.AppendString("boot_id", kStart);
  h.value = b.AppendString("boot-" + host, kStart);
  b.Append(h);
  format::HostNum n;
  n.ts = kStart;
  n.key = b.AppendString("mem_total", kStart);
  n.value = mem_total;
  b.Append(n);
}

// A job process's own trace: started at kStart, exited 0 after `rounds` samples.
inline ProcessTrace Job(uint32_t pid, uint32_t ppid, const std::string& host, uint64_t mem_total,
                 int rounds, bool forked) {
  TraceBytesBuilder b(pid, kStart);
  format::ProcessStart ps;
  ps.ts = kStart;
  ps.pid = pid;
  ps.ppid = ppid;
  ps.origin = static_cast<uint64_t>(forked ? format::ProcessOrigin::kForkChild
                                           : format::ProcessOrigin::kInitial);
  ps.exe = b.AppendString("/usr/bin/python3", kStart);
  b.Append(ps);
  HostIdentity(b, host, mem_total);
  format::Exit e;
  e.ts = kStart + static_cast<uint64_t>(rounds) * kSampleNs;
  e.how = static_cast<uint64_t>(format::ExitHow::kExit);
  b.Append(e);
  return b.Parse();
}

// colabtrace run's trace: `rounds` rounds, each sampling every pid with the given
// (rss, pss) figures.
struct Figures {
  uint32_t pid, ppid;
  uint64_t rss, pss;
};
inline ProcessTrace Wrapper(uint32_t pid, const std::string& host, uint64_t mem_total, int rounds,
                     const std::vector<Figures>& procs) {
  TraceBytesBuilder b(pid, kStart);
  format::RunInfo info;
  info.ts = kStart;
  info.child_pid = procs.front().pid;
  info.sample_ms = 100;
  b.Append(info);
  HostIdentity(b, host, mem_total);
  for (int r = 0; r < rounds; ++r) {
    for (const Figures& f : procs) {
      format::ProcSample s;
      s.ts = kStart + static_cast<uint64_t>(r) * kSampleNs + 1;
      s.pid = f.pid;
      s.ppid = f.ppid;
      s.rss_bytes = f.rss;
      s.pss_bytes = f.pss;
      s.uss_bytes = f.pss / 2;
      b.Append(s);
    }
  }
  return b.Parse();
}

}  // namespace colabtrace::hosttest
