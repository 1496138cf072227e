#include "report/report.h"

#include <algorithm>
#include <cstdio>
#include <csignal>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

namespace colabtrace::analyzer {

ReportBuilder::ReportBuilder(const std::vector<ProcessTrace>& traces, ReportOptions options)
    : run_(traces, std::move(options)) {
  root_["schema"] = "colabtrace.report.v1";
  root_["processes"] = Json::MakeArray();
  for (size_t i = 0; i < traces.size(); ++i) root_["processes"].Append(Json::MakeObject());
}

Json& ReportBuilder::process(size_t index) { return root_["processes"].array().at(index); }

std::vector<Json*> ReportBuilder::UntracedProcesses() {
  std::vector<Json*> out;
  auto& rows = root_["processes"].array();
  for (size_t i = traces().size(); i < rows.size(); ++i) out.push_back(&rows[i]);
  return out;
}

const Json* ReportBuilder::UntracedProgram(const Json& row) {
  const Json* end = row.Find("end");
  return end != nullptr && end->Find("exec_failed") != nullptr ? nullptr : row.Find("exe");
}

void ReportBuilder::AddFinding(Finding f) {
  if (FindFindingSpec(f.id) == nullptr) {
    throw std::logic_error("finding id " + f.id + " is not in the finding catalogue");
  }
  findings_.push_back(std::move(f));
}

std::vector<Finding> ReportBuilder::TakeFindings(const std::function<bool(const Finding&)>& which) {
  std::vector<Finding> taken, kept;
  for (Finding& f : findings_) (which(f) ? taken : kept).push_back(std::move(f));
  findings_ = std::move(kept);
  return taken;
}

void ReportBuilder::AddWarning(std::string w) {
  if (finished_) root_["warnings"].Append(w);
  warnings_.push_back(std::move(w));
}

namespace {

// Where the traces come from several hosts, the host of each job process's pid when only
// one host has a process of that pid ({hostname, boot_id}); pids repeat across hosts and
// containers, so a finding names (host, pid). Empty for a report of one host.
std::map<int64_t, Json> HostsOfPids(const RunModel& run) {
  std::map<int64_t, std::set<std::string>> keys;
  std::set<std::string> hosts;
  for (const ProcessTrace& t : run.traces()) {
    if (IsRunWrapper(t)) continue;
    const std::string key = run.lifecycle().HostOf(t);
    hosts.insert(key);
    keys[t.pid()].insert(key);
  }
  std::map<int64_t, Json> out;
  if (hosts.size() < 2) return out;
  for (const auto& [pid, of] : keys) {
    Json host;  // null: the pid is on several hosts
    if (of.size() == 1) {
      const std::string& key = *of.begin();
      const size_t slash = key.find('/');
      host = Json::MakeObject();
      host["hostname"] = key.substr(0, slash);
      host["boot_id"] = slash == std::string::npos ? std::string() : key.substr(slash + 1);
    }
    out.emplace(pid, std::move(host));
  }
  return out;
}

}  // namespace

const Json& ReportBuilder::Finish() {
  finished_ = true;
  // A report of several hosts gives each finding about a process its host.
  const std::map<int64_t, Json> hosts = HostsOfPids(run_);
  std::stable_sort(findings_.begin(), findings_.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity > b.severity;
    if (a.id != b.id) return a.id < b.id;
    return a.pid < b.pid;
  });
  Json& out = root_["findings"];
  out = Json::MakeArray();
  for (const Finding& f : findings_) {
    Json j = Json::MakeObject();
    j["id"] = f.id;
    j["severity"] = std::string(SeverityName(f.severity));
    j["pid"] = f.pid;
    if (!hosts.empty()) {
      const auto it = hosts.find(f.pid);
      j["host"] = f.pid != 0 && it != hosts.end() ? it->second : Json();
    }
    j["summary"] = f.summary;
    j["evidence"] = f.evidence;
    j["advice"] = f.advice;
    out.Append(std::move(j));
  }
  Json& w = root_["warnings"];
  w = Json::MakeArray();
  for (const auto& s : warnings_) w.Append(s);
  return root_;
}

std::unique_ptr<ReportBuilder> BuildReport(const std::vector<ProcessTrace>& traces,
                                           ReportOptions options) {
  auto report = std::make_unique<ReportBuilder>(traces, std::move(options));
  for (const auto& t : traces) {
    for (const auto& w : t.warnings) report->AddWarning(w);
  }
  for (auto& analysis : MakeAllAnalyses()) analysis->Run(*report);
  report->Finish();
  return report;
}

}  // namespace colabtrace::analyzer
