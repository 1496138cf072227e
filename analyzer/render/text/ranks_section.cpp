// The Ranks section: one table per multi-rank job (the report's "dist.jobs"), before the
// per-process detail: rank, host, pid, steps and how it ended, the first failure marked;
// then what is missing and why no verdict could be given. Past kProcessRowsBeforeGrouping
// ranks only those that failed are listed, with a count of the rest.
#include <map>

#include "model/process_role.h"
#include "render/ranks_clock.h"
#include "render/text/sections.h"

namespace colabtrace::analyzer::text {

void RanksSection(const ReportBuilder& report, std::vector<TextSection>& out) {
  const Json* dist = report.document().Find("dist");
  if (dist == nullptr || !dist->is_object()) return;
  const Json* jobs = dist->Find("jobs");
  if (jobs == nullptr || !jobs->is_array() || jobs->array().empty()) return;
  std::string body;
  char line[512];
  for (const Json& job : jobs->array()) {
    if (!body.empty()) body += "\n";
    body += "job " + (job["job"].str().empty() ? std::string("(no job id)") : job["job"].str()) + " (" +
            job["launcher"].str();
    if (job["restart"].is_number()) body += ", restart " + std::to_string(job["restart"].as_int());
    if (job["world_size"].is_number()) body += ", world size " + std::to_string(job["world_size"].as_int());
    body += std::string(", ") + ClockText(job) + ")\n";
    std::snprintf(line, sizeof(line), "  %-6s %-16s %-8s %-6s %s\n", "rank", "host", "pid", "steps", "end");
    body += line;
    const auto& ranks = job["ranks"].array();
    const bool all = ranks.size() <= kProcessRowsBeforeGrouping;
    std::map<std::string, size_t> rest;
    for (const Json& r : ranks) {
      if (!all && !r["failed"].boolean()) {
        ++rest[r["end_text"].str()];
        continue;
      }
      std::snprintf(line, sizeof(line), "  %-6lld %-16s %-8lld %-6llu %s%s\n",
                    static_cast<long long>(r["rank"].as_int()), r["host"].str().c_str(),
                    static_cast<long long>(r["pid"].as_int()), static_cast<unsigned long long>(r["steps"].as_int()),
                    r["end_text"].str().c_str(),
                    r["first_failure"].boolean()   ? "   <- failed first"
                    : r["never_entered"].boolean() ? "   <- never entered the collective"
                                                   : "");
      body += line;
    }
    for (const auto& [end, n] : rest) body += "  (" + std::to_string(n) + " more ranks " + end + ")\n";
    if (!job["missing_ranks"].array().empty()) {
      std::string m;
      for (const Json& r : job["missing_ranks"].array()) m += (m.empty() ? "" : " ") + std::to_string(r.as_int());
      body += "  no trace: rank" + std::string(job["missing_ranks"].array().size() == 1 ? " " : "s ") + m + "\n";
    }
    for (const Json& p : job["problems"].array()) body += "  no verdict: " + p.str() + "\n";
  }
  out.push_back(TextSection{"Ranks", body});
}

}  // namespace colabtrace::analyzer::text
