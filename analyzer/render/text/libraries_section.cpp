// Libraries: which recorded library files could be read (libraries_files), then per
// process its objects, CUDA-related ones (with their CUDA major and who loaded them) and
// failed loads (those the program handled, a version probe followed by a load of the same
// library, one line per library family with their count: abi.load-failed's verdict);
// past kProcessRowsBeforeGrouping processes one paragraph per role. From
// the run model's abi::LibraryInventories and the report's libraries[] rows (the CUDA
// major and family group that the library analysis read from each file).
#include <dlfcn.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "abi/library_files.h"
#include "abi/library_inventory.h"
#include "abi/library_model.h"
#include "model/process_facts.h"
#include "model/process_role.h"
#include "render/text/sections.h"

namespace colabtrace::analyzer::text {
namespace {

// One process's part of the Libraries text section.
struct ProcessLibrariesText {
  int64_t pid = 0;
  std::string role;  // ProcessRole of its processes[] row
  size_t objects = 0, cuda = 0, failed = 0;
  std::vector<std::string> lines;  // its CUDA-related objects and failed loads, indented
};

// "5" or "5-7": the range of a count over a group.
std::string Range(size_t lo, size_t hi) {
  return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
}

// One paragraph per process, or past kProcessRowsBeforeGrouping one per role: its
// processes' counts (a range where they differ) and every line any of them has, with the
// number of processes that have it where that is not all of them.
std::string LibrariesText(const std::vector<ProcessLibrariesText>& procs) {
  std::string text;
  if (procs.size() <= kProcessRowsBeforeGrouping) {
    for (const ProcessLibrariesText& p : procs) {
      text += "pid " + std::to_string(p.pid) + ": " + std::to_string(p.objects) + " objects loaded, " +
              std::to_string(p.cuda) + " CUDA-related, " + std::to_string(p.failed) + " failed loads\n";
      for (const std::string& l : p.lines) text += l;
    }
    return text;
  }
  struct Group {
    std::vector<int64_t> pids;
    size_t objects_lo = SIZE_MAX, objects_hi = 0, cuda_lo = SIZE_MAX, cuda_hi = 0, failed_lo = SIZE_MAX,
           failed_hi = 0;
    std::vector<std::string> lines;      // first-seen order
    std::map<std::string, size_t> seen;  // line -> processes that have it
  };
  std::map<std::string, Group> groups;
  for (const ProcessLibrariesText& p : procs) {
    Group& g = groups[p.role];
    g.pids.push_back(p.pid);
    g.objects_lo = std::min(g.objects_lo, p.objects), g.objects_hi = std::max(g.objects_hi, p.objects);
    g.cuda_lo = std::min(g.cuda_lo, p.cuda), g.cuda_hi = std::max(g.cuda_hi, p.cuda);
    g.failed_lo = std::min(g.failed_lo, p.failed), g.failed_hi = std::max(g.failed_hi, p.failed);
    std::map<std::string, bool> mine;  // a line twice in one process counts once
    for (const std::string& l : p.lines) {
      if (!mine.emplace(l, true).second) continue;
      if (g.seen[l]++ == 0) g.lines.push_back(l);
    }
  }
  std::vector<std::pair<const std::string*, const Group*>> order;
  for (const auto& [role, g] : groups) order.emplace_back(&role, &g);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->pids.size() > b.second->pids.size(); });
  text += std::to_string(procs.size()) + " processes in " + std::to_string(groups.size()) +
          " groups (by command and role; `report --format json` lists each process's libraries)\n";
  for (const auto& [role, g] : order) {
    const size_t n = g->pids.size();
    text += EscapeForTerminal(*role).substr(0, 64) + ": " + std::to_string(n) +
            (n == 1 ? " process (pid " : " processes (pids ") + PidSample(g->pids) + "), " +
            Range(g->objects_lo, g->objects_hi) + " objects loaded, " + Range(g->cuda_lo, g->cuda_hi) +
            " CUDA-related, " + Range(g->failed_lo, g->failed_hi) + " failed loads\n";
    for (const std::string& l : g->lines) {
      const size_t have = g->seen.at(l);
      if (have == n) {
        text += l;
      } else {
        text += l.substr(0, l.size() - 1) + "  (" + std::to_string(have) + " of " + std::to_string(n) + ")\n";
      }
    }
  }
  return text;
}

// The failed loads the program handled: abi.load-failed's info verdict with a later (or
// already mapped) load of the same library, by (requested, requester, error).
using LoadCause = std::tuple<std::string, std::string, std::string>;
std::set<LoadCause> HandledLoads(const std::vector<Finding>& findings) {
  std::set<LoadCause> out;
  const std::string_view id = FindingName(FindingId::kAbiLoadFailed);
  for (const Finding& f : findings) {
    if (f.id != id || f.severity != Severity::kInfo) continue;
    const Json& ev = f.evidence;
    if (!ev["loaded_later"].is_string() || !ev["requested"].is_string() || !ev["requester"].is_string() ||
        !ev["error"].is_string()) {
      continue;
    }
    out.insert({ev["requested"].str(), ev["requester"].str(), ev["error"].str()});
  }
  return out;
}

// The longest common prefix of a and b.
std::string_view CommonPrefix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return a.substr(0, n);
}

// "libcudnn_*.so.9.19*" for libcudnn_graph.so.9.19.0, libcudnn_heuristic.so.9.19, ...:
// the names' common beginning before ".so" and after it, "*" where they differ.
std::string NamePattern(const std::vector<std::string>& names) {
  std::string_view stem0, ver0;
  bool first = true, stems_differ = false, versions_differ = false;
  std::string stem, ver;
  for (const std::string& name : names) {
    const std::string_view n = Basename(name);
    const size_t so = n.find(".so");
    const std::string_view st = n.substr(0, so), v = so == std::string_view::npos ? "" : n.substr(so);
    if (first) {
      stem0 = st, ver0 = v, first = false;
      continue;
    }
    if (st != stem0) stems_differ = true, stem0 = CommonPrefix(stem0, st);
    if (v != ver0) versions_differ = true, ver0 = CommonPrefix(ver0, v);
  }
  return std::string(stem0) + (stems_differ ? "*" : "") + std::string(ver0) + (versions_differ ? "*" : "");
}

// One process's paragraph: its inventory, and its libraries[] rows from `row` on (one per
// object, then one per failed load, in the inventory's order). The failed loads the
// program handled (`handled`) are one line per library family, with their count.
ProcessLibrariesText TextOf(const ProcessTrace& t, const abi::LibraryInventory& inv, const Json::Array& rows,
                            size_t row, std::string role, const std::set<LoadCause>& handled) {
  ProcessLibrariesText out;
  out.pid = t.pid();
  out.role = std::move(role);
  out.objects = inv.objects.size();
  out.failed = inv.failures.size();
  const std::string driver_group(abi::GroupName(elf::LibraryGroup::kCudaDriver));
  for (size_t i = 0; i < inv.objects.size(); ++i) {
    static const Json kNoRow = Json::MakeObject();
    const Json& r = row + i < rows.size() ? rows[row + i] : kNoRow;
    const bool has_major = r["cuda_major"].is_number();
    if (!has_major && !(r["group"].is_string() && r["group"].str() == driver_group)) continue;
    ++out.cuda;
    const abi::LoadedLibrary& o = inv.objects[i];
    out.lines.push_back("    " + o.path + (has_major ? "  [CUDA " + std::to_string(r["cuda_major"].as_int()) + "]" : "") +
                        (o.loaded_by.empty() ? "" : "  by " + std::string(Basename(o.loaded_by))) + "\n");
  }
  struct Probes {
    size_t line = 0;  // where its line goes in out.lines
    size_t count = 0;
    std::vector<std::string> names, requesters;  // distinct, first-seen order
  };
  std::map<std::string, Probes> probes;  // by family
  for (const abi::FailedLoad& f : inv.failures) {
    if (f.flags & RTLD_NOLOAD) continue;
    if (!handled.contains({f.requested, f.requester, f.error})) {
      out.lines.push_back("    FAILED " + f.requested + "  by " + std::string(Basename(f.requester)) + ": " +
                          f.error + "\n");
      continue;
    }
    std::string family = elf::ClassifyLibrary(Basename(f.requested)).family;
    if (family.empty()) family = abi::LibraryStem(f.requested);
    auto [it, fresh] = probes.try_emplace(family);
    Probes& p = it->second;
    if (fresh) {
      p.line = out.lines.size();
      out.lines.emplace_back();
    }
    ++p.count;
    if (std::find(p.names.begin(), p.names.end(), f.requested) == p.names.end()) p.names.push_back(f.requested);
    const std::string by(Basename(f.requester));
    if (std::find(p.requesters.begin(), p.requesters.end(), by) == p.requesters.end()) p.requesters.push_back(by);
  }
  for (const auto& [family, p] : probes) {
    std::string by;
    for (const std::string& r : p.requesters) by += (by.empty() ? "" : ", ") + r;
    out.lines[p.line] = "    " + NamePattern(p.names) + "  " + std::to_string(p.count) + " handled probe" +
                        (p.count == 1 ? "" : "s") + " (FAILED, then loaded" +
                        (p.names.size() > 1 ? "; " + std::to_string(p.names.size()) + " names" : "") + ")" +
                        (by.empty() ? "" : " by " + by) + "\n";
  }
  return out;
}

}  // namespace

void LibrariesSection(const ReportBuilder& report, std::vector<TextSection>& out) {
  const Json* rows = report.document().Find("libraries");
  const Json* files = report.document().Find("libraries_files");
  if (rows == nullptr || !rows->is_array() || files == nullptr) return;  // no library analysis
  const auto& inventories = report.run().Get<abi::LibraryInventories>().of_trace;
  const std::vector<const Json*> process_rows = RowsOfTraces(report);
  const std::set<LoadCause> handled = HandledLoads(report.findings());
  const auto& traces = report.traces();
  std::vector<ProcessLibrariesText> procs;
  size_t row = 0;
  for (size_t i = 0; i < traces.size() && i < inventories.size(); ++i) {
    const abi::LibraryInventory& inv = inventories[i];
    // `colabtrace run`'s own trace loads nothing of the job's: no paragraph for it.
    if (!IsRunWrapper(traces[i])) {
      procs.push_back(TextOf(traces[i], inv, rows->array(), row,
                             ProcessRole(process_rows[i] != nullptr ? *process_rows[i] : Json::MakeObject()),
                             handled));
    }
    row += inv.objects.size() + inv.failures.size();
  }
  if (procs.empty()) return;
  out.push_back({"Libraries", abi::LibraryFiles::SummaryText(*files) + LibrariesText(procs)});
}

}  // namespace colabtrace::analyzer::text
