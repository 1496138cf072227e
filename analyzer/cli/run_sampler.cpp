#include "cli/run_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>

#include "model/proc_stat.h"

namespace colabtrace::cli {
namespace {

using format::ChunkHeader;
using format::FileHeader;

uint64_t NowNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The number after "key" on its line ("Pss:      1234 kB" -> 1234), or UINT64_MAX.
uint64_t FieldAfter(const std::string& text, const char* key) {
  size_t at = 0;
  const size_t klen = std::strlen(key);
  while ((at = text.find(key, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n') {
      return std::strtoull(text.c_str() + at + klen, nullptr, 10);
    }
    at += klen;
  }
  return UINT64_MAX;
}

uint64_t ReadNumber(const std::string& path) {
  const std::string s = ReadSmall(path);
  if (s.empty()) return UINT64_MAX;
  if (s.starts_with("max")) return UINT64_MAX;
  const uint64_t v = std::strtoull(s.c_str(), nullptr, 10);
  return v >= (1ull << 62) ? UINT64_MAX : v;  // cgroup v1 spells "no limit" as ~LONG_MAX
}

}  // namespace

// ---- RunTraceWriter -------------------------------------------------------------------

std::string RunTraceWriter::PathFor(const std::string& dir) {
  return dir + "/colabtrace.run." + std::to_string(getpid()) + ".ctrace";
}

RunTraceWriter::RunTraceWriter(const std::string& dir)
    : header_(format::kChunkSize, 0),
      tiers_(RunSampleTiers::Chunks{[this] { return MapNewChunk(); },
                                    [](uint8_t* p) { munmap(p, format::kChunkSize); },
                                    [this](const format::ProcSample& r) { Append(r); },
                                    [this](const format::CgroupSample& r) { Append(r); }}) {
  rec_.chunk.assign(format::kChunkSize, 0);
  ev_.chunk.assign(format::kChunkSize, 0);
  ev_.event = true;
  path_ = PathFor(dir);
  fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    error_ = std::strerror(errno);
    return;
  }
  FileHeader h = {};
  std::memcpy(h.magic, format::kFileMagic, sizeof(h.magic));
  h.version_major = format::kVersionMajor;
  h.version_minor = format::kVersionMinor;
  h.header_size = format::kHeaderSize;
  h.features = 0;  // ticks are CLOCK_MONOTONIC nanoseconds
  h.chunk_size = format::kChunkSize;
  h.pid = static_cast<uint32_t>(getpid());
  h.start_mono_ns = NowNs(CLOCK_MONOTONIC);
  h.start_ticks = h.start_mono_ns;
  h.start_realtime_ns = NowNs(CLOCK_REALTIME);
  h.ticks_per_sec_hint = 1000000000ull;
  h.image_count = 1;
  h.next_string_id = 1;
  std::memcpy(header_.data(), &h, sizeof(h));
  end_offset_ = format::kChunkSize;
  NextChunk(rec_, h.start_ticks);
  Flush();
  // A file that never got its header is no trace: leave none behind.
  if (!error_.empty()) unlink(path_.c_str());
}

RunTraceWriter::~RunTraceWriter() {
  if (fd_ >= 0) close(fd_);
}

void RunTraceWriter::WriteAt(const void* data, size_t n, uint64_t offset) {
  if (fd_ < 0 || !error_.empty()) return;
  const auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    const ssize_t w = pwrite(fd_, p, n, static_cast<off_t>(offset));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      error_ = std::strerror(w < 0 ? errno : ENOSPC);
      return;
    }
    p += w, n -= static_cast<size_t>(w), offset += static_cast<uint64_t>(w);
  }
}

void RunTraceWriter::SetWindow(uint64_t bytes, uint64_t ns) {
  window_bytes_ = bytes;
  window_ns_ = ns;
  FileHeader h;
  std::memcpy(&h, header_.data(), sizeof(h));
  h.window_bytes = bytes;
  h.window_ticks = ns;  // ticks are nanoseconds
  std::memcpy(header_.data(), &h, sizeof(h));
}

void RunTraceWriter::StartChunk(Cursor& c, uint64_t offset, uint64_t ts, bool recycled) {
  std::fill(c.chunk.begin(), c.chunk.end(), 0);
  format::EventChunkHeader eh = {};
  ChunkHeader& ch = eh.chunk;
  ch.magic = c.event ? format::kEventChunkMagic : format::kChunkMagic;
  ch.tid = static_cast<uint32_t>(getpid());
  ch.base_ticks = ts;
  ch.seq = seq_++;
  ch.flags = recycled ? format::kChunkRecycled : 0;
  eh.order = c.event ? ++event_order_ : 0;
  c.used = c.event ? sizeof(eh) : sizeof(ch);
  std::memcpy(c.chunk.data(), &eh, c.used);
  c.offset = offset;
  c.open = true;
  c.flushed = 0;
  c.last_ts = ts;
}

void RunTraceWriter::NextChunk(Cursor& c, uint64_t ts) {
  if (c.open) {
    FlushCursor(c);
    if (c.event) {
      // Its end, for readers; then it waits its turn to be given up.
      WriteAt(&c.last_ts, sizeof(c.last_ts), c.offset + offsetof(format::EventChunkHeader, end_ticks));
      left_.push_back({c.offset, c.last_ts});
    }
  }
  bool recycled = false;
  uint64_t offset = 0;
  if (c.event) {
    offset = TakeEventChunk(ts, &recycled);
  } else {
    offset = end_offset_;
    end_offset_ += format::kChunkSize;
  }
  StartChunk(c, offset, ts, recycled);
}

// A new event chunk while the window's bytes allow one and its oldest left chunk is
// recent, else that oldest chunk, given up: the tiers that stand in for its samples put in
// the file, the header's dropped_until_ticks raised, then its magic cleared.
uint64_t RunTraceWriter::TakeEventChunk(uint64_t ts, bool* recycled) {
  const bool full = window_bytes_ != 0 && event_bytes_ >= window_bytes_;
  const bool old = window_ns_ != 0 && !left_.empty() && left_.front().last_ts + window_ns_ < ts;
  if (!left_.empty() && (full || old)) {
    const LeftChunk l = left_.front();
    left_.pop_front();
    tiers_.MaterializeUpTo(l.last_ts);
    FlushCursor(rec_);  // the records that stand in for short processes' samples
    FileHeader h;
    std::memcpy(&h, header_.data(), sizeof(h));
    h.dropped_until_ticks = std::max(h.dropped_until_ticks, l.last_ts);
    ++h.recycled_chunks;
    std::memcpy(header_.data(), &h, sizeof(h));
    WriteHeader();
    const uint32_t no_magic = 0;
    WriteAt(&no_magic, sizeof(no_magic), l.offset);
    *recycled = true;
    return l.offset;
  }
  const uint64_t offset = end_offset_;
  end_offset_ += format::kChunkSize;
  event_bytes_ += format::kChunkSize;
  return offset;
}

// A fresh chunk at the end of the file for the thinned tiers, zeroed and mapped.
uint8_t* RunTraceWriter::MapNewChunk() {
  static const std::vector<uint8_t> zeros(format::kChunkSize, 0);
  const uint64_t offset = end_offset_;
  WriteAt(zeros.data(), zeros.size(), offset);
  if (!ok()) return nullptr;
  end_offset_ += format::kChunkSize;
  void* p = mmap(nullptr, format::kChunkSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd_, static_cast<off_t>(offset));
  return p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
}

uint64_t RunTraceWriter::Intern(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  format::String rec;
  rec.ts = rec_.last_ts;
  rec.id = next_string_++;
  rec.text = format::Bytes{reinterpret_cast<const uint8_t*>(s.data()),
                           static_cast<uint32_t>(std::min(s.size(), kMaxStringBytes))};
  Append(rec);
  strings_.emplace(s, rec.id);
  return rec.id;
}

// The whole chunk the first time (its records end at a zero byte; readers expect whole
// chunks), its magic last; then only what was appended since.
void RunTraceWriter::FlushCursor(Cursor& c) {
  if (!c.open) return;
  if (c.flushed == 0) {
    WriteAt(c.chunk.data() + sizeof(uint32_t), c.chunk.size() - sizeof(uint32_t), c.offset + sizeof(uint32_t));
    WriteAt(c.chunk.data(), sizeof(uint32_t), c.offset);
  } else if (c.used > c.flushed) {
    WriteAt(c.chunk.data() + c.flushed, c.used - c.flushed, c.offset + c.flushed);
  }
  c.flushed = c.used;
}

void RunTraceWriter::WriteHeader() {
  FileHeader h;
  std::memcpy(&h, header_.data(), sizeof(h));
  h.next_chunk_offset = end_offset_;
  h.next_string_id = next_string_;
  std::memcpy(header_.data(), &h, sizeof(h));
  WriteAt(header_.data(), sizeof(h), 0);
}

void RunTraceWriter::Flush() {
  FlushCursor(rec_);
  FlushCursor(ev_);
  WriteHeader();
}

void RunTraceWriter::Finish() {
  FileHeader h;
  std::memcpy(&h, header_.data(), sizeof(h));
  h.flags |= format::kFlagEnded;
  std::memcpy(header_.data(), &h, sizeof(h));
  Flush();
  if (fd_ >= 0 && error_.empty() && fsync(fd_) != 0 && errno != EINVAL) error_ = std::strerror(errno);
}

// ---- the tree -------------------------------------------------------------------------

std::vector<TreeProcess> DescendantsOf(pid_t root, std::set<pid_t>* outside) {
  std::vector<TreeProcess> all;
  static const uint64_t ns_per_tick = [] {
    const long hz = sysconf(_SC_CLK_TCK);
    return 1000000000ull / static_cast<uint64_t>(hz > 0 ? hz : 100);
  }();
  DIR* d = opendir("/proc");
  if (d == nullptr) return {};
  std::set<pid_t> live;
  while (const dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    if (outside != nullptr) {
      live.insert(static_cast<pid_t>(pid));
      if (outside->contains(static_cast<pid_t>(pid))) continue;
    }
    const std::optional<analyzer::ProcStat> st = analyzer::ReadProcStat(static_cast<pid_t>(pid));
    if (!st) continue;
    TreeProcess p;
    p.pid = st->pid;
    p.ppid = st->ppid;
    p.comm = st->comm;
    p.state = st->state;
    p.threads = st->threads;
    p.rss_pages = st->rss_pages;
    p.utime_ns = st->utime_ticks * ns_per_tick;
    p.stime_ns = st->stime_ticks * ns_per_tick;
    p.exiting = st->exiting();
    all.push_back(std::move(p));
  }
  closedir(d);
  std::set<pid_t> tree = {root};
  std::vector<TreeProcess> out;
  // Parents usually have lower pids, but pids wrap: repeat until nothing is added.
  for (bool added = true; added;) {
    added = false;
    for (auto& p : all) {
      if (p.pid != 0 && tree.contains(p.ppid) && !tree.contains(p.pid)) {
        tree.insert(p.pid);
        out.push_back(p);
        p.pid = 0;
        added = true;
      }
    }
  }
  if (outside != nullptr) {
    std::erase_if(*outside, [&](pid_t pid) { return !live.contains(pid); });
    for (const auto& p : all) {
      if (p.pid != 0 && p.pid != root) outside->insert(p.pid);
    }
  }
  return out;
}

std::string CgroupMemoryDir(pid_t pid, bool* v2) {
  const std::string text = ReadSmall("/proc/" + std::to_string(pid) + "/cgroup");
  std::istringstream lines(text);
  std::string line, v1_path, v2_path;
  bool have_v2 = false;
  while (std::getline(lines, line)) {
    // "hierarchy-id:controllers:path"
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.starts_with("0::")) have_v2 = true, v2_path = path;
    std::istringstream cs(controllers);
    for (std::string c; std::getline(cs, c, ',');) {
      if (c == "memory") v1_path = path;
    }
  }
  struct stat st;
  auto exists = [&](const std::string& p) { return stat(p.c_str(), &st) == 0; };
  if (!v1_path.empty()) {
    *v2 = false;
    const std::string full = "/sys/fs/cgroup/memory" + (v1_path == "/" ? "" : v1_path);
    if (exists(full + "/memory.usage_in_bytes")) return full;
    // A cgroup namespace: our cgroup is the root we see.
    if (exists("/sys/fs/cgroup/memory/memory.usage_in_bytes")) return "/sys/fs/cgroup/memory";
    return {};
  }
  if (have_v2) {
    *v2 = true;
    const std::string full = "/sys/fs/cgroup" + (v2_path == "/" ? "" : v2_path);
    if (exists(full + "/memory.current")) return full;
    if (exists("/sys/fs/cgroup/memory.current")) return "/sys/fs/cgroup";
  }
  return {};
}

// ---- TreeSampler ----------------------------------------------------------------------

void TreeSampler::SampleCgroup(const std::string& dir, bool v2, uint64_t ts) {
  format::CgroupSample c;
  c.ts = ts;
  c.path = out_.Intern(dir);
  c.current = ReadNumber(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes"));
  c.max = ReadNumber(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes"));
  cgroup_max_ = std::min(cgroup_max_, c.max);
  const std::string events = ReadSmall(dir + (v2 ? "/memory.events" : "/memory.oom_control"));
  c.oom_kill = FieldAfter(events, "oom_kill ");
  // Reclaimable page cache: a tree that streams a dataset fills its cgroup with it.
  c.inactive_file = FieldAfter(ReadSmall(dir + "/memory.stat"), v2 ? "inactive_file " : "total_inactive_file ");
  out_.AppendToWindow(c);
  out_.tiers().AddCgroup(c);
}

namespace {

// Whether pid runs on its parent's memory: a vfork child before it execs (CPython's
// subprocess vforks; a tool missing from PATH makes the child try every directory and
// _exit(255)), or a clone(CLONE_VM) child. The shim shows in its maps because they are
// the parent's; by design it writes no trace of its own (its hooks pass through until an
// exec), so it is no process that "could not write its trace". kcmp needs the kernel's
// CONFIG_CHECKPOINT_RESTORE and, under Docker's default seccomp profile, CAP_SYS_PTRACE:
// where it fails, false (such a child, caught alive by a sample, is named as before).
bool SharesParentMemory(const TreeProcess& p) {
  return p.ppid > 0 && syscall(SYS_kcmp, p.pid, p.ppid, KCMP_VM, 0, 0) == 0;
}

}  // namespace

TreeSampler::TreeSampler(RunTraceWriter& out, pid_t root, uint64_t pss_interval_ns)
    : out_(out), root_(root), schedule_(pss_interval_ns) {
  const std::string meminfo = ReadSmall("/proc/meminfo");
  if (const uint64_t kb = FieldAfter(meminfo, "MemTotal:"); kb != UINT64_MAX) mem_total_ = kb * 1024;
}

void TreeSampler::SampleRound() {
  page_size_ = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
  const uint64_t ts = NowNs(CLOCK_MONOTONIC), round_cpu0 = NowNs(CLOCK_THREAD_CPUTIME_ID);
  uint64_t reads_cpu = 0;  // the smaps reads' share of this round's CPU
  format::Clock clock;
  clock.ts = ts;
  clock.mono_ns = ts;
  clock.realtime_ns = NowNs(CLOCK_REALTIME);
  out_.AppendToWindow(clock);
  std::map<std::string, bool> cgroups;  // dir -> v2
  // The wrapper's own cgroup too: it outlives the tree, so its oom_kill count after a
  // death is the evidence proc.killed cites.
  if (rounds_ == 0) own_cgroup_ = CgroupMemoryDir(getpid(), &own_cgroup_v2_);
  if (!own_cgroup_.empty()) cgroups[own_cgroup_] = own_cgroup_v2_;
  // The tree, every kFullScanRounds-th round from a scan of every process, between them
  // reading only those not known to be outside it.
  const bool full_round = rounds_++ % kFullScanRounds == 0;
  if (full_round) outside_.clear();
  std::vector<TreeProcess> tree = DescendantsOf(root_, &outside_);
  running_.clear();
  for (const TreeProcess& p : tree) {
    if (!p.ended()) running_.insert(p.pid);
  }
  std::vector<pid_t> alive;
  std::vector<analyzer::PssSchedule::Candidate> candidates;
  std::vector<const TreeProcess*> sampled;
  for (const TreeProcess& p : tree) {
    alive.push_back(p.pid);
    const std::string proc = "/proc/" + std::to_string(p.pid);
    Known& k = known_[p.pid];
    if (k.maps_checks == 0) k.cgroup_dir = CgroupMemoryDir(p.pid, &k.cgroup_v2);
    // Whether the shim is in it: checked when first seen, then now and then until it
    // appears (an exec may load it later). Memory shared with the parent is checked first:
    // an exec between the two reads then shows the new image's maps.
    if (!k.shim && (k.maps_checks < 3 || k.maps_checks % 10 == 0)) {
      k.shim = !SharesParentMemory(p) && ReadSmall(proc + "/maps").find("libcolabtrace") != std::string::npos;
      if (k.shim) shim_pids_[p.pid] = p.comm;
    }
    ++k.maps_checks;
    if (!k.cgroup_dir.empty()) cgroups[k.cgroup_dir] = k.cgroup_v2;
    // A zombie, or a process inside do_exit (its memory going while its state may still
    // say R or D): no sample, rather than one that counts freed memory.
    if (p.ended() || p.exiting || p.rss_pages == 0) continue;
    candidates.push_back({p.pid, p.rss_pages * static_cast<uint64_t>(page_size_)});
    sampled.push_back(&p);
  }
  const uint64_t limit = std::min(mem_total_, cgroup_max_);
  std::vector<pid_t> chosen = schedule_.Choose(ts, candidates, limit);
  const std::set<pid_t> read_pss(chosen.begin(), chosen.end());
  for (const TreeProcess* pp : sampled) {
    const TreeProcess& p = *pp;
    const Known& k = known_[p.pid];
    const std::string proc = "/proc/" + std::to_string(p.pid);
    format::ProcSample s;
    s.ts = ts;
    s.pid = static_cast<uint64_t>(p.pid);
    s.ppid = static_cast<uint64_t>(p.ppid);
    s.rss_bytes = p.rss_pages * static_cast<uint64_t>(page_size_);
    s.pss_bytes = s.uss_bytes = s.swap_bytes = UINT64_MAX;  // unless read below
    // Swap from status (a few microseconds at any size, unlike smaps_rollup), once a
    // second: the sampler's whole round stays within its CPU budget.
    if (full_round) {
      const uint64_t swap_kb = FieldAfter(ReadSmall(proc + "/status"), "VmSwap:");
      s.swap_bytes = swap_kb == UINT64_MAX ? UINT64_MAX : swap_kb * 1024;
    }
    if (read_pss.contains(p.pid)) {
      // RSS, PSS and USS from the one smaps_rollup read, so that USS <= PSS <= RSS holds
      // in the sample while the process grows. The read's wall time is how long it held
      // the process's mmap lock, its CPU time what it cost the sampler: the schedule
      // budgets both.
      const uint64_t t0 = NowNs(CLOCK_MONOTONIC), cpu0 = NowNs(CLOCK_THREAD_CPUTIME_ID);
      const std::string rollup = ReadSmall(proc + "/smaps_rollup");
      const uint64_t wall = NowNs(CLOCK_MONOTONIC) - t0, cpu = NowNs(CLOCK_THREAD_CPUTIME_ID) - cpu0;
      auto kb = [&](const char* key) {
        const uint64_t v = FieldAfter(rollup, key);
        return v == UINT64_MAX ? v : v * 1024;
      };
      const uint64_t clean = kb("Private_Clean:"), dirty = kb("Private_Dirty:");
      if (kb("Rss:") != UINT64_MAX && kb("Pss:") != UINT64_MAX && clean != UINT64_MAX && dirty != UINT64_MAX) {
        s.rss_bytes = kb("Rss:");
        s.pss_bytes = kb("Pss:");
        s.uss_bytes = clean + dirty;
        if (kb("Swap:") != UINT64_MAX) s.swap_bytes = kb("Swap:");
      }
      schedule_.Record(p.pid, ts, wall, cpu, s.rss_bytes, s.pss_bytes);
      reads_cpu += cpu;
    }
    s.threads = p.threads;
    s.cgroup = k.cgroup_dir.empty() ? 0 : out_.Intern(k.cgroup_dir);
    s.comm = out_.Intern(p.comm);
    s.shim = k.shim ? 1 : 0;
    s.utime_ns = p.utime_ns;
    s.stime_ns = p.stime_ns;
    out_.AppendToWindow(s);
    out_.tiers().AddProcess(s);
  }
  schedule_.Retain(alive);
  out_.tiers().Retain(std::set<pid_t>(alive.begin(), alive.end()));
  for (auto it = known_.begin(); it != known_.end();) {
    it = std::find(alive.begin(), alive.end(), it->first) != alive.end() ? std::next(it) : known_.erase(it);
  }
  cgroup_max_ = UINT64_MAX;
  for (const auto& [dir, v2] : cgroups) SampleCgroup(dir, v2, ts);
  out_.Flush();
  // The round's own work is paid from the same CPU budget as the reads.
  const uint64_t round_cpu = NowNs(CLOCK_THREAD_CPUTIME_ID) - round_cpu0;
  schedule_.ChargeRound(round_cpu - std::min(round_cpu, reads_cpu));
}

}  // namespace colabtrace::cli
