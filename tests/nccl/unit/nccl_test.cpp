// The NCCL module's pure parts: communicator names (NCCL's commHash, nccl_comm_hash.h), the
// NCCL chunk's table and call ring (nccl_table.h), the handle index, and the reader's records
// of a chunk. The expected hashes were computed with tests/nccl/test_nccl_job.py's Python
// transcription of NCCL's src/include/bitops.h (eatHash, digestHash), not with this code.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "nccl/nccl_comm_hash.h"
#include "nccl/nccl_table.h"
#include "trace_builder.h"

namespace ctf = colabtrace::format;
namespace nccl = colabtrace::shim::nccl;

namespace {

TEST(NcclCommHash, UniqueIdHashIsNcclsGetHash) {
  unsigned char id[128];
  for (int i = 0; i < 128; ++i) id[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(ct_nccl_id_hash(id), 0x6afe1cc17717e1f4ull);
  std::memset(id, 0, sizeof(id));
  EXPECT_EQ(ct_nccl_id_hash(id), 0xcc976ec6c24bb53cull);
}

TEST(NcclCommHash, SplitHashTakesParentSplitCountAndColor) {
  const uint64_t parent = 0x6afe1cc17717e1f4ull;
  EXPECT_EQ(ct_nccl_split_hash(parent, 1, 0), 0x79030d073b3c579full);
  EXPECT_EQ(ct_nccl_split_hash(parent, 2, 0), 0xcee9955a1c80c08full);  // the parent's second split
  EXPECT_EQ(ct_nccl_split_hash(parent, 1, 7), 0x490f799aef7a996full);
  EXPECT_NE(ct_nccl_split_hash(parent + 1, 1, 0), ct_nccl_split_hash(parent, 1, 0));
}

std::vector<uint8_t> Chunk() { return std::vector<uint8_t>(ctf::kChunkSize, 0); }

ctf::NcclSlot Slot(uint64_t comm, uint64_t seq, uint8_t op) {
  ctf::NcclSlot s{};
  s.op = op;
  s.comm = comm;
  s.seq = seq;
  s.count = 1024;
  s.dtype = 7;
  s.peer = -1;
  s.ticks = 5000 + seq;
  return s;
}

TEST(NcclTable, CommTableHoldsItsEntriesUntilFull) {
  std::vector<uint8_t> c = Chunk();
  for (uint32_t i = 0; i < ctf::kNcclComms; ++i) {
    ctf::NcclCommEntry* e = nccl::ClaimComm(c.data(), 0x1000 + i * 16, 0xabc0 + i, 0, 4, 1);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e, nccl::CommsOf(c.data()) + i);
    EXPECT_EQ(e->state, static_cast<uint32_t>(ctf::NcclCommStateCode::kLive));
  }
  EXPECT_EQ(nccl::ClaimComm(c.data(), 0x9000, 1, 0, 4, 1), nullptr);
  EXPECT_EQ(nccl::CountsOf(c.data())->comms, ctf::kNcclComms);
}

TEST(NcclTable, RingKeepsTheLastSlotsNumberedFromOne) {
  std::vector<uint8_t> c = Chunk();
  const uint32_t total = ctf::kNcclSlots + 44;
  for (uint32_t i = 1; i <= total; ++i) EXPECT_EQ(nccl::PushCall(c.data(), Slot(7, i, 1)), i);
  EXPECT_EQ(nccl::CountsOf(c.data())->calls, total);
  for (uint32_t k = 0; k < ctf::kNcclSlots; ++k) {
    const ctf::NcclSlot& s = nccl::SlotsOf(c.data())[k];
    // Slot k holds the newest call whose number is k + 1 modulo the ring.
    const uint32_t want = k < 44 ? ctf::kNcclSlots + k + 1 : k + 1;
    EXPECT_EQ(s.n, want);
    EXPECT_EQ(s.seq, want);
  }
}

TEST(NcclTable, IndexFindsHandlesAndTakesReuse) {
  std::vector<uint8_t> c = Chunk();
  static nccl::CommIndex index;  // 4 KiB: not on the stack
  index.Clear();
  ctf::NcclCommEntry* a = nccl::ClaimComm(c.data(), 0x5000, 1, 0, 2, 0);
  ctf::NcclCommEntry* b = nccl::ClaimComm(c.data(), 0x5100, 2, 1, 2, 0);
  EXPECT_TRUE(index.Put(0x5000, a));
  EXPECT_TRUE(index.Put(0x5100, b));
  EXPECT_EQ(index.Find(0x5000), a);
  EXPECT_EQ(index.Find(0x5100), b);
  EXPECT_EQ(index.Find(0x5200), nullptr);
  // NCCL hands 0x5000 out again after a destroy: the new communicator's entry.
  ctf::NcclCommEntry* a2 = nccl::ClaimComm(c.data(), 0x5000, 3, 0, 2, 0);
  EXPECT_TRUE(index.Put(0x5000, a2));
  EXPECT_EQ(index.Find(0x5000), a2);
  // Every cell taken: Put says so, Find still answers.
  for (uint64_t h = 1; h <= nccl::CommIndex::kCells; ++h) index.Put(0x100000 + h * 16, a);
  EXPECT_FALSE(index.Put(0x900000, a));
  EXPECT_EQ(index.Find(0x5100), b);
}

// The reader's records of an NCCL chunk: nccl_comm_state per entry, nccl_call per slot still
// in the ring (by number), a slot being written (n 0) skipped.
TEST(NcclReader, ChunkBecomesCommStateAndCallRecords) {
  std::vector<uint8_t> c = Chunk();
  ctf::NcclCommEntry* e = nccl::ClaimComm(c.data(), 0x7700, 0x1234, 0, 3, 2);
  e->colls = 300;
  e->splits = 1;
  for (uint32_t i = 1; i <= 300; ++i) nccl::PushCall(c.data(), Slot(0x1234, i, i == 300 ? 2 : 1));
  nccl::SlotsOf(c.data())[(300 - 2) % ctf::kNcclSlots].n = 0;  // call 299: being written
  colabtrace::testing::TraceBytesBuilder b(4242, 1000, /*ended=*/false);
  b.AddNcclChunk(c);
  std::string err;
  auto t = colabtrace::analyzer::ParseTrace(b.bytes(), "nccl", &err);
  ASSERT_TRUE(t.has_value()) << err;
  ASSERT_EQ(t->records.NcclCommState.size(), 1u);
  const auto& st = t->records.NcclCommState[0];
  EXPECT_EQ(std::make_tuple(st.handle, st.comm, st.colls, st.nranks, st.rank, st.splits),
            std::make_tuple(0x7700ull, 0x1234ull, 300ull, 3ll, 2ll, 1ull));
  const auto& calls = t->records.NcclCall;
  ASSERT_EQ(calls.size(), ctf::kNcclSlots - 1);
  EXPECT_EQ(calls.front().n, 300 - ctf::kNcclSlots + 1);
  EXPECT_EQ(calls[calls.size() - 2].n, 298u);
  EXPECT_EQ(std::make_tuple(calls.back().n, calls.back().op, calls.back().seq, calls.back().count),
            std::make_tuple(300ull, 2ull, 300ull, 1024ull));
}

}  // namespace
