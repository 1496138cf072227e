// Builds small traces in memory, record by record, for golden tests of the GPU analysis.
// Ticks are nanoseconds (ticks_per_sec 1e9, no TSC); each record advances time by 1 ns
// unless the test moves the clock itself.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "colabtrace/format/codec.h"
#include "trace/process_trace.h"

namespace colabtrace::gputest {

namespace ctf = colabtrace::format;
using analyzer::ParseTrace;
using analyzer::ProcessTrace;

class TraceBuilder {
 public:
  explicit TraceBuilder(uint32_t pid, uint64_t start_ns = 1000) : pid_(pid), now_(start_ns + 1000) {
    bytes_.resize(ctf::kChunkSize);
    ctf::FileHeader h{};
    std::memcpy(h.magic, ctf::kFileMagic, sizeof(h.magic));
    h.version_major = ctf::kVersionMajor;
    h.version_minor = ctf::kVersionMinor;
    h.header_size = ctf::kHeaderSize;
    h.chunk_size = ctf::kChunkSize;
    h.pid = pid;
    h.start_ticks = start_ns;
    h.start_mono_ns = start_ns;
    h.ticks_per_sec_hint = 1000000000;
    h.flags = ctf::kFlagEnded;
    std::memcpy(bytes_.data(), &h, sizeof(h));
    NewChunk(pid);
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
  void Thread(uint32_t tid) { NewChunk(tid); }

  uint64_t Str(const std::string& s) {
    ctf::String r;
    r.id = next_id_++;
    r.text = ctf::Bytes{reinterpret_cast<const uint8_t*>(s.data()), static_cast<uint32_t>(s.size())};
    Add(r);
    return r.id;
  }

  uint64_t Stack(const std::vector<uint64_t>& frames) {
    ctf::Stack r;
    r.id = next_stack_++;
    r.frames = ctf::Bytes{reinterpret_cast<const uint8_t*>(frames.data()),
                          static_cast<uint32_t>(frames.size() * sizeof(uint64_t))};
    Add(r);
    return r.id;
  }

  template <class R> void Add(R r) {
    if (r.ts == 0) r.ts = now_;
    uint8_t tmp[8192];
    size_t n = ctf::EncodeRecordUncommitted(r, last_ts_, tmp);
    if (pos_ + n + 1 > chunk_ + ctf::kChunkSize) {
      NewChunk(tid_);
      n = ctf::EncodeRecordUncommitted(r, last_ts_, tmp);
    }
    tmp[0] = ctf::CommittedType(r, last_ts_);
    std::memcpy(&bytes_[pos_], tmp, n);
    pos_ += n;
    last_ts_ = r.ts;
    // Calls on one thread do not overlap: the next record starts after this call ended.
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

  // Ends the trace: with an exit record, or (killed) without one.
  ProcessTrace Finish(bool killed = false) {
    if (!killed) {
      ctf::Exit e;
      Add(e);
    } else {
      ctf::FileHeader h;
      std::memcpy(&h, bytes_.data(), sizeof(h));
      h.flags &= ~static_cast<uint32_t>(ctf::kFlagEnded);
      std::memcpy(bytes_.data(), &h, sizeof(h));
    }
    std::string err;
    auto t = ParseTrace(bytes_, "inline-" + std::to_string(pid_), &err);
    EXPECT_TRUE(t.has_value()) << err;
    return std::move(*t);
  }

 private:
  void NewChunk(uint32_t tid) {
    tid_ = tid;
    chunk_ = bytes_.size();
    bytes_.resize(bytes_.size() + ctf::kChunkSize);
    ctf::ChunkHeader ch{};
    ch.magic = ctf::kChunkMagic;
    ch.tid = tid;
    ch.base_ticks = now_;
    ch.seq = seq_++;
    std::memcpy(&bytes_[chunk_], &ch, sizeof(ch));
    pos_ = chunk_ + sizeof(ch);
    last_ts_ = now_;
  }

  uint32_t pid_;
  uint32_t tid_ = 0;
  std::vector<uint8_t> bytes_;
  size_t chunk_ = 0, pos_ = 0;
  uint64_t now_, last_ts_ = 0, next_id_ = 1, next_stack_ = 1;
  uint32_t seq_ = 0;
};

}  // namespace colabtrace::gputest
