// Libraries: one row per loaded file (summed over processes) with its family and the
// CUDA major it was built for; the files an abi.duplicate-library or
// abi.mixed-cuda-majors finding is about (Finding::files) are highlighted and listed
// first; then failed loads. From the report's libraries[] rows and findings.
#include <algorithm>
#include <map>
#include <set>

#include "render/html/escape.h"
#include "render/html/sections.h"

namespace colabtrace::analyzer::html {
namespace {

struct LibRow {
  std::string path, name, family, group, loaded_by;
  std::string cuda;  // "12", or "" when unknown
  std::set<int64_t> pids;
  bool duplicate = false, mixed = false;
  bool cuda_related() const {
    return !cuda.empty() || group.starts_with("cuda") || group == "nvidia-library";
  }
};

std::string Str(const Json& v) { return v.is_string() ? v.str() : std::string(); }

}  // namespace

std::string LibrariesSection(const PageContext& ctx) {
  std::string s = "<section id=\"libraries\"><h2>Libraries</h2>\n";
  const Json* rows = ctx.root.Find("libraries");
  if (rows == nullptr || !rows->is_array() || rows->array().empty()) {
    return s + "<p>No library loads were recorded.</p></section>\n";
  }
  std::set<std::string> dup_paths, mixed_paths;
  for (const Finding& f : ctx.report.findings()) {
    if (f.id == FindingName(FindingId::kAbiDuplicateLibrary)) dup_paths.insert(f.files.begin(), f.files.end());
    if (f.id == FindingName(FindingId::kAbiMixedCudaMajors)) mixed_paths.insert(f.files.begin(), f.files.end());
  }
  std::map<std::string, LibRow> libs;
  std::map<std::pair<std::string, std::string>, std::set<int64_t>> failed;  // (requested, error) -> pids
  for (const Json& r : rows->array()) {
    const int64_t pid = r["pid"].as_int();
    if (!r["ok"].boolean()) {
      failed[{Str(r["requested"]), Str(r["error"])}].insert(pid);
      continue;
    }
    const std::string path = Str(r["path"]);
    LibRow& l = libs[path];
    if (l.pids.empty()) {
      l.path = path;
      l.name = Str(r["soname"]);
      if (l.name.empty()) l.name = path.substr(path.rfind('/') + 1);
      l.family = Str(r["family"]);
      l.group = Str(r["group"]);
      l.loaded_by = Str(r["loaded_by"]);
      if (r["cuda_major"].is_number()) l.cuda = std::to_string(r["cuda_major"].as_int());
      l.duplicate = dup_paths.contains(path);
      l.mixed = !l.cuda.empty() && mixed_paths.contains(path);
    }
    l.pids.insert(pid);
  }
  std::vector<const LibRow*> order;
  for (const auto& [path, l] : libs) order.push_back(&l);
  auto rank = [](const LibRow* l) { return l->duplicate || l->mixed ? 0 : l->cuda_related() ? 1 : 2; };
  std::stable_sort(order.begin(), order.end(), [&](const LibRow* a, const LibRow* b) {
    return rank(a) != rank(b) ? rank(a) < rank(b) : a->name < b->name;
  });
  size_t flagged = 0, cuda = 0;
  for (const LibRow* l : order) flagged += rank(l) == 0, cuda += l->cuda_related();
  s += "<p>" + std::to_string(libs.size()) + " files loaded, " + std::to_string(cuda) + " CUDA-related, " +
       std::to_string(flagged) + " named by a duplicate-library or mixed-CUDA-majors finding (highlighted).</p>\n";
  s += "<table class=\"libs\"><thead><tr><th>library</th><th>family</th><th>CUDA</th><th>processes</th>"
       "<th>path</th><th>loaded by</th></tr></thead><tbody>\n";
  const size_t shown = std::min(order.size(), kMaxTableRows);
  for (size_t i = 0; i < shown; ++i) {
    const LibRow& l = *order[i];
    std::string cls = l.duplicate ? "dup" : "";
    if (l.mixed) cls += cls.empty() ? "mixed" : " mixed";
    std::string flags;
    if (l.duplicate) flags += " <span class=\"tag dup\">duplicate</span>";
    if (l.mixed) flags += " <span class=\"tag mixed\">mixed majors</span>";
    s += "<tr" + (cls.empty() ? std::string() : " class=\"" + cls + "\"") + "><td>" + Text(l.name) + flags +
         "</td><td>" + Text(l.family) + "</td><td>" + Text(l.cuda) + "</td><td>" + std::to_string(l.pids.size()) +
         "</td><td class=\"path\">" + Text(l.path) + "</td><td class=\"path\">" + Text(l.loaded_by) + "</td></tr>\n";
  }
  s += "</tbody></table>\n" + MoreNote(order.size() - shown, "libraries");
  if (!failed.empty()) {
    s += "<h3>Failed loads</h3>\n<table class=\"libs failed\"><thead><tr><th>requested</th><th>error</th>"
         "<th>processes</th></tr></thead><tbody>\n";
    size_t n = 0;
    for (const auto& [key, pids] : failed) {
      if (n++ == kMaxTableRows) break;
      s += "<tr><td class=\"path\">" + Text(key.first) + "</td><td>" + Text(key.second) + "</td><td>" +
           std::to_string(pids.size()) + "</td></tr>\n";
    }
    s += "</tbody></table>\n" + MoreNote(failed.size() > kMaxTableRows ? failed.size() - kMaxTableRows : 0, "failed loads");
  }
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
