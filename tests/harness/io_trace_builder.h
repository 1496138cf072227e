// Builds small traces of file I/O in memory (mounts, stats, opens, reads, closes) for
// golden tests of the I/O analysis (tests/io and tests/findings/io). Ticks are
// nanoseconds (no TSC feature bit); each record advances the clock by 1 ns unless the
// test moves it.
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "colabtrace/format/codec.h"
#include "trace/process_trace.h"
#include "trace_builder.h"

namespace colabtrace::iotest {

namespace ctf = colabtrace::format;
using analyzer::ProcessTrace;
using ctf::IoApi;

class TraceBuilder {
 public:
  // A process pid whose parent is ppid (a fork child of it when ppid is not 1), whose
  // trace starts at start_ns (its first record 1 us later). killed: Finish() leaves the
  // trace as a SIGKILL does, with no exit record and no clean-exit flag.
  explicit TraceBuilder(uint32_t pid, uint32_t ppid = 1, uint64_t start_ns = 1000, bool killed = false)
      : b_(pid, start_ns, !killed), now_(start_ns + 1000), killed_(killed) {
    ctf::ProcessStart ps;
    ps.pid = pid;
    ps.ppid = ppid;
    if (ppid != 1) ps.origin = static_cast<uint64_t>(ctf::ProcessOrigin::kForkChild);
    ps.exe = Str("/usr/bin/python3");
    Add(ps);
  }

  uint64_t now() const { return now_; }
  void Advance(uint64_t ns) { now_ += ns; }
  void AdvanceTo(uint64_t ns) { now_ = std::max(now_, ns); }

  uint64_t Str(const std::string& s) { return b_.AppendString(s, now_); }

  template <class R> void Add(R r) {
    r.ts = now_;
    b_.Append(r);
    ++now_;
  }

  void Mount(uint64_t id, const std::string& type, const std::string& mp, const std::string& src) {
    ctf::Mount m;
    m.id = id;
    m.fstype = Str(type);
    m.mountpoint = Str(mp);
    m.source = Str(src);
    Add(m);
  }

  // One record each. A stat of `path` (a string id) or of an open descriptor, finding a
  // regular file of `size` bytes, taking `dur` ns.
  void StatPath(uint64_t path, uint64_t size, uint64_t dur) {
    ctf::IoStat st;
    st.api = static_cast<uint64_t>(IoApi::kStat64);
    st.path = path;
    st.fd = -1;
    st.size = size;
    st.ftype = 8;
    st.dur = dur;
    Add(st);
  }
  void StatFd(int fd, uint64_t size, uint64_t dur) {
    ctf::IoStat st;
    st.api = static_cast<uint64_t>(IoApi::kFstat64);
    st.fd = fd;
    st.size = size;
    st.ftype = 8;
    st.dur = dur;
    Add(st);
  }
  // An open of `path` for reading that returned `fd` (-errno when it failed) on `mount`,
  // taking `dur` ns; the clock moves past its return.
  void Open(uint64_t path, int64_t fd, uint64_t mount, uint64_t dur, IoApi api = IoApi::kOpen64) {
    ctf::IoOpen o;
    o.api = static_cast<uint64_t>(api);
    o.fd = fd;
    o.path = path;
    o.flags = O_RDONLY;
    o.dur = dur;
    o.mount = mount;
    Add(o);
    Advance(dur);
  }
  // A read(2) on fd that returned `result` (bytes, or -errno), taking `dur` ns; the clock
  // is left where it was.
  void Read(int fd, int64_t result, uint64_t dur) {
    ctf::IoRead r;
    r.api = static_cast<uint64_t>(IoApi::kRead);
    r.fd = fd;
    r.result = result;
    r.dur = dur;
    Add(r);
  }
  void Close(int fd) {
    ctf::IoClose c;
    c.api = static_cast<uint64_t>(IoApi::kClose);
    c.fd = fd;
    Add(c);
  }

  // stat + open + fstat + read(size) + read(0) + close, with the given latencies.
  void ReadWholeFile(const std::string& path, uint64_t mount, int fd, uint64_t size, uint64_t open_ns,
                     uint64_t read_ns) {
    const uint64_t id = Str(path);
    StatPath(id, size, 1000);
    Open(id, fd, mount, open_ns);
    StatFd(fd, size, 100);
    Read(fd, static_cast<int64_t>(size), read_ns);
    Advance(read_ns);
    Read(fd, 0, 100);
    Close(fd);
  }

  ProcessTrace Finish() {
    if (!killed_) Add(ctf::Exit{});
    return b_.Parse();
  }

  // The raw trace, for state and ring chunks (TraceBytesBuilder::AddStateChunk).
  ::colabtrace::testing::TraceBytesBuilder& raw() { return b_; }

 private:
  ::colabtrace::testing::TraceBytesBuilder b_;
  uint64_t now_;
  bool killed_;
};

// The mounts the tests share: 1 ext4 /, 2 nfs4 /mnt/nfs, 3 9p /mnt/host, 4 cifs /mnt/smb,
// 5 tmpfs /dev/shm (ids as the records' `mount` fields name them).
inline void Mounts(TraceBuilder& b) {
  b.Mount(1, "ext4", "/", "/dev/vda");
  b.Mount(2, "nfs4", "/mnt/nfs", "server:/export");
  b.Mount(3, "9p", "/mnt/host", "hostshare");
  b.Mount(4, "cifs", "/mnt/smb", "//nas/share");
  b.Mount(5, "tmpfs", "/dev/shm", "tmpfs");
}

}  // namespace colabtrace::iotest
