// The I/O aggregate table (shim/io/io_agg.*) on the shim's real writer: slots claimed and
// found again by path, the file slots full (new files summed per directory from then
// on, the files kept going on), many threads claiming slots and adding to one slot at
// once, and 16-bit counts wrapping on many threads at once (each wrap carried into the
// slot's high slot, claimed by one of them), read back with the analyzer's reader. Built twice: io_agg_unit_test, and
// tsan.IoAgg* under ThreadSanitizer (tests/core/tsan), which fails on any race.
#include <gtest/gtest.h>

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

TEST(IoAgg, FilesThenTheirDirectoriesExactly) {
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
  // 100 new files in /b and 7 in /a: their directories' slots; /a/f1 keeps its own.
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
  ASSERT_EQ(t.io_aggregates.slots.size(), kFiles + 2);
  uint64_t file_opens = 0;
  for (const fmt::IoAggSums& slot : t.io_aggregates.slots) {
    const std::string path(t.Str(slot.path));
    if (slot.kind == fmt::kIoAggDirectory) {
      if (path == "/b") {
        EXPECT_EQ(slot.opens, 100u);
      } else {
        EXPECT_EQ(path, "/a");
        EXPECT_EQ(slot.opens, 0u);
        EXPECT_EQ(slot.bytes_read, 70u);
      }
      continue;
    }
    ASSERT_EQ(slot.kind, fmt::kIoAggFile);
    EXPECT_EQ(slot.opens, path == "/a/f0" || path == "/a/f1" ? 2u : 1u) << path;
    file_opens += slot.opens;
  }
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

}  // namespace
