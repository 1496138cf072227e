// `colabtrace run`'s own samples thinned with age (format 1.5; analyzer/cli/run_tiers.h):
// the real RunTraceWriter fed samples at chosen times through a 1 s window, read back by
// the real reader. The samples the window gave up come back from the tiers with each
// process's exact peak and last values: a short process's as records, a long one's and a
// cgroup's from CTRW chunks; a job that never fills the window has no CTRW chunk; and a
// writer SIGKILLed at any moment leaves a trace that reads with the peak held.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "cli/run_sampler.h"
#include "trace/process_trace.h"

namespace colabtrace::cli {
namespace {

namespace fs = std::filesystem;
namespace fmt = ::colabtrace::format;
using analyzer::ProcessTrace;

constexpr uint64_t kSecond = 1000000000ull;
constexpr uint64_t kMiB = 1ull << 20;
constexpr uint64_t kT0 = 1000 * kSecond;  // the samples' clock (CLOCK_MONOTONIC-like ns)

class RunThinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ct-run-thin-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessTrace Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string error;
    auto t = analyzer::ParseTrace(std::move(bytes), path, &error);
    EXPECT_TRUE(t.has_value()) << error;
    return t ? std::move(*t) : ProcessTrace();
  }

  // Chunks of the file by magic.
  std::map<uint32_t, int> Magics(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::map<uint32_t, int> out;
    for (size_t off = fmt::kChunkSize; off + 4 <= bytes.size(); off += fmt::kChunkSize) {
      uint32_t m;
      std::memcpy(&m, bytes.data() + off, 4);
      if (m != 0) ++out[m];
    }
    return out;
  }

  fs::path dir_;
};

// One round: a sample of each process given (pid -> rss) and of one cgroup.
void Round(RunTraceWriter& w, uint64_t ts, const std::map<uint32_t, uint64_t>& rss, uint64_t comm, uint64_t cg) {
  fmt::Clock c;
  c.ts = ts;
  c.mono_ns = ts;
  c.realtime_ns = ts;
  w.AppendToWindow(c);
  std::set<pid_t> alive;
  for (const auto& [pid, r] : rss) {
    fmt::ProcSample s;
    s.ts = ts;
    s.pid = pid;
    s.ppid = 1;
    s.rss_bytes = r;
    s.pss_bytes = r / 2;
    s.uss_bytes = r / 4;
    s.swap_bytes = 0;
    s.threads = 3;
    s.cgroup = cg;
    s.comm = comm;
    s.shim = 1;
    s.utime_ns = ts - kT0;
    s.stime_ns = 0;
    w.AppendToWindow(s);
    w.tiers().AddProcess(s);
    alive.insert(static_cast<pid_t>(pid));
  }
  fmt::CgroupSample g;
  g.ts = ts;
  g.path = cg;
  g.current = 100 * kMiB + (ts - kT0) / kSecond;
  g.max = 512 * kMiB;
  g.oom_kill = 0;
  g.inactive_file = kMiB;
  w.AppendToWindow(g);
  w.tiers().AddCgroup(g);
  w.tiers().Retain(alive);
  w.Flush();
}

uint64_t PeakOf(const ProcessTrace& t, uint64_t pid) {
  uint64_t peak = 0;
  for (const auto& s : t.records.ProcSample) {
    if (s.pid == pid && s.rss_bytes != UINT64_MAX) peak = std::max(peak, s.rss_bytes);
  }
  return peak;
}

// 40 s of rounds every 10 ms through a 1 s window: pid 100 lives 2 s with a 900 MiB spike
// at 0.5 s and ends at 180 MiB; pid 200 lives throughout with a 700 MiB spike at 1 s.
std::string WriteJob(const fs::path& dir, uint64_t rounds, uint64_t window_ns) {
  RunTraceWriter w(dir.string());
  EXPECT_TRUE(w.ok()) << w.error();
  w.SetWindow(256 * kMiB, window_ns);
  const uint64_t comm = w.Intern("worker"), cg = w.Intern("/sys/fs/cgroup/job");
  for (uint64_t k = 0; k < rounds; ++k) {
    const uint64_t ts = kT0 + k * 10'000'000ull;
    std::map<uint32_t, uint64_t> rss;
    if (k < 200) rss[100] = k == 50 ? 900 * kMiB : k == 199 ? 180 * kMiB : 100 * kMiB + k * 4096;
    rss[200] = k == 100 ? 700 * kMiB : 200 * kMiB + (k % 7) * 4096;
    Round(w, ts, rss, comm, cg);
  }
  w.Finish();
  return w.path();
}

TEST_F(RunThinTest, GivenUpSamplesKeepEachProcessExactPeakAndLastValues) {
  const std::string path = WriteJob(dir_, 4000, kSecond);
  const ProcessTrace t = Read(path);
  // The window rolled past both spikes: the tiers stand in for them.
  EXPECT_GT(t.header.dropped_until_ticks, kT0 + 100 * 10'000'000ull);
  EXPECT_GT(t.header.recycled_chunks, 0u);
  EXPECT_EQ(PeakOf(t, 100), 900 * kMiB);
  EXPECT_EQ(PeakOf(t, 200), 700 * kMiB);
  // pid 100's last sample, and its time, exactly.
  const fmt::ProcSample* last = nullptr;
  for (const auto& s : t.records.ProcSample) {
    if (s.pid == 100 && (last == nullptr || s.ts >= last->ts)) last = &s;
  }
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->rss_bytes, 180 * kMiB);
  EXPECT_EQ(last->ts, kT0 + 199 * 10'000'000ull);
  EXPECT_EQ(last->pss_bytes, 90 * kMiB);
  EXPECT_EQ(last->ppid, 1u);
  EXPECT_EQ(t.Str(last->comm), "worker");
  EXPECT_EQ(t.Str(last->cgroup), "/sys/fs/cgroup/job");
  // pid 100 ended before any roll: its 1 entry went in as records; pid 200 and the
  // cgroup have CTRW chunks (tier 0, and tier 1 is not needed within 40 s).
  const auto magics = Magics(path);
  EXPECT_EQ(magics.at(fmt::kRunThinChunkMagic), 2);
  ASSERT_EQ(t.thinned.run_sets.size(), 2u);
  for (const auto& rs : t.thinned.run_sets) {
    if (rs.kind == fmt::kRunThinProcess) {
      EXPECT_EQ(rs.pid, 200u);
      EXPECT_EQ(rs.run.samples, 4000u);
      EXPECT_EQ(rs.run.peak_rss, 700 * kMiB);
      EXPECT_EQ(rs.run.peak_rss_ticks, kT0 + 100 * 10'000'000ull);
      EXPECT_EQ(rs.run.peak_vm, 350 * kMiB);  // PSS
    } else {
      EXPECT_EQ(rs.kind, fmt::kRunThinCgroup);
      EXPECT_EQ(rs.run.peak_rss, 100 * kMiB + 39);  // memory.current's last second
    }
  }
  // The cgroup's first reading came back from the tiers: its maxima and last values.
  uint64_t first_cg = UINT64_MAX;
  for (const auto& c : t.records.CgroupSample) first_cg = std::min(first_cg, c.ts);
  EXPECT_LE(first_cg, kT0 + 10 * kSecond);
  // The window: at most two event chunks at any time (one fills in more than 1 s here).
  EXPECT_LE(magics.at(fmt::kEventChunkMagic), 2);
}

TEST_F(RunThinTest, AJobWithinItsWindowWritesNoTiers) {
  const std::string path = WriteJob(dir_, 400, 600 * kSecond);
  const ProcessTrace t = Read(path);
  EXPECT_EQ(t.header.dropped_until_ticks, 0u);
  EXPECT_EQ(Magics(path).count(fmt::kRunThinChunkMagic), 0u);
  EXPECT_TRUE(t.thinned.run_sets.empty());
  uint64_t n100 = 0;
  for (const auto& s : t.records.ProcSample) n100 += s.pid == 100;
  EXPECT_EQ(n100, 200u);  // every sample, none made
  EXPECT_EQ(PeakOf(t, 100), 900 * kMiB);
}

// A writer SIGKILLed while its window rolls: every kill leaves a trace that reads, with
// the spike's exact peak once its samples were given up (and while they were not).
TEST_F(RunThinTest, SigkillWhileRollingKeepsThePeak) {
  for (int attempt = 0; attempt < 6; ++attempt) {
    const fs::path sub = dir_ / std::to_string(attempt);
    fs::create_directories(sub);
    int ready[2];
    ASSERT_EQ(pipe(ready), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(ready[0]);
      RunTraceWriter w(sub.string());
      w.SetWindow(256 * kMiB, kSecond / 10);
      const uint64_t comm = w.Intern("w"), cg = w.Intern("/cg");
      for (uint64_t k = 0;; ++k) {
        const uint64_t ts = kT0 + k * 10'000'000ull;
        Round(w, ts, {{300, k == 3 ? 640 * kMiB : 64 * kMiB + (k % 5) * 4096}}, comm, cg);
        if (k == 3 && write(ready[1], "r", 1) != 1) _exit(1);  // the spike is in the file
      }
    }
    close(ready[1]);
    char c = 0;
    ASSERT_EQ(read(ready[0], &c, 1), 1);
    close(ready[0]);
    usleep(static_cast<useconds_t>(attempt * 29000));
    kill(child, SIGKILL);
    int st = 0;
    waitpid(child, &st, 0);
    std::string path;
    for (const auto& e : fs::directory_iterator(sub)) path = e.path().string();
    ASSERT_FALSE(path.empty());
    const ProcessTrace t = Read(path);
    EXPECT_TRUE(t.warnings.empty()) << t.warnings.front();
    EXPECT_EQ(PeakOf(t, 300), 640 * kMiB) << "attempt " << attempt;
    // Bounded however long it wrote: header, record chunk, two event chunks, two sets' tier 0.
    EXPECT_LE(fs::file_size(path), 6u * fmt::kChunkSize) << "attempt " << attempt;
  }
}

}  // namespace
}  // namespace colabtrace::cli
