// ProcessFacts: the few facts about one trace that several analyses need (how it ended,
// its limits), derived in one place; and LifecycleModel, what the traces of one run say
// about each other's processes (a parent's wait status, `colabtrace run`'s samples).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer {

enum class EndKind { kExited, kSignaled, kKilled, kExecUntraced };

// The JSON name of an end kind (shared/PRODUCT.md): exited, signaled or killed. An exec
// into a program the shim could not follow is reported as "exited" with no code.
std::string_view EndKindName(EndKind k);
// How an end reads in the report: {kind, code, signal, signal_name}, as processes[].end
// gives it (which adds who reaped it) and the dist.* findings quote it.
Json EndJson(EndKind kind, std::optional<int64_t> code, std::optional<int64_t> signal);

// The JSON name of an ExecUntraced.why: "no-preload", "static", "secure-exec" or
// "exec-failed".
std::string_view UntracedWhyName(uint64_t why);

// How a wait status word ended a process: exited with its code, or signaled (killed for
// SIGKILL) by its signal.
struct WaitEnd {
  EndKind kind = EndKind::kExited;
  std::optional<int64_t> code, signal;
};
WaitEnd EndOfWaitStatus(uint32_t status);

// The machine a trace was written on: "hostname/boot_id" from its host_info records
// (either part may be empty in old traces). CLOCK_MONOTONIC times and pids compare only
// between traces of one key.
std::string HostKey(const ProcessTrace& t);

// HostKey of each trace, where a key missing its hostname or boot id (the process was
// killed while its shim started, before or between its host records) takes the one
// complete key of the set that agrees with the part it has, when exactly one does.
std::vector<std::string> HostKeys(const std::vector<const ProcessTrace*>& traces);

// True for the trace `colabtrace run` writes about the tree it ran (a run_info record):
// it carries samples and wait statuses of other processes and is never a job process.
bool IsRunWrapper(const ProcessTrace& t);

// Each trace's parent pid (same order as traces): the traced process whose fork, vfork or
// posix_spawn record names it (on its host, the record nearest its start), else the ppid
// its start record read with getppid(). That one is the reaper's (colabtrace run, a
// subreaper, init) when the parent exited before the child wrote its start: the
// grandchild of a daemon's double fork.
std::vector<int64_t> ParentPids(const std::vector<const ProcessTrace*>& traces);

// One child reaped by a traced parent's wait* call, or by `colabtrace run`.
struct Reap {
  uint64_t ts = 0;          // when the wait returned (CLOCK_MONOTONIC ns)
  uint32_t status = 0;      // the wait status word
  uint32_t reaper_pid = 0;  // who reaped it
  bool by_run = false;      // the reaper is `colabtrace run`
};

// One reading of a process taken from outside by `colabtrace run`.
struct OutsideSample {
  uint64_t ts = 0;
  uint32_t ppid = 0;
  uint64_t rss = 0, pss = 0, uss = 0;  // UINT64_MAX: unknown
  std::string_view cgroup;
  uint32_t wrapper = 0;  // index of the wrapper trace it came from
  uint64_t cpu_ns = 0;   // utime + stime so far (0: unknown, older traces)
};

// One cgroup reading by `colabtrace run`.
struct CgroupReading {
  uint64_t ts = 0;
  uint64_t current = UINT64_MAX, max = UINT64_MAX, oom_kill = UINT64_MAX;
  uint32_t wrapper_pid = 0;
  uint64_t inactive_file = UINT64_MAX;  // reclaimable page cache; 0 in older traces
  // memory.current less the inactive page cache (the kubelet's "working set"): what the
  // kernel cannot simply drop before it OOM kills. UINT64_MAX when current is unknown.
  uint64_t working_set() const {
    if (current == UINT64_MAX) return UINT64_MAX;
    return inactive_file == UINT64_MAX ? current : current - std::min(current, inactive_file);
  }
  // Whether this reading shows the working set recorded: inactive_file is read, and not
  // the 0 that traces from before the field was recorded decode to.
  bool records_working_set() const {
    return inactive_file != UINT64_MAX && inactive_file != 0 && current != UINT64_MAX;
  }
};

// Cross-trace facts of one run, built once per report from every trace.
class LifecycleModel {
 public:
  explicit LifecycleModel(const std::vector<ProcessTrace>& traces);

  // The first reap of t's pid on t's host at or after t's start; nullptr if none.
  const Reap* ReapOf(const ProcessTrace& t) const;
  // The first reap of pid on host at or after since_ns; nullptr if none.
  const Reap* ReapOf(const std::string& host, uint32_t pid, uint64_t since_ns) const;
  // Whether a (non-wrapper) trace of pid on host began at or after since_ns.
  bool TracedSince(const std::string& host, uint32_t pid, uint64_t since_ns) const;
  // t's host key (HostKeys: a trace that recorded none takes the run's one host).
  std::string HostOf(const ProcessTrace& t) const;
  // t's parent pid (ParentPids); -1 if t is not one of the model's traces.
  int64_t ParentPidOf(const ProcessTrace& t) const;
  // `colabtrace run`'s samples of t's process (t's host and pid, from its start until it
  // was reaped or the pid's next trace began), oldest first.
  std::vector<const OutsideSample*> SamplesOf(const ProcessTrace& t) const;
  // Every cgroup reading taken on a host, oldest first.
  const std::vector<CgroupReading>& CgroupReadings(const std::string& host) const;
  // All outside samples of a host, oldest first, keyed by pid.
  const std::map<uint32_t, std::vector<OutsideSample>>& OutsideSamples(const std::string& host) const;

 private:
  using HostPid = std::pair<std::string, uint32_t>;
  const std::vector<ProcessTrace>& traces_;
  std::vector<std::string> host_of_;  // per trace
  std::vector<int64_t> ppid_;         // per trace
  std::map<HostPid, std::vector<Reap>> reaps_;
  std::map<HostPid, std::vector<uint64_t>> starts_;  // trace start times per (host, pid)
  std::map<std::string, std::map<uint32_t, std::vector<OutsideSample>>> samples_;
  std::map<std::string, std::vector<CgroupReading>> cgroups_;
  size_t IndexOf(const ProcessTrace& t) const;
};

// The ExecUntraced record of the exec that ended t's last image, when that exec went into
// a program the shim could not follow (ProcessFacts::untraced); nullptr otherwise.
const Event<format::ExecUntraced>* UntracedExecOf(const ProcessTrace& t);

// The argv of the program an ExecUntraced record names (its ExecArgv records).
std::vector<std::string_view> UntracedArgv(const ProcessTrace& t, const Event<format::ExecUntraced>& u);

struct ProcessFacts {
  const format::ProcessStart* start = nullptr;  // the first image's start record
  const format::ProcessStart* job = nullptr;    // the last image's: the real job
  int64_t ppid = 0;                             // ParentPids, given the model; else start's
  EndKind end_kind = EndKind::kKilled;
  std::optional<int64_t> exit_code;             // when it exited with a known code
  std::optional<int64_t> end_signal;            // the signal that ended it, when known
  const format::Signal* signal = nullptr;       // its own record of that signal, if any
  std::optional<Reap> reap;                     // its parent's (or colabtrace run's) wait
  bool run_wrapper = false;                     // IsRunWrapper
  uint64_t peak_rss = 0;
  uint64_t cgroup_max = UINT64_MAX;             // UINT64_MAX: unlimited or unknown
  uint64_t mem_total = UINT64_MAX;
  uint64_t shm_size = UINT64_MAX;
  // The image the last exec went into when the shim could not follow it (a static or
  // secure-exec program, or LD_PRELOAD dropped): no trace of its own follows, so the
  // process is that program. nullptr otherwise (and in traces from before the record).
  const Event<format::ExecUntraced>* untraced = nullptr;

  // The program this process finally ran: the untraced image's, else the last traced
  // image's executable and argv.
  std::string_view JobExe(const ProcessTrace& t) const;
  std::vector<std::string_view> JobArgv(const ProcessTrace& t) const;

  // The facts from t alone, or, given the run's model, with its reaper's wait status (the
  // exact end) and `colabtrace run`'s samples (peak RSS) folded in.
  static ProcessFacts Of(const ProcessTrace& t, const LifecycleModel* model = nullptr);
};

}  // namespace colabtrace::analyzer
