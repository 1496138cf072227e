// The collective chunks (format 1.5, wire.h): a process group's counters and ring of its
// latest collectives as the shim writes them (shim/python/coll_table.h), and the reader's
// records of them: collective_group per used block, and collective records of the ring
// entries the window no longer holds, merged with the window's records with none twice.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <vector>

#include "python/coll_table.h"
#include "trace_builder.h"

namespace ctf = colabtrace::format;
namespace py = colabtrace::shim::python;

namespace {

constexpr uint32_t kTid = 77;
constexpr uint64_t kStart = 1'000'000;

// Collective i of a group: called at kStart + 1000 i, 100 ticks long, seq base + i.
ctf::CollSlot Slot(uint64_t i, uint64_t base = 0, uint8_t status = 0) {
  ctf::CollSlot s{};
  s.ts = kStart + 1000 * i;
  s.dur = 100;
  s.seq = base + i;
  s.seqs = 1;
  s.count = 8 + i;
  s.tid = kTid;
  s.op = 1;
  s.status = status;
  return s;
}

ctf::CollGroupBlock* BlockOf(std::vector<uint8_t>& chunk, uint32_t k) {
  return reinterpret_cast<ctf::CollGroupBlock*>(chunk.data() + ctf::kCollGroupsOffset) + k;
}

TEST(CollTable, CountersAndRingOfTheLatest) {
  std::vector<uint8_t> c(ctf::kChunkSize, 0);
  ctf::CollGroupBlock* b = BlockOf(c, 3);
  const uint8_t raised = static_cast<uint8_t>(ctf::CollectiveStatus::kRaised);
  const uint8_t issued = static_cast<uint8_t>(ctf::CollectiveStatus::kIssued);
  for (uint64_t i = 1; i <= 100; ++i) {
    ctf::CollSlot s = Slot(i, 0, i % 10 == 0 ? issued : 0);
    if (i == 100) s.status = raised;
    if (i == 50) s.seqs = 3;  // an *_object call: seqs 50..52
    EXPECT_EQ(py::NoteCollectiveEnd(b, s), i);
  }
  py::NoteCollectiveEnd(b, Slot(101));  // returned after the one that raised
  const ctf::CollGroupInfo& g = b->info;
  EXPECT_EQ(g.written, 101u);
  EXPECT_EQ(g.raised, 1u);
  EXPECT_EQ(g.async_ops, 9u);  // 10, 20, ... 90
  EXPECT_EQ(g.ticks, 101u * 100);
  EXPECT_EQ(g.entered, 101u);
  EXPECT_EQ(g.returned, 101u);  // 100 raised, 101 returned
  ctf::CollSlot s = Slot(102, 0, raised);
  s.seq = 0;
  py::NoteCollectiveEnd(b, s);
  EXPECT_EQ(g.entered, 101u);  // a collective without a seq raises nothing
  EXPECT_EQ(g.raised, 2u);
  // Position n in slot (n - 1) % 64: the latest 64 (39..102), each whole.
  for (uint64_t n = 39; n <= 102; ++n) {
    const ctf::CollSlot& d = b->ring[(n - 1) % ctf::kCollRing];
    EXPECT_EQ(d.n, n);
    EXPECT_EQ(d.ts, kStart + 1000 * n);
    EXPECT_EQ(d.count, 8 + n);
    EXPECT_EQ(d.tid, kTid);
  }
  // The other blocks untouched.
  EXPECT_EQ(BlockOf(c, 2)->info.written, 0u);
  EXPECT_EQ(BlockOf(c, 4)->info.written, 0u);
}

TEST(CollTable, ReturnedLeavesOutRaisedOnes) {
  std::vector<uint8_t> c(ctf::kChunkSize, 0);
  ctf::CollGroupBlock* b = BlockOf(c, 0);
  py::NoteCollectiveEnd(b, Slot(1));
  py::NoteCollectiveEnd(b, Slot(2, 0, static_cast<uint8_t>(ctf::CollectiveStatus::kRaised)));
  EXPECT_EQ(std::make_tuple(b->info.entered, b->info.returned, b->info.raised), std::make_tuple(2ull, 1ull, 1ull));
}

// Group 9 is block 2 of the chunk of seq 1. 200 collectives: the ring holds 137..200, of
// which 199 is being written (n 0); the window's records are 171..200 (its thread's latest
// event chunk, here a record chunk). The reader gives 137..200 once each, in time order, and
// the group's counters.
TEST(CollReader, RingMergesWithTheWindowsRecords) {
  std::vector<uint8_t> c(ctf::kChunkSize, 0);
  ctf::CollGroupBlock* b = BlockOf(c, 2);
  for (uint64_t i = 1; i <= 200; ++i) py::NoteCollectiveEnd(b, Slot(i, 40));
  b->ring[(199 - 1) % ctf::kCollRing].n = 0;
  colabtrace::testing::TraceBytesBuilder t(4242, kStart, /*ended=*/false);
  t.NewChunk(kTid, kStart);
  for (uint64_t i = 171; i <= 200; ++i) {
    const ctf::CollSlot s = Slot(i, 40);
    ctf::Collective r;
    r.ts = s.ts;
    r.dur = s.dur;
    r.op = s.op;
    r.group = 9;
    r.seq = s.seq;
    r.seqs = 1;
    r.count = s.count;
    t.Append(r);
  }
  t.AddChunkBody(ctf::kCollChunkMagic, c, 0, 1);
  // A chunk of a seq past the chunks' (damaged input) is not read.
  t.AddChunkBody(ctf::kCollChunkMagic, c, 0, ctf::kCollChunks);
  const auto trace = t.Parse();
  ASSERT_EQ(trace.records.CollectiveGroup.size(), 1u);
  const auto& g = trace.records.CollectiveGroup[0];
  EXPECT_EQ(std::make_tuple(g.group, g.collectives, g.raised, g.time, g.entered, g.returned),
            std::make_tuple(9ull, 200ull, 0ull, 20000ull, 240ull, 240ull));
  const auto& recs = trace.records.Collective;
  ASSERT_EQ(recs.size(), 200u - 137 + 1);
  for (size_t k = 0; k < recs.size(); ++k) {
    const uint64_t i = 137 + k;
    EXPECT_EQ(std::make_tuple(recs[k].seq, recs[k].group, recs[k].ts, recs[k].dur, recs[k].count, recs[k].tid),
              std::make_tuple(40 + i, 9ull, kStart + 1000 * i, 100ull, 8 + i, kTid))
        << k;
  }
}

}  // namespace
