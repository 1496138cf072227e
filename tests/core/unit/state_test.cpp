// The shim's state chunks (shim/state.cpp) under many threads at once: every thread's
// first note claims its ThreadNotes, notes open and close on the hot path, steps count in
// the progress block, and launch rings are taken, while the trace is read live the way
// `colabtrace run --hang-timeout` reads it (pread, the analyzer's reader). Built twice:
// as core.State* in core_unit_test, and as tsan.State* under ThreadSanitizer
// (tests/core/tsan), which fails on any race among the shim's own threads. Also: a fork
// while other threads note, whose child starts state chunks of its own.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

#include "state.h"
#include "writer_session.h"

// state.cpp's Python hooks, without an interpreter: no layout, no thread state.
namespace colabtrace::shim::python {
bool g_python_frames = false;
uintptr_t ThisThreadStateIfRunning() { return 0; }
bool FillLayoutBlock(format::PythonLayoutBlock*) { return false; }
}  // namespace colabtrace::shim::python

namespace {

namespace fmt = colabtrace::format;
namespace shim = colabtrace::shim;
using colabtrace::analyzer::ProcessTrace;
using colabtrace::testing::TempDir;
using colabtrace::testing::WriterSession;

class StateTest : public ::testing::Test {
 protected:
  std::string TracePath() { return dir_.path() + "/state.ctrace"; }
  TempDir dir_;
};

// One thread's life: claims its notes, then opens and closes a note `cycles` times (the
// api says which thread, the object, a read's fd, which cycle), counts a step every
// 64 cycles and takes one launch ring. Leaves its last note open when `leave_open`.
void NoteLoop(int i, int cycles, bool leave_open, std::atomic<int>* rings) {
  for (int k = 0; k < cycles; ++k) {
    shim::ShimScope scope;
    fmt::CallNote* n = shim::BeginNote(&fmt::ThreadNotes::call, fmt::InFlightCall::kRead,
                                       static_cast<uint32_t>(i), 1000 + static_cast<uint64_t>(k),
                                       static_cast<uint64_t>(k));
    ASSERT_NE(n, nullptr);
    if (k % 64 == 0) shim::NoteStep(static_cast<uint64_t>(k));
    if (k == cycles / 2 && shim::AllocLaunchRing() != nullptr) rings->fetch_add(1);
    if (!(leave_open && k == cycles - 1)) shim::EndNote(n);
  }
}

TEST_F(StateTest, ManyThreadsNoteWhileTheTraceIsReadLive) {
  constexpr int kThreads = 8, kCycles = 20000;
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::atomic<int> rings{0}, done{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      NoteLoop(i + 1, kCycles, /*leave_open=*/true, &rings);
      done.fetch_add(1);
      while (done.load() >= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // stays alive, noted
    });
  }
  // Live reads, as an outside reader's: each parses, and whatever in_flight it shows is
  // one of the threads' reads.
  int reads = 0;
  while (done.load() < kThreads || reads < 3) {
    std::string err;
    auto t = colabtrace::analyzer::ReadTraceFile(s.path(), &err);
    ASSERT_TRUE(t.has_value()) << err;
    for (const auto& f : t->records.InFlight) {
      EXPECT_EQ(f.call, static_cast<uint64_t>(fmt::InFlightCall::kRead));
      EXPECT_GE(f.api, 1u);
      EXPECT_LE(f.api, static_cast<uint64_t>(kThreads));
    }
    ++reads;
  }
  // Every thread is now blocked "in" its last read: the file says so, exactly.
  std::string err;
  auto t = colabtrace::analyzer::ReadTraceFile(s.path(), &err);
  ASSERT_TRUE(t.has_value()) << err;
  std::set<std::pair<uint64_t, int64_t>> noted;  // (api: the thread, fd: the cycle)
  for (const auto& f : t->records.InFlight) noted.emplace(f.api, f.fd);
  std::set<std::pair<uint64_t, int64_t>> want;
  for (int i = 1; i <= kThreads; ++i) want.emplace(i, kCycles - 1);
  EXPECT_EQ(noted, want);
  EXPECT_EQ(rings.load(), kThreads);
  done.store(-1000);
  for (auto& th : threads) th.join();
  s.End();
}

TEST_F(StateTest, StepsAreCountedOnceEachFromEveryThread) {
  constexpr int kThreads = 6, kSteps = 5000;
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([] {
      for (int k = 1; k <= kSteps; ++k) {
        shim::ShimScope scope;
        shim::NoteStep(static_cast<uint64_t>(k));
      }
    });
  }
  for (auto& th : threads) th.join();
  const std::vector<uint8_t> bytes = colabtrace::testing::ReadBytes(s.path());
  s.End();
  // The first state chunk's progress block: every step counted.
  fmt::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  bool found = false;
  for (size_t off = h.chunk_size; off + h.chunk_size <= bytes.size(); off += h.chunk_size) {
    fmt::ChunkHeader ch;
    std::memcpy(&ch, bytes.data() + off, sizeof(ch));
    if (ch.magic != fmt::kStateChunkMagic || ch.seq != 0) continue;
    fmt::ProgressBlock p;
    std::memcpy(&p, bytes.data() + off + fmt::kProgressOffset, sizeof(p));
    EXPECT_EQ(p.steps, static_cast<uint64_t>(kThreads) * kSteps);
    EXPECT_GE(p.last_step_ticks, 1u);
    EXPECT_LE(p.last_step_ticks, static_cast<uint64_t>(kSteps));
    found = true;
  }
  EXPECT_TRUE(found);
}

TEST_F(StateTest, AForkWhileOtherThreadsTakeTheLockNeverHangsTheChild) {
  // Four threads ask for launch rings (each ask takes the state lock) as fast as they can
  // while the main thread forks 40 times. A child's first note claims its notes under
  // that lock: had the fork caught another thread holding it, the child (where that
  // thread does not exist) would spin forever, unless the lock is freed in the child
  // first, as AfterForkInChild does (ResetStateLockInChild). No trace is recording, so
  // the asks take the lock and allocate nothing (a recording trace would grow by a chunk
  // every 15 rings: tens of GiB in a second).
  shim::g_recording = false;
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        shim::ShimScope scope;
        (void)shim::AllocLaunchRing();
      }
    });
  }
  for (int f = 0; f < 40; ++f) {
    const pid_t child = fork();
    if (child == 0) {
      shim::ResetStateLockInChild();
      __atomic_add_fetch(&shim::g_generation, 1, __ATOMIC_ACQ_REL);
      shim::g_pid = getpid();
      shim::ThreadState& t = shim::t_thread;
      fmt::ThreadNotes* tn = shim::ThreadNotesOf(t);
      _exit(tn != nullptr && t.notes_gen == shim::g_generation ? 0 : 1);
    }
    int status = -1;
    for (int waited = 0; waited < 500 && waitpid(child, &status, WNOHANG) == 0; ++waited) usleep(10000);
    if (status == -1) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      ADD_FAILURE() << "fork " << f << ": the child hung at its first note";
    } else {
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    }
  }
  stop.store(true);
  for (auto& th : threads) th.join();
}

}  // namespace
