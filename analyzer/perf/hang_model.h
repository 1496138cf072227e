// HangModel: what every process of a run was blocked in when its trace ended, and whether
// the job hung (proc.hang).
//
// The shim notes each call that may block in the trace's state chunk while it lasts (see
// shim/state.h); the reader turns the notes left set into InFlight records (a call that
// never returned: the process was killed in it, or another thread ended the process). Each
// becomes an InFlightCall here with what it was on: the file (an open's or stat's path; a
// read's descriptor, named by the process's last open of it), its mount and filesystem
// type, a GPU synchronisation's stream and the kernels launched before it that had not
// completed (the launch rings a killed trace left, newest first), a batch wait's asking
// line, a wait's child. `colabtrace run --hang-timeout` adds, from outside, every thread's
// name, kernel state and Python stack (ThreadState records in its own trace).
//
// How long each call was blocked needs the time the process stopped: its reap (by its
// parent or `colabtrace run`), else the time `colabtrace run` ended the job (HangStop),
// else its last outside sample, else the latest record of any trace of the job on its
// host (a DataLoader's main process polls its workers every 5 s, which takes the shim's
// periodic sample). Without any of these the time is a lower bound (end_known false).
//
// The job hung when `colabtrace run` ended it for a hang, or when a process that did not
// end cleanly had a thread stuck: blocked in one call for at least kHangMinBlockedNs and
// kHangStepMultiple times the median step of the job's stepping process, while the job
// made no step for as long (progress is steps where there are steps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"
#include "model/run_model.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::perf {

// A thread stuck for less than this is never a hang.
constexpr uint64_t kHangMinBlockedNs = 10'000'000'000ull;
// ... nor for less than this many median steps of the job's stepping process.
constexpr uint64_t kHangStepMultiple = 10;

// One call a thread had not returned from when its process stopped.
struct InFlightCall {
  uint32_t tid = 0;
  uint64_t call = 0;        // format::InFlightCall
  uint64_t level = 0;       // 0 the call, 1 the Python-level wait around it
  std::string api;          // the entry point: "read", "cudaDeviceSynchronize", "waitpid"...
  uint64_t since_ns = 0;    // when it began
  uint64_t blocked_ns = 0;  // until the process stopped
  std::string path;         // the file ("" unknown or none)
  std::optional<int64_t> fd;
  std::string mount, fs_type;  // the path's mount point and type ("" unknown)
  bool slow_fs = false;        // a network, FUSE or VM-shared filesystem
  std::optional<uint64_t> stream;  // a GPU sync's stream
  bool device_wide = false;
  Json kernels;                // a GPU sync's kernels in flight, newest first (array)
  std::string where;           // a batch wait's asking line, a collective's calling line
  // A collective (call kCollective; api is its op name, "all_reduce"): its sequence
  // number in its process group (0: unknown), element count, dtype and group id.
  uint64_t seq = 0, count = 0, group = 0;
  std::string dtype;
  std::optional<int64_t> pid;  // a wait's child (-1: any)
  std::vector<std::string> python_stack;  // innermost first, when known
  std::string comm;            // the thread's name, when `colabtrace run` read it
};

// A thread `colabtrace run --hang-timeout` read from outside.
struct OutsideThread {
  uint32_t tid = 0;
  std::string comm;
  char kernel_state = 0;  // 'S', 'D', 'R'...
  int64_t syscall = -1;
  std::vector<std::string> python_stack;
};

struct ProcessHang {
  size_t trace = 0;          // index into run.traces()
  bool ended_cleanly = false;  // exited, or a fatal signal it recorded itself
  uint64_t stopped_ns = 0;     // when it stopped (see above)
  bool end_known = false;      // stopped_ns is a reap, run's decision or sample
  std::vector<InFlightCall> calls;   // its threads' calls in flight, level 0 before 1
  std::vector<OutsideThread> outside;  // from `colabtrace run --hang-timeout`
  bool stuck = false;          // a call blocked past the job's threshold
};

struct HangModel {
  std::vector<ProcessHang> processes;  // every job trace (not run's own), in trace order
  bool hung = false;
  std::string ended_by;                // "hang-timeout", "killed", "still-running", ""
  uint64_t threshold_ns = kHangMinBlockedNs;
  std::optional<uint64_t> hang_timeout_ns;  // run's --hang-timeout, when it ended the job
  uint64_t decided_ns = 0;                   // and when it decided to (0: it did not)
  // The job's stepping process (the one with most steps), when one steps.
  std::optional<size_t> stepping_trace;
  uint64_t median_step_ns = 0, last_step_ns = 0, last_step = 0;

  // The entry for trace index i, or nullptr (run's own trace).
  const ProcessHang* Of(size_t trace) const;
  static HangModel Build(const RunModel& run);
};

// The mount holding an absolute path: the longest mount point that prefixes it among the
// Mount records of t, else of the other traces of its host; empty when none does.
struct MountFacts {
  std::string mountpoint, fstype;
  bool slow = false;  // a network, FUSE or VM-shared filesystem
};
MountFacts MountOf(const RunModel& run, const ProcessTrace& t, std::string_view path);

// The JSON of one call in flight (processes[].in_flight[], proc.hang's evidence).
Json InFlightJson(const InFlightCall& c);

}  // namespace colabtrace::analyzer::perf
