// The reader's tables: each in time order whatever the threads' interleaving, string and
// stack ids resolved however a trace numbers them, Bytes fields valid after the file's
// bytes are gone, and a directory's traces in file-name order however they were read.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "trace/process_trace.h"
#include "trace_builder.h"

namespace colabtrace {
namespace {

using testing::TraceBytesBuilder;

format::Step StepAt(uint64_t ts, uint64_t n) {
  format::Step s;
  s.ts = ts;
  s.n = n;
  return s;
}

std::vector<std::pair<uint64_t, uint32_t>> TimesAndThreads(const analyzer::ProcessTrace& t) {
  std::vector<std::pair<uint64_t, uint32_t>> out;
  for (const auto& s : t.records.Step) out.emplace_back(s.ts, s.tid);
  return out;
}

// Three threads whose records interleave in time, each thread in two chunks: the table is
// in time order, and records of equal time keep thread (decode) order.
TEST(ReaderTables, ThreadsInterleavedComeOutInTimeOrder) {
  TraceBytesBuilder b(100, 1000);
  std::vector<std::pair<uint64_t, uint32_t>> want;
  for (uint32_t tid : {101u, 102u, 103u}) {
    for (int half = 0; half < 2; ++half) {
      b.NewChunk(tid, 1000);
      for (uint64_t k = 0; k < 50; ++k) {
        const uint64_t ts = 1000 + (half * 50 + k) * 10 + (tid - 101);  // 101 < 102 < 103
        const uint64_t equal = 5000;  // every thread also writes one record at t=5000
        b.Append(StepAt(k == 49 && half == 1 ? equal : ts, k));
        want.emplace_back(k == 49 && half == 1 ? equal : ts, tid);
      }
    }
  }
  std::stable_sort(want.begin(), want.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  const analyzer::ProcessTrace t = b.Parse();
  ASSERT_EQ(t.records.Step.size(), 300u);
  EXPECT_EQ(TimesAndThreads(t), want);
}

// A thread whose own records go back in time (records with an earlier ts than the one
// before, as the shim writes for some calls) is still put in order.
TEST(ReaderTables, ARunThatGoesBackInTimeIsSorted) {
  TraceBytesBuilder b(100, 1000);
  b.NewChunk(101, 1000);
  for (uint64_t ts : {1500, 1200, 1700, 1100}) b.Append(StepAt(ts, ts));
  b.NewChunk(102, 1000);
  for (uint64_t ts : {1300, 1600}) b.Append(StepAt(ts, ts));
  const analyzer::ProcessTrace t = b.Parse();
  std::vector<uint64_t> got;
  for (const auto& s : t.records.Step) got.push_back(s.ts);
  EXPECT_EQ(got, (std::vector<uint64_t>{1100, 1200, 1300, 1500, 1600, 1700}));
}

// Sorting a run that went back in time is stable: records of equal time keep the order
// they were decoded in (thread 101's run first, then 102's), for a table kept as events
// and for a packed one alike.
TEST(ReaderTables, EqualTimesKeepTheirDecodeOrderWhenSorted) {
  TraceBytesBuilder b(100, 1000);
  b.NewChunk(101, 1000);
  uint64_t n = 0;
  for (uint64_t ts : {1500, 1200, 1200, 1100, 1200}) {
    b.Append(StepAt(ts, n));
    format::IoClose c{};
    c.ts = ts;
    c.fd = static_cast<int64_t>(n++);
    b.Append(c);
  }
  b.NewChunk(102, 1000);
  for (uint64_t ts : {1200, 1000}) {
    b.Append(StepAt(ts, n));
    format::IoClose c{};
    c.ts = ts;
    c.fd = static_cast<int64_t>(n++);
    b.Append(c);
  }
  const analyzer::ProcessTrace t = b.Parse();
  const std::vector<std::pair<uint64_t, uint64_t>> want = {{1000, 6}, {1100, 3}, {1200, 1}, {1200, 2},
                                                           {1200, 4}, {1200, 5}, {1500, 0}};
  std::vector<std::pair<uint64_t, uint64_t>> steps, closes;
  for (const auto& s : t.records.Step) steps.emplace_back(s.ts, s.n);
  for (const auto& c : t.records.IoClose) closes.emplace_back(c.ts, static_cast<uint64_t>(c.fd));
  EXPECT_EQ(steps, want);
  EXPECT_EQ(closes, want);
}

// Ids as the shim numbers them (1, 2, ...), a huge id (a hostile or damaged trace), and an
// id written twice (the later record wins) all resolve; strings and stacks stay valid
// after the bytes they were decoded from are gone.
TEST(ReaderTables, StringAndStackIdsDenseSparseAndRepeated) {
  analyzer::ProcessTrace t;
  {
    TraceBytesBuilder b(100, 1000);
    const uint64_t a = b.AppendString("first", 1001);
    const uint64_t s = b.AppendStack({0x1000, 0x2000, 0x3000}, 1002);
    EXPECT_EQ(a, 1u);
    EXPECT_EQ(s, 1u);
    format::String huge;
    huge.ts = 1003;
    huge.id = uint64_t{1} << 62;
    const std::string text = "far away";
    huge.text = format::Bytes{reinterpret_cast<const uint8_t*>(text.data()), static_cast<uint32_t>(text.size())};
    b.Append(huge);
    format::String again;
    again.ts = 1004;
    again.id = 1;
    const std::string newer = "second";
    again.text = format::Bytes{reinterpret_cast<const uint8_t*>(newer.data()), static_cast<uint32_t>(newer.size())};
    b.Append(again);
    std::string err;
    std::vector<uint8_t> bytes = b.bytes();
    auto parsed = analyzer::ParseTrace(std::move(bytes), "ids", &err);
    ASSERT_TRUE(parsed) << err;
    t = std::move(*parsed);
  }  // the builder's bytes (and the copy given to the reader) are gone here
  EXPECT_EQ(t.Str(1), "second");
  EXPECT_EQ(t.Str(uint64_t{1} << 62), "far away");
  EXPECT_EQ(t.Str(2), "");
  EXPECT_EQ(t.Str(0), "");
  EXPECT_EQ(t.Stack(1), (std::vector<uint64_t>{0x1000, 0x2000, 0x3000}));
  EXPECT_TRUE(t.Stack(7).empty());
  ASSERT_EQ(t.records.String.size(), 3u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(t.records.String[1].text.data),
                        t.records.String[1].text.size),
            "far away");
}

// A directory of many traces (read on several threads) gives them in file-name order, and
// an unreadable file among them is skipped by name.
TEST(ReaderTables, DirectoryTracesKeepFileNameOrder) {
  char tmpl[] = "/tmp/ct-trace-unit-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::vector<std::string> names;
  for (uint32_t i = 0; i < 100; ++i) {
    TraceBytesBuilder b(1000 + (i * 37) % 100, 1000);
    b.Append(StepAt(1001, i));
    char name[64];
    std::snprintf(name, sizeof(name), "%s/t%03u.ctrace", dir.c_str(), i);
    std::ofstream(name, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.bytes().data()), static_cast<std::streamsize>(b.bytes().size()));
    names.push_back(name);
  }
  const std::string garbage = dir + "/t050x.ctrace";
  std::ofstream(garbage) << "not a trace";
  const analyzer::TraceSet set = analyzer::LoadTraces({dir});
  ASSERT_EQ(set.traces.size(), 100u);
  for (uint32_t i = 0; i < 100; ++i) {
    EXPECT_EQ(set.traces[i].file, names[i]);
    ASSERT_EQ(set.traces[i].records.Step.size(), 1u);
    EXPECT_EQ(set.traces[i].records.Step[0].n, i);
  }
  ASSERT_EQ(set.skipped.size(), 1u);
  EXPECT_NE(set.skipped[0].find("t050x.ctrace"), std::string::npos) << set.skipped[0];
  EXPECT_TRUE(set.errors.empty());
  for (const auto& n : names) std::remove(n.c_str());
  std::remove(garbage.c_str());
  rmdir(dir.c_str());
}

// A file is read a chunk at a time; whatever its length (cut anywhere, as a killed or
// still-running process leaves it), it decodes exactly as the same bytes in memory.
TEST(ReaderTables, FileReadByChunksDecodesLikeMemory) {
  TraceBytesBuilder b(100, 1000);
  const uint64_t name = b.AppendString("worker", 1001);
  for (uint32_t tid : {101u, 102u}) {
    b.NewChunk(tid, 1000);
    for (uint64_t k = 0; k < 9000; ++k) b.Append(StepAt(1000 + 3 * k + tid, k));  // several chunks
  }
  const std::vector<uint8_t>& full = b.bytes();
  char path[] = "/tmp/ct-trace-unit-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  for (size_t cut : {full.size(), full.size() - 1, full.size() - format::kChunkSize / 2,
                     size_t{3} * format::kChunkSize + 7, size_t{2} * format::kChunkSize,
                     sizeof(format::FileHeader) + 1}) {
    SCOPED_TRACE(cut);
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(full.data()), static_cast<std::streamsize>(cut));
    std::string file_error, memory_error;
    auto from_file = analyzer::ReadTraceFile(path, &file_error);
    auto in_memory = analyzer::ParseTrace(std::vector<uint8_t>(full.begin(), full.begin() + static_cast<long>(cut)),
                                          path, &memory_error);
    ASSERT_TRUE(from_file) << file_error;
    ASSERT_TRUE(in_memory) << memory_error;
    EXPECT_EQ(from_file->stats.records, in_memory->stats.records);
    EXPECT_EQ(from_file->stats.chunks, in_memory->stats.chunks);
    EXPECT_EQ(from_file->warnings, in_memory->warnings);
    EXPECT_EQ(TimesAndThreads(*from_file), TimesAndThreads(*in_memory));
    EXPECT_EQ(from_file->Str(name), in_memory->Str(name));
    if (cut == full.size()) {
      EXPECT_EQ(from_file->records.Step.size(), 18000u);
      EXPECT_EQ(from_file->Str(name), "worker");
      EXPECT_TRUE(from_file->warnings.empty());
    }
  }
  std::remove(path);
}

// The file I/O records are kept packed (analyzer/trace/packed_table.h), decoded as they
// are read: every field reads back as written, extreme values included, across the
// packed table's checkpoints (every 64 records), with three threads merged in time order
// (equal times in thread order), by index and by time (UpperBoundTs).
TEST(ReaderTables, PackedIoRecordsReadBackExactly) {
  struct Want {
    uint32_t tid;
    format::IoReadAt r;
  };
  std::vector<Want> want;
  std::mt19937_64 rng(12);
  const int64_t kInts[] = {0, -1, 1, INT64_MIN, INT64_MAX, -4095, 300};
  const uint64_t kUints[] = {0, 1, 127, 128, UINT64_MAX, 1ull << 63, 70000};
  auto pick_int = [&] { return kInts[rng() % std::size(kInts)]; };
  auto pick_uint = [&] { return kUints[rng() % std::size(kUints)]; };
  TraceBytesBuilder b(100, 1000);
  for (uint32_t tid : {101u, 102u, 103u}) {
    b.NewChunk(tid, 1000);
    uint64_t ts = 1000;
    for (int k = 0; k < 300; ++k) {
      ts += rng() % 40;  // often equal to another thread's
      format::IoReadAt r{};
      r.ts = ts;
      r.api = pick_uint();
      r.fd = pick_int();
      r.result = pick_int();
      r.dur = pick_uint();
      r.offset = pick_uint();
      b.Append(r);
      want.push_back({tid, r});
    }
  }
  std::stable_sort(want.begin(), want.end(), [](const Want& x, const Want& y) { return x.r.ts < y.r.ts; });
  const analyzer::ProcessTrace t = b.Parse();
  const auto& table = t.records.IoReadAt;
  ASSERT_EQ(table.size(), want.size());
  size_t i = 0;
  for (const auto& e : table) {
    SCOPED_TRACE(i);
    ASSERT_LT(i, want.size());
    EXPECT_EQ(e.ts, want[i].r.ts);
    EXPECT_EQ(e.tid, want[i].tid);
    EXPECT_EQ(e.api, want[i].r.api);
    EXPECT_EQ(e.fd, want[i].r.fd);
    EXPECT_EQ(e.result, want[i].r.result);
    EXPECT_EQ(e.dur, want[i].r.dur);  // ns per tick is 1 here
    EXPECT_EQ(e.offset, want[i].r.offset);
    ++i;
  }
  EXPECT_EQ(i, want.size());
  for (size_t k = 0; k < want.size(); k += 7) {
    EXPECT_EQ(table[k].ts, want[k].r.ts);
    EXPECT_EQ(table[k].offset, want[k].r.offset);
    EXPECT_EQ(table[k].tid, want[k].tid);
  }
  for (uint64_t probe : {uint64_t{0}, want[0].r.ts, want[64].r.ts, want[65].r.ts + 1, want[500].r.ts,
                         want.back().r.ts, UINT64_MAX}) {
    SCOPED_TRACE(probe);
    const size_t expected = static_cast<size_t>(
        std::upper_bound(want.begin(), want.end(), probe,
                         [](uint64_t ts, const Want& w) { return ts < w.r.ts; }) - want.begin());
    EXPECT_EQ(analyzer::UpperBoundTs(table, probe).index(), expected);
  }
}

// Packed records of a thread that go back in time, by as much as a hostile trace likes
// (past 2^63 ticks: the delta needs its 64th bit), are put in order like the others.
TEST(ReaderTables, PackedRecordsGoingBackInTimeAreSorted) {
  TraceBytesBuilder b(100, 1000);
  const uint64_t kHuge = UINT64_MAX - 10, kHalf = 1ull << 63;
  b.NewChunk(101, 1000);
  for (uint64_t ts : {uint64_t{1500}, kHuge, uint64_t{1200}, kHalf, uint64_t{1100}}) {
    format::IoClose c{};
    c.ts = ts;
    c.fd = static_cast<int64_t>(ts % 1000);
    b.Append(c);
  }
  b.NewChunk(102, 1000);
  for (uint64_t ts : {1300, 1600}) {
    format::IoClose c{};
    c.ts = ts;
    c.fd = -static_cast<int64_t>(ts);
    b.Append(c);
  }
  const analyzer::ProcessTrace t = b.Parse();
  std::vector<std::pair<uint64_t, int64_t>> got;
  for (const auto& c : t.records.IoClose) got.emplace_back(c.ts, c.fd);
  const std::vector<std::pair<uint64_t, int64_t>> expected = {
      {1100, 100}, {1200, 200}, {1300, -1300}, {1500, 500}, {1600, -1600},
      {kHalf, static_cast<int64_t>(kHalf % 1000)}, {kHuge, static_cast<int64_t>(kHuge % 1000)}};
  EXPECT_EQ(got, expected);
  EXPECT_EQ(t.end_ns(), kHuge);
}

}  // namespace
}  // namespace colabtrace
