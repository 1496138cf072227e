// Round trips through the shim's real writer: TraceFile + Emit into a temp file, then
// analyzer::ReadTraceFile must give back exactly what was written: every record type,
// many threads at once, chunk and extent rollover, interning, truncation at a file-size
// limit (in a forked child, which must not get SIGXFSZ), Close() trimming the file, and
// the exec hand-off.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "record_fill.h"
#include "writer_session.h"

namespace colabtrace::testing {
namespace {

using analyzer::ProcessTrace;
namespace fmt = ::colabtrace::format;

class WriterTest : public ::testing::Test {
 protected:
  std::string TracePath(const char* name = "t.ctrace") const { return dir_.path() + "/" + name; }
  TempDir dir_;
};

// Counts this process's mappings of `path` in /proc/self/maps.
int MappingsOf(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int n = 0;
  while (std::getline(maps, line)) {
    if (line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0) ++n;
  }
  return n;
}

// A Clock record changes how the reader converts ticks; make it the identity.
template <class R> void AnchorClock(R& r) {
  if constexpr (std::is_same_v<R, fmt::Clock>) r.mono_ns = r.ts;
}

// Emits one record of every type (fields filled with distinct values) and checks that
// the reader returns each one, field for field, with its timestamp, thread and image.
TEST_F(WriterTest, EveryRecordTypeRoundTripsThroughTheFile) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  const uint32_t tid = static_cast<uint32_t>(gettid());
  int types = 0;
#define CT_EMIT(code, Name, dumpname)                                              \
  {                                                                                \
    fmt::Name r;                                                                   \
    r.ts = 5000 + code * 100;                                                      \
    r.Visit(fmt::FieldFiller(code));                                               \
    AnchorClock(r);                                                                \
    Put(r);                                                                        \
    ++types;                                                                       \
  }
  COLABTRACE_RECORD_TYPES(CT_EMIT)
#undef CT_EMIT
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_TRUE(t.ended);
  EXPECT_FALSE(t.truncated);
  EXPECT_EQ(t.pid(), static_cast<uint32_t>(getpid()));
  EXPECT_EQ(t.stats.records, static_cast<uint64_t>(types));
  EXPECT_EQ(t.stats.unknown_records, 0u);
#define CT_CHECK(code, Name, dumpname)                                             \
  {                                                                                \
    SCOPED_TRACE(dumpname);                                                        \
    fmt::Name want;                                                                \
    want.ts = 5000 + code * 100;                                                   \
    want.Visit(fmt::FieldFiller(code));                                            \
    AnchorClock(want);                                                             \
    ASSERT_EQ(t.records.Name.size(), 1u);                                          \
    const auto& got = t.records.Name[0];                                           \
    EXPECT_EQ(got.ts, want.ts);                                                    \
    EXPECT_EQ(got.tid, tid);                                                       \
    EXPECT_EQ(got.image, 0u);                                                      \
    fmt::ExpectSameFields(want, static_cast<const fmt::Name&>(got));               \
  }
  COLABTRACE_RECORD_TYPES(CT_CHECK)
#undef CT_CHECK
}

// 8 threads x 100k records at once: every record present exactly once, each thread's
// records in the order it wrote them, no damage.
TEST_F(WriterTest, ConcurrentThreadsLoseNothingAndKeepTheirOrder) {
  constexpr int kThreads = 8;
  constexpr uint64_t kPerThread = 100000;
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  std::vector<uint32_t> tids(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      tids[i] = static_cast<uint32_t>(gettid());
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (uint64_t k = 0; k < kPerThread; ++k) {
        fmt::ShimNote n;
        n.ts = 1000 + k * 3;
        n.code = static_cast<uint64_t>(i);
        n.value = k;
        n.text = k % 5;  // vary the record size a little
        shim::ShimScope scope;
        shim::Emit(n);
      }
    });
  }
  for (auto& th : threads) th.join();
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_FALSE(t.truncated);
  ASSERT_EQ(t.records.ShimNote.size(), kThreads * kPerThread);
  std::map<uint32_t, std::vector<const fmt::ShimNote*>> by_tid;
  for (const auto& ev : t.records.ShimNote) by_tid[ev.tid].push_back(&ev);
  ASSERT_EQ(by_tid.size(), static_cast<size_t>(kThreads));
  for (int i = 0; i < kThreads; ++i) {
    SCOPED_TRACE(i);
    const auto& mine = by_tid[tids[i]];
    ASSERT_EQ(mine.size(), kPerThread);
    for (uint64_t k = 0; k < kPerThread; ++k) {
      ASSERT_EQ(mine[k]->code, static_cast<uint64_t>(i));
      ASSERT_EQ(mine[k]->value, k) << "thread order kept";
      ASSERT_EQ(mine[k]->ts, 1000 + k * 3);
      ASSERT_EQ(mine[k]->text, k % 5);
    }
  }
  EXPECT_GE(t.stats.chunks, static_cast<uint64_t>(kThreads));
}

// One thread writes past many chunks and several 2 MiB extents: nothing lost at the
// chunk boundaries, and finished extents are unmapped (the shim's RSS stays flat).
TEST_F(WriterTest, ChunkAndExtentRolloverKeepsEveryRecord) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  constexpr uint64_t kRecords = 1200000;  // ~12 MB: six extents
  for (uint64_t k = 0; k < kRecords; ++k) {
    fmt::IoRead r;
    r.ts = 10 + k;
    r.api = k % 3;
    r.fd = static_cast<int64_t>(k % 1000);
    r.result = static_cast<int64_t>(k);
    r.dur = k * 7;
    Put(r);
  }
  EXPECT_LE(MappingsOf(s.path()), 3) << "extent 0, the current extent and the one ahead";
  s.End();
  const ProcessTrace t = MustRead(s.path());
  // Close() cuts the sparse part; what was reserved on disk stays (freeing it costs a
  // journal transaction at exit): at most one extent, and at most as much as was used.
  const uint64_t hwm = t.header.next_chunk_offset;
  EXPECT_GE(FileSize(s.path()), hwm);
  EXPECT_LE(FileSize(s.path()) - hwm, std::min<uint64_t>(hwm, 2u << 20));
  ASSERT_EQ(t.records.IoRead.size(), kRecords);
  for (uint64_t k = 0; k < kRecords; ++k) {
    const auto& r = t.records.IoRead[k];
    ASSERT_EQ(r.ts, 10 + k);
    ASSERT_EQ(r.result, static_cast<int64_t>(k));
    ASSERT_EQ(r.fd, static_cast<int64_t>(k % 1000));
    ASSERT_EQ(r.dur, k * 7);
  }
  EXPECT_GT(t.stats.chunks, 300u) << "many chunks were used";
  EXPECT_GT(FileSize(s.path()), 8ull << 20);
}

TEST_F(WriterTest, InterningGivesOneIdPerDistinctString) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  uint64_t a1, a2, b, empty, a3;
  {
    shim::ShimScope scope;
    a1 = shim::InternString("libcudart.so.12");
    b = shim::InternString("libcudnn.so.9");
    a2 = shim::InternString("libcudart.so.12");
    empty = shim::InternString("");
    a3 = shim::InternCString("libcudart.so.12");
    EXPECT_EQ(shim::InternCString(nullptr), 0u);
  }
  EXPECT_NE(a1, 0u);
  EXPECT_EQ(a1, a2);
  EXPECT_EQ(a1, a3);
  EXPECT_NE(a1, b);
  EXPECT_NE(empty, 0u);
  EXPECT_NE(empty, a1);
  EXPECT_NE(empty, b);
  // A string longer than the cap is cut, and is a different string from its prefix.
  const std::string long_text(shim::kMaxInternedString + 500, 'x');
  uint64_t cut, cut_again;
  {
    shim::ShimScope scope;
    cut = shim::InternString(long_text);
    cut_again = shim::InternString(long_text);
  }
  EXPECT_EQ(cut, cut_again);
  // Stacks.
  const uint64_t frames[] = {0x401000, 0x402000, 0x7f0000001234};
  const uint64_t other[] = {0x401000, 0x402000, 0x7f0000001235};
  uint64_t s1, s2, s3, none;
  {
    shim::ShimScope scope;
    s1 = shim::InternStack(frames, 3);
    s2 = shim::InternStack(frames, 3);
    s3 = shim::InternStack(other, 3);
    none = shim::InternStack(frames, 0);
  }
  EXPECT_NE(s1, 0u);
  EXPECT_EQ(s1, s2);
  EXPECT_NE(s1, s3);
  EXPECT_EQ(none, 0u);
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_EQ(t.Str(a1), "libcudart.so.12");
  EXPECT_EQ(t.Str(b), "libcudnn.so.9");
  EXPECT_EQ(t.Str(empty), "");
  EXPECT_EQ(t.Str(cut), long_text.substr(0, shim::kMaxInternedString));
  std::map<std::string, int> texts;
  for (const auto& r : t.records.String) {
    texts[std::string(reinterpret_cast<const char*>(r.text.data), r.text.size)]++;
  }
  EXPECT_EQ(texts.size(), 4u);
  for (const auto& [text, n] : texts) EXPECT_EQ(n, 1) << "written once: " << text.substr(0, 40);
  EXPECT_EQ(t.Stack(s1), std::vector<uint64_t>(frames, frames + 3));
  EXPECT_EQ(t.Stack(s3), std::vector<uint64_t>(other, other + 3));
  EXPECT_EQ(t.records.Stack.size(), 2u);
}

// A walk over the same paths in the same order again (the shim then finds each string
// right after the previous one in its arena) and in other orders, with look-alikes (same
// length, one character apart; a prefix) in between: every string keeps its first id and
// is written once.
TEST_F(WriterTest, InterningTheSameSequenceAgainKeepsEachId) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  constexpr int kPaths = 3000;  // more than the first level of the table holds
  auto path = [](int i) { return "/data/set/f" + std::to_string(100000 + i) + ".bin"; };
  std::vector<uint64_t> first(kPaths);
  uint64_t look_alike = 0, prefix = 0, look_alike_again = 0;
  {
    shim::ShimScope scope;
    for (int i = 0; i < kPaths; ++i) first[i] = shim::InternString(path(i));
    for (int pass = 0; pass < 2; ++pass) {
      for (int i = 0; i < kPaths; ++i) ASSERT_EQ(shim::InternString(path(i)), first[i]) << i;
    }
    // After path(9), the next copy is path(10): ask for strings that look like it.
    ASSERT_EQ(shim::InternString(path(9)), first[9]);
    look_alike = shim::InternString("/data/set/f100010.bim");
    ASSERT_EQ(shim::InternString(path(9)), first[9]);
    prefix = shim::InternString("/data/set/f100010.bi");
    ASSERT_EQ(shim::InternString(path(9)), first[9]);
    EXPECT_EQ(shim::InternString(path(10)), first[10]);
    // Backwards, and every other one.
    for (int i = kPaths - 1; i >= 0; --i) ASSERT_EQ(shim::InternString(path(i)), first[i]) << i;
    for (int i = 0; i < kPaths; i += 2) ASSERT_EQ(shim::InternString(path(i)), first[i]) << i;
    // The look-alike was interned after the last path: found next to it too.
    ASSERT_EQ(shim::InternString(path(9)), first[9]);
    look_alike_again = shim::InternString("/data/set/f100010.bim");
  }
  EXPECT_EQ(look_alike_again, look_alike);
  EXPECT_NE(look_alike, first[10]);
  EXPECT_NE(prefix, first[10]);
  EXPECT_NE(prefix, look_alike);
  s.End();
  const ProcessTrace t = MustRead(s.path());
  for (int i = 0; i < kPaths; ++i) ASSERT_EQ(t.Str(first[i]), path(i));
  EXPECT_EQ(t.Str(look_alike), "/data/set/f100010.bim");
  EXPECT_EQ(t.Str(prefix), "/data/set/f100010.bi");
  EXPECT_EQ(t.records.String.size(), static_cast<size_t>(kPaths + 2)) << "each string written once";
}

// More distinct strings than the table has slots: ids stay distinct and every one
// resolves to its own text (the shim falls back to emitting without deduplication).
TEST_F(WriterTest, InterningBeyondTheTableStaysCorrect) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  constexpr int kStrings = 100000;
  std::vector<uint64_t> ids(kStrings);
  {
    shim::ShimScope scope;
    for (int i = 0; i < kStrings; ++i) ids[i] = shim::InternString("/data/shard-" + std::to_string(i));
    // The first ones are still deduplicated.
    EXPECT_EQ(shim::InternString("/data/shard-0"), ids[0]);
  }
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_EQ(std::set<uint64_t>(ids.begin(), ids.end()).size(), static_cast<size_t>(kStrings));
  for (int i = 0; i < kStrings; ++i) {
    ASSERT_EQ(t.Str(ids[i]), "/data/shard-" + std::to_string(i)) << i;
  }
}

// Threads interning the same strings at once: each id they get names the right text.
TEST_F(WriterTest, ConcurrentInterningResolvesCorrectly) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  constexpr int kThreads = 4, kStrings = 2000;
  std::vector<std::vector<uint64_t>> ids(kThreads, std::vector<uint64_t>(kStrings));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      shim::ShimScope scope;
      for (int k = 0; k < kStrings; ++k) {
        const int which = (k * 7 + i * 13) % kStrings;
        ids[i][which] = shim::InternString("libfoo-" + std::to_string(which) + ".so");
      }
    });
  }
  for (auto& th : threads) th.join();
  s.End();
  const ProcessTrace t = MustRead(s.path());
  for (int i = 0; i < kThreads; ++i) {
    for (int k = 0; k < kStrings; ++k) {
      ASSERT_EQ(t.Str(ids[i][k]), "libfoo-" + std::to_string(k) + ".so");
    }
  }
  // At most one String record per (string, thread), normally exactly one per string.
  EXPECT_GE(t.records.String.size(), static_cast<size_t>(kStrings));
  EXPECT_LE(t.records.String.size(), static_cast<size_t>(kStrings * kThreads));
}

// The file is only as long as its reservation (the chunks handed out, in doubling
// steps), while tracing and after; Close() refuses new chunks and marks the trace ended,
// and a thread that already holds a chunk may still finish writing into it.
TEST_F(WriterTest, CloseEndsTheTraceAndTheFileHoldsOnlyItsReservation) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  for (int k = 0; k < 10; ++k) {
    fmt::Exit e;
    e.ts = 100 + k;
    e.code = k;
    Put(e);
  }
  const uint64_t hwm = shim::g_trace.header()->next_chunk_offset;
  EXPECT_EQ(FileSize(s.path()), hwm) << "no sparse size ahead of the reservation";
  shim::g_trace.Close();
  EXPECT_EQ(FileSize(s.path()), hwm);
  EXPECT_EQ(hwm, 2u * fmt::kChunkSize) << "the header slot and one chunk";
  // The main thread still holds its chunk: this record lands.
  fmt::Exit late;
  late.ts = 500;
  late.code = 77;
  Put(late);
  // A thread without a chunk gets none after Close.
  std::thread([] {
    fmt::Exit e;
    e.ts = 600;
    e.code = 88;
    Put(e);
  }).join();
  s.End(/*close=*/false);
  EXPECT_EQ(FileSize(s.path()), hwm);
  const ProcessTrace t = MustRead(s.path());
  EXPECT_TRUE(t.ended);
  ASSERT_EQ(t.records.Exit.size(), 11u);
  EXPECT_EQ(t.records.Exit.back().code, 77);
  struct stat st;
  ASSERT_EQ(stat(s.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// In a forked child with a small RLIMIT_FSIZE, the writer stops at the limit: the trace
// says truncated (EFBIG), what was written before is intact, and the child is not
// killed by SIGXFSZ.
TEST_F(WriterTest, FileSizeLimitTruncatesWithoutSigxfsz) {
  const std::string path = TracePath();
  constexpr uint64_t kLimit = 5u << 20;  // two extents fit, the third does not
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct rlimit lim = {kLimit, kLimit};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(10);
    WriterSession s(path);
    if (!s.Begin()) _exit(11);
    uint64_t k = 0;
    // Write until the writer stops, then a good deal more (all dropped).
    for (; k < 10000000; ++k) {
      fmt::ShimNote n;
      n.ts = k;
      n.value = k;
      n.code = 1;
      shim::ShimScope scope;
      shim::Emit(n);
      if (shim::g_trace.header()->flags & fmt::kFlagTruncated) break;
    }
    for (uint64_t j = 0; j < 100000; ++j) {
      fmt::ShimNote n;
      n.ts = k + 1 + j;
      n.value = k + 1 + j;
      n.code = 2;
      shim::ShimScope scope;
      shim::Emit(n);
    }
    s.End();
    _exit(k < 10000000 ? 0 : 12);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "child died of signal " << WTERMSIG(status);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_LE(FileSize(path), kLimit);
  std::string err;
  auto t = analyzer::ReadTraceFile(path, &err);
  ASSERT_TRUE(t) << err;
  EXPECT_TRUE(t->truncated);
  EXPECT_EQ(t->header.truncation_errno, static_cast<uint32_t>(EFBIG));
  EXPECT_TRUE(t->warnings.empty());
  // What was written is a gap-free prefix of the sequence.
  const auto& notes = t->records.ShimNote;
  ASSERT_GT(notes.size(), 100000u) << "at least the first extent's worth";
  for (size_t i = 0; i < notes.size(); ++i) ASSERT_EQ(notes[i].value, i);
}

// MarkTruncated stops tracing at once: no new chunk, and the header says why.
TEST_F(WriterTest, MarkTruncatedStopsNewChunks) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  fmt::Exit e;
  e.ts = 1;
  Put(e);
  shim::g_trace.MarkTruncated(ENOSPC);
  EXPECT_EQ(shim::g_trace.AllocChunk(true), nullptr);
  std::thread([] {
    fmt::Exit x;
    x.ts = 2;
    Put(x);
  }).join();
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(t.header.truncation_errno, static_cast<uint32_t>(ENOSPC));
  EXPECT_EQ(t.records.Exit.size(), 1u);
}

// A record too large for any chunk is dropped; the thread's writer keeps working.
TEST_F(WriterTest, OversizedRecordIsDroppedAndWritingGoesOn) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::vector<uint8_t> huge(fmt::kChunkSize, 0xab);
  fmt::Stack st;
  st.ts = 5;
  st.id = 9;
  st.frames = fmt::Bytes{huge.data(), static_cast<uint32_t>(huge.size())};
  fmt::Exit before, after;
  before.ts = 4;
  before.code = 1;
  after.ts = 6;
  after.code = 2;
  Put(before);
  Put(st);
  Put(after);
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_TRUE(t.records.Stack.empty());
  ASSERT_EQ(t.records.Exit.size(), 2u);
  EXPECT_EQ(t.records.Exit[1].code, 2);
}

// The fatal-signal writer uses a chunk of its own, flagged as such.
TEST_F(WriterTest, SignalHandlerRecordsGoToTheirOwnChunk) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  fmt::Exit e;
  e.ts = 10;
  Put(e);
  shim::ThreadState local;
  local.signal_context = true;
  local.tid = static_cast<uint32_t>(gettid());
  local.generation = shim::g_generation;
  fmt::Signal sig;
  sig.ts = 20;
  sig.signo = SIGSEGV;
  sig.addr = 0x10;
  shim::EmitFromSignalHandler(local, sig);
  s.End();
  const ProcessTrace t = MustRead(s.path());
  ASSERT_EQ(t.records.Signal.size(), 1u);
  EXPECT_EQ(t.records.Signal[0].signo, static_cast<uint64_t>(SIGSEGV));
  EXPECT_EQ(t.records.Signal[0].addr, 0x10u);
  EXPECT_EQ(t.stats.chunks, 2u);
  bool flagged = false;
  const std::vector<uint8_t> bytes = ReadBytes(s.path());
  for (size_t off = fmt::kChunkSize; off + sizeof(fmt::ChunkHeader) <= bytes.size(); off += fmt::kChunkSize) {
    fmt::ChunkHeader ch;
    std::memcpy(&ch, bytes.data() + off, sizeof(ch));
    if (ch.magic == fmt::kChunkMagic && (ch.flags & fmt::kChunkFromSignalHandler)) flagged = true;
  }
  EXPECT_TRUE(flagged);
}

// Create never reuses a name and never follows a symlink; a failed Create leaves no
// file behind.
TEST_F(WriterTest, CreateRefusesExistingNamesAndSymlinks) {
  const std::string existing = TracePath("exists.ctrace");
  { std::ofstream(existing) << "keep"; }
  shim::TraceFile f;
  EXPECT_FALSE(f.Create(existing.c_str(), 1, 0, 1, 0, 0, 0));
  EXPECT_EQ(ReadBytes(existing), (std::vector<uint8_t>{'k', 'e', 'e', 'p'}));
  const std::string target = TracePath("target");
  const std::string link = TracePath("link.ctrace");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_FALSE(f.Create(link.c_str(), 1, 0, 1, 0, 0, 0));
  EXPECT_FALSE(std::filesystem::exists(target)) << "the dangling link was not followed";
  EXPECT_FALSE(f.is_open());
}

// Runs Create in a child under RLIMIT_FSIZE = limit; returns the child's exit code:
// 0 created (the trace's first reservation is then checked), 1 not created.
int CreateUnderSizeLimit(const std::string& path, rlim_t limit) {
  const pid_t child = fork();
  if (child == 0) {
    struct rlimit lim = {limit, limit};
    if (setrlimit(RLIMIT_FSIZE, &lim) != 0) _exit(10);
    shim::TraceFile f;
    if (!f.Create(path.c_str(), static_cast<uint32_t>(getpid()), 0, 1, 0, 0, 0)) {
      _exit(f.create_error() == EFBIG ? 1 : 12);
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || static_cast<rlim_t>(st.st_size) > limit) _exit(13);
    _exit(f.header() != nullptr && fmt::HasValidMagic(*f.header()) ? 0 : 14);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Less room than one extent: a smaller first reservation, so the header and the first
// events still land. Less than the header and one chunk: no trace, and no file left.
TEST_F(WriterTest, CreateBelowOneExtentReservesLessAndBelowTwoChunksLeavesNoFile) {
  const std::string small = TracePath("small.ctrace");
  EXPECT_EQ(CreateUnderSizeLimit(small, 1u << 20), 0);
  EXPECT_TRUE(std::filesystem::exists(small));
  const std::string tiny = TracePath("tiny.ctrace");
  EXPECT_EQ(CreateUnderSizeLimit(tiny, fmt::kChunkSize + 100), 1);
  EXPECT_FALSE(std::filesystem::exists(tiny));
  // Nothing else was left in the directory (no temporary names).
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(small).parent_path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

// The trace holds no descriptor while the program runs: the mapping keeps the file.
TEST_F(WriterTest, NoDescriptorIsHeldWhileTracing) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  EXPECT_EQ(shim::g_trace.fd(), -1);
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const auto target = std::filesystem::read_symlink(e.path(), ec);
    EXPECT_NE(target.string(), s.path()) << "fd " << e.path().filename();
  }
}

// The exec hand-off: the next image finds the trace at the hand-over descriptor, adopts
// it as image 1 and closes the descriptor; both images' records read back from the file.
TEST_F(WriterTest, ExecHandoffIsAdoptedAsTheNextImage) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  fmt::ProcessStart first;
  first.ts = 10;
  first.pid = static_cast<uint64_t>(getpid());
  first.image = 0;
  Put(first);
  shim::g_trace.PrepareExecHandoff();
  EXPECT_TRUE(shim::g_trace.header()->flags & fmt::kFlagExecPending);
  const int fd = shim::g_trace.fd();
  const int floor = shim::TraceFile::HandoverFloor();
  EXPECT_GE(fd, floor);
  EXPECT_LT(fd, floor + 16);
  EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << "inherited across exec";
  // "exec": the new image starts with nothing but the descriptor.
  const int keep = dup(fd);
  ASSERT_GE(keep, 0);
  s.End(/*close=*/false);
  ASSERT_EQ(dup2(keep, fd), fd);
  close(keep);
  ASSERT_TRUE(shim::g_trace.AdoptInherited(static_cast<uint32_t>(getpid())));
  EXPECT_EQ(shim::g_trace.image(), 1u);
  EXPECT_EQ(shim::g_trace.header()->flags & fmt::kFlagExecPending, 0u);
  EXPECT_EQ(shim::g_trace.header()->image_count, 2u);
  EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "the adopted descriptor is closed";
  EXPECT_EQ(std::string(shim::g_trace.path()), s.path());
  shim::g_pid = getpid();
  __atomic_add_fetch(&shim::g_generation, 1, __ATOMIC_ACQ_REL);
  shim::g_recording = true;
  fmt::ProcessStart second;
  second.ts = 20;
  second.pid = static_cast<uint64_t>(getpid());
  second.image = 1;
  second.origin = static_cast<uint64_t>(fmt::ProcessOrigin::kExec);
  Put(second);
  s.End();
  const ProcessTrace t = MustRead(s.path());
  ASSERT_EQ(t.records.ProcessStart.size(), 2u);
  EXPECT_EQ(t.records.ProcessStart[0].image, 0u);
  EXPECT_EQ(t.records.ProcessStart[1].image, 1u);
  EXPECT_EQ(t.records.ProcessStart[1].tid, static_cast<uint32_t>(gettid()));
  EXPECT_EQ(t.header.image_count, 2u);
  EXPECT_TRUE(t.ended);
}

// ---- the window (wire.h, "event chunks") ----------------------------------------------

// Chunks in the file with this magic.
int ChunksIn(const std::string& path, uint32_t of_magic) {
  const std::vector<uint8_t> b = ReadBytes(path);
  int n = 0;
  for (size_t off = fmt::kChunkSize; off + 4 <= b.size(); off += fmt::kChunkSize) {
    uint32_t magic;
    std::memcpy(&magic, b.data() + off, 4);
    if (magic == of_magic) ++n;
  }
  return n;
}
int EventChunksIn(const std::string& path) { return ChunksIn(path, fmt::kEventChunkMagic); }

// 8 threads roll a 1 MiB window at once (the queue of left chunks, their rewriting): every
// event is counted, and each thread's events in full are its latest ones, in order.
TEST_F(WriterTest, WindowRolledByManyThreadsKeepsEachThreadsLatestEventsAndCountsAll) {
  constexpr int kThreads = 8;
  constexpr uint64_t kPerThread = 60000;
  WindowLimits limits(1u << 20, 0, 64u << 20);
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < kThreads) std::this_thread::yield();
      for (uint64_t k = 0; k < kPerThread; ++k) PutEvent(i, k, 1000 + k * 3);
      fmt::ShimNote n;  // a record that is never dropped, after the events
      n.ts = 1000 + kPerThread * 3;
      n.code = static_cast<uint64_t>(i);
      Put(n);
    });
  }
  for (auto& th : threads) th.join();
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_FALSE(t.truncated);
  EXPECT_FALSE(t.window.capped);
  EXPECT_EQ(t.window.events_total, kThreads * kPerThread);
  EXPECT_EQ(t.window.events_in_full, t.records.IoRead.size());
  EXPECT_LT(t.records.IoRead.size(), kThreads * kPerThread / 2);
  EXPECT_GT(t.header.recycled_chunks, 0u);
  EXPECT_EQ(t.window.recycled_chunks, t.header.recycled_chunks);
  EXPECT_EQ(t.records.ShimNote.size(), static_cast<size_t>(kThreads));
  // 32 chunks make the window; each thread may hold one more while the others wait.
  EXPECT_LE(EventChunksIn(s.path()), 32 + kThreads);
  // Per writer: (ts, number) of its events in full, in the reader's order.
  std::map<int64_t, std::vector<std::pair<uint64_t, uint64_t>>> by_writer;
  for (size_t j = 0; j < t.records.IoRead.size(); ++j) {
    const auto ev = t.records.IoRead[j];
    by_writer[ev.fd].emplace_back(ev.ts, static_cast<uint64_t>(ev.result));
  }
  ASSERT_EQ(by_writer.size(), static_cast<size_t>(kThreads));
  for (const auto& [i, mine] : by_writer) {
    SCOPED_TRACE(i);
    const uint64_t first = mine.front().second;
    ASSERT_EQ(first + mine.size(), kPerThread) << "the thread's latest events, none missing";
    for (size_t j = 0; j < mine.size(); ++j) {
      ASSERT_EQ(mine[j].second, first + j);
      ASSERT_EQ(mine[j].first, 1000 + (first + j) * 3);
    }
    if (first > 0) {  // its last event given up is no later than full_from
      EXPECT_LE(1000 + (first - 1) * 3, t.window.full_from_ns);
    }
  }
}

// Threads that exit (RetireThread, as the shim's pthread key destructor calls it): each
// one's last event chunk is put up for rewriting with its events counted in the header, so
// 600 threads in a 1 MiB window leave 32 event chunks and every event counted. Thread i
// writes (i % 7) * 1500 events (0 to 9,000: none, part of a chunk, several chunks); each
// fifth writes 5 more after it retired (a later destructor's I/O), which count from 0.
TEST_F(WriterTest, ExitedThreadsLastEventChunksRollWithTheWindowAndStayCounted) {
  constexpr int kThreads = 600, kAtOnce = 4;
  WindowLimits limits(1u << 20, 0, 64u << 20);
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  uint64_t expected = 0, retired = 0;
  for (int first = 0; first < kThreads; first += kAtOnce) {
    std::vector<std::thread> threads;
    for (int i = first; i < first + kAtOnce; ++i) {
      const uint64_t n = static_cast<uint64_t>(i % 7) * 1500, after = i % 5 == 0 ? 5 : 0;
      expected += n + after;
      retired += n;
      threads.emplace_back([i, n, after] {
        for (uint64_t k = 0; k < n; ++k) PutEvent(i, k, 1000 + k);
        shim::RetireThread();
        for (uint64_t k = 0; k < after; ++k) PutEvent(i, n + k, 1000 + n + k);
      });
    }
    for (auto& th : threads) th.join();
  }
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_EQ(t.window.events_total, expected);
  EXPECT_EQ(t.header.events_retired, retired);
  EXPECT_EQ(t.window.events_in_full, t.records.IoRead.size());
  EXPECT_LT(t.window.events_in_full, expected / 4);
  // The window's 32 chunks, and the chunks of the threads that wrote after retiring (never
  // retired themselves: their thread did not exit again).
  EXPECT_LE(EventChunksIn(s.path()), 32 + kThreads / 5);
  EXPECT_GT(t.header.recycled_chunks, 400u);

  // A kill between a chunk's mark and the header's count: the header short of the newest
  // mark, whose chunk then counts itself. The same total.
  std::vector<uint8_t> b = ReadBytes(s.path());
  uint64_t newest = 0, newest_total = 0;
  for (size_t off = fmt::kChunkSize; off + fmt::kChunkSize <= b.size(); off += fmt::kChunkSize) {
    fmt::EventChunkHeader eh;
    std::memcpy(&eh, b.data() + off, sizeof(eh));
    if (eh.chunk.magic != fmt::kEventChunkMagic || eh.retired <= newest) continue;
    newest = eh.retired;
    uint64_t records = 0;
    for (const auto& r : t.records.IoRead) {
      if (r.tid == eh.chunk.tid && r.ts >= eh.chunk.base_ticks && r.ts <= eh.end_ticks) ++records;
    }
    newest_total = eh.events_before + records;
  }
  ASSERT_EQ(newest - 1, retired) << "the last thread to retire left its chunk in the file";
  ASSERT_GT(newest_total, 0u);
  const uint64_t before_it = retired - newest_total;
  std::memcpy(b.data() + offsetof(fmt::FileHeader, events_retired), &before_it, 8);
  const std::string cut = s.path() + ".cut";
  std::ofstream(cut, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  const ProcessTrace k = MustRead(cut);
  EXPECT_EQ(k.window.events_total, expected);
}

// A thread per task that interns a new path (RetireThread at each exit, as the shim's
// pthread key destructor calls it): its String goes into a record chunk an exited thread
// left with room (TraceFile's pool), not into a 32 KiB chunk of its own. 3,000 threads, 6
// at a time: thread i interns one path, each third a stack as well; each 100th also writes
// a ShimNote (a record of its thread: a record chunk of its own, which strings then fill
// too); each 250th interns one more path after it retired (a later destructor), into a new
// chunk. Every id names its text, every ShimNote its thread, and the record chunks are the
// strings' bytes plus one per thread alive at once and per thread that wrote a ShimNote or
// after it retired: 60 at most, where each thread took one before (3,000).
TEST_F(WriterTest, ExitedThreadsRecordChunksAreContinuedByLaterThreadsStrings) {
  constexpr int kThreads = 3000, kAtOnce = 6;
  WindowLimits limits(1u << 20, 0, 64u << 20);
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::vector<uint64_t> path_ids(kThreads), stack_ids(kThreads), late_ids(kThreads);
  std::vector<uint32_t> tids(kThreads);
  auto path = [](int i, const char* what) { return "/data/task-" + std::to_string(i) + "/" + what + ".bin"; };
  size_t bytes = 0;
  for (int first = 0; first < kThreads; first += kAtOnce) {
    std::vector<std::thread> threads;
    for (int i = first; i < first + kAtOnce; ++i) {
      bytes += path(i, "input").size() + 16 + (i % 3 == 0 ? 16 + 16 : 0) + (i % 250 == 0 ? 16 + path(i, "late").size() : 0);
      threads.emplace_back([&, i] {
        tids[i] = static_cast<uint32_t>(gettid());
        {
          shim::ShimScope scope;
          path_ids[i] = shim::InternString(path(i, "input"));
          const uint64_t frames[2] = {0x1000u + static_cast<uint64_t>(i), 0x2000};
          if (i % 3 == 0) stack_ids[i] = shim::InternStack(frames, 2);
        }
        if (i % 100 == 0) {
          fmt::ShimNote n;
          n.ts = 1000 + static_cast<uint64_t>(i);
          n.code = static_cast<uint64_t>(i);
          Put(n);
        }
        PutEvent(i, 0, 1000 + static_cast<uint64_t>(i));
        shim::RetireThread();
        if (i % 250 == 0) {
          shim::ShimScope scope;
          late_ids[i] = shim::InternString(path(i, "late"));
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  // The pooled chunks mapped on their own, like every other mapping, go with the trace.
  EXPECT_GT(MappingsOf(s.path()), 0);
  s.End();
  EXPECT_EQ(MappingsOf(s.path()), 0);
  const ProcessTrace t = MustRead(s.path());
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_EQ(t.Str(path_ids[i]), path(i, "input")) << i;
    if (i % 3 == 0) {
      ASSERT_EQ(t.Stack(stack_ids[i]), (std::vector<uint64_t>{0x1000u + static_cast<uint64_t>(i), 0x2000})) << i;
    }
    if (i % 250 == 0) ASSERT_EQ(t.Str(late_ids[i]), path(i, "late")) << i;
  }
  EXPECT_EQ(t.records.String.size(), static_cast<size_t>(kThreads + kThreads / 250));
  EXPECT_EQ(t.records.Stack.size(), static_cast<size_t>(kThreads / 3));
  ASSERT_EQ(t.records.ShimNote.size(), static_cast<size_t>(kThreads / 100));
  for (const auto& n : t.records.ShimNote) EXPECT_EQ(n.tid, tids[n.code]) << n.code;
  EXPECT_EQ(t.window.events_total, static_cast<uint64_t>(kThreads));
  const size_t by_bytes = bytes / (fmt::kChunkSize - 1024) + 1;
  EXPECT_LE(static_cast<size_t>(ChunksIn(s.path(), fmt::kChunkMagic)), by_bytes + kAtOnce + kThreads / 100 + kThreads / 250);
  EXPECT_LE(by_bytes + kAtOnce + kThreads / 100 + kThreads / 250, 60u);
}

// More threads leave a record chunk with room at once than the pool has slots (64), and
// more take one at once than it holds. 100 threads write a ShimNote each (a record chunk of
// their own) and exit together: 64 chunks wait in the pool, 36 are finished (kept in the
// file, as every record chunk is). Then 100 threads, all alive at once, intern a new path
// each: 64 continue the waiting chunks and 36 take new ones (136 in the file). Then 200
// threads, 4 at a time, intern a new path each: their strings fill the waiting chunks, and
// the file gets no new record chunk.
TEST_F(WriterTest, RecordChunkPoolHolds64AndLaterStringsFillThem) {
  constexpr int kTogether = 100, kLater = 200, kAtOnce = 4, kSlots = 64;
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::vector<uint32_t> tids(kTogether);
  std::vector<uint64_t> ids(kTogether + kLater);
  auto path = [](int i) { return "/task/" + std::to_string(i); };
  // n threads run body(i) for i in [first, first + n), all alive until each has run it,
  // then retire (as each one's exit would) and are joined.
  auto together = [](int first, int n, const std::function<void(int)>& body) {
    std::atomic<int> arrived{0};
    std::vector<std::thread> threads;
    for (int i = first; i < first + n; ++i) {
      threads.emplace_back([&, i] {
        body(i);
        arrived.fetch_add(1);
        while (arrived.load() < n) std::this_thread::yield();
        shim::RetireThread();
      });
    }
    for (auto& th : threads) th.join();
  };
  auto intern = [&](int i) {
    shim::ShimScope scope;
    ids[i] = shim::InternString(path(i));
  };
  together(0, kTogether, [&](int i) {
    tids[i] = static_cast<uint32_t>(gettid());
    fmt::ShimNote n;
    n.ts = 1000 + static_cast<uint64_t>(i);
    n.code = static_cast<uint64_t>(i);
    Put(n);
  });
  EXPECT_EQ(ChunksIn(s.path(), fmt::kChunkMagic), kTogether);
  together(0, kTogether, intern);
  EXPECT_EQ(ChunksIn(s.path(), fmt::kChunkMagic), kTogether + (kTogether - kSlots));
  for (int first = kTogether; first < kTogether + kLater; first += kAtOnce) together(first, kAtOnce, intern);
  EXPECT_EQ(ChunksIn(s.path(), fmt::kChunkMagic), kTogether + (kTogether - kSlots));
  s.End();
  const ProcessTrace t = MustRead(s.path());
  for (int i = 0; i < kTogether + kLater; ++i) ASSERT_EQ(t.Str(ids[i]), path(i)) << i;
  ASSERT_EQ(t.records.ShimNote.size(), static_cast<size_t>(kTogether));
  for (const auto& n : t.records.ShimNote) EXPECT_EQ(n.tid, tids[n.code]) << n.code;
}

// Without a window nothing is rewritten: an exited thread's chunk stays its latest, and
// what it writes after (a later destructor's I/O) counts on from it.
TEST_F(WriterTest, WithoutAWindowAnExitedThreadsChunkStaysItsLatest) {
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  std::thread([] {
    for (uint64_t k = 0; k < 10; ++k) PutEvent(0, k, 1000 + k);
    shim::RetireThread();
    for (uint64_t k = 10; k < 15; ++k) PutEvent(0, k, 1000 + k);
  }).join();
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_EQ(t.header.events_retired, 0u);
  EXPECT_EQ(t.window.events_total, 15u);
  EXPECT_EQ(t.window.events_in_full, 15u);
  EXPECT_EQ(EventChunksIn(s.path()), 2);
}

// COLABTRACE_WINDOW_S: with room to spare, event chunks older than the window give way.
// Ticks are ns here (WriterSession), 100 us apart: 10 s of events, a 1 s window.
TEST_F(WriterTest, WindowRollsByTime) {
  constexpr uint64_t kEvents = 100000, kStep = 100000;
  WindowLimits limits(64u << 20, 1, 64u << 20);
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  for (uint64_t k = 0; k < kEvents; ++k) PutEvent(0, k, 1000 + k * kStep);
  s.End();
  const ProcessTrace t = MustRead(s.path());
  EXPECT_EQ(t.window.events_total, kEvents);
  EXPECT_EQ(t.window.window_ns, 1000000000u);
  const uint64_t last = 1000 + (kEvents - 1) * kStep;
  ASSERT_FALSE(t.records.IoRead.empty());
  const uint64_t first_kept = t.records.IoRead[0].ts;
  EXPECT_GT(first_kept, t.window.full_from_ns);
  // A chunk holds a few thousand of these events (a few tenths of a second): the window
  // keeps between 1 s and 1 s plus two chunks.
  const uint64_t per_chunk_ns = fmt::kChunkSize / 4 * kStep;
  EXPECT_GE(last - t.window.full_from_ns, 1000000000u);
  EXPECT_LE(last - first_kept, 1000000000u + 2 * per_chunk_ns);
  EXPECT_EQ(t.window.events_in_full, t.records.IoRead.size());
  EXPECT_EQ(static_cast<uint64_t>(t.records.IoRead[t.records.IoRead.size() - 1].result), kEvents - 1);
}

// COLABTRACE_MAX_MB: event chunks stop growing the file a quarter of the cap below it and
// roll there (capped); records that are never dropped then take the oldest event chunks'
// place; past the cap with no event chunk left to take, tracing stops (truncated, EFBIG).
TEST_F(WriterTest, CapRollsTheWindowThenGivesItsChunksToKeptRecordsThenTruncates) {
  constexpr uint64_t kCap = 8u << 20;
  WindowLimits limits(64u << 20, 0, kCap);
  WriterSession s(TracePath());
  ASSERT_TRUE(s.Begin());
  constexpr uint64_t kEvents = 2000000;  // ~24 MB
  for (uint64_t k = 0; k < kEvents; ++k) PutEvent(0, k, 1000 + k);
  const uint64_t hwm = shim::g_trace.header()->next_chunk_offset;
  EXPECT_LE(hwm, kCap - kCap / 4);
  EXPECT_TRUE(shim::g_trace.header()->flags & fmt::kFlagCapped);
  // Kept records past the 2 MiB set aside for them: they take event chunks (~5 MB).
  uint64_t notes = 0;
  for (; notes < 400000; ++notes) {
    fmt::ShimNote n;
    n.ts = 1000 + kEvents + notes;
    n.value = notes;
    Put(n);
  }
  EXPECT_FALSE(shim::g_trace.header()->flags & fmt::kFlagTruncated);
  s.End(/*close=*/false);
  {
    const ProcessTrace t = MustRead(s.path());
    EXPECT_TRUE(t.window.capped);
    EXPECT_FALSE(t.truncated);
    EXPECT_EQ(t.window.events_total, kEvents);
    EXPECT_EQ(t.records.ShimNote.size(), notes);
    EXPECT_LE(FileSize(s.path()), kCap);
    EXPECT_LT(t.records.IoRead.size(), kEvents / 3);
  }
  // Again, until the kept records fill the whole cap.
  WriterSession s2(TracePath("t2.ctrace"));
  ASSERT_TRUE(s2.Begin());
  for (uint64_t k = 0; k < kEvents / 4; ++k) PutEvent(0, k, 1000 + k);
  for (uint64_t k = 0; k < 3000000; ++k) {
    fmt::ShimNote n;
    n.ts = 1000 + kEvents + k;
    Put(n);
  }
  s2.End();
  const ProcessTrace t2 = MustRead(s2.path());
  EXPECT_TRUE(t2.truncated);
  EXPECT_EQ(t2.header.truncation_errno, static_cast<uint32_t>(EFBIG));
  EXPECT_LE(FileSize(s2.path()), kCap);
  EXPECT_EQ(t2.window.events_total, kEvents / 4);
}

}  // namespace
}  // namespace colabtrace::testing
