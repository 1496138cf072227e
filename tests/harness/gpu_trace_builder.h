// Builds small traces in memory, record by record, for golden tests of the GPU analysis
// (tests/gpu/unit and tests/findings/gpu). Ticks are nanoseconds (ticks_per_sec 1e9, no
// TSC); each record advances time by 1 ns unless the test moves the clock itself.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "trace_builder.h"

#include "colabtrace/format/codec.h"
#include "trace/process_trace.h"

namespace colabtrace::gputest {

namespace ctf = colabtrace::format;
using analyzer::ParseTrace;
using analyzer::ProcessTrace;

class TraceBuilder {
 public:
  explicit TraceBuilder(uint32_t pid, uint64_t start_ns = 1000)
      : b_(pid, start_ns), now_(start_ns + 1000) {
    ctf::ProcessStart ps;
    ps.pid = pid;
    ps.ppid = 1;
    ps.exe = Str("/usr/bin/python3");
    Add(ps);
  }

  uint64_t now() const { return now_; }
  void Advance(uint64_t ns) { now_ += ns; }
  void SetNow(uint64_t ns) { now_ = ns; }

  // Records after this come from thread tid (a chunk of its own).
  void Thread(uint32_t tid) { b_.NewChunk(tid, now_); }

  uint64_t Str(const std::string& s) { return Advanced(b_.AppendString(s, now_)); }
  uint64_t Stack(const std::vector<uint64_t>& frames) { return Advanced(b_.AppendStack(frames, now_)); }

  // Appends r at now (unless its ts is set). Calls on one thread do not overlap: the
  // next record starts after this call ended.
  template <class R> void Add(R r) {
    if (r.ts == 0) r.ts = now_;
    b_.Append(r);
    uint64_t end = r.ts;
    r.Visit([&](const char*, auto tag, const auto& value) {
      if constexpr (decltype(tag)::kind == ctf::FieldKind::kDur) end = r.ts + value;
    });
    if (end >= now_) now_ = end + 1;
  }

  // ---- GPU helpers -------------------------------------------------------------------
  void Device(int index, const std::string& name, uint64_t total) {
    ctf::GpuDevice d;
    d.index = static_cast<uint64_t>(index);
    d.name = Str(name);
    d.cc_major = 8;
    d.total = total;
    d.pci_bus = static_cast<uint64_t>(index + 1);
    Add(d);
  }
  void Alloc(ctf::GpuApi api, uint64_t addr, uint64_t size, int64_t rc = 0, int device = 0,
             uint8_t layer = 0, uint64_t stack = 0, uint64_t caller = 0) {
    ctf::GpuAlloc a;
    a.api = static_cast<uint64_t>(api);
    a.layer = layer;
    a.device = device;
    a.addr = rc == 0 ? addr : 0;
    a.size = size;
    a.rc = rc;
    a.dur = 100;
    a.stack = stack;
    a.caller = caller;
    Add(a);
  }
  void Free(ctf::GpuApi api, uint64_t addr, int64_t rc = 0) {
    ctf::GpuFree f;
    f.api = static_cast<uint64_t>(api);
    f.device = -1;
    f.addr = addr;
    f.rc = rc;
    f.dur = 50;
    Add(f);
  }
  // A failed allocation followed (same ts, same thread) by the memory reading taken after it.
  void FailedAlloc(ctf::GpuApi api, uint64_t size, uint64_t free_bytes, uint64_t total,
                   int device = 0) {
    const uint64_t ts = now_;
    Alloc(api, 0, size, 2, device);
    ctf::GpuMemInfo m;
    m.ts = ts;
    m.device = device;
    m.free = free_bytes;
    m.total = total;
    m.why = static_cast<uint64_t>(ctf::GpuMemInfoWhy::kAfterFailure);
    m.layer = 1;
    Add(m);
  }
  void MemInfo(uint64_t free_bytes, uint64_t total, ctf::GpuMemInfoWhy why, int device = 0) {
    ctf::GpuMemInfo m;
    m.device = device;
    m.free = free_bytes;
    m.total = total;
    m.why = static_cast<uint64_t>(why);
    m.layer = 1;
    Add(m);
  }
  void Vmm(ctf::GpuApi api, uint64_t handle, uint64_t addr, uint64_t size, int64_t rc = 0,
           int device = 0) {
    ctf::GpuVmm v;
    v.api = static_cast<uint64_t>(api);
    v.handle = handle;
    v.addr = addr;
    v.size = size;
    v.rc = rc;
    v.device = device;
    Add(v);
  }
  void Env(const std::string& name, const std::string& value, ctf::EnvSource source) {
    ctf::EnvVar e;
    e.name = Str(name);
    e.value = Str(value);
    e.source = static_cast<uint64_t>(source);
    Add(e);
  }
  void Module(const std::string& path, uint64_t base, uint64_t size) {
    ctf::Module m;
    m.path = Str(path);
    m.base = base;
    m.size = size;
    Add(m);
  }

  // A kernel handle and its name, as the driver lookup (cuModuleGetFunction by default)
  // records them.
  void Function(uint64_t handle, const std::string& name,
                ctf::GpuApi api = ctf::GpuApi::kCuModuleGetFunction, uint64_t module = 0) {
    ctf::GpuFunction fn;
    fn.api = static_cast<uint64_t>(api);
    fn.handle = handle;
    fn.module = module;
    fn.name = Str(name);
    Add(fn);
  }

  // Ends the trace: with an exit record, or (killed) without one.
  ProcessTrace Finish(bool killed = false) {
    if (!killed) {
      ctf::Exit e;
      Add(e);
    } else {
      b_.MarkNotEnded();
    }
    return b_.Parse();
  }

 private:
  uint64_t Advanced(uint64_t id) {
    if (now_ <= b_.last_ts()) now_ = b_.last_ts() + 1;
    return id;
  }

  ::colabtrace::testing::TraceBytesBuilder b_;
  uint64_t now_;
};

// `steps` allocations of `size` from site `stack` (a Stack id), one every `gap` ns, at
// *addr and on, none freed; *addr ends past the last.
inline void Steps(TraceBuilder& b, uint64_t stack, uint64_t* addr, int steps, uint64_t size,
                  uint64_t gap) {
  for (int i = 0; i < steps; ++i) {
    b.Alloc(ctf::GpuApi::kCudaMalloc, *addr, size, 0, 0, 0, stack);
    *addr += size;
    b.Advance(gap);
  }
}

// One entry of the launch ring the shim writes at the first sticky error: a cuLaunchKernel
// of func on stream by thread 127, grid 1x1x1, block 128x1x1, launched in `epoch` of its
// stream, whose last successful synchronisation was epoch `synced`.
inline ctf::GpuLaunchRing RingEntry(uint64_t seq, uint64_t epoch, uint64_t synced, uint64_t func,
                                    uint64_t stream) {
  ctf::GpuLaunchRing r;
  r.why = 1;
  r.tid = 127;
  r.seq = seq;
  r.epoch = epoch;
  r.synced = synced;
  r.api = static_cast<uint64_t>(ctf::GpuApi::kCuLaunchKernel);
  r.layer = 1;
  r.func = func;
  r.stream = stream;
  r.grid_x = r.grid_y = r.grid_z = 1;
  r.block_x = 128;
  r.block_y = r.block_z = 1;
  return r;
}

}  // namespace colabtrace::gputest
