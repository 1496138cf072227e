// Processes, grouped by role (model/process_role.h ProcessRole: the program and its job,
// " (fork)" for a fork child that never exec'd, e.g. a DataLoader worker): one row per
// role with counts and how its processes ended, then one row per process (killed and
// crashed first, then by peak RSS). From the report's processes[] entries.
#include <algorithm>
#include <map>

#include "render/html/escape.h"
#include "render/html/sections.h"
#include "ci/run_metrics.h"

namespace colabtrace::analyzer::html {
namespace {

std::string EndText(const Json& p) {
  const Json& end = p["end"];
  std::string s = end["kind"].is_string() ? end["kind"].str() : "unknown";
  if (end["code"].is_number()) s += " " + std::to_string(end["code"].as_int());
  if (end["signal_name"].is_string()) s += " " + end["signal_name"].str();
  return s;
}

int EndRank(const Json& p) {
  const Json& kind = p["end"]["kind"];
  if (!kind.is_string()) return 1;
  if (kind.str() == "killed") return 0;
  if (kind.str() == "signaled") return 1;
  return p["end"]["code"].as_int() != 0 ? 2 : 3;
}

struct RoleRow {
  std::vector<const Json*> procs;
  std::map<std::string, size_t> ends;
  uint64_t peak_rss = 0, bytes_read = 0, gpu_peak = 0;
};

}  // namespace

std::string ProcessesSection(const PageContext& ctx) {
  std::string s = "<section id=\"processes\"><h2>Processes</h2>\n";
  const Json* procs = ctx.root.Find("processes");
  if (procs == nullptr || !procs->is_array() || procs->array().empty()) return s + "<p>No processes.</p></section>\n";
  std::map<std::string, RoleRow> roles;
  for (const Json& p : procs->array()) {
    RoleRow& r = roles[ProcessRole(p)];
    r.procs.push_back(&p);
    ++r.ends[EndText(p)];
    r.peak_rss = std::max(r.peak_rss, U64(p.Find("peak_rss_bytes")));
    r.bytes_read += U64(&p["io"]["bytes_read"]);
    r.gpu_peak = std::max(r.gpu_peak, U64(&p["gpu"]["peak_bytes"]));
  }
  std::vector<std::pair<const std::string*, const RoleRow*>> order;
  for (const auto& [role, r] : roles) order.emplace_back(&role, &r);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->procs.size() > b.second->procs.size(); });
  const size_t n = procs->array().size();
  s += "<p>" + std::to_string(n) + " process" + (n == 1 ? "" : "es") + " in " + std::to_string(roles.size()) +
       " role" + (roles.size() == 1 ? "" : "s") + ".</p>\n";
  s += "<table class=\"roles\"><thead><tr><th>role</th><th>processes</th><th>ends</th><th>peak RSS</th>"
       "<th>read</th><th>GPU peak</th><th>pids</th></tr></thead><tbody>\n";
  const size_t roles_shown = std::min(order.size(), kMaxRoles);
  for (size_t i = 0; i < roles_shown; ++i) {
    const RoleRow& r = *order[i].second;
    std::string ends, pids;
    for (const auto& [e, count] : r.ends) ends += (ends.empty() ? "" : ", ") + std::to_string(count) + " " + e;
    for (size_t k = 0; k < r.procs.size() && k < 5; ++k) pids += (k ? " " : "") + std::to_string((*r.procs[k])["pid"].as_int());
    if (r.procs.size() > 5) pids += " \u2026";
    s += "<tr class=\"role\" data-count=\"" + std::to_string(r.procs.size()) + "\"><td>" + Text(*order[i].first) +
         "</td><td>" + std::to_string(r.procs.size()) + "</td><td>" + Text(ends) + "</td><td>" +
         FormatBytes(r.peak_rss) + "</td><td>" + FormatBytes(r.bytes_read) + "</td><td>" + FormatBytes(r.gpu_peak) +
         "</td><td>" + pids + "</td></tr>\n";
  }
  s += "</tbody></table>\n" + MoreNote(order.size() - roles_shown, "roles");

  std::vector<const Json*> each;
  for (const Json& p : procs->array()) each.push_back(&p);
  std::stable_sort(each.begin(), each.end(), [](const Json* a, const Json* b) {
    const int ra = EndRank(*a), rb = EndRank(*b);
    return ra != rb ? ra < rb : U64(a->Find("peak_rss_bytes")) > U64(b->Find("peak_rss_bytes"));
  });
  const size_t shown = std::min(each.size(), kMaxTableRows);
  s += "<details class=\"each\"" + std::string(n <= 40 ? " open" : "") + "><summary>Each process</summary>\n"
       "<table class=\"procs\"><thead><tr><th>pid</th><th>ppid</th><th>role</th><th>end</th><th>peak RSS</th>"
       "<th>opens</th><th>read</th><th>GPU peak</th><th>command</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < shown; ++i) {
    const Json& p = *each[i];
    std::string cmd;
    if (const Json* argv = p.Find("argv"); argv != nullptr && argv->is_array()) {
      for (const Json& a : argv->array()) cmd += (cmd.empty() ? "" : " ") + (a.is_string() ? a.str() : std::string());
    }
    const int rank = EndRank(p);
    s += "<tr class=\"proc" + std::string(rank == 0 ? " killed" : rank <= 2 ? " failed" : "") + "\" data-pid=\"" +
         std::to_string(p["pid"].as_int()) + "\"><td>" + std::to_string(p["pid"].as_int()) + "</td><td>" +
         std::to_string(p["ppid"].as_int()) + "</td><td>" + Text(ProcessRole(p)) + "</td><td>" + Text(EndText(p)) +
         "</td><td>" + FormatBytes(U64(p.Find("peak_rss_bytes"))) + "</td><td>" + std::to_string(U64(&p["io"]["opens"])) +
         "</td><td>" + FormatBytes(U64(&p["io"]["bytes_read"])) + "</td><td>" + FormatBytes(U64(&p["gpu"]["peak_bytes"])) +
         "</td><td class=\"cmd\">" + Text(Shorten(cmd, 300)) + "</td></tr>\n";
  }
  s += "</tbody></table>\n" + MoreNote(each.size() - shown, "processes") + "</details>\n";
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
