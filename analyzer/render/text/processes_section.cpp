// The Processes section: one row per process (pid, ppid, end, code, peak RSS, command),
// or past kProcessRowsBeforeGrouping one per role, with counts. From processes[].
#include <algorithm>
#include <map>
#include <tuple>

#include "model/process_role.h"
#include "render/text/sections.h"

namespace colabtrace::analyzer::text {
namespace {

std::string EndCell(const Json& end) {
  if (!end["code"].is_null()) return std::to_string(end["code"].as_int());
  if (!end["signal"].is_null()) return SignalName(static_cast<int>(end["signal"].as_int()));
  return "-";
}

// The text table: one row per process, or one per role past kProcessRowsBeforeGrouping.
std::string ProcessTable(const std::vector<const Json*>& procs) {
  std::string table;
  char line[512];
  if (procs.size() <= kProcessRowsBeforeGrouping) {
    std::snprintf(line, sizeof(line), "%-8s %-8s %-10s %-8s %-10s %s\n", "pid", "ppid", "end",
                  "code", "peak RSS", "command");
    table += line;
    for (const Json* p : procs) {
      const Json& end = (*p)["end"];
      const Json* traced = p->Find("traced");  // false: a child the shim could not follow
      const bool untraced = traced != nullptr && !traced->boolean();
      const Json* failed = end.Find("exec_failed");  // a vfork child whose execs all failed
      const std::string note = failed != nullptr ? "  (exec of " + EscapeForTerminal((*failed)["path"].str()) +
                                                       " failed: " + (*failed)["error"].str() + ")"
                               : untraced        ? "  (not traced)"
                                                 : "";
      std::snprintf(line, sizeof(line), "%-8lld %-8lld %-10s %-8s %-10s %s%s\n",
                    static_cast<long long>((*p)["pid"].as_int()),
                    static_cast<long long>((*p)["ppid"].as_int()), end["kind"].str().c_str(),
                    EndCell(end).c_str(),
                    untraced ? "-" : FormatBytes(static_cast<uint64_t>((*p)["peak_rss_bytes"].as_int())).c_str(),
                    CommandLineText((*p)["argv"]).c_str(), note.c_str());
      table += line;
    }
    return table;
  }
  struct Group {
    size_t count = 0;
    uint64_t peak_rss = 0;
    std::map<std::string, size_t> ends;  // EndSummary -> count
    std::vector<int64_t> pids;
    std::string example;                 // the first member's command line
  };
  std::map<std::string, Group> groups;
  for (const Json* p : procs) {
    Group& g = groups[ProcessRole(*p)];
    if (g.count++ == 0) g.example = CommandLineText((*p)["argv"]);
    g.peak_rss = std::max(g.peak_rss, static_cast<uint64_t>((*p)["peak_rss_bytes"].as_int()));
    ++g.ends[EndSummary((*p)["end"])];
    g.pids.push_back((*p)["pid"].as_int());
  }
  // Largest groups first; ties by role.
  std::vector<std::pair<std::string, const Group*>> order;
  for (const auto& [role, g] : groups) order.emplace_back(role, &g);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->count > b.second->count; });
  table += std::to_string(procs.size()) + " processes in " + std::to_string(groups.size()) +
           " groups (by command and role; `report --format json` lists each process)\n";
  std::snprintf(line, sizeof(line), "%-6s %-10s %-32s %-22s %s\n", "count", "peak RSS", "role",
                "ends", "pids");
  table += line;
  for (const auto& [role, g] : order) {
    std::string ends;
    for (const auto& [e, n] : g->ends) {
      if (!ends.empty()) ends += ", ";
      ends += std::to_string(n) + " " + e;
    }
    const std::string pids = PidSample(g->pids);
    std::snprintf(line, sizeof(line), "%-6zu %-10s %-32s %-22s %s\n", g->count,
                  FormatBytes(g->peak_rss).c_str(), EscapeForTerminal(role).substr(0, 64).c_str(), ends.c_str(),
                  pids.c_str());
    table += line;
  }
  return table;
}

}  // namespace

std::string EndSummary(const Json& end) {
  std::string s = end["kind"].is_string() ? end["kind"].str() : "unknown";
  const std::string cell = EndCell(end);
  if (cell != "-") s += " " + cell;
  return s;
}

void ProcessesSection(const ReportBuilder& report, std::vector<TextSection>& out) {
  std::vector<const Json*> procs;
  if (const Json* rows = report.document().Find("processes"); rows != nullptr && rows->is_array()) {
    for (const Json& p : rows->array()) procs.push_back(&p);
  }
  std::string table = ProcessTable(procs);
  // "Python stacks unavailable for 3.10 (CPython 3.10.13, pids 812 813): ...", one line
  // per version and reason, after the table.
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<int64_t>> unavailable;
  for (const Json* p : procs) {
    const Json* ps = p->Find("python_stacks");
    if (ps == nullptr || !ps->is_object() || (*ps)["available"].boolean()) continue;
    unavailable[{(*ps)["version"].str(), (*ps)["interpreter"].str(), (*ps)["why"].str()}].push_back(
        (*p)["pid"].as_int());
  }
  for (const auto& [key, pids] : unavailable) {
    const auto& [version, interpreter, why] = key;
    table += "Python stacks unavailable for " + EscapeForTerminal(version) + " (CPython " +
             EscapeForTerminal(interpreter) + ", " + (pids.size() == 1 ? "pid " : "pids ") +
             PidSample(pids) + "): " + why + "\n";
  }
  out.push_back({"Processes", std::move(table)});
}

}  // namespace colabtrace::analyzer::text
