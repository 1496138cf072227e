// The proc.* and host.* rules, one file per finding id in this folder, each with its rule
// and thresholds beside it and registered in the rule registry (report/rule_registry.h).
// ProcessAnalysis (process/process_analysis.cpp) builds the processes[] rows and runs
// the proc.* rules (RunRules), which look at each job process (ForEachJobProcess);
// HostAnalysis runs the host.* rules, which look at each host (hostname + boot id; hosts
// are never merged: the run model's Hosts).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/process_facts.h"
#include "core/format.h"
#include "model/run_model.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer::perf {
struct InFlightCall;
struct ProcessHang;
}  // namespace colabtrace::analyzer::perf

namespace colabtrace::analyzer::rules {

// One job process, as the proc.* rules read it; its facts and the lifecycle model come
// from the run model.
struct ProcessEnd {
  const ProcessTrace& t;
  const std::string& who;  // "pid N (command line)" for summaries
};

// "pid N (command line)": how summaries name a process (its job argv, escaped, cut at
// 120 characters).
std::string Who(const RunModel& run, const ProcessTrace& t);

// Runs per_process(ctx, ProcessEnd) for every job process (not `colabtrace run`'s own
// trace), in trace order.
template <class PerProcess>
void ForEachJobProcess(RuleContext& ctx, PerProcess&& per_process) {
  for (const ProcessTrace& t : ctx.run().traces()) {
    if (ctx.run().facts(t).run_wrapper) continue;
    const std::string who = Who(ctx.run(), t);
    per_process(ctx, ProcessEnd{t, who});
  }
}

// The traces of one host, as the host.* rules read them.
struct HostMembers {
  const std::string& host;  // hostname/boot_id
  const std::vector<const ProcessTrace*>& members;
  bool multi_host;          // the report holds several hosts: summaries name this one
};

// The run's traces by host (HostKey), in key order (RunModel::Get<Hosts>()).
struct Hosts {
  std::map<std::string, std::vector<const ProcessTrace*>> by_host;
  static Hosts Build(const RunModel& run);
  HostMembers Members(const std::string& host) const {
    return HostMembers{host, by_host.at(host), by_host.size() > 1};
  }
};

// Each host's memory peak against its limit, in Hosts order, and host.memory-pressure's
// verdict on it (host_memory_pressure.cpp), computed once: the report lists the figures
// ("memory.hosts") whether or not they raised the finding.
struct HostMemory {
  struct Host {
    Json figures;                    // null without a known limit
    std::optional<Finding> pressure;  // host.memory-pressure, when the peak reached 90%
  };
  std::vector<Host> hosts;
  static HostMemory Build(const RunModel& run);
};

// The uncaught Python exception each job process ended on, from the start-up hook's
// PyException records (proc_python_exception.cpp has the rule that picks it), computed
// once: proc.python-exception's evidence and processes[].exception are the same facts.
struct PythonExceptions {
  struct Exception {
    std::string type, message;      // message: as recorded (at most 512 bytes)
    uint64_t message_bytes = 0;     // str(exc)'s whole length
    // The traceback innermost first, from the innermost frame of the program's own code
    // (IsProgramFrame; the whole traceback when none is); raised_in: the frames inside
    // it (the library code that raised), innermost first.
    std::vector<std::string> python_stack, raised_in;
    uint64_t frames = 0;            // the traceback's whole depth
    bool thread = false;            // a thread other than the main one raised it
    bool interrupt = false;         // KeyboardInterrupt: a person's stop
    // A torch.multiprocessing.spawn process's function raised it: torch's wrapper caught
    // it, handed its traceback to the parent and exited 1 (PyExceptionHow::kSpawned).
    bool spawned = false;
    uint64_t ts = 0;
    // A DataLoader worker's exception that this process raised again: the worker's own
    // record (its pid, and the same fields as above). pid 0: none.
    struct Worker {
      int64_t pid = 0;
      std::string type, message;
      std::vector<std::string> python_stack, raised_in;
    } worker;
  };
  std::map<const ProcessTrace*, Exception> by_trace;  // job processes that ended on one

  const Exception* Of(const ProcessTrace& t) const {
    auto it = by_trace.find(&t);
    return it == by_trace.end() ? nullptr : &it->second;
  }
  // {type, message, python_stack} (and, where they apply, message_bytes, frames,
  // raised_in, thread, worker): the finding's evidence and processes[].exception.
  static Json ToJson(const Exception& e);
  static PythonExceptions Build(const RunModel& run);
};

// Why a SIGBUS in a /dev/shm mapping happened, from the facts the shim read in its
// handler. tmpfs raises it for a store past the file's end (the page holding the end is
// still the file's) and when it has no page left to give. proc.fatal-signal names it;
// host.shm-small leaves a truncated file out (not a size problem).
enum class ShmBusCause { kUnknown, kPastEnd, kFull };
ShmBusCause ShmBusCauseOf(const format::Signal& s);

// A call a process had not returned from (perf::HangModel), as summaries name it:
// "read() of /mnt/x.bin (fuse.slowfs)", "cudaDeviceSynchronize() waiting for kernel spin
// (and 2 more launched before it)", "the wait for the next batch at train.py:25 in main".
// (proc_hang.cpp)
// A collective as a sentence's object, from its op name ("all_reduce", "ddp_all_reduce"),
// sequence number (0: unknown) and calling line: "all_reduce #57 at train.py:73 in main",
// "DDP's gradient all-reduce in backward() at train.py:40 in main".
std::string CollectiveText(const std::string& op, uint64_t seq, const std::string& where);
std::string InFlightTarget(const perf::InFlightCall& c);

// The call that tells what a process was doing: its innermost (level 0) that blocked
// longest, else its longest wait; null when it was in none.
const perf::InFlightCall* TellingCall(const perf::ProcessHang& p);

// The hostname part of a host key.
inline std::string HostName(const std::string& key) { return key.substr(0, key.find('/')); }

}  // namespace colabtrace::analyzer::rules
