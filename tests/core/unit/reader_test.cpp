// The reader on untrusted bytes (empty, not a trace, cut at every offset, flipped
// bytes, unknown and damaged records, hostile clocks) and the process analysis on small
// traces written by the real writer.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "colabtrace/format/codec.h"
#include "render/render.h"
#include "report/report.h"
#include "writer_session.h"

namespace colabtrace::testing {
namespace {

using analyzer::ParseTrace;
using analyzer::ProcessTrace;
namespace fmt = ::colabtrace::format;

// ---- building traces by hand ---------------------------------------------------------

// A trace assembled byte by byte: a header, then chunks of hand-framed records.
class TraceBytes {
 public:
  explicit TraceBytes(uint64_t features = 0, uint64_t hint = 1000000000ull) {
    bytes_.assign(fmt::kChunkSize, 0);
    fmt::FileHeader h{};
    std::memcpy(h.magic, fmt::kFileMagic, sizeof(h.magic));
    h.version_major = fmt::kVersionMajor;
    h.version_minor = fmt::kVersionMinor;
    h.header_size = sizeof(h);
    h.features = features;
    h.chunk_size = fmt::kChunkSize;
    h.pid = 4242;
    h.ticks_per_sec_hint = hint;
    h.next_chunk_offset = fmt::kChunkSize;
    h.image_count = 1;
    std::memcpy(bytes_.data(), &h, sizeof(h));
  }

  fmt::FileHeader& header() { return *reinterpret_cast<fmt::FileHeader*>(bytes_.data()); }

  // Starts a new chunk for tid whose first delta is against base_ticks.
  void NewChunk(uint32_t tid, uint64_t base_ticks, uint32_t seq = 0) {
    pos_ = bytes_.size();
    bytes_.resize(bytes_.size() + fmt::kChunkSize, 0);
    fmt::ChunkHeader ch{};
    ch.magic = fmt::kChunkMagic;
    ch.tid = tid;
    ch.base_ticks = base_ticks;
    ch.seq = seq;
    std::memcpy(bytes_.data() + pos_, &ch, sizeof(ch));
    pos_ += sizeof(ch);
    last_ts_ = base_ticks;
    header().next_chunk_offset = bytes_.size();
  }

  // Appends a framed, committed record; returns its file offset.
  template <class R> size_t Add(const R& r) {
    const size_t at = pos_;
    pos_ += fmt::EncodeRecordUncommitted(r, last_ts_, bytes_.data() + pos_);
    bytes_[at] = static_cast<uint8_t>(R::kType);
    if (r.ts > last_ts_) last_ts_ = r.ts;
    return at;
  }

  // Appends raw bytes (a hand-made record); returns their offset.
  size_t Raw(std::initializer_list<uint8_t> b) {
    const size_t at = pos_;
    for (uint8_t x : b) bytes_[pos_++] = x;
    return at;
  }

  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
  size_t pos_ = 0;
  uint64_t last_ts_ = 0;
};

std::optional<ProcessTrace> Parse(const std::vector<uint8_t>& b, std::string* err = nullptr) {
  std::string e;
  auto t = ParseTrace(b, "trace.ctrace", &e);
  if (err) *err = e;
  return t;
}

// Builds every report format over t: must not crash, and the JSON must parse. A trace
// holding a run_info record (a flipped type byte can make one) is `colabtrace run`'s own
// and is no row of processes[].
void ReportOn(const ProcessTrace& t) {
  std::vector<ProcessTrace> v;
  v.push_back(t);
  auto report = analyzer::BuildReport(v, {});
  const std::string json = analyzer::RenderJson(*report);
  std::string err;
  auto parsed = analyzer::Json::Parse(json, &err);
  ASSERT_TRUE(parsed.has_value()) << err;
  EXPECT_EQ((*parsed)["schema"].str(), "colabtrace.report.v1");
  EXPECT_EQ((*parsed)["processes"].array().size(), t.records.RunInfo.empty() ? 1u : 0u);
  EXPECT_FALSE(analyzer::RenderText(*report, false).empty());
  EXPECT_FALSE(analyzer::RenderHtml(*report).empty());
}

// A realistic trace from the real writer: two threads, several chunks, strings.
std::vector<uint8_t> WrittenTrace(const std::string& dir) {
  WriterSession s(dir + "/w.ctrace");
  EXPECT_TRUE(s.Begin());
  {
    shim::ShimScope scope;
    fmt::ProcessStart ps;
    ps.ts = 10;
    ps.pid = 4242;
    ps.ppid = 1;
    ps.exe = shim::InternString("/usr/bin/python3");
    ps.cwd = shim::InternString("/content");
    shim::Emit(ps);
    for (int i = 0; i < 3; ++i) {
      fmt::Argv a;
      a.ts = 11;
      a.index = static_cast<uint64_t>(i);
      a.value = shim::InternString("arg" + std::to_string(i));
      shim::Emit(a);
    }
    for (uint64_t k = 0; k < 6000; ++k) {  // a few chunks' worth
      fmt::EnvVar e;
      e.ts = 20 + k;
      e.name = shim::InternString("CUDA_STEP");
      e.value = shim::InternString(std::to_string(k));
      e.source = 1;
      shim::Emit(e);
      if (k % 1000 == 0) {
        fmt::Sample smp;
        smp.ts = 20 + k;
        smp.rss_bytes = (k + 1) << 20;
        smp.cgroup_current = UINT64_MAX;
        smp.oom_kill = UINT64_MAX;
        shim::Emit(smp);
      }
    }
  }
  std::thread([] {
    shim::ShimScope scope;
    for (uint64_t k = 0; k < 3000; ++k) {
      fmt::IoRead r;
      r.ts = 30 + k;
      r.fd = 5;
      r.result = 4096;
      r.dur = 100;
      shim::Emit(r);
    }
  }).join();
  fmt::Exit e;
  e.ts = 10000;
  e.code = 3;
  Put(e);
  s.End();
  return ReadBytes(s.path());
}

// ---- not a trace at all ------------------------------------------------------------------

TEST(Reader, EmptyInputIsAClearError) {
  std::string err;
  EXPECT_FALSE(Parse({}, &err));
  EXPECT_EQ(err, "trace.ctrace: empty file (the traced process may not have started)");
}

TEST(Reader, RandomBytesAreNotATrace) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> b(5000);
  for (auto& x : b) x = static_cast<uint8_t>(rng());
  std::string err;
  EXPECT_FALSE(Parse(b, &err));
  EXPECT_NE(err.find("not a colabtrace trace"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << "one line";
}

TEST(Reader, HeaderProblemsAreClearErrors) {
  TraceBytes tb;
  std::vector<uint8_t> b = tb.bytes();
  std::string err;
  EXPECT_FALSE(Parse(std::vector<uint8_t>(b.begin(), b.begin() + 100), &err));
  EXPECT_NE(err.find("cut short"), std::string::npos) << err;
  EXPECT_FALSE(Parse(std::vector<uint8_t>(b.begin(), b.begin() + 5), &err));
  EXPECT_NE(err.find("bad magic"), std::string::npos) << err;

  tb.header().version_major = 9;
  EXPECT_FALSE(Parse(tb.bytes(), &err));
  EXPECT_NE(err.find("version 9 is not supported"), std::string::npos) << err;
  tb.header().version_major = fmt::kVersionMajor;
  for (uint32_t bad : {0u, 1000u, 4095u, 4097u, 1u << 25, 0xffffffffu}) {
    tb.header().chunk_size = bad;
    EXPECT_FALSE(Parse(tb.bytes(), &err)) << bad;
    EXPECT_NE(err.find("chunk size"), std::string::npos) << err;
  }
  tb.header().chunk_size = fmt::kChunkSize;
  EXPECT_TRUE(Parse(tb.bytes(), &err)) << err;
}

// A header alone (the process was killed before its first chunk) is a valid, empty,
// killed trace.
TEST(Reader, HeaderOnlyTraceReadsAsKilled) {
  TraceBytes tb;
  std::vector<uint8_t> b(tb.bytes().begin(), tb.bytes().begin() + sizeof(fmt::FileHeader));
  auto t = Parse(b);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->stats.records, 0u);
  EXPECT_FALSE(t->ended);
  ReportOn(*t);
}

// ---- damage inside chunks ------------------------------------------------------------------

TEST(Reader, UnknownRecordTypesAreSkippedKeepingTheTimeBase) {
  TraceBytes tb;
  tb.NewChunk(7, 1000);
  fmt::Exit a;
  a.ts = 1005;
  a.code = 1;
  tb.Add(a);
  // Type 250 (not in the table): payload = ts delta 20, then two unknown bytes.
  tb.Raw({120, 3, 20, 0xaa, 0xbb});  // 120: a code this reader does not know
  fmt::Exit b;
  b.ts = 1030;  // encoded against 1005 as the writer knows it: delta 25
  b.code = 2;
  // The writer's prev_ts after the unknown record is 1025 (1005 + 20); write b against
  // that, as a newer writer would have.
  {
    uint8_t buf[64];
    const size_t n = fmt::EncodeRecordUncommitted(b, 1025, buf);
    std::vector<uint8_t> rec(buf, buf + n);
    rec[0] = static_cast<uint8_t>(fmt::RecordType::Exit);
    for (uint8_t x : rec) tb.Raw({x});
  }
  auto t = Parse(tb.bytes());
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->warnings.empty());
  EXPECT_EQ(t->stats.unknown_records, 1u);
  EXPECT_EQ(t->stats.records, 3u);
  ASSERT_EQ(t->records.Exit.size(), 2u);
  EXPECT_EQ(t->records.Exit[0].ts, 1005u);
  EXPECT_EQ(t->records.Exit[1].ts, 1030u);
  EXPECT_EQ(t->records.Exit[1].code, 2);
  EXPECT_EQ(t->records.Exit[1].tid, 7u);
}

TEST(Reader, DamagedLengthStopsTheChunkWithAWarningNamingTheOffset) {
  TraceBytes tb;
  tb.NewChunk(7, 0);
  fmt::Exit a;
  a.ts = 5;
  tb.Add(a);
  const size_t bad = tb.Raw({static_cast<uint8_t>(fmt::RecordType::Exit), 0xff, 0xff, 0xff, 0x7f});
  tb.NewChunk(8, 0);  // the next chunk is still read
  fmt::Exit c;
  c.ts = 9;
  c.code = 4;
  tb.Add(c);
  auto t = Parse(tb.bytes());
  ASSERT_TRUE(t);
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_EQ(t->warnings[0], "trace.ctrace: offset " + std::to_string(bad) +
                                ": damaged record length; rest of chunk skipped");
  ASSERT_EQ(t->records.Exit.size(), 2u);
  EXPECT_EQ(t->records.Exit[1].code, 4);
  ReportOn(*t);
}

TEST(Reader, DamagedPayloadStopsTheChunkWithAWarning) {
  TraceBytes tb;
  tb.NewChunk(7, 0);
  // A String whose text length (9) runs past its 4-byte payload.
  const size_t bad = tb.Raw({static_cast<uint8_t>(fmt::RecordType::String), 4, 0, 1, 9, 'a'});
  auto t = Parse(tb.bytes());
  ASSERT_TRUE(t);
  ASSERT_EQ(t->warnings.size(), 1u);
  EXPECT_NE(t->warnings[0].find("offset " + std::to_string(bad) + ": damaged record payload"),
            std::string::npos)
      << t->warnings[0];
  EXPECT_TRUE(t->records.String.empty());
}

// Cut a real trace at many offsets (inside the header, at and around chunk boundaries,
// mid-record): never a crash; below the header a clear error, above it a partial trace
// whose records are a subset of the whole, with a warning once a used chunk is cut.
TEST(Reader, TraceCutAtAnyOffsetReadsWhatIsThere) {
  TempDir dir;
  const std::vector<uint8_t> full = WrittenTrace(dir.path());
  auto whole = Parse(full);
  ASSERT_TRUE(whole);
  ASSERT_TRUE(whole->warnings.empty());
  ASSERT_GE(whole->stats.chunks, 3u);
  std::vector<size_t> cuts;
  for (size_t c = 0; c < full.size(); c += 97) cuts.push_back(c);
  for (size_t c = fmt::kChunkSize; c <= full.size(); c += fmt::kChunkSize) {
    for (size_t d : {size_t{0}, size_t{1}, sizeof(fmt::ChunkHeader) - 1, sizeof(fmt::ChunkHeader),
                     sizeof(fmt::ChunkHeader) + 1, sizeof(fmt::ChunkHeader) + 2}) {
      if (c + d <= full.size()) cuts.push_back(c + d);
      if (c >= 1 + d) cuts.push_back(c - 1 - d);
    }
  }
  for (size_t c : {size_t{1}, size_t{7}, size_t{8}, sizeof(fmt::FileHeader) - 1,
                   sizeof(fmt::FileHeader)}) {
    cuts.push_back(c);
  }
  for (size_t cut : cuts) {
    SCOPED_TRACE(cut);
    std::vector<uint8_t> part(full.begin(), full.begin() + static_cast<long>(cut));
    std::string err;
    auto t = Parse(part, &err);
    if (cut < sizeof(fmt::FileHeader)) {
      EXPECT_FALSE(t);
      EXPECT_FALSE(err.empty());
      EXPECT_EQ(err.find('\n'), std::string::npos);
      continue;
    }
    ASSERT_TRUE(t) << err;
    EXPECT_LE(t->stats.records, whole->stats.records);
    EXPECT_LE(t->records.EnvVar.size(), whole->records.EnvVar.size());
    // A cut strictly inside a used chunk (past its header) warns with an offset.
    const size_t in_chunk = cut % fmt::kChunkSize;
    const bool inside_used_chunk = cut > fmt::kChunkSize && in_chunk > sizeof(fmt::ChunkHeader) &&
                                   cut / fmt::kChunkSize * fmt::kChunkSize <
                                       whole->header.next_chunk_offset;  // not the reserved tail
    if (inside_used_chunk) {
      ASSERT_FALSE(t->warnings.empty());
      EXPECT_NE(t->warnings[0].find("offset "), std::string::npos) << t->warnings[0];
    }
    if (cut % (97 * 8) == 0 || in_chunk <= 40) ReportOn(*t);
  }
}

// Random byte flips in a real trace: the reader and every renderer survive them (run
// under ASan/UBSan with COLABTRACE_SANITIZE=ON to catch silent damage).
TEST(Reader, FlippedBytesNeverCrash) {
  TempDir dir;
  const std::vector<uint8_t> full = WrittenTrace(dir.path());
  std::mt19937_64 rng(12345);
  for (int round = 0; round < 300; ++round) {
    std::vector<uint8_t> b = full;
    const int flips = 1 + static_cast<int>(rng() % 16);
    for (int k = 0; k < flips; ++k) {
      // Mostly inside chunks, sometimes in the header.
      const size_t at = rng() % 4 == 0 ? rng() % sizeof(fmt::FileHeader) : rng() % b.size();
      b[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    std::string err;
    auto t = Parse(b, &err);
    if (!t) {
      EXPECT_FALSE(err.empty());
      continue;
    }
    ReportOn(*t);
  }
}

// ---- time ---------------------------------------------------------------------------------

TEST(Reader, TicksAreFittedToClockRecords) {
  TraceBytes tb(fmt::kFeatureTicksAreTsc, 2000000000ull);
  tb.header().start_ticks = 1000;
  tb.header().start_mono_ns = 5000;
  tb.NewChunk(1, 1000);
  fmt::Clock c1;
  c1.ts = 1000;
  c1.mono_ns = 5000;
  tb.Add(c1);
  fmt::IoRead r;
  r.ts = 2001000;
  r.dur = 2000;
  tb.Add(r);
  fmt::Clock c2;
  c2.ts = 3001000;
  c2.mono_ns = 1505000;  // 3,000,000 ticks took 1,500,000 ns: 0.5 ns per tick
  tb.Add(c2);
  auto t = Parse(tb.bytes());
  ASSERT_TRUE(t);
  ASSERT_EQ(t->records.IoRead.size(), 1u);
  EXPECT_EQ(t->records.IoRead[0].ts, 1005000u);
  EXPECT_EQ(t->records.IoRead[0].dur, 1000u);
  EXPECT_EQ(t->start_ns(), 5000u);
  EXPECT_EQ(t->end_ns(), 1505000u);
}

// Clock records that claim absurd rates must not make the conversion overflow (which
// is undefined behaviour): times saturate instead.
TEST(Reader, HostileClocksSaturateInsteadOfOverflowing) {
  TraceBytes tb(fmt::kFeatureTicksAreTsc, 1);
  tb.NewChunk(1, 0);
  fmt::Clock c1;
  c1.ts = 0;
  c1.mono_ns = 0;
  tb.Add(c1);
  fmt::Clock c2;
  c2.ts = 2000000;
  c2.mono_ns = UINT64_MAX;
  tb.Add(c2);
  fmt::IoRead r;
  r.ts = UINT64_MAX;
  r.dur = UINT64_MAX;
  tb.Add(r);
  auto t = Parse(tb.bytes());
  ASSERT_TRUE(t);
  ASSERT_EQ(t->records.IoRead.size(), 1u);
  EXPECT_EQ(t->records.IoRead[0].ts, UINT64_MAX);
  EXPECT_EQ(t->records.IoRead[0].dur, UINT64_MAX);
  ReportOn(*t);
}

// ---- the process analysis ----------------------------------------------------------------

analyzer::Json ReportJson(const std::vector<uint8_t>& bytes) {
  auto t = Parse(bytes);
  EXPECT_TRUE(t);
  std::vector<ProcessTrace> v;
  v.push_back(std::move(*t));
  auto report = analyzer::BuildReport(v, {});
  return *analyzer::Json::Parse(analyzer::RenderJson(*report));
}

std::vector<const analyzer::Json*> FindingsWithId(const analyzer::Json& rep, const std::string& id) {
  std::vector<const analyzer::Json*> out;
  for (const auto& f : rep["findings"].array()) {
    if (f["id"].str() == id) out.push_back(&f);
  }
  return out;
}

TEST(ProcessAnalysis, ExitRecordGivesExitedWithItsCode) {
  TempDir dir;
  const auto rep = ReportJson(WrittenTrace(dir.path()));
  const auto& p = rep["processes"].array().at(0);
  EXPECT_EQ(p["pid"].as_int(), getpid());
  EXPECT_EQ(p["end"]["kind"].str(), "exited");
  EXPECT_EQ(p["end"]["code"].as_int(), 3);
  EXPECT_EQ(p["exe"].str(), "/usr/bin/python3");
  ASSERT_EQ(p["argv"].array().size(), 3u);
  EXPECT_EQ(p["argv"].array()[2].str(), "arg2");
  EXPECT_EQ(p["env"]["CUDA_STEP"].str(), "5999");
  EXPECT_EQ(p["peak_rss_bytes"].as_int(), 5001ll << 20);
  EXPECT_FALSE(p["trace_truncated"].boolean());
  EXPECT_TRUE(FindingsWithId(rep, "proc.killed").empty());
}

TEST(ProcessAnalysis, NoEndRecordMeansKilled) {
  TraceBytes tb;
  tb.NewChunk(1, 0);
  fmt::Sample s;
  s.ts = 5;
  s.rss_bytes = 123 << 20;
  s.cgroup_current = UINT64_MAX;
  s.oom_kill = UINT64_MAX;
  tb.Add(s);
  const auto rep = ReportJson(tb.bytes());
  const auto& p = rep["processes"].array().at(0);
  EXPECT_EQ(p["end"]["kind"].str(), "killed");
  EXPECT_TRUE(p["end"]["code"].is_null());
  const auto killed = FindingsWithId(rep, "proc.killed");
  ASSERT_EQ(killed.size(), 1u);
  EXPECT_EQ((*killed[0])["severity"].str(), "error");
  EXPECT_EQ((*killed[0])["pid"].as_int(), 4242);
  EXPECT_EQ((*killed[0])["evidence"]["last_rss_bytes"].as_int(), 123ll << 20);
}

TEST(ProcessAnalysis, SigbusInDevShmIsNamed) {
  TraceBytes tb;
  tb.NewChunk(1, 0);
  const uint8_t text[] = "/dev/shm/torch_123_456";
  fmt::String str;
  str.ts = 1;
  str.id = 1;
  str.text = fmt::Bytes{text, sizeof(text) - 1};
  tb.Add(str);
  fmt::Signal sig;
  sig.ts = 2;
  sig.signo = SIGBUS;
  sig.addr = 0x7f0000001000;
  sig.shm_mapping = 1;
  tb.Add(sig);
  const auto rep = ReportJson(tb.bytes());
  const auto& p = rep["processes"].array().at(0);
  EXPECT_EQ(p["end"]["kind"].str(), "signaled");
  EXPECT_EQ(p["end"]["signal"].as_int(), SIGBUS);
  const auto fatal = FindingsWithId(rep, "proc.fatal-signal");
  ASSERT_EQ(fatal.size(), 1u);
  EXPECT_NE((*fatal[0])["summary"].str().find("/dev/shm mapping /dev/shm/torch_123_456"),
            std::string::npos)
      << (*fatal[0])["summary"].str();
  EXPECT_EQ((*fatal[0])["evidence"]["shm_mapping"].str(), "/dev/shm/torch_123_456");
  EXPECT_TRUE(FindingsWithId(rep, "proc.killed").empty());
}

TEST(ProcessAnalysis, TruncatedTraceIsFlaggedWithAWarning) {
  TraceBytes tb;
  tb.header().flags = fmt::kFlagTruncated | fmt::kFlagEnded;
  tb.header().truncation_errno = 28;  // ENOSPC
  tb.NewChunk(1, 0);
  fmt::Exit e;
  e.ts = 3;
  tb.Add(e);
  const auto rep = ReportJson(tb.bytes());
  EXPECT_TRUE(rep["processes"].array().at(0)["trace_truncated"].boolean());
  bool warned = false;
  for (const auto& w : rep["warnings"].array()) {
    warned |= w.str().find("tracing stopped early (No space left on device)") != std::string::npos;
  }
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace colabtrace::testing
