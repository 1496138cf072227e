// Builds the records of training steps on top of iotest::TraceBuilder, for the golden
// tests of the perf.* findings (tests/findings/perf): batch waits, optimizer steps and
// markers, GPU synchronisations, DataLoader workers and their CPU samples.
#pragma once

#include <cstdint>
#include <string>

#include "io_trace_builder.h"

namespace colabtrace::steptest {

namespace ctf = colabtrace::format;
using iotest::TraceBuilder;

// The step loop waits `ns` for its next batch (a DataLoader batch wait asked for at the
// string `where`); the clock moves past it.
inline void BatchWait(TraceBuilder& b, uint64_t n, uint64_t ns, uint64_t where = 0) {
  ctf::BatchWait w;
  w.dur = ns;
  w.kind = static_cast<uint64_t>(ctf::BatchWaitKind::kDataLoader);
  w.where = where;
  w.n = n;
  b.Add(w);
  b.Advance(ns - 1);
}

// A step boundary: an optimizer step ending (source kOptimizer) or a program's marker.
inline void StepBoundary(TraceBuilder& b, uint64_t n, ctf::StepSource source = ctf::StepSource::kOptimizer) {
  ctf::Step s;
  s.n = n;
  s.source = static_cast<uint64_t>(source);
  b.Add(s);
}

// A synchronising CUDA call that blocked `ns`; the clock moves past it.
inline void GpuSync(TraceBuilder& b, uint64_t ns) {
  ctf::GpuSync g;
  g.api = static_cast<uint64_t>(ctf::GpuApi::kCudaStreamSynchronize);
  g.dur = ns;
  b.Add(g);
  b.Advance(ns - 1);
}

// One training iteration: wait `wait_ns` for the batch, compute `compute_ns`, then the
// optimizer step ends.
inline void Iteration(TraceBuilder& b, uint64_t n, uint64_t wait_ns, uint64_t compute_ns, uint64_t where = 0) {
  BatchWait(b, n, wait_ns, where);
  b.Advance(compute_ns);
  StepBoundary(b, n + 1);
}

// A resource sample carrying the process's CPU time so far.
inline void CpuSample(TraceBuilder& b, uint64_t utime_ns, uint64_t stime_ns = 0) {
  ctf::Sample s;
  s.rss_bytes = 100u << 20;
  s.cgroup_current = UINT64_MAX;
  s.oom_kill = UINT64_MAX;
  s.utime_ns = utime_ns;
  s.stime_ns = stime_ns;
  b.Add(s);
}

// The fork record a parent writes for its child `pid`.
inline void Forked(TraceBuilder& b, int64_t pid) {
  ctf::Fork f;
  f.child_pid = pid;
  b.Add(f);
}

// A DataLoader worker says so at its start.
inline void WorkerRole(TraceBuilder& b, uint64_t worker_id) {
  ctf::ProcessRole r;
  r.role = static_cast<uint64_t>(ctf::ProcessRoleKind::kDataLoaderWorker);
  r.worker_id = worker_id;
  b.Add(r);
}

inline void HostNum(TraceBuilder& b, const std::string& key, uint64_t value) {
  ctf::HostNum h;
  h.key = b.Str(key);
  h.value = value;
  b.Add(h);
}

inline void HostInfo(TraceBuilder& b, const std::string& key, const std::string& value) {
  ctf::HostInfo h;
  h.key = b.Str(key);
  h.value = b.Str(value);
  b.Add(h);
}

}  // namespace colabtrace::steptest
