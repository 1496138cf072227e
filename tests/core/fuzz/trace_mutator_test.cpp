// The structure-aware mutator of the fuzz targets (trace_mutator.h) keeps what it
// promises: a trace stays a trace (its header reads), every record chunk still frames
// whole, and the mutations reach the records (the decoded records differ).
#include "trace_mutator.h"

#include <gtest/gtest.h>

#include <random>

#include "../../harness/trace_builder.h"
#include "trace/process_trace.h"

// libFuzzer's own mutator, as the targets' builds get it: here one byte flipped.
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size) {
  if (size == 0) return max_size > 0 ? (data[0] = 0x5a, 1) : 0;
  data[size / 2] ^= 0xff;
  return size;
}

namespace {

namespace ctf = colabtrace::format;
using colabtrace::analyzer::ParseTrace;
using colabtrace::fuzz::MutateTrace;
using colabtrace::fuzz::Records;

std::vector<uint8_t> SmallTrace() {
  colabtrace::testing::TraceBytesBuilder b(77, 1000);
  uint64_t ts = 1000;
  const uint64_t exe = b.AppendString("/usr/bin/python3", ++ts);
  ctf::ProcessStart ps;
  ps.ts = ++ts;
  ps.pid = 77;
  ps.exe = exe;
  b.Append(ps);
  for (int k = 0; k < 40; ++k) {
    ctf::Step st;
    st.ts = ts += 1000;
    st.n = static_cast<uint64_t>(k + 1);
    b.Append(st);
  }
  ctf::Exit e;
  e.ts = ++ts;
  b.Append(e);
  return b.bytes();
}

TEST(TraceMutator, KeepsTheHeaderAndTheFramingAndReachesTheRecords) {
  const std::vector<uint8_t> seed = SmallTrace();
  std::string error;
  const auto before = ParseTrace(seed, "seed", &error);
  ASSERT_TRUE(before) << error;
  int applied = 0, changed = 0;
  for (unsigned s = 1; s <= 400; ++s) {
    std::vector<uint8_t> t = seed;
    t.resize(t.size() + 4096);
    const size_t n = MutateTrace(t.data(), seed.size(), t.size(), s);
    if (n == 0) continue;
    ++applied;
    t.resize(n);
    ctf::FileHeader h;
    std::memcpy(&h, t.data(), sizeof(h));
    ASSERT_EQ(std::memcmp(h.magic, ctf::kFileMagic, sizeof(h.magic)), 0) << s;
    // Each record chunk frames whole: its records end at a zero byte or the chunk's end.
    for (size_t off = h.chunk_size; off + sizeof(ctf::ChunkHeader) < t.size(); off += h.chunk_size) {
      const size_t size = std::min<size_t>(h.chunk_size, t.size() - off);
      const auto recs = Records(t.data() + off, size);
      const size_t end = recs.empty() ? sizeof(ctf::ChunkHeader) : recs.back().payload + recs.back().len;
      ASSERT_TRUE(end == size || t[off + end] == 0) << "seed " << s << " chunk at " << off;
    }
    const auto after = ParseTrace(t, "mutated", &error);
    ASSERT_TRUE(after) << "seed " << s << ": " << error;  // the header always reads
    changed += after->stats.records != before->stats.records ||
               after->records.Step.size() != before->records.Step.size() || h.chunk_size != ctf::kChunkSize;
  }
  EXPECT_EQ(applied, 400);  // a trace with records is always mutated structurally
  EXPECT_GT(changed, 100);
}

TEST(TraceMutator, LeavesWhatIsNoTraceToLibFuzzer) {
  std::vector<uint8_t> junk(300, 7);
  EXPECT_EQ(MutateTrace(junk.data(), junk.size(), junk.size(), 1), 0u);
}

}  // namespace
