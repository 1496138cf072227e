// What the proc.* and host.* rules share: how a process is named, and the run's hosts.
#include "process/rules/rules.h"

namespace colabtrace::analyzer::rules {

std::string Who(const RunModel& run, const ProcessTrace& t) {
  std::string line;
  for (std::string_view a : run.facts(t).JobArgv(t)) {
    if (!line.empty()) line += ' ';
    line += EscapeForTerminal(a);  // argv is untrusted: no raw newlines or escapes
  }
  if (line.size() > 120) line = line.substr(0, 117) + "...";
  return "pid " + std::to_string(t.pid()) + " (" + line + ")";
}

Hosts Hosts::Build(const RunModel& run) {
  Hosts hosts;
  for (const ProcessTrace& t : run.traces()) hosts.by_host[HostKey(t)].push_back(&t);
  return hosts;
}

}  // namespace colabtrace::analyzer::rules
