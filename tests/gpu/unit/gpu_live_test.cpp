// The GPU live set (format/gpu_live.h): the lock-free table the shim keeps live
// allocations in, and the analyzer's replay seeded from it when the window gave up
// GpuAlloc and GpuFree records (gpu/allocation_timeline.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <thread>
#include <tuple>
#include <vector>

#include "colabtrace/format/gpu_live.h"
#include "gpu/allocation_timeline.h"
#include "trace_builder.h"

namespace colabtrace::analyzer {
namespace {

using format::GpuLiveSlot;
using Api = format::GpuApi;
constexpr uint64_t MiB = 1ull << 20;

// A table over memory of its own.
struct LocalTable {
  std::vector<GpuLiveSlot> slots = std::vector<GpuLiveSlot>(format::kGpuLiveSlots);
  struct At {
    std::vector<GpuLiveSlot>* s;
    GpuLiveSlot& operator()(uint32_t i) const { return (*s)[i]; }
  };
  format::GpuLiveTable<At> table{At{&slots}};
  bool Insert(uint64_t key, uint64_t size) {
    GpuLiveSlot s{};
    s.key = key;
    s.size = size;
    s.ticks = key * 3;
    GpuLiveSlot old;
    bool was = false;
    return table.Insert(s, &old, &was);
  }
  std::map<uint64_t, uint64_t> Live() const {
    std::map<uint64_t, uint64_t> m;
    for (const GpuLiveSlot& s : slots) {
      if (s.key > format::kGpuLiveBusy) m[s.key] = s.size;
    }
    return m;
  }
};

// Keys whose probes all start at one slot.
std::vector<uint64_t> SameHome(size_t n) {
  std::vector<uint64_t> keys;
  const uint32_t home = format::GpuLiveHome(0x7000000000ull, format::kGpuLiveSlots);
  for (uint64_t k = 0x7000000000ull; keys.size() < n; k += 512) {
    if (format::GpuLiveHome(k, format::kGpuLiveSlots) == home) keys.push_back(k);
  }
  return keys;
}

TEST(GpuLiveTable, InsertTakeAndReplace) {
  LocalTable t;
  for (uint64_t i = 1; i <= 1000; ++i) ASSERT_TRUE(t.Insert(i << 21, i));
  EXPECT_EQ(t.Live().size(), 1000u);
  GpuLiveSlot out;
  ASSERT_TRUE(t.table.Take(7ull << 21, &out));
  EXPECT_EQ(out.key, 7ull << 21);
  EXPECT_EQ(out.size, 7u);
  EXPECT_EQ(out.ticks, (7ull << 21) * 3);
  EXPECT_FALSE(t.table.Take(7ull << 21, &out));  // taken already
  EXPECT_FALSE(t.table.Take(0, &out));
  EXPECT_EQ(t.Live().size(), 999u);
  // An address allocated again without a free seen: its slot is rewritten, the old one given.
  GpuLiveSlot s{};
  s.key = 9ull << 21;
  s.size = 99;
  GpuLiveSlot old{};
  bool was = false;
  ASSERT_TRUE(t.table.Insert(s, &old, &was));
  EXPECT_TRUE(was);
  EXPECT_EQ(old.size, 9u);
  EXPECT_EQ(t.Live().at(9ull << 21), 99u);
  EXPECT_EQ(t.Live().size(), 999u);
}

TEST(GpuLiveTable, FullAtTheProbeLimitAndFreedSlotsAreReused) {
  LocalTable t;
  const std::vector<uint64_t> keys = SameHome(format::kGpuLiveMaxProbe + 1);
  for (uint32_t i = 0; i < format::kGpuLiveMaxProbe; ++i) ASSERT_TRUE(t.Insert(keys[i], i));
  EXPECT_FALSE(t.Insert(keys.back(), 1));  // 64 probes, none free
  GpuLiveSlot out;
  ASSERT_TRUE(t.table.Take(keys[10], &out));
  EXPECT_TRUE(t.Insert(keys.back(), 1));  // the freed slot, a tombstone, is claimed
  ASSERT_TRUE(t.table.Take(keys.back(), &out));  // found past the other 63
  EXPECT_EQ(out.size, 1u);
  ASSERT_TRUE(t.table.Take(keys[63], &out));
  EXPECT_EQ(out.size, 63u);
  EXPECT_EQ(t.Live().size(), 62u);
}

TEST(GpuLiveTable, ThreadsInsertingAndTakingAtOnce) {
  LocalTable t;
  constexpr int kThreads = 4, kRounds = 20000;
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&t, th] {
      for (uint64_t i = 0; i < kRounds; ++i) {
        const uint64_t key = ((i % 500) * kThreads + th + 1) << 12;
        if (!t.Insert(key, i)) std::abort();
        // Every seventh of the last round's keys stays; all others are freed at once.
        if (i < kRounds - 500 || (i % 500) % 7 != 0) {
          GpuLiveSlot out;
          if (!t.table.Take(key, &out) || out.size != i) std::abort();
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const auto live = t.Live();
  EXPECT_EQ(live.size(), static_cast<size_t>(kThreads) * 72);  // 0, 7, ..., 497
  for (const auto& [key, size] : live) {
    EXPECT_EQ(((key >> 12) - 1) / kThreads % 7, 0u);
    EXPECT_EQ(size, static_cast<uint64_t>(kRounds - 500) + ((key >> 12) - 1) / kThreads);
  }
}

// ---- the replay seeded from the live set ------------------------------------------------

// A program's GPU calls, written as the shim writes them (windowed records, the live set and
// its counters), into a trace holding all of them and one whose window gave up those at
// or before `window_start`.
class Program {
 public:
  void Alloc(uint64_t ts, uint64_t addr, uint64_t size, uint64_t stack = 0) {
    ops_.push_back({ts, true, addr, size, stack, 0});
  }
  void Fail(uint64_t ts, uint64_t size) { ops_.push_back({ts, true, 0, size, 0, 2}); }
  void Free(uint64_t ts, uint64_t addr) { ops_.push_back({ts, false, addr, 0, 0, 0}); }

  // full: allocations that found the table full (GpuLiveInfo.full).
  ProcessTrace Trace(uint64_t window_start, uint64_t full = 0) const {
    testing::TraceBytesBuilder b(100, 1);
    std::map<uint64_t, GpuLiveSlot> live;
    std::vector<format::GpuLiveCounters> counters(format::kGpuLiveEntries);
    format::GpuLiveInfo info{};
    info.slots = format::kGpuLiveSlots;
    info.table_chunks = format::kGpuLiveTableChunks;
    info.full = full;
    for (const Op& op : ops_) {
      const bool keep = op.ts > window_start;
      if (op.alloc) {
        if (info.first_ticks == 0) {
          info.first_ticks = op.ts;
          info.first_size = op.size;
        }
        format::GpuAlloc r{};
        r.ts = op.ts;
        r.api = static_cast<uint64_t>(Api::kCudaMalloc);
        r.addr = op.addr;
        r.size = op.size;
        r.rc = op.rc;
        r.stack = op.stack;
        r.caller = 0x1234;
        if (op.rc == 0) {
          GpuLiveSlot s{op.addr, op.size, op.ts, op.stack, 0x1234, 0, 100, 0,
                        static_cast<uint16_t>(Api::kCudaMalloc), 0, 0, 0};
          live[op.addr] = s;
          format::GpuLiveAdd(counters[format::GpuLiveEntryOf(0)], op.size, op.ts);
          format::GpuLiveAdd(counters[format::kGpuLiveAllDevices], op.size, op.ts);
          r.windowed = 1;
        }
        if (keep || r.windowed == 0) b.Append(r);
      } else {
        const GpuLiveSlot s = live.at(op.addr);
        live.erase(op.addr);
        format::GpuLiveRemove(counters[format::GpuLiveEntryOf(0)], s.size, true, false);
        format::GpuLiveRemove(counters[format::kGpuLiveAllDevices], s.size, true, false);
        info.last_free_ticks = op.ts;
        format::GpuFree r{};
        r.ts = op.ts;
        r.api = static_cast<uint64_t>(Api::kCudaFree);
        r.device = -1;
        r.addr = op.addr;
        r.windowed = 1;
        r.size = s.size;
        r.alloc_ts = s.ticks;
        r.alloc_api = s.api;
        r.alloc_tid = s.tid;
        r.alloc_stack = s.stack;
        r.alloc_caller = s.caller;
        if (keep) b.Append(r);
      }
    }
    std::vector<GpuLiveSlot> slots;
    for (const auto& [addr, s] : live) slots.push_back(s);
    b.AddGpuLiveChunks(info, counters, slots);
    if (window_start != 0) b.SetDroppedUntil(window_start);
    return b.Parse();
  }

 private:
  struct Op {
    uint64_t ts;
    bool alloc;
    uint64_t addr, size, stack;
    int64_t rc;
  };
  std::vector<Op> ops_;
};

void ExpectSameTimeline(const gpu::AllocationTimeline& full, const gpu::AllocationTimeline& win) {
  EXPECT_EQ(win.allocations, full.allocations);
  EXPECT_EQ(win.frees, full.frees);
  EXPECT_EQ(win.failed_allocations, full.failed_allocations);
  EXPECT_EQ(win.peak_bytes, full.peak_bytes);
  EXPECT_EQ(win.peak_ts, full.peak_ts);
  EXPECT_EQ(win.leaked_bytes, full.leaked_bytes);
  EXPECT_EQ(win.first_alloc_ts, full.first_alloc_ts);
  EXPECT_EQ(win.first_alloc_size, full.first_alloc_size);
  ASSERT_EQ(win.leaked.size(), full.leaked.size());
  for (size_t i = 0; i < full.leaked.size(); ++i) {
    EXPECT_EQ(win.leaked[i].addr, full.leaked[i].addr);
    EXPECT_EQ(win.leaked[i].size, full.leaked[i].size);
    EXPECT_EQ(win.leaked[i].ts, full.leaked[i].ts);
    EXPECT_EQ(win.leaked[i].stack, full.leaked[i].stack);
  }
  ASSERT_TRUE(win.devices.contains(0));
  EXPECT_EQ(win.devices.at(0).peak_bytes, full.devices.at(0).peak_bytes);
  EXPECT_EQ(win.devices.at(0).peak_ts, full.devices.at(0).peak_ts);
  EXPECT_EQ(win.devices.at(0).allocations, full.devices.at(0).allocations);
  EXPECT_EQ(win.devices.at(0).frees, full.devices.at(0).frees);
  EXPECT_EQ(win.churn.raw_pairs, full.churn.raw_pairs);
  // The run's peak, from the change list, is where it was.
  EXPECT_EQ(gpu::LiveAt(win.points, full.peak_ts), full.peak_bytes);
}

// The sampled history of live bytes: every sample until the 512 points are full, then
// every other one kept and every second sample taken, and so on; the points always span
// the run from its first sample, in order, at most twice as far apart as the closest.
TEST(GpuLiveHistory, FoldsInPairsAndSpansTheWholeRun) {
  format::GpuLiveHistory h{};
  std::vector<format::GpuLivePoint> p(format::kGpuLivePoints);
  auto points = [&] {
    std::vector<uint64_t> ticks;
    for (const auto& q : p) {
      if (q.ticks != 0) ticks.push_back(q.ticks);
    }
    return ticks;
  };
  for (uint64_t n = 1; n <= 512; ++n) format::GpuLiveHistoryAdd(h, p.data(), n, n * 10);
  using T4 = std::tuple<uint64_t, uint64_t, uint64_t, uint64_t>;
  EXPECT_EQ(T4(h.magic, h.stride, h.written, h.folds), T4(format::kGpuLiveHistoryMagic, 1, 512, 0));
  EXPECT_EQ(points().size(), 512u);
  format::GpuLiveHistoryAdd(h, p.data(), 513, 5130);  // the 513th: a fold, then point 257
  EXPECT_EQ(T4(h.magic, h.stride, h.written, h.folds), T4(format::kGpuLiveHistoryMagic, 2, 257, 1));
  std::vector<uint64_t> want;
  for (uint64_t i = 0; i < 256; ++i) want.push_back(2 * i + 1);
  want.push_back(513);
  EXPECT_EQ(points(), want);
  EXPECT_EQ(p[1].live_bytes, 30u);
  for (uint64_t n = 514; n <= 100000; ++n) format::GpuLiveHistoryAdd(h, p.data(), n, n * 10);
  const std::vector<uint64_t> t = points();
  EXPECT_EQ(h.seen, 100000u);
  EXPECT_EQ(t.front(), 1u);
  EXPECT_TRUE(std::is_sorted(t.begin(), t.end()));
  EXPECT_GE(t.size(), 256u);
  uint64_t widest = 0, narrowest = UINT64_MAX;
  for (size_t i = 1; i < t.size(); ++i) {
    widest = std::max(widest, t[i] - t[i - 1]);
    narrowest = std::min(narrowest, t[i] - t[i - 1]);
  }
  EXPECT_LE(widest, 2 * narrowest);
  EXPECT_GE(t.back(), 100000u - h.stride);
  for (const auto& q : p) {
    if (q.ticks != 0) EXPECT_EQ(q.live_bytes, q.ticks * 10);
  }
}

TEST(GpuLiveSeeding, WindowedReplayHasTheFullCountsPeakAndLiveSet) {
  constexpr uint64_t A = 0x7f0000000000ull;
  Program p;
  p.Alloc(1000, A, 100 * MiB);
  p.Alloc(2000, A + 100 * MiB, 50 * MiB);  // live at the window's start, freed after it
  p.Fail(2500, 8 * MiB);                   // a failure: never dropped
  p.Free(3000, A);
  p.Alloc(4000, A + 200 * MiB, 10 * MiB, 7);  // live all along
  p.Alloc(4500, A + 300 * MiB, 1 * MiB);
  p.Free(4800, A + 300 * MiB);  // born and freed before the window
  p.Free(6000, A + 100 * MiB);
  p.Alloc(7000, A + 400 * MiB, 20 * MiB);
  p.Free(8000, A + 400 * MiB);
  p.Alloc(9000, A, 30 * MiB);  // an address used again
  const ProcessTrace full = p.Trace(0);
  const ProcessTrace win = p.Trace(5000);
  ASSERT_TRUE(win.gpu_live.present);
  EXPECT_EQ(win.records.GpuAlloc.size(), 3u);  // the failure, 7000 and 9000
  EXPECT_EQ(win.records.GpuFree.size(), 2u);
  const auto f = gpu::AllocationTimeline::Of(full);
  const auto w = gpu::AllocationTimeline::Of(win);
  EXPECT_EQ(f.seeded_from_ns, 0u);
  EXPECT_EQ(w.seeded_from_ns, 5000u);
  EXPECT_EQ(f.allocations, 6u);
  EXPECT_EQ(f.frees, 4u);
  EXPECT_EQ(f.failed_allocations, 1u);
  EXPECT_EQ(f.peak_bytes, 150 * MiB);
  EXPECT_EQ(f.peak_ts, 2000u);
  EXPECT_EQ(f.leaked_bytes, 40 * MiB);
  ExpectSameTimeline(f, w);
  // The failure saw, of the process's memory, what was live then and still at the
  // window's start: the 50 MiB block (the 100 MiB one, freed before it, is not known).
  ASSERT_EQ(w.failures.size(), 1u);
  EXPECT_EQ(f.failures[0].process_live, 150 * MiB);
  EXPECT_EQ(w.failures[0].process_live, 50 * MiB);
}

TEST(GpuLiveSeeding, EveryWindowStartGivesTheSameFigures) {
  constexpr uint64_t A = 0x7e0000000000ull;
  Program p;
  uint64_t ts = 100;
  for (uint64_t i = 0; i < 300; ++i) {
    p.Alloc(ts += 10, A + (i % 5) * 4 * MiB, (1 + i % 3) * MiB);
    if (i % 50 == 0) {
      p.Alloc(ts += 10, A + (1000 + i) * 4 * MiB, 2 * MiB, 9);  // a leak
    }
    p.Free(ts += 10, A + (i % 5) * 4 * MiB);
  }
  const ProcessTrace full = p.Trace(0);
  const auto f = gpu::AllocationTimeline::Of(full);
  EXPECT_EQ(f.leaked.size(), 6u);
  for (uint64_t start : std::vector<uint64_t>{105, 120, 1000, 4321, 7777, ts - 1, ts}) {
    SCOPED_TRACE(start);
    ExpectSameTimeline(f, gpu::AllocationTimeline::Of(p.Trace(start)));
  }
}

TEST(GpuLiveSeeding, OlderTracesAndFullTablesReplayTheRecords) {
  Program p;
  p.Alloc(1000, 0x7d0000000000ull, MiB);
  ProcessTrace t = p.Trace(500);
  t.gpu_live.info.full = 1;  // an allocation found no slot: the set is not the whole story
  EXPECT_EQ(gpu::AllocationTimeline::Of(t).seeded_from_ns, 0u);
  EXPECT_TRUE(t.warnings.empty());
  // Read from the file: the reader says the GPU figures are the window's only, once the
  // window gave records up (a full table in a trace that never rolled says nothing).
  const auto says_window_only = [](const ProcessTrace& x) {
    return std::any_of(x.warnings.begin(), x.warnings.end(), [](const std::string& w) {
      return w.find("live-set table full") != std::string::npos;
    });
  };
  const ProcessTrace rolled = p.Trace(500, 3);
  EXPECT_EQ(rolled.gpu_live.info.full, 3u);
  EXPECT_TRUE(says_window_only(rolled));
  EXPECT_EQ(gpu::AllocationTimeline::Of(rolled).seeded_from_ns, 0u);
  EXPECT_FALSE(says_window_only(p.Trace(0, 3)));
  t.gpu_live.present = false;  // a 1.4 trace
  EXPECT_EQ(gpu::AllocationTimeline::Of(t).seeded_from_ns, 0u);
  EXPECT_EQ(gpu::AllocationTimeline::Of(t).allocations, 1u);
}

}  // namespace
}  // namespace colabtrace::analyzer
