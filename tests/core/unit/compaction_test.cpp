// The compaction of an ended trace (analyzer/trace/trace_compaction.h, issue 39): a trace
// written by the shim's real writer through a rolled 1 MiB window (after 40 threads that
// exited, format 1.5) loses its event chunks
// and keeps every other record, with the same events_total (and keeps its events when it
// has no aggregate chunk to stand in for them); and a compaction SIGKILLed
// before any of its system calls leaves a trace that reads whole (the original, or the
// compacted copy), never a damaged one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "trace/trace_compaction.h"
#include "writer_session.h"

namespace colabtrace::testing {
namespace {

using analyzer::CompactionResult;
using analyzer::CompactTrace;
using analyzer::ProcessTrace;
namespace fmt = ::colabtrace::format;

constexpr uint64_t kEvents = 600000;  // 2 writers, about 3 MB of events
constexpr int kNotes = 50;
constexpr uint64_t kExited = 40, kPerExited = 1000;  // of kEvents: threads that exited
constexpr uint64_t kMain = kEvents - kExited * kPerExited;  // the two writers', ts 1000 on

// A trace of two writers' events through a 1 MiB window, with ShimNotes (never dropped)
// among them, after 40 threads that wrote 1,000 events each and exited (their events
// counted in the header's events_retired, format 1.5).
void WriteRolledTrace(const std::string& path) {
  WindowLimits limits(1u << 20, 0, 64u << 20);
  WriterSession s(path);
  ASSERT_TRUE(s.Begin());
  for (uint64_t i = 0; i < kExited; ++i) {
    std::thread([i] {
      for (uint64_t k = 0; k < kPerExited; ++k) PutEvent(static_cast<int>(2 + i), k, 500 + k);
      shim::RetireThread();
    }).join();
  }
  for (uint64_t k = 0; k < kMain; ++k) {
    PutEvent(static_cast<int>(k % 2), k, 1000 + k);
    if (k % (kMain / kNotes) == 0) {
      fmt::ShimNote n;
      n.ts = 1000 + k;
      n.code = k;
      Put(n);
    }
  }
  s.End();
}

// Appends an I/O aggregate chunk (CTIA, no slot claimed) to the trace at `path`, as the
// file I/O module (not linked here) would have written: the sums that stand in for the
// events a compaction removes.
void AppendAggregateChunk(const std::string& path) {
  std::vector<uint8_t> bytes = ReadBytes(path);
  bytes.resize((bytes.size() + fmt::kChunkSize - 1) / fmt::kChunkSize * fmt::kChunkSize, 0);
  std::vector<uint8_t> chunk(fmt::kChunkSize, 0);
  fmt::ChunkHeader ch = {};
  ch.magic = fmt::kIoAggChunkMagic;
  std::memcpy(chunk.data(), &ch, sizeof(ch));
  bytes.insert(bytes.end(), chunk.begin(), chunk.end());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(bytes.data()),
                                                                static_cast<std::streamsize>(bytes.size()));
}

class CompactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteRolledTrace(bare_);
    std::filesystem::copy_file(bare_, original_);
    AppendAggregateChunk(original_);
    before_ = MustRead(original_);
    ASSERT_EQ(before_.window.events_total, kEvents);
    ASSERT_EQ(before_.header.events_retired, kExited * kPerExited);
    ASSERT_LT(before_.window.events_in_full, kEvents / 2);  // the window rolled
    ASSERT_GT(before_.window.events_in_full, 0u);
    ASSERT_EQ(before_.records.ShimNote.size(), static_cast<size_t>(kNotes));
  }

  // What every readable state of the file must say: the same notes and events_total.
  void ExpectWhole(const ProcessTrace& t) {
    EXPECT_EQ(t.window.events_total, kEvents);
    ASSERT_EQ(t.records.ShimNote.size(), static_cast<size_t>(kNotes));
    for (size_t i = 0; i < t.records.ShimNote.size(); ++i) {
      EXPECT_EQ(t.records.ShimNote[i].code, before_.records.ShimNote[i].code);
      EXPECT_EQ(t.records.ShimNote[i].ts, before_.records.ShimNote[i].ts);
    }
    EXPECT_TRUE(t.ended);
  }

  bool LeftCopy() const {
    for (const auto& e : std::filesystem::directory_iterator(dir_.path())) {
      if (e.path().filename().string().ends_with(".compacting")) return true;
    }
    return false;
  }

  TempDir dir_;
  std::string bare_ = dir_.path() + "/bare.ctrace";  // without aggregate chunks
  std::string original_ = dir_.path() + "/orig.ctrace";
  std::string path_ = dir_.path() + "/colabtrace.python3.77.ctrace";
  ProcessTrace before_;
};

TEST_F(CompactionTest, KeepsEveryRecordButTheEventsAndCountsThem) {
  std::filesystem::copy_file(original_, path_);
  const uint64_t copied = analyzer::DiskBytes(path_);  // copy_file fills the original's holes
  const CompactionResult r = CompactTrace(path_);
  ASSERT_TRUE(r.compacted) << r.error;
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.events, kEvents);
  EXPECT_GT(r.event_chunks, 0u);
  EXPECT_EQ(r.bytes_before, copied);
  EXPECT_EQ(r.bytes_after, analyzer::DiskBytes(path_));
  // The event chunks held 1 MiB and more; what is left is a few record chunks.
  EXPECT_LT(r.bytes_after + (1u << 20), r.bytes_before);
  EXPECT_FALSE(LeftCopy());
  const ProcessTrace t = MustRead(path_);
  ExpectWhole(t);
  EXPECT_TRUE(t.window.compacted);
  EXPECT_EQ(t.header.events_retired, 0u) << "counted in the trace_compacted record";
  EXPECT_FALSE(before_.window.compacted);
  EXPECT_EQ(t.window.events_in_full, 0u);
  EXPECT_TRUE(t.records.IoRead.empty());
  EXPECT_EQ(t.window.full_from_ns, t.end_ns());
  // The last event given up was the trace's last record: it still ends then.
  EXPECT_EQ(t.end_ns(), before_.end_ns());
  EXPECT_EQ(t.end_ns(), 1000 + kMain - 1);
  EXPECT_EQ(t.records.TraceCompacted[0].ts, 1000 + kMain - 1);
  ASSERT_EQ(t.records.TraceCompacted.size(), 1u);
  EXPECT_EQ(t.records.TraceCompacted[0].events, kEvents);
  EXPECT_EQ(t.records.TraceCompacted[0].event_chunks, r.event_chunks);
  EXPECT_EQ(t.records.TraceCompacted[0].bytes_before, r.bytes_before);
  EXPECT_EQ(t.header.next_chunk_offset, FileSize(path_));
  // Nothing left to drop: a second compaction leaves the file as it is.
  const CompactionResult again = CompactTrace(path_);
  EXPECT_FALSE(again.compacted);
  EXPECT_EQ(again.error, "");
  EXPECT_EQ(again.bytes_after, r.bytes_after);
  EXPECT_EQ(MustRead(path_).records.TraceCompacted.size(), 1u);
}

// Without aggregate chunks nothing holds the events' sums: they stay, and only the chunks
// never used go.
TEST_F(CompactionTest, WithoutAggregatesTheEventsStay) {
  std::filesystem::copy_file(bare_, path_);
  const CompactionResult r = CompactTrace(path_);
  EXPECT_EQ(r.error, "");
  EXPECT_EQ(r.events, 0u);
  EXPECT_EQ(r.event_chunks, 0u);
  const ProcessTrace t = MustRead(path_);
  ExpectWhole(t);
  EXPECT_EQ(t.window.events_in_full, before_.window.events_in_full);
  EXPECT_EQ(t.records.IoRead.size(), before_.records.IoRead.size());
  EXPECT_EQ(t.window.full_from_ns, before_.window.full_from_ns);
  EXPECT_EQ(t.records.TraceCompacted.size(), r.compacted ? 1u : 0u);
}

TEST_F(CompactionTest, SigkillBeforeAnyStepLeavesAWholeTrace) {
  // The steps of an uninterrupted compaction.
  std::filesystem::copy_file(original_, path_);
  int steps = 0;
  ASSERT_TRUE(CompactTrace(path_, [&](int) { ++steps; }).compacted);
  ASSERT_GT(steps, 5);
  int originals = 0, compacted = 0;
  for (int k = 0; k < steps; ++k) {
    SCOPED_TRACE(k);
    std::filesystem::copy_file(original_, path_, std::filesystem::copy_options::overwrite_existing);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      CompactTrace(path_, [k](int step) {
        if (step == k) raise(SIGKILL);
      });
      _exit(0);
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
    const ProcessTrace t = MustRead(path_);
    ExpectWhole(t);
    if (t.window.compacted) {
      ++compacted;
      EXPECT_EQ(t.window.events_in_full, 0u);
    } else {
      ++originals;
      EXPECT_EQ(t.window.events_in_full, before_.window.events_in_full);
      EXPECT_TRUE(ReadBytes(path_) == ReadBytes(original_)) << "the original, byte for byte";
    }
    // The next compaction removes a copy the kill left, and finishes.
    const CompactionResult r = CompactTrace(path_);
    EXPECT_EQ(r.error, "");
    EXPECT_FALSE(LeftCopy());
    ExpectWhole(MustRead(path_));
  }
  // Every kill came before the rename: the name always held the original.
  EXPECT_EQ(originals, steps);
  EXPECT_EQ(compacted, 0);
}

}  // namespace
}  // namespace colabtrace::testing
