// The I/O aggregate table (shim/io/io_agg.*) on the shim's real writer: slots claimed and
// found again by path, the file slots full (new files summed per directory from then
// on, the files kept going on), many threads claiming slots and adding to one slot at
// once, and 16-bit counts wrapping on many threads at once (each wrap carried into the
// slot's high slot, claimed by one of them), and past the file slots the heavy-hitter
// table (format/io_heavy.h: entries taken, held, folded into their directory's slot, and
// taken again; the rows summing every call once, alone and on many threads), read back
// with the analyzer's reader. Built twice: io_agg_unit_test, and
// tsan.IoAgg* under ThreadSanitizer (tests/core/tsan), which fails on any race.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "io/io_agg.h"
#include "writer_session.h"

namespace {

namespace fmt = colabtrace::format;
namespace shim = colabtrace::shim;
namespace io = colabtrace::shim::io;
using colabtrace::testing::MustRead;
using colabtrace::testing::TempDir;
using colabtrace::testing::WriterSession;

// The slot of path, as a hook finds it (inside the shim's scope, its String interned).
fmt::IoAggSlot* SlotOf(const std::string& path) {
  shim::ShimScope scope;
  EXPECT_TRUE(scope.entered());
  return io::AggSlotOf(path, shim::InternString(path), 0);
}

TEST(IoAgg, FilesThenHeavyEntriesWithTheirDirectoriesClaimed) {
  TempDir dir;
  WriterSession s(dir.path() + "/agg.ctrace");
  ASSERT_TRUE(s.Begin());
  io::ResetAgg();
  // Every file slot taken by /a/f<i>, each opened once; /a/f0 again (the same slot).
  constexpr uint32_t kFiles = fmt::kIoAggFileSlots;
  for (uint32_t i = 0; i < kFiles; ++i) {
    fmt::IoAggSlot* slot = SlotOf("/a/f" + std::to_string(i));
    ASSERT_NE(slot, nullptr) << i;
    io::AggCount(slot, fmt::kIoAggOpens);
  }
  EXPECT_EQ(SlotOf("/a/f0"), SlotOf("/a/f0"));
  io::AggCount(SlotOf("/a/f0"), fmt::kIoAggOpens);
  // 100 new files in /b and 7 in /a: each takes a heavy-hitter entry (107 files over 64
  // sets of 16: none is full), its directory's slot claimed and left empty; /a/f1 keeps
  // its own slot.
  for (int i = 0; i < 100; ++i) io::AggCount(SlotOf("/b/g" + std::to_string(i)), fmt::kIoAggOpens);
  for (int i = 0; i < 7; ++i) io::AggAdd(SlotOf("/a/h" + std::to_string(i))->bytes_read, 10);
  io::AggCount(SlotOf("/a/f1"), fmt::kIoAggOpens);
  s.End();

  const auto t = MustRead(s.path());
  ASSERT_TRUE(t.io_aggregates.present);
  ASSERT_EQ(t.io_aggregates.images.size(), 1u);
  const fmt::IoAggInfo& info = t.io_aggregates.images[0].info;
  EXPECT_EQ(info.file_slots, kFiles);
  EXPECT_EQ(info.files, kFiles);
  EXPECT_EQ(info.directories, 2u);
  EXPECT_NE(info.files_full_ticks, 0u);
  EXPECT_EQ(info.unplaced, 0u);
  EXPECT_EQ(t.io_aggregates.images[0].heavy.entered, 107u);
  EXPECT_EQ(t.io_aggregates.images[0].heavy.folds, 0u);
  ASSERT_EQ(t.io_aggregates.heavy.size(), 107u);
  ASSERT_EQ(t.io_aggregates.slots.size(), kFiles + 2 + 107);
  uint64_t file_opens = 0, late_opens = 0, late_bytes = 0;
  for (const fmt::IoAggSums& slot : t.io_aggregates.slots) {
    const std::string path(t.Str(slot.path));
    if (slot.kind == fmt::kIoAggDirectory) {
      EXPECT_TRUE(path == "/a" || path == "/b") << path;
      EXPECT_EQ(slot.opens, 0u);
      EXPECT_EQ(slot.bytes_read, 0u);
      continue;
    }
    ASSERT_EQ(slot.kind, fmt::kIoAggFile);
    if (path.rfind("/b/g", 0) == 0 || path.rfind("/a/h", 0) == 0) {
      late_opens += slot.opens;
      late_bytes += slot.bytes_read;
      continue;
    }
    EXPECT_EQ(slot.opens, path == "/a/f0" || path == "/a/f1" ? 2u : 1u) << path;
    file_opens += slot.opens;
  }
  EXPECT_EQ(late_opens, 100u);
  EXPECT_EQ(late_bytes, 70u);
  EXPECT_EQ(file_opens, kFiles + 2);
}

TEST(IoAgg, ThreadsClaimAndAddAtOnceLosingNothing) {
  TempDir dir;
  WriterSession s(dir.path() + "/threads.ctrace");
  ASSERT_TRUE(s.Begin());
  io::ResetAgg();
  constexpr int kThreads = 8, kAdds = 21000, kOwn = 300;  // a file of its own every 70th
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i] {
      for (int k = 0; k < kAdds; ++k) {
        // One slot for all (found by each thread's last-slot cache or the index), and
        // now and then a file of the thread's own (claims racing in the index).
        fmt::IoAggSlot* shared = SlotOf("/data/shared.bin");
        ASSERT_NE(shared, nullptr);
        io::AggAdd(shared->bytes_read, 3);
        io::AggCount(shared, static_cast<fmt::IoAggCount>(fmt::kIoAggReadSize + fmt::IoAggSizeBin(3)));
        io::AggMax(shared->max_end, static_cast<uint64_t>(k) * kThreads + static_cast<uint64_t>(i));
        if (k % (kAdds / kOwn) == 0) {
          fmt::IoAggSlot* own = SlotOf("/data/t" + std::to_string(i) + "/f" + std::to_string(k));
          ASSERT_NE(own, nullptr);
          io::AggCount(own, fmt::kIoAggOpens);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  s.End();

  const auto t = MustRead(s.path());
  ASSERT_EQ(t.io_aggregates.slots.size(), 1u + kThreads * kOwn);
  uint64_t own_opens = 0;
  for (const fmt::IoAggSums& slot : t.io_aggregates.slots) {
    if (t.Str(slot.path) == "/data/shared.bin") {
      EXPECT_EQ(slot.bytes_read, 3ull * kThreads * kAdds);
      EXPECT_EQ(slot.read_sizes[0], static_cast<uint64_t>(kThreads) * kAdds);
      EXPECT_EQ(slot.max_end, static_cast<uint64_t>(kAdds - 1) * kThreads + kThreads - 1);
    } else {
      EXPECT_EQ(slot.opens, 1u);
      own_opens += slot.opens;
    }
  }
  EXPECT_EQ(own_opens, static_cast<uint64_t>(kThreads) * kOwn);
}

TEST(IoAgg, CountsWrapOnManyThreadsIntoOneHighSlot) {
  TempDir dir;
  WriterSession s(dir.path() + "/wrap.ctrace");
  ASSERT_TRUE(s.Begin());
  io::ResetAgg();
  // 8 threads count 100,000 zero reads and 9,000 opens each on one file (800,000 and
  // 72,000: 12 and 1 wraps of the 16-bit words, from whichever threads make them), and
  // 65,535 stats on another (no wrap: no high slot).
  constexpr int kThreads = 8, kZero = 100000, kOpens = 9000;
  fmt::IoAggSlot* hot = SlotOf("/data/hot.bin");
  fmt::IoAggSlot* cold = SlotOf("/data/cold.bin");
  ASSERT_NE(hot, nullptr);
  ASSERT_NE(cold, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([hot] {
      shim::ShimScope scope;
      for (int k = 0; k < kZero; ++k) {
        io::AggCount(hot, fmt::kIoAggZeroReads);
        if (k < kOpens) io::AggCount(hot, fmt::kIoAggOpens);
      }
    });
  }
  for (int k = 0; k < 65535; ++k) io::AggCount(cold, fmt::kIoAggStats);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(cold->high, 0u);
  s.End();

  const auto t = MustRead(s.path());
  ASSERT_EQ(t.io_aggregates.slots.size(), 2u);
  EXPECT_EQ(t.io_aggregates.images.at(0).info.high_slots, 1u);
  EXPECT_EQ(t.io_aggregates.images.at(0).info.carries_lost, 0u);
  for (const fmt::IoAggSums& slot : t.io_aggregates.slots) {
    if (t.Str(slot.path) == "/data/hot.bin") {
      EXPECT_EQ(slot.zero_reads, uint64_t{kThreads} * kZero);
      EXPECT_EQ(slot.opens, uint64_t{kThreads} * kOpens);
      EXPECT_EQ(slot.stats, 0u);
    } else {
      EXPECT_EQ(t.Str(slot.path), "/data/cold.bin");
      EXPECT_EQ(slot.stats, 65535u);
      EXPECT_EQ(slot.zero_reads, 0u);
    }
  }
}

// Takes every file slot (/full/f<i>, one open each): later files are past capacity.
void FillFileSlots() {
  for (uint32_t i = 0; i < fmt::kIoAggFileSlots; ++i) {
    fmt::IoAggSlot* slot = SlotOf("/full/f" + std::to_string(i));
    ASSERT_NE(slot, nullptr);
    io::AggCount(slot, fmt::kIoAggOpens);
  }
}

// `calls` opens of path past capacity, each a lookup released after it (as an open
// whose descriptor is closed at once).
void Opens(const std::string& path, int calls) {
  for (int k = 0; k < calls; ++k) {
    shim::ShimScope scope;
    fmt::IoAggSlot* slot = io::AggSlotOf(path, shim::InternString(path), 0);
    ASSERT_NE(slot, nullptr);
    io::AggCount(slot, fmt::kIoAggOpens);
    io::AggRelease(slot);
  }
}

// The opens of the trace's rows under dir: each kept heavy file's (by path), and the
// directory row's (key dir + "/").
std::map<std::string, uint64_t> OpensUnder(const colabtrace::analyzer::ProcessTrace& t, const std::string& dir) {
  std::map<std::string, uint64_t> out;
  for (const fmt::IoAggSums& slot : t.io_aggregates.slots) {
    const std::string path(t.Str(slot.path));
    if (slot.kind == fmt::kIoAggDirectory && path == dir) out[dir + "/"] += slot.opens;
    if (slot.kind == fmt::kIoAggFile && path.rfind(dir + "/", 0) == 0) out[path] += slot.opens;
  }
  return out;
}

uint64_t Total(const std::map<std::string, uint64_t>& rows) {
  uint64_t n = 0;
  for (const auto& [path, opens] : rows) n += opens;
  return n;
}

TEST(IoAgg, HeavyHittersKeepTheLateHeavyFileAndFoldTheRestOnce) {
  TempDir dir;
  WriterSession s(dir.path() + "/heavy.ctrace");
  ASSERT_TRUE(s.Begin());
  io::ResetAgg();
  FillFileSlots();
  // 3,000 files opened once, then /late/hot 5,000 times, then 3,000 more once: far more
  // files than the table's 1,024 entries. The hot file is never the least of its set
  // after it entered, so it keeps its entry; every open is in one row only.
  for (int i = 0; i < 3000; ++i) Opens("/late/a" + std::to_string(i), 1);
  Opens("/late/hot", 5000);
  for (int i = 0; i < 3000; ++i) Opens("/late/b" + std::to_string(i), 1);
  s.End();

  const auto t = MustRead(s.path());
  const auto rows = OpensUnder(t, "/late");
  EXPECT_EQ(Total(rows), 6000u + 5000u);
  ASSERT_EQ(rows.count("/late/hot"), 1u);
  EXPECT_EQ(rows.at("/late/hot"), 5000u);
  EXPECT_EQ(rows.at("/late/"), 11000u - (rows.size() - 1) - 4999u);  // one open a kept file
  EXPECT_LE(t.io_aggregates.heavy.size(), fmt::kIoHeavyEntries);
  EXPECT_EQ(t.io_aggregates.heavy.size(), rows.size() - 1);
  const fmt::IoHeavyInfo& info = t.io_aggregates.images.at(0).heavy;
  EXPECT_EQ(info.entries, fmt::kIoHeavyEntries);
  EXPECT_EQ(info.entered, 6001u);
  EXPECT_EQ(info.folds, 6001u - t.io_aggregates.heavy.size());
  EXPECT_EQ(info.missed, 0u);
  // The hot file's bound (its set's floor when it entered) is at least 1 once its set had
  // folded a file out, and at most the opens its set had seen: one per earlier file.
  const auto set_of = [](const std::string& p) { return fmt::IoHeavySetOf(shim::HashBytes(p.data(), p.size())); };
  uint64_t before = 0;
  for (int i = 0; i < 3000; ++i) before += set_of("/late/a" + std::to_string(i)) == set_of("/late/hot");
  for (const auto& h : t.io_aggregates.heavy) {
    EXPECT_GE(h.from_ns, t.start_ns());
    if (t.Str(h.path) != "/late/hot") continue;
    EXPECT_LE(h.error, before);
    if (before > fmt::kIoHeavyWays) EXPECT_GE(h.error, 1u);
  }
}

TEST(IoAgg, HeavyHittersAmongManyColdFilesAreKeptExactFromTheirFirstCall) {
  TempDir dir;
  WriterSession s(dir.path() + "/skewed.ctrace");
  ASSERT_TRUE(s.Begin());
  io::ResetAgg();
  FillFileSlots();
  // 1,000 rounds: each of 10 hot files opened once, then 20 files never seen before
  // (20,000 cold files, 20 times the table). A hot file enters at its first open, into a
  // set with no fold yet, and is never again its set's lightest: its row holds all its
  // 1,000 opens, its bound 0; the cold files' entries changed hands thousands of times.
  constexpr int kRounds = 1000, kHot = 10, kCold = 20;
  for (int r = 0; r < kRounds; ++r) {
    for (int h = 0; h < kHot; ++h) Opens("/mix/hot" + std::to_string(h), 1);
    for (int c = 0; c < kCold; ++c) Opens("/mix/c" + std::to_string(r * kCold + c), 1);
  }
  s.End();

  const auto t = MustRead(s.path());
  const auto rows = OpensUnder(t, "/mix");
  EXPECT_EQ(Total(rows), uint64_t{kRounds} * (kHot + kCold));
  for (int h = 0; h < kHot; ++h) {
    const std::string path = "/mix/hot" + std::to_string(h);
    ASSERT_EQ(rows.count(path), 1u) << path;
    EXPECT_EQ(rows.at(path), uint64_t{kRounds}) << path;
  }
  for (const auto& heavy : t.io_aggregates.heavy) {
    if (t.Str(heavy.path).rfind("/mix/hot", 0) == 0) EXPECT_EQ(heavy.error, 0u) << t.Str(heavy.path);
  }
  EXPECT_GT(t.io_aggregates.images.at(0).heavy.folds, uint64_t{kRounds} * kCold - fmt::kIoHeavyEntries);
}

TEST(IoAgg, HeavyEntryHeldByADescriptorNeverChangesHands) {
  TempDir dir;
  WriterSession s(dir.path() + "/held.ctrace");
  ASSERT_TRUE(s.Begin());
  io::ResetAgg();
  FillFileSlots();
  // /late/kept is held (a descriptor open on it) while 2,000 files pass through every
  // set; reads through the descriptor keep adding to its own entry.
  fmt::IoAggSlot* kept = nullptr;
  {
    shim::ShimScope scope;
    kept = io::AggSlotOf("/late/kept", shim::InternString("/late/kept"), 0);
  }
  ASSERT_NE(kept, nullptr);
  ASSERT_TRUE(io::AggHeld(kept));
  io::AggCount(kept, fmt::kIoAggOpens);
  for (int i = 0; i < 2000; ++i) {
    Opens("/late/c" + std::to_string(i), 1);
    io::AggCount(kept, fmt::kIoAggZeroReads);
  }
  io::AggRelease(kept);  // the descriptor closed: now it may fold
  for (int i = 0; i < 2000; ++i) Opens("/late/d" + std::to_string(i), 1);
  s.End();

  const auto t = MustRead(s.path());
  uint64_t zero_reads = 0;
  for (const fmt::IoAggSums& slot : t.io_aggregates.slots) {
    if (t.Str(slot.path) == "/late/kept" || t.Str(slot.path) == "/late") zero_reads += slot.zero_reads;
  }
  EXPECT_EQ(zero_reads, 2000u);  // in its entry, or folded whole into the directory
  EXPECT_EQ(Total(OpensUnder(t, "/late")), 4001u);
}

TEST(IoAgg, HeavyHittersOnManyThreadsSumEveryCallOnce) {
  TempDir dir;
  WriterSession s(dir.path() + "/heavy_threads.ctrace");
  ASSERT_TRUE(s.Begin());
  io::ResetAgg();
  FillFileSlots();
  // 8 threads: each opens 1,500 files of its own and /late/shared between them, so
  // entries are taken, held, folded and taken again on many threads at once.
  constexpr int kThreads = 8, kOwn = 1500;
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i] {
      for (int k = 0; k < kOwn; ++k) {
        Opens("/late/t" + std::to_string(i) + "_" + std::to_string(k), 1);
        Opens("/late/shared", 1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  s.End();

  const auto t = MustRead(s.path());
  const auto rows = OpensUnder(t, "/late");
  EXPECT_EQ(Total(rows), 2u * kThreads * kOwn);
  EXPECT_LE(t.io_aggregates.heavy.size(), fmt::kIoHeavyEntries);
}

}  // namespace
