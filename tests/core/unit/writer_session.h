// Drives the shim's real writer (trace_file.cpp, writer.cpp, clock.cpp) inside a unit
// test: open a trace in a temp directory, Emit records, close it, read it back with the
// analyzer's reader.
//
// The writer keeps process-wide state (one trace per process), so a session resets it
// the way a fork child does: a new generation (threads drop their old chunks), fresh
// intern tables, and AbandonInChild() to unmap the previous trace.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trace/process_trace.h"
#include "writer.h"

namespace colabtrace::testing {

// A temp directory removed at destruction.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ct-unit-XXXXXX";
    const char* d = mkdtemp(tmpl);
    path_ = d ? d : "/tmp";
  }
  ~TempDir() {
    if (getenv("KEEP_TEST_DIRS") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Trace timestamps in these tests are plain numbers: ticks are declared to be
// nanoseconds from 0 (no TSC feature, start_ticks = start_mono_ns = 0), so the reader
// gives back exactly the ts values written (as long as no Clock record says otherwise).
class WriterSession {
 public:
  explicit WriterSession(std::string path) : path_(std::move(path)) {}
  ~WriterSession() {
    if (open_) End(/*close=*/true);
  }

  // Opens the trace; false if TraceFile::Create failed.
  bool Begin(uint64_t start_realtime_ns = 1700000000000000000ull) {
    shim::g_pid = getpid();
    __atomic_add_fetch(&shim::g_generation, 1, __ATOMIC_ACQ_REL);
    shim::ResetInterning();
    if (!shim::g_trace.Create(path_.c_str(), static_cast<uint32_t>(getpid()), 0, 1000000000ull,
                              0, 0, start_realtime_ns)) {
      return false;
    }
    shim::g_recording = true;
    open_ = true;
    return true;
  }

  // Closes the trace (when close is set) and forgets it, leaving the writer ready for
  // the next session.
  void End(bool close = true) {
    if (close) shim::g_trace.Close();
    shim::g_recording = false;
    shim::g_trace.AbandonInChild();
    shim::ResetInterning();
    __atomic_add_fetch(&shim::g_generation, 1, __ATOMIC_ACQ_REL);
    open_ = false;
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool open_ = false;
};

// Emits one record from the calling thread, as a hook does.
template <class R> void Put(const R& r) {
  shim::ShimScope scope;
  ASSERT_TRUE(scope.entered());
  shim::Emit(r);
}

// Sets the writer's window and cap for one test, and takes them off after it (the other
// tests write without a window).
class WindowLimits {
 public:
  WindowLimits(uint64_t window_bytes, uint64_t window_s, uint64_t max_bytes) {
    shim::g_trace.SetLimits(window_bytes, window_s, max_bytes);
  }
  ~WindowLimits() { shim::g_trace.SetLimits(0, 0, 0); }
};

// An IoRead (droppable) numbered k of writer i.
inline void PutEvent(int i, uint64_t k, uint64_t ts) {
  format::IoRead r;
  r.ts = ts;
  r.fd = i;
  r.result = static_cast<int64_t>(k);
  shim::ShimScope scope;
  shim::Emit(r);
}

inline std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline analyzer::ProcessTrace MustRead(const std::string& path) {
  std::string err;
  auto t = analyzer::ReadTraceFile(path, &err);
  EXPECT_TRUE(t.has_value()) << err;
  if (!t) return analyzer::ProcessTrace();
  EXPECT_TRUE(t->warnings.empty()) << t->warnings.front();
  return std::move(*t);
}

inline uint64_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace colabtrace::testing
