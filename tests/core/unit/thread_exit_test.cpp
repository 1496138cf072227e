// Threads that record and exit while another thread reads the trace, as `colabtrace run`
// and a report of a live job read it: an exiting thread leaves its last chunk part full
// and never comes back to it, and every read in the meantime either parses, with each
// thread's records whole and in order up to where it had got, or is rejected with an
// error, never misread. Built twice: as core.ThreadExit* in core_unit_test, and as
// tsan.ThreadExit* under ThreadSanitizer (tests/core/tsan), which fails on any race
// among the writer's threads as they come and go.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <thread>
#include <vector>

#include "writer_session.h"

namespace {

namespace fmt = colabtrace::format;
namespace shim = colabtrace::shim;
using colabtrace::analyzer::ProcessTrace;
using namespace colabtrace::testing;  // TempDir, WriterSession, MustRead

// What a writer thread records: ShimNote records, code its index + 1, value its count
// 0, 1, 2, ... and ts derived from both, so a reader can tell a whole record from a
// damaged one and a thread's prefix from a gap.
uint64_t TsOf(uint64_t code, uint64_t k) { return 1'000'000 + code * 7 + k * 131; }

void WriteAndExit(uint64_t code, uint64_t records) {
  for (uint64_t k = 0; k < records; ++k) {
    fmt::ShimNote n;
    n.ts = TsOf(code, k);
    n.code = code;
    n.value = k;
    n.text = k % 3;
    shim::ShimScope scope;
    shim::Emit(n);
  }
}

// Checks one read of the trace: each writer's records are 0..n-1, whole. Returns the
// number of records seen.
size_t CheckPrefixes(const ProcessTrace& t) {
  std::map<uint64_t, uint64_t> next;  // code -> the next value expected
  for (const auto& r : t.records.ShimNote) {
    uint64_t& want = next[r.code];
    EXPECT_EQ(r.value, want) << "writer " << r.code << ": a gap or a damaged record";
    EXPECT_EQ(r.ts, TsOf(r.code, r.value));
    EXPECT_EQ(r.text, r.value % 3);
    want = r.value + 1;
  }
  return t.records.ShimNote.size();
}

class ThreadExitTest : public ::testing::Test {
 protected:
  std::string TracePath() { return dir_.path() + "/exit.ctrace"; }
  TempDir dir_;
};

TEST_F(ThreadExitTest, ThreadsExitWhileTheirChunksAreReadAndEveryReadIsWholeOrRejected) {
  // 48 threads, 4 at a time, each writing a different number of records (some less than
  // a chunk, some several) and exiting, while the main thread reads the trace again and
  // again with the analyzer's reader.
  constexpr int kThreads = 48, kAtOnce = 4;
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::atomic<bool> written{false};
  std::atomic<uint64_t> total{0};
  std::thread spawner([&] {
    for (int base = 0; base < kThreads; base += kAtOnce) {
      std::vector<std::thread> wave;
      for (int i = base; i < base + kAtOnce; ++i) {
        const uint64_t records = 50 + static_cast<uint64_t>(i) * 397 % 9000;
        total.fetch_add(records);
        wave.emplace_back(WriteAndExit, static_cast<uint64_t>(i + 1), records);
      }
      for (auto& th : wave) th.join();
    }
    written.store(true);
  });
  int reads = 0, rejected = 0;
  size_t seen = 0;
  while (!written.load() || reads < 5) {
    std::string err;
    auto t = colabtrace::analyzer::ReadTraceFile(s.path(), &err);
    ++reads;
    if (!t) {
      EXPECT_FALSE(err.empty()) << "a rejected read says why";
      ++rejected;
      continue;
    }
    // The writer commits each record last: a live trace reads without damage.
    EXPECT_TRUE(t->warnings.empty()) << "read " << reads << ": " << t->warnings.front();
    const size_t n = CheckPrefixes(*t);
    EXPECT_GE(n, seen) << "a later read lost records";  // the file only grows
    seen = std::max(seen, n);
    if (::testing::Test::HasFailure()) break;
  }
  spawner.join();
  s.End();
  EXPECT_LT(rejected, reads) << "the live trace was readable";
  // Once every thread has gone, the file holds every record of every thread.
  const ProcessTrace t = MustRead(s.path());
  EXPECT_EQ(CheckPrefixes(t), total.load());
  std::map<uint64_t, uint64_t> per_writer;
  for (const auto& r : t.records.ShimNote) ++per_writer[r.code];
  EXPECT_EQ(per_writer.size(), static_cast<size_t>(kThreads));
}

}  // namespace
