#include "abi/job_findings.h"

#include <algorithm>

namespace colabtrace::analyzer::abi {

void JobFindings::Add(Finding f, std::string cause) {
  std::string key = f.id + '\0' + cause;
  const auto [it, fresh] = by_cause_.emplace(std::move(key), entries_.size());
  if (fresh) {
    const int64_t pid = f.pid;
    entries_.push_back({std::move(f), pid, {pid}});
    return;
  }
  Entry& e = entries_[it->second];
  if (std::find(e.pids.begin(), e.pids.end(), f.pid) == e.pids.end()) e.pids.push_back(f.pid);
  if (f.severity > e.finding.severity) e.finding = std::move(f);
}

void JobFindings::MoveTo(RuleContext& rule) {
  for (Entry& e : entries_) {
    Finding& f = e.finding;
    if (f.pid != e.first_pid) f.evidence["evidence_pid"] = f.pid;
    f.pid = e.first_pid;
    Json pids = Json::MakeArray();
    for (int64_t pid : e.pids) pids.Append(pid);
    f.evidence["pids"] = std::move(pids);
    if (e.pids.size() > 1) f.summary += " (in " + std::to_string(e.pids.size()) + " processes)";
    rule.Add(std::move(f));
  }
  entries_.clear();
  by_cause_.clear();
}

}  // namespace colabtrace::analyzer::abi
