// `colabtrace run`'s own samples thinned with age (format 1.5): each process it samples and
// each cgroup gets the tiers of format/sample_tiers.h (the shim's code, fed other figures:
// see kRunThinChunkMagic there), so that run's window may give its proc_sample and
// cgroup_sample records up and its trace still holds every process's exact peaks and each
// interval's maxima and last values.
//
// A set starts in memory and goes into the trace (CTRW chunks, mapped MAP_SHARED, so a
// SIGKILL of run leaves their last stores in the file) only once the window is about to
// give up an event chunk that may hold one of its samples (MaterializeUpTo): a job that
// never fills the window writes no CTRW chunk, and a set in memory is never needed by a
// reader, whose samples are all still in the event chunks. A set that ended with at most
// kRecordsEntries entries (a process of a few seconds) goes into the trace as the records
// its entries stand for (format::RunThinRecords, the reader's own), not as a 32 KiB chunk.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "colabtrace/format/records.h"
#include "colabtrace/format/run_thin.h"

namespace colabtrace::cli {

class RunSampleTiers {
 public:
  // map gives a fresh chunk of the trace, zeroed and mapped writable (nullptr: none, the
  // trace gave no more); unmap gives it back to the address space (the file keeps it);
  // proc and cgroup append a record that is never dropped.
  struct Chunks {
    std::function<uint8_t*()> map;
    std::function<void(uint8_t*)> unmap;
    std::function<void(const format::ProcSample&)> proc;
    std::function<void(const format::CgroupSample&)> cgroup;
  };
  static constexpr uint64_t kRecordsEntries = 8;
  explicit RunSampleTiers(Chunks chunks) : chunks_(std::move(chunks)) {}
  ~RunSampleTiers();
  RunSampleTiers(const RunSampleTiers&) = delete;
  RunSampleTiers& operator=(const RunSampleTiers&) = delete;

  // One sample (comm and cgroup path as String ids of the trace).
  void AddProcess(const format::ProcSample& s);
  void AddCgroup(const format::CgroupSample& c);
  // The processes of the tree now (zombies included): every other process's set is ended
  // (a pid seen again later is a new process with a set of its own).
  void Retain(const std::set<pid_t>& alive);
  // Puts into the trace every set whose first sample is at or before ts (before the
  // window gives up an event chunk that ends at ts); ended sets, once there, are unmapped
  // and forgotten.
  void MaterializeUpTo(uint64_t ts);

  size_t sets() const { return sets_.size(); }       // sets held (in memory or mapped)
  size_t sets_in_file() const { return in_file_; }   // sets put into the trace so far
  size_t sets_as_records() const { return as_records_; }  // of them, as records
  uint64_t lost() const { return lost_; }             // sets or tiers that found no chunk

 private:
  struct Set {
    uint32_t number = 0;   // the CTRW chunks' image field
    uint32_t pid = 0;      // 0: a cgroup
    uint64_t first_ts = 0;
    bool ended = false;
    bool in_file = false;
    format::ThinTiers tiers;
    format::ThinRunHalf run{};
    std::vector<uint8_t> memory[format::kThinTiers];  // the tiers' chunks until in the file
  };
  Set& Open(uint32_t pid, uint64_t ts, uint64_t kind, uint64_t path);
  uint8_t* NewChunk(Set& s, int k);
  void Add(Set& s, uint64_t ts, uint64_t rss, uint64_t vm, uint64_t threads, uint64_t cgroup,
           uint64_t inactive_file, uint64_t oom_kill, uint64_t utime_ns, uint64_t stime_ns);
  bool Materialize(Set& s);
  void Shrink(Set& s);
  void Drop(Set& s);
  format::RunThinIdentity* IdentityOf(const Set& s) const;

  Chunks chunks_;
  std::vector<std::unique_ptr<Set>> sets_;
  std::map<uint32_t, Set*> live_;             // pid -> its set
  std::map<uint64_t, Set*> cgroups_;          // path String id -> its set
  uint32_t next_number_ = 1;
  size_t in_file_ = 0, as_records_ = 0;
  uint64_t lost_ = 0;
};

}  // namespace colabtrace::cli
