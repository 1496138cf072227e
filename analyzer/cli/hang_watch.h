// `colabtrace run --hang-timeout SECONDS`: watching the command's progress from outside,
// recording what every thread was doing when it stopped, and ending the job.
//
// The shim runs no thread of its own, so `run` watches. Each traced process keeps its
// progress (its step count and the last step's tick count) in the first state chunk of
// its trace (format::ProgressBlock, wire.h), rewritten in place at every step; HangWatch
// reads it with pread, a few hundred bytes per process and check. The job progresses
// while any traced process steps; before the first step, its start is its progress.
//
// When the job has made no progress for the timeout, RecordThreads writes, into run's own
// trace, one ThreadState record per thread of every traced process still alive (its name,
// kernel state, system call, and Python stack read from outside, see python_remote.h),
// then one HangStop record. EndTree then ends the job: SIGTERM, a grace period, SIGKILL.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/run_sampler.h"
#include "colabtrace/format/wire.h"

namespace colabtrace::cli {

class HangWatch {
 public:
  // dir: where the command's traces go; root: run itself (the job is its descendants);
  // timeout_ns: how long the job may go without progress; start_ns: the job's start
  // (CLOCK_MONOTONIC, before the command was started). Traces in dir created before it
  // are other runs': they are not read.
  HangWatch(std::string dir, pid_t root, uint64_t timeout_ns, uint64_t start_ns);

  // Reads the progress of every traced process of the job (at most every 200 ms: a call
  // sooner reads nothing and answers false). True when the job has made no progress for
  // the timeout at now_ns (CLOCK_MONOTONIC).
  bool Hung(uint64_t now_ns);

  // Steps seen so far, all traced processes together.
  uint64_t steps() const;
  // When the job last progressed (CLOCK_MONOTONIC ns): its last step, else its start.
  uint64_t progress_ns() const { return progress_ns_; }
  uint64_t timeout_ns() const { return timeout_ns_; }

  // What RecordThreads recorded.
  struct Recorded {
    size_t processes = 0;
    size_t threads = 0;
    size_t python_stacks = 0;
  };
  // Writes one ThreadState record per thread of every traced process of the job that is
  // still alive, then one HangStop record (idle: now_ns - progress_ns()), and flushes.
  // Safe against processes that end meanwhile (they are left out, or their threads
  // recorded as far as they could be read).
  Recorded RecordThreads(RunTraceWriter& out, uint64_t now_ns);

 private:
  // One traced process: its trace file and what was read of it.
  struct Traced {
    pid_t pid = 0;
    std::string path;
    uint64_t start_mono_ns = 0;  // when the trace was created (the newest of a pid's wins)
    uint64_t scanned_to = 0;     // chunk headers below this offset were read
    uint32_t image = 0;          // the last exec image seen
    std::map<uint32_t, uint64_t> state_chunks;  // that image's state chunks: seq -> offset
    uint64_t steps = 0;          // that image's step count at the last read
    uint64_t steps_before = 0;   // the steps of earlier images
    uint64_t read_ns = 0;        // when its progress was last read (0: never)
    bool watching = true;        // its process was alive at the last check
  };

  // The trace files of the output folder not seen before, by the pid their header names.
  void FindNewTraces();
  // The trace of pid (the newest of its files), or nullptr.
  Traced* TraceOf(pid_t pid);
  // Reads t's header and new chunk headers; false when the file cannot be read.
  bool Refresh(Traced& t, format::FileHeader* h);
  // Reads t's progress and folds it into the job's.
  void ReadProgress(Traced& t, uint64_t now_ns);

  std::string dir_;
  pid_t root_;
  uint64_t timeout_ns_;
  uint64_t start_ns_;
  uint64_t start_realtime_ns_;
  uint64_t progress_ns_;
  uint64_t checked_ns_ = 0;  // the last read (0: none yet)
  std::map<std::string, Traced> traces_;  // by file name
  std::set<std::string> looked_at_;  // file names whose header was read
};

// A process of the job that was still there after EndTree.
struct Holdout {
  pid_t pid = 0;
  std::string comm;
  char state = '?';  // /proc/PID/stat's state letter ('D': uninterruptible)
};

// Ends every descendant of root: SIGTERM, then after grace_ns (less once all have ended)
// SIGKILL to those left, then waits at most reap_ns for them to go. reap() is called every
// few milliseconds while it waits, and once more at the end: it must collect run's ended
// children without blocking. Returns the processes still there (zombies count as gone;
// run's own are collected by then), for instance one
// blocked in an uninterruptible read of a FUSE mount whose daemon stopped answering: no
// signal ends it, and run must not wait for it.
std::vector<Holdout> EndTree(pid_t root, uint64_t grace_ns, uint64_t reap_ns, const std::function<void()>& reap);

}  // namespace colabtrace::cli
