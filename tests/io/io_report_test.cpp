// Golden tests of the I/O analysis: small traces built inline with a record builder
// (the same encoder the shim uses), run through the real reader and report builder.
#include <fcntl.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "io_trace_builder.h"
#include "report/analyses.h"
#include "colabtrace/format/codec.h"
#include "colabtrace/format/io_heavy.h"
#include "gtest/gtest.h"
#include "io/file_stats.h"
#include "io/io_summary.h"
#include "render/text/sections.h"
#include "report/report.h"

namespace {

namespace ctf = colabtrace::format;
using colabtrace::analyzer::BuildReport;
using colabtrace::analyzer::Json;
using colabtrace::analyzer::ParseTrace;
using colabtrace::analyzer::ProcessTrace;
using ctf::IoApi;
using colabtrace::iotest::Mounts;
using colabtrace::iotest::TraceBuilder;

const Json* FileRow(const Json& root, const std::string& path) {
  for (const Json& f : root["io"]["files"].array()) {
    if (f["path"].str() == path) return &f;
  }
  return nullptr;
}

std::vector<std::string> FindingIds(const Json& root) {
  std::vector<std::string> ids;
  for (const Json& f : root["findings"].array()) ids.push_back(f["id"].str());
  return ids;
}

bool Has(const std::vector<std::string>& v, const char* s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(IoReport, CountsAndNetworkFindingsForAnNfsDataset) {
  std::vector<ProcessTrace> traces;
  TraceBuilder b(100);
  Mounts(b);
  // 1,200 JPEG-sized files on NFS, read twice (two epochs), each open taking 2 ms.
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int i = 0; i < 1200; ++i) {
      b.ReadWholeFile("/mnt/nfs/train/img" + std::to_string(i) + ".jpg", 2, 5, 90000, 2000000, 500000);
    }
  }
  // One local file read once.
  b.ReadWholeFile("/home/u/labels.csv", 1, 6, 5000, 10000, 5000);
  traces.push_back(b.Finish());
  auto report = BuildReport(traces, {});
  const Json& root = report->root();

  const Json& p = root["processes"].array().at(0)["io"];
  EXPECT_EQ(p["opens"].as_int(), 2401);
  EXPECT_EQ(p["reads"].as_int(), 4802);
  EXPECT_EQ(p["bytes_read"].as_int(), 2 * 1200 * 90000 + 5000);

  const Json* f = FileRow(root, "/mnt/nfs/train/img7.jpg");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ((*f)["fs_type"].str(), "nfs4");
  EXPECT_EQ((*f)["opens"].as_int(), 2);
  EXPECT_EQ((*f)["reads"].as_int(), 4);
  EXPECT_EQ((*f)["bytes_read"].as_int(), 180000);
  EXPECT_EQ((*f)["read_ns"].as_int(), 2 * (500000 + 100));
  EXPECT_EQ((*f)["stats"].as_int(), 4);  // a path stat and an fstat per pass
  EXPECT_EQ((*f)["size"].as_int(), 90000);
  EXPECT_EQ((*f)["passes"].as_int(), 2);
  EXPECT_EQ((*f)["reread_bytes"].as_int(), 90000);
  EXPECT_EQ((*f)["sequential_reads"].as_int(), 2);
  EXPECT_EQ((*f)["random_reads"].as_int(), 0);
  const Json* l = FileRow(root, "/home/u/labels.csv");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ((*l)["fs_type"].str(), "ext4");

  // The directory rollup and the histograms.
  const Json& dirs = root["io"]["directories"];
  ASSERT_FALSE(dirs.array().empty());
  EXPECT_EQ(dirs.array().front()["path"].str(), "/mnt/nfs/train");
  EXPECT_EQ(dirs.array().front()["files"].as_int(), 1200);
  EXPECT_EQ(root["io"]["histograms"]["file_sizes"]["10K-100K"].as_int(), 1200);
  EXPECT_EQ(root["io"]["histograms"]["file_sizes"]["1K-10K"].as_int(), 1);
  EXPECT_EQ(root["io"]["histograms"]["read_sizes"]["10K-100K"].as_int(), 2400);

  const auto ids = FindingIds(root);
  EXPECT_TRUE(Has(ids, "io.small-files"));
  EXPECT_TRUE(Has(ids, "io.network-filesystem"));
  EXPECT_TRUE(Has(ids, "io.reread"));
  EXPECT_FALSE(Has(ids, "io.small-reads"));
  EXPECT_FALSE(Has(ids, "io.metadata-heavy"));
  EXPECT_FALSE(Has(ids, "io.errors"));
  for (const Json& fd : root["findings"].array()) {
    if (fd["id"].str() == "io.small-files") {
      EXPECT_EQ(fd["evidence"]["count"].as_int(), 1201);  // labels.csv is small too
      EXPECT_EQ(fd["evidence"]["median_size"].as_int(), 90000);
      EXPECT_EQ(fd["evidence"]["directories"].array().front()["path"].str(), "/mnt/nfs/train");
      EXPECT_FALSE(fd["advice"].str().empty());
    }
    if (fd["id"].str() == "io.network-filesystem") {
      EXPECT_EQ(fd["evidence"]["mounts"].array().front()["fs_type"].str(), "nfs4");
    }
  }
}

TEST(IoReport, NineP_AndCifsCountAsSlowStorage) {
  for (const char* mp : {"/mnt/host", "/mnt/smb"}) {
    std::vector<ProcessTrace> traces;
    TraceBuilder b(200);
    Mounts(b);
    for (int i = 0; i < 50; ++i) {
      b.ReadWholeFile(std::string(mp) + "/d/f" + std::to_string(i), std::string(mp) == "/mnt/host" ? 3 : 4,
                      5, 2 << 20, 3000000, 3000000);
    }
    traces.push_back(b.Finish());
    auto report = BuildReport(traces, {});
    const auto ids = FindingIds(report->root());
    EXPECT_TRUE(Has(ids, "io.network-filesystem")) << mp;
    EXPECT_FALSE(Has(ids, "io.small-files")) << mp;  // 2 MiB files are not small
  }
}

TEST(IoReport, LocalDataGivesNoNetworkFinding) {
  std::vector<ProcessTrace> traces;
  TraceBuilder b(300);
  Mounts(b);
  for (int i = 0; i < 100; ++i) b.ReadWholeFile("/data/f" + std::to_string(i), 1, 5, 4096, 5000, 2000);
  traces.push_back(b.Finish());
  auto report = BuildReport(traces, {});
  EXPECT_TRUE(FindingIds(report->root()).empty());
}

TEST(IoReport, SmallReadsOnALargeFileAndDescriptorTracking) {
  std::vector<ProcessTrace> traces;
  TraceBuilder b(400);
  Mounts(b);
  const uint64_t id = b.Str("/data/big.bin");
  ctf::IoOpen o;
  o.api = static_cast<uint64_t>(IoApi::kOpen);
  o.fd = 7;
  o.path = id;
  o.mount = 1;
  o.dur = 1000;
  b.Add(o);
  b.Advance(1000);
  ctf::IoRead r;
  r.api = static_cast<uint64_t>(IoApi::kRead);
  r.fd = 7;
  r.result = 1024;
  r.dur = 100;
  for (int i = 0; i < 4096; ++i) b.Add(r);  // 4 MiB in 1 KiB reads
  // dup shares the position; a seek back makes the next read random.
  ctf::IoDup d;
  d.api = static_cast<uint64_t>(IoApi::kDup);
  d.oldfd = 7;
  d.newfd = 8;
  b.Add(d);
  ctf::IoSeek s;
  s.api = static_cast<uint64_t>(IoApi::kLseek);
  s.fd = 8;
  s.offset = 0;
  s.whence = 0;
  s.result = 0;
  b.Add(s);
  r.fd = 7;
  b.Add(r);
  r.result = 0;
  ctf::IoReadAt ra;
  ra.api = static_cast<uint64_t>(IoApi::kPread64);
  ra.fd = 8;
  ra.offset = 4 << 20;
  ra.result = 0;
  b.Add(ra);  // end of file at 4 MiB
  ctf::IoClose c;
  c.api = static_cast<uint64_t>(IoApi::kClose);
  c.fd = 7;
  b.Add(c);
  c.fd = 8;
  b.Add(c);
  traces.push_back(b.Finish());
  auto report = BuildReport(traces, {});
  const Json& root = report->root();
  const Json* f = FileRow(root, "/data/big.bin");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ((*f)["reads"].as_int(), 4098);
  EXPECT_EQ((*f)["bytes_read"].as_int(), 4097 * 1024);
  EXPECT_EQ((*f)["size"].as_int(), 4 << 20);
  EXPECT_EQ((*f)["random_reads"].as_int(), 1);
  EXPECT_EQ((*f)["sequential_reads"].as_int(), 4096);
  EXPECT_EQ((*f)["consecutive_reads"].as_int(), 4096);
  EXPECT_EQ((*f)["reread_bytes"].as_int(), 1024);
  EXPECT_TRUE(Has(FindingIds(root), "io.small-reads"));
}

TEST(IoReport, MetadataStormAndErrors) {
  std::vector<ProcessTrace> traces;
  TraceBuilder b(500);
  Mounts(b);
  for (int i = 0; i < 3000; ++i) {
    ctf::IoStat st;
    st.api = static_cast<uint64_t>(IoApi::kStat64);
    st.path = b.Str("/data/imgs/x" + std::to_string(i % 300) + ".png");
    st.fd = -1;
    st.result = i % 2 == 0 ? 0 : -ENOENT;
    st.size = 100;
    st.ftype = 8;
    b.Add(st);
  }
  for (int i = 0; i < 12; ++i) {
    ctf::IoOpen o;
    o.api = static_cast<uint64_t>(IoApi::kOpen64);
    o.fd = -ENOENT;
    o.path = b.Str("/data/imgs/missing" + std::to_string(i) + ".png");
    b.Add(o);
  }
  traces.push_back(b.Finish());
  auto report = BuildReport(traces, {});
  const auto ids = FindingIds(report->root());
  EXPECT_TRUE(Has(ids, "io.metadata-heavy"));
  EXPECT_TRUE(Has(ids, "io.errors"));
  for (const Json& fd : report->root()["findings"].array()) {
    if (fd["id"].str() == "io.errors") {
      EXPECT_EQ(fd["evidence"]["by_errno"]["ENOENT"].as_int(), 12);
      EXPECT_EQ(fd["evidence"]["paths"].array().size(), 12u);
    }
  }
}

TEST(IoReport, PathNormalization) {
  using colabtrace::analyzer::io::NormalizePath;
  EXPECT_EQ(NormalizePath("/a//b/./c/../d"), "/a/b/d");
  EXPECT_EQ(NormalizePath("/../x"), "/x");
  EXPECT_EQ(NormalizePath("a/../../b"), "../b");
  EXPECT_EQ(NormalizePath("/"), "/");
  EXPECT_EQ(NormalizePath(""), ".");
}

TEST(IoReport, SizeBinsAreDarshans) {
  using colabtrace::analyzer::io::SizeBin;
  EXPECT_EQ(SizeBin(0), 0);
  EXPECT_EQ(SizeBin(100), 0);
  EXPECT_EQ(SizeBin(101), 1);
  EXPECT_EQ(SizeBin(1024), 1);
  EXPECT_EQ(SizeBin(1025), 2);
  EXPECT_EQ(SizeBin(4096), 2);
  EXPECT_EQ(SizeBin(1 << 20), 4);
  EXPECT_EQ(SizeBin((1 << 20) + 1), 5);
  EXPECT_EQ(SizeBin(1ull << 30), 8);
  EXPECT_EQ(SizeBin((1ull << 30) + 1), 9);
}

}  // namespace

namespace {

using colabtrace::analyzer::TextSection;
namespace io = colabtrace::analyzer::io;

// The I/O summary (io/io_summary.h) orders directories and data files by I/O time, and
// the JSON and the text's File I/O sections both show it: 20 hotspots in the JSON, the
// first 10 of them in the text, in the same order; code is no hotspot.
TEST(IoReport, OneSummaryForTheJsonAndTheText) {
  std::vector<ProcessTrace> traces;
  TraceBuilder b(100);
  Mounts(b);
  // 25 files of 2 MiB on NFS, opened in 3 ms + i us: f24 costs most.
  for (int i = 0; i < 25; ++i) {
    b.ReadWholeFile("/mnt/nfs/slow/f" + std::to_string(i) + ".bin", 2, 5, 2u << 20, 3000000 + 1000 * i, 1000000);
  }
  // Three small local data files, quick, and a Python module, slower than all of them.
  for (const auto& [name, size] : {std::pair{"a.npy", 100}, {"b.npy", 300}, {"c.npy", 200}}) {
    b.ReadWholeFile(std::string("/home/u/data/") + name, 1, 6, size, 10000, 1000);
  }
  b.ReadWholeFile("/usr/lib/python3/dist-packages/x.py", 1, 7, 4000, 200000000, 1000);
  traces.push_back(b.Finish());
  auto report = BuildReport(traces, {});

  const io::IoSummary& sum = report->run().Get<io::IoSummary>();
  const io::IoModel& model = report->run().Get<io::IoModel>();
  EXPECT_EQ(sum.opens, 29u);
  EXPECT_EQ(sum.data_files_read, 28u);
  EXPECT_EQ(sum.data_file_sizes.total(), 28u);
  ASSERT_EQ(sum.directories.size(), 3u);
  // The module's directory took the longest; it holds no data file.
  EXPECT_EQ(sum.directories[0].path, "/usr/lib/python3/dist-packages");
  EXPECT_EQ(sum.directories[0].data_files, 0u);
  EXPECT_EQ(sum.directories[1].path, "/mnt/nfs/slow");
  EXPECT_EQ(sum.directories[1].files, 25u);
  EXPECT_EQ(sum.directories[1].small_files, 0u);
  EXPECT_EQ(sum.directories[1].median_size, 2u << 20);
  EXPECT_EQ(sum.directories[2].path, "/home/u/data");
  EXPECT_EQ(sum.directories[2].small_files, 3u);
  EXPECT_EQ(sum.directories[2].median_size, 200u);
  ASSERT_EQ(sum.hotspots.size(), io::IoSummary::kHotspots);
  std::vector<std::string> hot;
  for (size_t i : sum.hotspots) hot.push_back(model.files[i].path);
  for (size_t k = 0; k < hot.size(); ++k) EXPECT_EQ(hot[k], "/mnt/nfs/slow/f" + std::to_string(24 - k) + ".bin");

  // The JSON: the same 20, the same directories.
  const Json& io_json = report->document()["io"];
  ASSERT_EQ(io_json["hotspots"].array().size(), hot.size());
  for (size_t k = 0; k < hot.size(); ++k) EXPECT_EQ(io_json["hotspots"].array()[k]["path"].str(), hot[k]);
  ASSERT_EQ(io_json["directories"].array().size(), 3u);
  EXPECT_EQ(io_json["directories"].array()[2]["median_size"].as_int(), 200);

  // The text: the first ten hotspots in order, then the data directories (the module's is
  // left out).
  std::string text;
  for (const TextSection& s : colabtrace::analyzer::text::TextSections(*report)) {
    if (s.title == "File I/O: hotspots (data files)") text = s.body;
  }
  size_t at = 0;
  for (size_t k = 0; k < 10; ++k) {
    const size_t next = text.find(hot[k], at);
    ASSERT_NE(next, std::string::npos) << hot[k] << "\n" << text;
    at = next;
  }
  EXPECT_EQ(text.find(hot[10]), std::string::npos) << text;
  const std::string dirs = text.substr(text.find("Top directories"));
  EXPECT_LT(dirs.find("/mnt/nfs/slow"), dirs.find("/home/u/data"));
  EXPECT_EQ(dirs.find("dist-packages"), std::string::npos) << dirs;
  EXPECT_NE(text.find("Sizes of data files read: 0-100: 1  100-1K: 2  1M-4M: 25"), std::string::npos) << text;
}

}  // namespace

namespace {

// A trace of the NFS dataset of CountsAndNetworkFindingsForAnNfsDataset (1,200 files read
// whole in 2 epochs, one local file once), with the I/O aggregate chunks the shim keeps
// for those same calls. Reported from its events and, with
// COLABTRACE_ANALYZER_IGNORE_IO_EVENTS=1, from its aggregates alone: the same rows and
// findings. as_13: the aggregate chunks as format 1.3 wrote them (CTIA, 256-byte slots).
ProcessTrace NfsDatasetWithAggregates(bool cut_in_aggregates = false, bool as_13 = false) {
  TraceBuilder b(100);
  Mounts(b);
  std::vector<ctf::IoAggSums> slots;
  auto slot = [&](const std::string& path, uint32_t mount, uint64_t passes, uint64_t size, uint64_t open_ns,
                  uint64_t read_ns) {
    ctf::IoAggSums s{};
    s.hash = slots.size() + 1;
    s.path = b.Str(path);
    s.kind = ctf::kIoAggFile;
    s.mount = mount;
    s.opens = passes;
    s.open_ns = passes * open_ns;
    s.bytes_read = passes * size;
    s.read_ns = passes * (read_ns + 100);
    s.zero_reads = passes;
    s.read_sizes[ctf::IoAggSizeBin(size)] = passes;
    s.stats = 2 * passes;
    s.path_stats = passes;
    s.stat_ns = passes * (1000 + 100);
    s.size = size + 1;
    s.eof_at = size;
    s.max_end = size;
    s.passes = passes;
    slots.push_back(s);
  };
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int i = 0; i < 1200; ++i) {
      b.ReadWholeFile("/mnt/nfs/train/img" + std::to_string(i) + ".jpg", 2, 5, 90000, 2000000, 500000);
    }
  }
  b.ReadWholeFile("/home/u/labels.csv", 1, 6, 5000, 10000, 5000);
  for (int i = 0; i < 1200; ++i) slot("/mnt/nfs/train/img" + std::to_string(i) + ".jpg", 2, 2, 90000, 2000000, 500000);
  slot("/home/u/labels.csv", 1, 1, 5000, 10000, 5000);
  b.Add(ctf::Exit{});
  ctf::IoAggInfo info{};
  info.file_slots = ctf::kIoAggFileSlots;
  info.dir_slots = ctf::kIoAggDirSlots;
  info.files = slots.size();
  b.raw().AddIoAggChunks(info, slots, 0, as_13);
  // The file ends inside the last aggregate chunk: its slots are not read.
  if (cut_in_aggregates) b.raw().Truncate(b.raw().bytes().size() - 100);
  return b.raw().Parse();
}

class IgnoreIoEvents {
 public:
  IgnoreIoEvents() { setenv("COLABTRACE_ANALYZER_IGNORE_IO_EVENTS", "1", 1); }
  ~IgnoreIoEvents() { unsetenv("COLABTRACE_ANALYZER_IGNORE_IO_EVENTS"); }
};

// Both slot layouts: 1.4's (CTIS) and 1.3's (CTIA), which this reader still reads.
class IoAggregatesLayout : public ::testing::TestWithParam<bool> {};

TEST_P(IoAggregatesLayout, SameRowsAndFindingsAsTheEvents) {
  std::vector<ProcessTrace> traces;
  traces.push_back(NfsDatasetWithAggregates(false, /*as_13=*/GetParam()));
  ASSERT_TRUE(traces[0].io_aggregates.present);
  ASSERT_EQ(traces[0].io_aggregates.slots.size(), 1201u);
  const auto from_events = BuildReport(traces, {});
  std::unique_ptr<colabtrace::analyzer::ReportBuilder> from_sums;
  {
    IgnoreIoEvents ignore;
    from_sums = BuildReport(traces, {});
  }
  const Json& ev = from_events->root();
  const Json& ag = from_sums->root();
  EXPECT_EQ(ag["processes"].array().at(0)["io"]["from_aggregates"].boolean(), true);
  EXPECT_TRUE(ag["processes"].array().at(0)["io"]["per_directory_from_ns"].is_null());
  for (const char* k : {"opens", "reads", "bytes_read", "read_ns", "stats", "data_opens", "data_reads"}) {
    EXPECT_EQ(ag["processes"].array().at(0)["io"][k].as_int(), ev["processes"].array().at(0)["io"][k].as_int()) << k;
  }
  // Every row, but for the read pattern the slots do not keep.
  ASSERT_EQ(ag["io"]["files"].array().size(), ev["io"]["files"].array().size());
  for (size_t i = 0; i < ev["io"]["files"].array().size(); ++i) {
    Json a = ag["io"]["files"].array()[i], e = ev["io"]["files"].array()[i];
    for (const char* k : {"sequential_reads", "consecutive_reads", "random_reads"}) {
      a[k] = Json();
      e[k] = Json();
    }
    EXPECT_EQ(a.Dump(), e.Dump());
  }
  EXPECT_EQ(ag["findings"].Dump(), ev["findings"].Dump());
  EXPECT_EQ(ag["io"]["directories"].Dump(), ev["io"]["directories"].Dump());
  EXPECT_EQ(ag["io"]["histograms"].Dump(), ev["io"]["histograms"].Dump());
  const auto ids = FindingIds(ag);
  EXPECT_TRUE(Has(ids, "io.small-files"));
  EXPECT_TRUE(Has(ids, "io.network-filesystem"));
  EXPECT_TRUE(Has(ids, "io.reread"));
}

INSTANTIATE_TEST_SUITE_P(IoAggregates, IoAggregatesLayout, ::testing::Values(false, true),
                         [](const auto& p) { return p.param ? "Format13" : "Format14"; });

TEST(IoAggregates, AFileCutInsideAnAggregateChunkReadsTheWholeChunksOnly) {
  std::vector<ProcessTrace> traces;
  traces.push_back(NfsDatasetWithAggregates(/*cut_in_aggregates=*/true));
  // 1,201 slots fill 4 whole chunks (254 each) and 185 of a fifth, which is cut.
  EXPECT_EQ(ctf::kIoAggSlotsPerChunk, 254u);
  EXPECT_EQ(traces[0].io_aggregates.slots.size(), 4u * 254);
  bool warned = false;
  for (const std::string& w : traces[0].warnings) warned = warned || w.find("I/O aggregate chunk") != std::string::npos;
  EXPECT_TRUE(warned);
  IgnoreIoEvents ignore;
  const auto rep = BuildReport(traces, {});
  EXPECT_EQ(rep->root()["processes"].array().at(0)["io"]["opens"].as_int(), 2 * 4 * 254);
}

TEST(IoAggregates, OldTracesAndTheSwitchOffUseTheEvents) {
  std::vector<ProcessTrace> traces;
  TraceBuilder b(100);
  Mounts(b);
  b.ReadWholeFile("/mnt/nfs/a.bin", 2, 5, 1000, 2000, 500);
  traces.push_back(b.Finish());  // no aggregate chunks, as before format 1.3
  EXPECT_FALSE(traces[0].io_aggregates.present);
  IgnoreIoEvents ignore;
  const auto rep = BuildReport(traces, {});
  const Json* f = FileRow(rep->root(), "/mnt/nfs/a.bin");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ((*f)["opens"].as_int(), 1);
  EXPECT_EQ((*f)["bytes_read"].as_int(), 1000);
  EXPECT_EQ(rep->root()["processes"].array().at(0)["io"].Find("from_aggregates"), nullptr);
}

// Format 1.6's heavy-hitter chunk (format/io_heavy.h), as a kill may leave it: a held
// entry is a file row of its own, counted from its entry; an entry caught folding adds
// to its directory's row the fields from `folded` on (those before are in the
// directory's slot already); free and clearing entries add nothing.
TEST(IoAggregates, HeavyHitterEntriesHeldAndFoldingMakeExactRows) {
  std::vector<ProcessTrace> traces;
  TraceBuilder b(100);
  Mounts(b);
  std::vector<ctf::IoAggSums> slots(1);
  slots[0].hash = 1;
  slots[0].path = b.Str("/mnt/nfs/late");
  slots[0].kind = ctf::kIoAggDirectory;
  slots[0].opens = 10;  // 6 of its own files', and the folding entry's 4 (folded already)
  slots[0].stats = 20;
  slots[0].bytes_read = 1000;
  b.Add(ctf::Exit{});
  ctf::IoAggInfo info{};
  info.file_slots = ctf::kIoAggFileSlots;
  info.dir_slots = ctf::kIoAggDirSlots;
  info.directories = 1;
  info.files_full_ticks = 1;
  b.raw().AddIoAggChunks(info, slots);
  std::vector<uint8_t> body(ctf::kChunkSize);
  ctf::IoHeavyInfo hi{};
  hi.entries = ctf::kIoHeavyEntries;
  hi.ways = ctf::kIoHeavyWays;
  hi.entered = 4;
  hi.folds = 1;
  std::memcpy(&body[ctf::kIoAggInfoOffset], &hi, sizeof(hi));
  auto entry = [&](uint32_t n, uint32_t state, const std::string& path) -> ctf::IoHeavyEntry& {
    auto* e = reinterpret_cast<ctf::IoHeavyEntry*>(&body[ctf::kIoHeavyEntriesOffset + n * sizeof(ctf::IoHeavyEntry)]);
    e->word = ctf::IoHeavyWord(state, 1, 0);
    e->dir_slot = 1;  // slot number 0: /mnt/nfs/late's
    e->slot.kind = ctf::kIoAggHeavy;
    e->slot.hash = 100 + n;
    e->slot.path = b.Str(path);
    return *e;
  };
  ctf::IoHeavyEntry& hot = entry(0, ctf::kIoHeavyHeld, "/mnt/nfs/late/hot.bin");
  hot.slot.counts[ctf::kIoAggOpens] = 3;
  hot.high[ctf::kIoAggReadSize] = 1;  // 65,536 + 5 reads of 0-100 bytes
  hot.slot.counts[ctf::kIoAggReadSize] = 5;
  hot.slot.bytes_read = 100 * 65541;
  hot.error = 7;
  hot.from_ticks = 150;
  ctf::IoHeavyEntry& folding = entry(1, ctf::kIoHeavyFolding, "/mnt/nfs/late/old.bin");
  folding.slot.counts[ctf::kIoAggOpens] = 4;      // field 0: in the directory's slot
  folding.slot.counts[ctf::kIoAggStats] = 9;      // field 6: not yet
  folding.slot.bytes_read = 400;                  // a sum: not yet
  folding.folded = 1;
  entry(2, ctf::kIoHeavyClearing, "/mnt/nfs/late/gone.bin").slot.counts[ctf::kIoAggOpens] = 8;
  entry(3, ctf::kIoHeavyFree, "/mnt/nfs/late/never.bin").slot.counts[ctf::kIoAggOpens] = 9;
  b.raw().AddChunkBody(ctf::kIoHeavyChunkMagic, body);
  traces.push_back(b.raw().Parse());
  ASSERT_EQ(traces[0].io_aggregates.heavy.size(), 1u);
  EXPECT_EQ(traces[0].io_aggregates.images.at(0).heavy.folds, 1u);
  IgnoreIoEvents ignore;
  const auto rep = BuildReport(traces, {});
  const Json* h = FileRow(rep->root(), "/mnt/nfs/late/hot.bin");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ((*h)["kind"].str(), "file");
  EXPECT_EQ((*h)["opens"].as_int(), 3);
  EXPECT_EQ((*h)["reads"].as_int(), 65541);
  EXPECT_EQ((*h)["bytes_read"].as_int(), 100 * 65541);
  EXPECT_EQ((*h)["calls_before_max"].as_int(), 7);
  EXPECT_EQ((*h)["counted_from_ns"].as_int(), 150);  // ticks are ns here
  const Json* d = FileRow(rep->root(), "/mnt/nfs/late/<more files>");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ((*d)["opens"].as_int(), 10);  // the folding entry's 4 counted once
  EXPECT_EQ((*d)["stats"].as_int(), 29);
  EXPECT_EQ((*d)["bytes_read"].as_int(), 1400);
  for (const char* gone : {"/mnt/nfs/late/old.bin", "/mnt/nfs/late/gone.bin", "/mnt/nfs/late/never.bin"}) {
    EXPECT_EQ(FileRow(rep->root(), gone), nullptr) << gone;
  }
  EXPECT_EQ(rep->root()["processes"].array().at(0)["io"]["opens"].as_int(), 13);
}

// Counts past 16 bits: the slot keeps the low 16, its high slot the rest (wire.h); the
// reader adds them up, and ignores a high slot that another slot's link names.
TEST(IoAggregates, CountsPast16BitsAddTheirHighSlots) {
  TraceBuilder b(100);
  Mounts(b);
  std::vector<ctf::IoAggSums> slots(3);
  for (size_t i = 0; i < slots.size(); ++i) {
    ctf::IoAggSums& s = slots[i];
    s.hash = i + 1;
    s.path = b.Str("/data/big" + std::to_string(i) + ".bin");
    s.kind = ctf::kIoAggFile;
  }
  slots[0].opens = 65536;
  slots[0].zero_reads = 70000;
  slots[0].read_sizes[9] = (uint64_t{1} << 40) + 3;  // 2^24 high words: 2^40 + 3 reads
  slots[0].stdio_reads = 65535;                        // all in the low word
  slots[0].dir_scans = 131073;
  slots[0].bytes_read = uint64_t{1} << 62;
  slots[1].stats = 3;  // no high slot
  slots[2].stat_errors = 65536 * 5 + 1;
  b.Add(ctf::Exit{});
  ctf::IoAggInfo info{};
  info.file_slots = ctf::kIoAggFileSlots;
  info.dir_slots = ctf::kIoAggDirSlots;
  info.files = 3;
  info.high_slots = 2;
  b.raw().AddIoAggChunks(info, slots);
  const ProcessTrace t = b.raw().Parse();
  ASSERT_EQ(t.io_aggregates.slots.size(), 3u);  // the high slots are not rows
  const ctf::IoAggSums& a = t.io_aggregates.slots[0];
  EXPECT_EQ(a.opens, 65536u);
  EXPECT_EQ(a.zero_reads, 70000u);
  EXPECT_EQ(a.read_sizes[9], (uint64_t{1} << 40) + 3);
  EXPECT_EQ(a.stdio_reads, 65535u);
  EXPECT_EQ(a.dir_scans, 131073u);
  EXPECT_EQ(a.bytes_read, uint64_t{1} << 62);
  EXPECT_EQ(a.stats, 0u);
  EXPECT_EQ(t.io_aggregates.slots[1].stats, 3u);
  EXPECT_EQ(t.io_aggregates.slots[2].stat_errors, 65536u * 5 + 1);
  EXPECT_EQ(t.io_aggregates.images.at(0).info.high_slots, 2u);
  EXPECT_TRUE(t.warnings.empty());

  // Damaged links: the second file (number 2) names number 1, the first file's high slot
  // (its owner 0, not 2); the third (number 3) names number 0, a file slot. Each keeps
  // its own 16 bits only.
  std::vector<uint8_t> bytes = b.raw().bytes();
  const size_t chunk = bytes.size() - ctf::kChunkSize;  // the one aggregate chunk
  auto link = [&](uint32_t number, uint32_t high) {
    const size_t at = chunk + ctf::kIoAggSlotsOffset + number * sizeof(ctf::IoAggSlot) + offsetof(ctf::IoAggSlot, high);
    std::memcpy(&bytes[at], &high, sizeof(high));
  };
  link(2, 2);
  link(3, 1);
  std::string err;
  const auto damaged = colabtrace::analyzer::ParseTrace(bytes, "damaged", &err);
  ASSERT_TRUE(damaged.has_value()) << err;
  ASSERT_EQ(damaged->io_aggregates.slots.size(), 3u);
  EXPECT_EQ(damaged->io_aggregates.slots[0].zero_reads, 70000u);
  EXPECT_EQ(damaged->io_aggregates.slots[1].opens, 0u);
  EXPECT_EQ(damaged->io_aggregates.slots[1].zero_reads, 0u);
  EXPECT_EQ(damaged->io_aggregates.slots[1].stats, 3u);
  EXPECT_EQ(damaged->io_aggregates.slots[2].stat_errors, 1u);
}

}  // namespace
