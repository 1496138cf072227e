// The proc.* and host.* rules, one file per finding id in this folder, each with its rule,
// thresholds and advice beside it. ProcessAnalysis (process/process_analysis.cpp) builds
// the processes[] rows and runs the proc.* rules on each job process; HostAnalysis runs
// the host.* rules once per host (hostname + boot id; hosts are never merged).
#pragma once

#include <string>
#include <vector>

#include "model/process_facts.h"
#include "report/report.h"

namespace colabtrace::analyzer::rules {

// One job process, as the proc.* rules read it; its facts and the lifecycle model come
// from the report (ReportBuilder::facts, ReportBuilder::lifecycle).
struct ProcessEnd {
  const ProcessTrace& t;
  const std::string& who;  // "pid N (command line)" for summaries
};

// The traces of one host, as the host.* rules read them.
struct HostMembers {
  const std::string& host;  // hostname/boot_id
  const std::vector<const ProcessTrace*>& members;
  bool multi_host;          // the report holds several hosts: summaries name this one
};

void ProcKilledRule(const ProcessEnd& e, ReportBuilder& report);       // proc.killed
void ProcFatalSignalRule(const ProcessEnd& e, ReportBuilder& report);  // proc.fatal-signal
// Returns the host's memory summary (null without a known limit) for "memory.hosts".
Json HostMemoryPressureRule(const HostMembers& h, ReportBuilder& report);  // host.memory-pressure
void HostShmSmallRule(const HostMembers& h, ReportBuilder& report);        // host.shm-small

// Why a SIGBUS in a /dev/shm mapping happened, from the facts the shim read in its
// handler. tmpfs raises it for a store past the file's end (the page holding the end is
// still the file's) and when it has no page left to give. proc.fatal-signal names it;
// host.shm-small leaves a truncated file out (not a size problem).
enum class ShmBusCause { kUnknown, kPastEnd, kFull };
ShmBusCause ShmBusCauseOf(const format::Signal& s);

// The hostname part of a host key.
inline std::string HostName(const std::string& key) { return key.substr(0, key.find('/')); }

}  // namespace colabtrace::analyzer::rules
