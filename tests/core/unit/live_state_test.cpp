// `colabtrace run`'s outside reader of a live state chunk (analyzer/trace/live_state.h)
// against a writer in another process: the child rewrites its call notes and counts steps
// with the shim's own code (shim/state.h) as fast as it can, through its MAP_SHARED
// mapping of the trace, while this process reads the chunk thousands of times. Every
// field of a note is derived from its `since`, so a read that mixes two notes shows; every
// read must give whole notes and a progress block that held at one moment, or reject
// them (no call, not settled), never a mix.
//
// How a pread copies the page is the kernel's business: here (x86-64, fast string moves)
// it happened to copy each 64-byte note whole in 20,000 reads, while arm64's copy moves 16
// bytes at a time. So the reader is also tried through a copy that tears: word by word,
// last word first, each word its own pread, one of the orders a copy may take.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "state.h"
#include "trace/live_state.h"
#include "writer_session.h"

namespace {

namespace fmt = colabtrace::format;
namespace shim = colabtrace::shim;
namespace analyzer = colabtrace::analyzer;
using colabtrace::testing::TempDir;
using colabtrace::testing::WriterSession;

// The n-th note's fields (n from 1; its since is n), and the n-th step's tick count.
uint32_t CallOf(uint64_t n) { return 1 + static_cast<uint32_t>(n % 10); }
uint32_t ApiOf(uint64_t n) { return static_cast<uint32_t>(n * 3); }
uint64_t ObjectOf(uint64_t n) { return n * 7919; }
uint64_t EpochOf(uint64_t n) { return n * 31; }
uint64_t WhereOf(uint64_t n) { return n * 104729; }
uint32_t FlagsOf(uint64_t n) { return static_cast<uint32_t>(n & 1); }
uint64_t StepTicksOf(uint64_t n) { return n * 1000; }

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The child: note n on both levels, count step n, end both notes; again, for ever. Every
// 1024th call blocks for 100 us (a reader that only accepts notes that hold still must
// get some), the rest return at once. Ends when its parent goes.
[[noreturn]] void RewriteNotes(pid_t parent) {
  for (uint64_t n = 1;; ++n) {
    shim::ShimScope scope;
    fmt::CallNote* call = shim::BeginNoteFull(&fmt::ThreadNotes::call, static_cast<fmt::InFlightCall>(CallOf(n)),
                                              ApiOf(n), n, ObjectOf(n), EpochOf(n), FlagsOf(n), WhereOf(n));
    fmt::CallNote* wait = shim::BeginNoteFull(&fmt::ThreadNotes::wait, static_cast<fmt::InFlightCall>(CallOf(n + 5)),
                                              ApiOf(n), n, ObjectOf(n), EpochOf(n), FlagsOf(n), WhereOf(n));
    shim::NoteStep(StepTicksOf(n));
    if (n % 1024 == 0) {
      if (getppid() != parent) _exit(0);
      for (const uint64_t until = NowNs() + 100'000; NowNs() < until;) {
      }
    }
    shim::EndNote(wait);
    shim::EndNote(call);
  }
}

// The fields of a note read with call set: those of one note (level 1's call is 5 on).
bool Whole(const fmt::CallNote& c, uint32_t call_shift) {
  const uint64_t n = c.since;
  return n >= 1 && c.call == CallOf(n + call_shift) && c.api == ApiOf(n) && c.object == ObjectOf(n) &&
         c.epoch == EpochOf(n) && c.flags == FlagsOf(n) && c.where == WhereOf(n);
}

// A copy of the chunk that tears: the bytes in [dense_from, dense_to) of the chunk are
// read 8 at a time, the last first, each with its own pread; the rest with one pread.
analyzer::StateChunkRead WordByWord(int fd, uint64_t chunk_offset, uint64_t dense_from, uint64_t dense_to) {
  const analyzer::StateChunkRead whole = analyzer::PreadStateChunk(fd, chunk_offset);
  return [=](uint64_t at, size_t n, uint8_t* dst) {
    const uint64_t from = std::max(at, dense_from), to = std::min<uint64_t>(at + n, dense_to);
    if (from >= to) return whole(at, n, dst);
    if (from > at && !whole(at, from - at, dst)) return false;
    if (to < at + n && !whole(to, at + n - to, dst + (to - at))) return false;
    for (uint64_t w = to; w > from;) {
      const uint64_t start = w - std::min<uint64_t>(8, w - from);
      if (!whole(start, w - start, dst + (start - at))) return false;
      w = start;
    }
    return true;
  };
}

enum class Copy { kPread, kWordByWord };

// Reads the child's notes and progress again and again for at most 1.5 s (20,000 reads),
// and checks each read as the file comment says.
void ReadWhileAnotherProcessWrites(Copy copy) {
  TempDir dir;
  WriterSession s(dir.path() + "/live.ctrace");
  ASSERT_TRUE(s.Begin());
  {
    shim::ShimScope scope;
    ASSERT_NE(shim::ThreadNotesOf(shim::t_thread), nullptr);  // takes the first state chunk
  }
  // The first state chunk's offset, as HangWatch finds it, and our entry in it.
  const int fd = open(s.path().c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  uint64_t state_at = 0;
  for (uint64_t off = fmt::kChunkSize; state_at == 0; off += fmt::kChunkSize) {
    fmt::ChunkHeader ch;
    ASSERT_EQ(pread(fd, &ch, sizeof(ch), static_cast<off_t>(off)), static_cast<ssize_t>(sizeof(ch)));
    if (ch.magic == fmt::kStateChunkMagic && ch.seq == 0) state_at = off;
  }
  const uint32_t tid = static_cast<uint32_t>(gettid());
  size_t entry = fmt::kNotesPerChunk;
  {
    const analyzer::LiveNotes first = analyzer::ReadLiveNotes(analyzer::PreadStateChunk(fd, state_at));
    for (size_t i = 0; i < first.notes.size(); ++i) {
      if (first.notes[i].tid == tid) entry = i;
    }
  }
  ASSERT_LT(entry, fmt::kNotesPerChunk) << "the writing thread's notes, claimed before the fork";
  const uint64_t entry_at = fmt::kNotesOffset + entry * sizeof(fmt::ThreadNotes);
  const analyzer::StateChunkRead notes_read =
      copy == Copy::kPread ? analyzer::PreadStateChunk(fd, state_at)
                           : WordByWord(fd, state_at, entry_at, entry_at + sizeof(fmt::ThreadNotes));
  const analyzer::StateChunkRead progress_read =
      copy == Copy::kPread
          ? analyzer::PreadStateChunk(fd, state_at)
          : WordByWord(fd, state_at, fmt::kProgressOffset, fmt::kProgressOffset + sizeof(fmt::ProgressBlock));

  const pid_t parent = getpid();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) RewriteNotes(parent);
  struct Reap {
    pid_t pid;
    ~Reap() {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  } reap{child};

  int reads = 0, torn_notes = 0, torn_progress = 0, whole_notes = 0, settled_progress = 0;
  uint64_t last_steps = 0;
  const uint64_t until = NowNs() + 1'500'000'000;
  for (; reads < 20000 && NowNs() < until; ++reads) {
    const analyzer::LiveNotes live = analyzer::ReadLiveNotes(notes_read);
    ASSERT_TRUE(live.read);
    const fmt::ThreadNotes& mine = live.notes[entry];
    if (mine.tid != 0) EXPECT_EQ(mine.tid, tid);  // 0: rejected whole
    for (const auto& [note, shift] : {std::pair{&mine.call, 0u}, std::pair{&mine.wait, 5u}}) {
      if (note->call == 0) continue;  // no call, or rejected
      if (Whole(*note, shift)) {
        ++whole_notes;
      } else if (++torn_notes <= 3) {
        ADD_FAILURE() << "read " << reads << ": a note mixed from two: call " << note->call << " api "
                      << note->api << " since " << note->since << " object " << note->object << " epoch "
                      << note->epoch << " where " << note->where;
      }
    }
    const analyzer::LiveProgress p = analyzer::ReadLiveProgress(progress_read);
    ASSERT_TRUE(p.read);
    if (!p.settled) continue;
    ++settled_progress;
    // The shim stores the step's ticks, then counts it: (n, ticks of n) or, between the
    // two stores, (n, ticks of n + 1) held at some moment; anything else is a mix.
    const uint64_t steps = p.block.steps, ticks = p.block.last_step_ticks;
    const bool whole = ticks == StepTicksOf(steps) || ticks == StepTicksOf(steps + 1);
    if ((!whole || steps < last_steps) && ++torn_progress <= 3) {
      ADD_FAILURE() << "read " << reads << ": progress mixed: steps " << steps << ", last step ticks " << ticks
                    << " (steps before: " << last_steps << ")";
    }
    last_steps = std::max(last_steps, steps);
  }
  close(fd);
  std::printf("%d reads: %d whole notes, %d settled progress blocks, %d mixed notes, %d mixed blocks\n", reads,
              whole_notes, settled_progress, torn_notes, torn_progress);
  EXPECT_EQ(torn_notes, 0) << "of " << reads << " reads";
  EXPECT_EQ(torn_progress, 0) << "of " << reads << " reads";
  // Not vacuous: the child ran, and whole notes and settled progress were read.
  EXPECT_GE(reads, 500);
  EXPECT_GT(last_steps, 10000u);
  EXPECT_GE(whole_notes, 100) << "of " << reads << " reads";
  EXPECT_GE(settled_progress, 100) << "of " << reads << " reads";
  s.End();
}

TEST(LiveStateTest, NotesRewrittenInAnotherProcessReadWholeOrRejected) {
  ReadWhileAnotherProcessWrites(Copy::kPread);
}

TEST(LiveStateTest, NotesRewrittenInAnotherProcessReadWholeOrRejectedThroughACopyThatTears) {
  ReadWhileAnotherProcessWrites(Copy::kWordByWord);
}

}  // namespace
