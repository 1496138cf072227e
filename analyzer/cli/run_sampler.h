// What `colabtrace run` records about the tree it runs, from outside: the shim runs no
// thread of its own, so the wrapper samples every process of the command's tree (RSS,
// CPU and threads from /proc/PID/stat every round and swap from /proc/PID/status every
// tenth; PSS and
// USS from /proc/PID/smaps_rollup as model/pss_schedule.h's cost budget allows; cgroup
// memory and oom_kill every round) and
// knows each reaped child's exact wait status. It writes all of it into its own trace,
// colabtrace.run.<pid>.ctrace, in the ordinary format (include/colabtrace/format/), with a
// run_info record that tells the analyzer this trace is the wrapper, not a job process.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/run_tiers.h"
#include "colabtrace/format/codec.h"
#include "model/proc_stat.h"
#include "model/pss_schedule.h"

namespace colabtrace::cli {

// A trace file written with plain pwrite calls, one chunk at a time (the wrapper is an
// ordinary single-threaded program: no extents). Ticks are CLOCK_MONOTONIC nanoseconds.
// Records appended since the last Flush() reach the file at Flush().
//
// Format 1.5: the periodic samples (AppendToWindow: clock, proc_sample, cgroup_sample) go
// into event chunks, which roll as the shim's window does (SetWindow: COLABTRACE_WINDOW_MB
// and COLABTRACE_WINDOW_S), every other record into record chunks; the samples' summary
// stays in the thinned tiers (tiers(), cli/run_tiers.h). A SIGKILL at any instant leaves a
// trace that reads whole: an event chunk is given up by raising the header's
// dropped_until_ticks (after the tiers that stand in for it are in the file), then
// clearing its magic; a chunk's body is written before its magic.
class RunTraceWriter {
 public:
  // Creates dir/colabtrace.run.<pid>.ctrace (mode 0600, O_EXCL, no symlink following).
  // On failure ok() is false and error() says why.
  explicit RunTraceWriter(const std::string& dir);
  // The file the constructor creates in dir: dir/colabtrace.run.<pid>.ctrace.
  static std::string PathFor(const std::string& dir);
  ~RunTraceWriter();
  RunTraceWriter(const RunTraceWriter&) = delete;
  RunTraceWriter& operator=(const RunTraceWriter&) = delete;

  bool ok() const { return fd_ >= 0 && error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }
  uint64_t last_ts() const { return rec_.last_ts; }

  // The longest text a String record holds here (longer ones are cut).
  static constexpr size_t kMaxStringBytes = 3584;

  // The window of the periodic samples: event chunks past `bytes`, or ended more than `ns`
  // ago, are rewritten (0: no limit of that kind).
  void SetWindow(uint64_t bytes, uint64_t ns);
  template <class R> void Append(R rec) { AppendTo(rec_, rec); }          // never dropped
  template <class R> void AppendToWindow(R rec) { AppendTo(ev_, rec); }   // a periodic sample
  RunSampleTiers& tiers() { return tiers_; }
  uint64_t Intern(const std::string& s);  // a String record's id (written once per text)
  void Flush();                          // writes the current chunks and the header
  void Finish();                         // flags the trace as ended and flushes

 private:
  struct Cursor {
    std::vector<uint8_t> chunk;
    bool event = false;
    bool open = false;
    size_t used = 0;      // bytes of chunk in use (header included)
    size_t flushed = 0;   // bytes of chunk already in the file (0: none of it yet)
    uint64_t offset = 0;
    uint64_t last_ts = 0;
  };
  struct LeftChunk {
    uint64_t offset, last_ts;
  };
  template <class R> void AppendTo(Cursor& c, const R& rec);
  void StartChunk(Cursor& c, uint64_t offset, uint64_t ts, bool recycled);
  void NextChunk(Cursor& c, uint64_t ts);  // flushes c's chunk and starts its next at ts
  uint64_t TakeEventChunk(uint64_t ts, bool* recycled);
  void FlushCursor(Cursor& c);
  void WriteHeader();
  uint8_t* MapNewChunk();
  void WriteAt(const void* data, size_t n, uint64_t offset);

  int fd_ = -1;
  std::string path_;
  std::string error_;
  std::vector<uint8_t> header_;
  Cursor rec_, ev_;
  uint64_t end_offset_ = 0;      // the first chunk not handed out
  uint32_t seq_ = 0;             // both cursors' chunks, in the order they were started
  std::deque<LeftChunk> left_;   // event chunks moved on from, oldest first
  uint64_t event_bytes_ = 0;     // event chunks in the file
  uint64_t event_order_ = 0;
  uint64_t window_bytes_ = 0, window_ns_ = 0;
  std::map<std::string, uint64_t> strings_;
  uint64_t next_string_ = 1;
  RunSampleTiers tiers_;
};

template <class R> void RunTraceWriter::AppendTo(Cursor& c, const R& rec) {
  uint8_t buf[4096];
  const size_t max = format::MaxEncodedSize(rec);
  if (max > sizeof(buf)) return;  // only short records are written here
  if (!c.open || c.used + max + 1 > c.chunk.size()) NextChunk(c, rec.ts);
  const size_t n = format::EncodeRecordUncommitted(rec, c.last_ts, buf);
  buf[0] = format::CommittedType(rec, c.last_ts);
  std::memcpy(c.chunk.data() + c.used, buf, n);
  c.used += n;
  c.last_ts = rec.ts;
}

// One process of the tree, as /proc shows it.
struct TreeProcess {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;
  char state = '?';  // /proc/PID/stat's state letter (R, S, D, Z zombie, ...)
  uint64_t threads = 0;
  uint64_t rss_pages = 0;
  uint64_t utime_ns = 0;  // CPU time so far in user and kernel mode (/proc/PID/stat)
  uint64_t stime_ns = 0;
  bool exiting = false;   // inside do_exit (PF_EXITING): its memory is going

  bool ended() const { return state == 'Z' || state == 'X' || state == 'x'; }
};

// A small /proc or /sys file, whole ("" when unreadable): model/proc_stat.h's.
using analyzer::ReadSmall;

// Every descendant of `root` (not root itself), from one scan of /proc/*/stat. With
// `outside`: the pids in it are not read (known to be outside the tree), and it gets
// every pid read that is not in the tree, less those gone.
std::vector<TreeProcess> DescendantsOf(pid_t root, std::set<pid_t>* outside = nullptr);

// Samples the tree of `root` into a RunTraceWriter, round by round.
class TreeSampler {
 public:
  // pss_interval_ns: COLABTRACE_PSS_MS (0: PSS as the cost budget allows).
  TreeSampler(RunTraceWriter& out, pid_t root, uint64_t pss_interval_ns = 0);

  // One round: every descendant's RSS, CPU, threads and swap, the PSS and USS of those
  // the schedule picks, and each distinct cgroup's figures.
  void SampleRound();
  // The schedule of PSS reads (what they cost so far).
  const analyzer::PssSchedule& pss_schedule() const { return schedule_; }
  // The processes of the tree that the last round found running (zombies left out).
  const std::set<pid_t>& running() const { return running_; }
  // pids seen with libcolabtrace.so mapped (they should have written a trace), by comm.
  const std::map<pid_t, std::string>& shim_pids() const { return shim_pids_; }

 private:
  struct Known {
    std::string cgroup_dir;   // the memory controller's directory under /sys/fs/cgroup
    bool cgroup_v2 = false;
    bool shim = false;
    int maps_checks = 0;      // /proc/PID/maps reads so far (until the shim shows up)
  };
  void SampleCgroup(const std::string& dir, bool v2, uint64_t ts);

  RunTraceWriter& out_;
  pid_t root_;
  std::map<pid_t, Known> known_;
  std::map<pid_t, std::string> shim_pids_;
  long page_size_ = 4096;
  analyzer::PssSchedule schedule_;
  uint64_t mem_total_ = UINT64_MAX;   // /proc/meminfo's MemTotal
  uint64_t cgroup_max_ = UINT64_MAX;  // the lowest memory.max of the last round
  // Processes outside the tree, not read again until the next full scan: a process never
  // joins the tree from outside it (an orphan goes to its nearest subreaper ancestor or
  // init), so only a pid reused by the tree within kFullScanRounds rounds waits that long.
  // Every kFullScanRounds-th round also reads each process's swap (/proc/PID/status).
  static constexpr int kFullScanRounds = 10;
  std::set<pid_t> outside_;
  std::set<pid_t> running_;
  int rounds_ = 0;
  std::string own_cgroup_;  // the wrapper's own memory cgroup (read once)
  bool own_cgroup_v2_ = false;
};

// The memory-controller directory of a process's cgroup ("" if none), and whether it is
// cgroup v2.
std::string CgroupMemoryDir(pid_t pid, bool* v2);

}  // namespace colabtrace::cli
