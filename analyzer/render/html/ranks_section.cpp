// Ranks: one table per multi-rank job (the report's "dist.jobs"): rank, host, pid, steps
// and how it ended, the first failure marked; what is missing and why no verdict could be
// given. Before the per-process detail.
#include <algorithm>

#include "render/html/escape.h"
#include "render/ranks_clock.h"
#include "render/html/sections.h"

namespace colabtrace::analyzer::html {

std::string RanksSection(const PageContext& ctx) {
  const Json* dist = ctx.root.Find("dist");
  const Json* jobs = dist != nullptr && dist->is_object() ? dist->Find("jobs") : nullptr;
  if (jobs == nullptr || !jobs->is_array() || jobs->array().empty()) return "";
  std::string s = "<section id=\"ranks\"><h2>Ranks</h2>\n";
  for (const Json& job : jobs->array()) {
    std::string title = "job " + (job["job"].str().empty() ? std::string("(no job id)") : job["job"].str()) + " (" +
                        job["launcher"].str();
    if (job["restart"].is_number()) title += ", restart " + std::to_string(job["restart"].as_int());
    if (job["world_size"].is_number()) title += ", world size " + std::to_string(job["world_size"].as_int());
    title += std::string(", ") + ClockText(job) + ")";
    s += "<h3>" + Text(title) + "</h3>\n";
    s += "<table class=\"ranks\"><thead><tr><th>rank</th><th>host</th><th>pid</th><th>steps</th><th>end</th>"
         "</tr></thead><tbody>\n";
    const auto& ranks = job["ranks"].array();
    const size_t shown = std::min(ranks.size(), kMaxTableRows);
    for (size_t i = 0; i < shown; ++i) {
      const Json& r = ranks[i];
      const bool first = r["first_failure"].boolean();
      s += std::string("<tr") + (first ? " class=\"first-failure\"" : "") + "><td>" +
           std::to_string(r["rank"].as_int()) + "</td><td>" + Text(r["host"].str()) + "</td><td>" +
           std::to_string(r["pid"].as_int()) + "</td><td>" + std::to_string(r["steps"].as_int()) + "</td><td>" +
           Text(r["end_text"].str()) + (first ? " <strong>(failed first)</strong>"
                  : r["never_entered"].boolean() ? " <strong>(never entered the collective)</strong>" : "") + "</td></tr>\n";
    }
    s += "</tbody></table>\n" + MoreNote(ranks.size() - shown, "ranks");
    if (!job["missing_ranks"].array().empty()) {
      std::string m;
      for (const Json& r : job["missing_ranks"].array()) m += (m.empty() ? "" : " ") + std::to_string(r.as_int());
      s += "<p>No trace: rank" + std::string(job["missing_ranks"].array().size() == 1 ? " " : "s ") + m + ".</p>\n";
    }
    for (const Json& p : job["problems"].array()) s += "<p class=\"no-verdict\">No verdict: " + Text(p.str()) + "</p>\n";
  }
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
