// The job cap of `colabtrace run` (COLABTRACE_JOB_MAX_MB, issue 39): the disk space of all
// of a job's traces together. Run gives each process a cap of its own (COLABTRACE_MAX_MB,
// lowered to a share of the job cap in the command's environment) and, at each check,
// compacts the traces of processes that have ended (trace/trace_compaction.h), oldest
// ended first, until the folder is within the cap again. docs/ARCHITECTURE.md ("The job
// cap") says what is guaranteed and what is not.
#pragma once

#include <sys/types.h>

#include <time.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace colabtrace::cli {

class RunTraceWriter;

// The settings, from run's environment. Each bad value gets one line in `warnings`.
struct JobCapSettings {
  static constexpr uint64_t kDefaultMb = 4096;
  static constexpr uint64_t kMaxMb = 1ull << 24;  // 16 TiB
  // A process's cap is the job cap over kShare, never below the shim's floor (8 MiB).
  static constexpr uint64_t kShare = 8;
  static constexpr uint64_t kProcessMinMb = 8, kProcessMaxMb = 32768;  // shim/config.h's range

  uint64_t job_max_mb = kDefaultMb;
  uint64_t process_max_mb = 0;  // COLABTRACE_MAX_MB as the command gets it
  std::vector<std::string> warnings;

  // COLABTRACE_JOB_MAX_MB and COLABTRACE_MAX_MB as given (nullptr: unset).
  static JobCapSettings From(const char* job_max_mb, const char* max_mb);
};

// The checks of one job's output folder.
class JobCap {
 public:
  // dir: the output folder; own_trace: run's own trace (counted, never compacted). The
  // *.ctrace files already in dir belong to earlier jobs: neither counted nor compacted.
  JobCap(std::string dir, const JobCapSettings& settings, std::string own_trace);

  // The folder's traces not listed before; a check takes this listing before it learns
  // which processes run, so every trace listed belongs to a process started before that.
  // The folder is read again only when its modification time changed (it is taken before
  // the read, so a file made while it was read changes it again), or the last reading
  // came within a second of the change before it.
  std::vector<std::string> List();

  // One check of the traces List() gave (now and before): those whose process is not in
  // `running` have ended; while the job's
  // traces take more than the cap, the oldest ended one not compacted yet is compacted.
  // Writes a job_disk record to `out` at the first check, at each that compacted or found
  // more bytes than before, and when `last`.
  struct Outcome {
    uint64_t bytes = 0;  // the job's traces after the check
    // Lines for stderr: the first compaction that failed (its file and why), and, once,
    // the first time the job stays over the cap with every ended trace compacted.
    std::vector<std::string> say;
  };
  Outcome Check(const std::vector<std::string>& listed, const std::set<pid_t>& running, RunTraceWriter& out,
                bool last);

  uint64_t compacted() const { return compacted_; }

 private:
  struct Trace {
    pid_t pid = 0;
    bool ended = false;
    bool compacted = false;
    uint64_t ended_order = 0;  // when it was found ended (check number)
    uint64_t bytes = 0;        // its disk space at the last check
  };
  std::string dir_;
  uint64_t max_bytes_;
  uint64_t process_max_mb_;
  std::string own_trace_;
  std::set<std::string> earlier_;      // file names there before the job
  std::map<std::string, Trace> traces_;  // by file name
  std::set<std::string> seen_;           // every name listed so far
  std::vector<std::string> pending_;     // listed before their header was written
  timespec listed_mtime_ = {-1, -1};      // the folder's mtime at the last listing
  bool listed_settled_ = false;
  uint64_t checks_ = 0, compacted_ = 0, peak_ = 0;
  bool said_over_ = false, said_failed_ = false;
};

}  // namespace colabtrace::cli
