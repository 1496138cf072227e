// Builds the traces of a multi-rank job's processes in memory, for the job model's unit
// tests (tests/dist) and dist.* golden tests (tests/findings/dist): a process with its
// launcher variables (EnvVar records), its host (hostname, boot id), a Clock record that
// ties its CLOCK_MONOTONIC to wall time, a step every second, and its end (an exit, a
// fatal signal, or none: killed), plus the kill() calls it made (a launcher's teardown),
// the collectives the Python start-up hook recorded, the calls it was still in at its end
// (the notes of its state chunk, kept in a killed trace too) and its uncaught exception.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "colabtrace/format/codec.h"
#include "trace/process_trace.h"
#include "trace_builder.h"

namespace colabtrace::ranktest {

using analyzer::ProcessTrace;
using testing::TraceBytesBuilder;

inline constexpr uint64_t kSec = 1'000'000'000;
// The wall time (CLOCK_REALTIME ns) at which every host's clock reads kWallAtZero + mono.
inline constexpr uint64_t kWallBase = 1'800'000'000 * kSec;

enum class End { kExit, kSignal, kKilled };

// A torch.distributed collective (format::Collective; group 1 the default one). in_flight:
// the rank was still in it at its end: a level-1 note in its state chunk, not a record.
struct CollectiveCall {
  uint64_t ts = 0, dur = 0;
  format::CollectiveOp op = format::CollectiveOp::kDdpAllReduce;
  uint64_t seq = 0, count = 9, group = 1;
  std::string dtype = "torch.float32", where = "train.py:20 in main";
  format::CollectiveStatus status = format::CollectiveStatus::kReturned;
  bool in_flight = false;
};

// A read of `path` that had not returned at the end (a level-0 note), on fd, which an
// io_open just before it named.
struct ReadInFlight {
  uint64_t since_ns = 0;
  std::string path;
  int32_t fd = 7;
};

struct Proc {
  uint32_t pid = 0, ppid = 1;
  std::string exe = "/usr/bin/python3";
  std::string host = "a";
  std::vector<std::pair<std::string, std::string>> env;  // the launcher variables
  uint64_t start_ns = 10 * kSec;  // CLOCK_MONOTONIC of its host
  uint64_t stop_ns = 20 * kSec;   // its end record's time; killed: its last record's
  End end = End::kExit;
  int64_t code = 0;               // kExit
  uint64_t signo = 11;            // kSignal
  size_t steps = 0;               // optimizer steps, one a second from start + 1 s
  // Wall time minus CLOCK_MONOTONIC on its host (its Clock record): 0 gives kWallBase.
  int64_t wall_minus_mono = static_cast<int64_t>(kWallBase);
  std::vector<std::pair<int64_t, uint64_t>> kills;  // kill(target, signo) it made, at stop - 1 s
  bool truncated = false;  // tracing stopped early (the header's truncated flag)
  std::vector<CollectiveCall> collectives;  // in time order
  std::optional<ReadInFlight> read_in_flight;
  std::string exception;  // its main thread's uncaught exception ("RuntimeError"), at stop - 100 ms
};

// torchrun's variables of rank `rank` of a `world`-rank job on one node.
inline std::vector<std::pair<std::string, std::string>> TorchrunEnv(int rank, int world,
                                                                    const std::string& run_id = "r1",
                                                                    const std::string& port = "29500") {
  return {{"RANK", std::to_string(rank)},           {"LOCAL_RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},    {"LOCAL_WORLD_SIZE", std::to_string(world)},
          {"GROUP_RANK", "0"},                      {"TORCHELASTIC_RUN_ID", run_id},
          {"TORCHELASTIC_RESTART_COUNT", "0"},      {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", port}};
}

// Rank `rank` of a `world`-rank torchrun job started by launcher pid 50 on host a: pid
// 100 + rank, 5 steps, exit 0 at 20 s.
inline Proc Rank(int rank, int world = 3) {
  Proc p;
  p.pid = static_cast<uint32_t>(100 + rank);
  p.ppid = 50;
  p.env = TorchrunEnv(rank, world);
  p.steps = 5;
  return p;
}

inline ProcessTrace Build(const Proc& p) {
  TraceBytesBuilder b(p.pid, p.start_ns, /*ended=*/p.end != End::kKilled);
  const uint64_t t0 = p.start_ns;
  format::Clock c;
  c.ts = t0;
  c.mono_ns = t0;
  c.realtime_ns = static_cast<uint64_t>(static_cast<int64_t>(t0) + p.wall_minus_mono);
  b.Append(c);
  format::ProcessStart ps;
  ps.ts = t0;
  ps.pid = p.pid;
  ps.ppid = p.ppid;
  ps.exe = b.AppendString(p.exe, t0);
  b.Append(ps);
  format::Argv a;
  a.ts = t0;
  a.value = b.AppendString("python3", t0);
  b.Append(a);
  a.index = 1;
  a.value = b.AppendString("train.py", t0);
  b.Append(a);
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"hostname", p.host},
                                   std::pair<std::string, std::string>{"boot_id", "boot-" + p.host}}) {
    format::HostInfo h;
    h.ts = t0;
    h.key = b.AppendString(key, t0);
    h.value = b.AppendString(value, t0);
    b.Append(h);
  }
  for (const auto& [name, value] : p.env) {
    format::EnvVar e;
    e.ts = t0;
    e.name = b.AppendString(name, t0);
    e.value = b.AppendString(value, t0);
    b.Append(e);
  }
  for (size_t i = 1; i <= p.steps; ++i) {
    format::Step s;
    s.ts = t0 + i * kSec;
    s.n = i;
    s.source = static_cast<uint64_t>(format::StepSource::kOptimizer);
    b.Append(s);
  }
  format::ThreadNotes notes{};
  for (const CollectiveCall& c : p.collectives) {
    const uint64_t dtype = b.AppendString(c.dtype, c.ts), where = b.AppendString(c.where, c.ts);
    if (c.in_flight) {
      notes.tid = p.pid;
      notes.wait = format::CallNote{static_cast<uint32_t>(format::InFlightCall::kCollective),
                                    static_cast<uint32_t>(c.op), c.ts, c.seq, c.count, c.group, where, 0, 0, dtype};
      continue;
    }
    format::Collective r;
    r.ts = c.ts;
    r.dur = c.dur;
    r.op = static_cast<uint64_t>(c.op);
    r.group = c.group;
    r.seq = c.seq;
    r.seqs = 1;
    r.count = c.count;
    r.dtype = dtype;
    r.where = where;
    r.status = static_cast<uint64_t>(c.status);
    b.Append(r);
  }
  if (p.read_in_flight) {
    const ReadInFlight& r = *p.read_in_flight;
    format::IoOpen o;
    o.ts = r.since_ns - 100'000'000;
    o.api = static_cast<uint64_t>(format::IoApi::kOpen);
    o.fd = r.fd;
    o.path = b.AppendString(r.path, o.ts);
    b.Append(o);
    notes.tid = p.pid;
    notes.call.call = static_cast<uint32_t>(format::InFlightCall::kRead);
    notes.call.api = static_cast<uint32_t>(format::IoApi::kRead);
    notes.call.since = r.since_ns;
    notes.call.object = static_cast<uint64_t>(r.fd);
  }
  if (notes.tid != 0) b.AddStateChunk({notes});
  if (!p.exception.empty()) {
    format::PyException e;
    e.ts = p.stop_ns - 100'000'000;
    e.how = static_cast<uint64_t>(format::PyExceptionHow::kMainThread);
    e.type = b.AppendString(p.exception, e.ts);
    b.Append(e);
  }
  for (const auto& [target, signo] : p.kills) {
    format::KillSent k;
    k.ts = p.stop_ns - kSec;
    k.target = target;
    k.signo = signo;
    b.Append(k);
  }
  switch (p.end) {
    case End::kExit: {
      format::Exit e;
      e.ts = p.stop_ns;
      e.code = p.code;
      e.how = static_cast<uint64_t>(format::ExitHow::kExit);
      b.Append(e);
      break;
    }
    case End::kSignal: {
      format::Signal s;
      s.ts = p.stop_ns;
      s.signo = p.signo;
      s.si_code = 1;
      s.tid = p.pid;
      b.Append(s);
      break;
    }
    case End::kKilled: {
      format::Sample s;
      s.ts = p.stop_ns;
      s.rss_bytes = 100 << 20;
      s.cgroup_current = UINT64_MAX;
      s.oom_kill = UINT64_MAX;
      b.Append(s);
      break;
    }
  }
  if (!p.truncated) return b.Parse();
  std::vector<uint8_t> bytes = b.bytes();  // with the header's truncated flag set
  format::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  h.flags |= format::kFlagTruncated;
  std::memcpy(bytes.data(), &h, sizeof(h));
  std::string err;
  auto t = analyzer::ParseTrace(std::move(bytes), "inline-" + std::to_string(p.pid), &err);
  EXPECT_TRUE(t.has_value()) << err;
  return t ? std::move(*t) : ProcessTrace{};
}

// The traces of a job's processes, in their order.
inline std::vector<ProcessTrace> Build(const std::vector<Proc>& procs) {
  std::vector<ProcessTrace> traces;
  for (const Proc& p : procs) traces.push_back(Build(p));
  return traces;
}

}  // namespace colabtrace::ranktest
