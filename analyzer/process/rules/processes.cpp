// What the proc.* and host.* rules share: how a process is named, and the run's hosts.
#include "process/rules/rules.h"

#include "model/process_role.h"

namespace colabtrace::analyzer::rules {

std::string Who(const RunModel& run, const ProcessTrace& t) {
  return "pid " + std::to_string(t.pid()) + " (" + CommandLineText(run.facts(t).JobArgv(t)) + ")";
}

Hosts Hosts::Build(const RunModel& run) {
  Hosts hosts;
  for (const ProcessTrace& t : run.traces()) hosts.by_host[HostKey(t)].push_back(&t);
  return hosts;
}

}  // namespace colabtrace::analyzer::rules
