// The File I/O sections: totals and the per-process table (past
// kProcessRowsBeforeGrouping processes one row per role), the filesystems with activity,
// and the data-file hotspots with their directories, sizes and access pattern. From the
// run model's io::IoModel and io::IoSummary (what the JSON's io.* says, formatted).
#include <algorithm>
#include <cstdio>
#include <map>

#include "io/io_summary.h"
#include "io/rules/rules.h"
#include "model/process_role.h"
#include "render/text/sections.h"

namespace colabtrace::analyzer::text {
namespace {

using io::IoModel;
using io::IoSummary;

std::string HistogramLine(const io::SizeHistogram& h) {
  std::string s;
  for (int i = 0; i < io::kSizeBins; ++i) {
    if (h.counts[static_cast<size_t>(i)] == 0) continue;
    if (!s.empty()) s += "  ";
    s += std::string(io::SizeBinName(i)) + ": " + std::to_string(h.counts[static_cast<size_t>(i)]);
  }
  return s.empty() ? "(none)" : s;
}

// The last `max` characters of a path ("..." in front), tabs and line breaks as spaces.
std::string Shorten(std::string p, size_t max = 60) {
  for (char& c : p) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return p.size() <= max ? p : "..." + p.substr(p.size() - (max - 3));
}

// One row per job process.
std::string ProcessRows(const IoModel& model) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof(line), "%-8s %-8s %-14s %8s %9s %10s %10s %8s  %s\n", "pid", "ppid", "role", "opens",
                "reads", "read", "read time", "stats", "command");
  s += line;
  for (const io::ProcessIo& p : model.processes) {
    if (p.run_wrapper) continue;
    std::snprintf(line, sizeof(line), "%-8u %-8lld %-14s %8llu %9llu %10s %10s %8llu  %s\n", p.pid,
                  static_cast<long long>(p.ppid), p.forked ? "forked worker" : "process",
                  static_cast<unsigned long long>(p.opens), static_cast<unsigned long long>(p.reads),
                  FormatBytes(p.bytes_read).c_str(), FormatDurationNs(p.read_ns).c_str(),
                  static_cast<unsigned long long>(p.stats), Shorten(p.command, 50).c_str());
    s += line;
  }
  return s;
}

// One row per role (ProcessRole of each process's processes[] row), with sums and a few
// pids, largest group first.
std::string GroupedProcessRows(const ReportBuilder& report, const IoModel& model, size_t jobs) {
  struct Group {
    std::vector<int64_t> pids;
    uint64_t opens = 0, reads = 0, bytes_read = 0, read_ns = 0, stats = 0;
  };
  const std::vector<const Json*> rows = RowsOfTraces(report);
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < model.processes.size() && i < rows.size(); ++i) {
    const io::ProcessIo& p = model.processes[i];
    if (p.run_wrapper || rows[i] == nullptr) continue;
    Group& g = groups[ProcessRole(*rows[i])];
    g.pids.push_back(p.pid);
    g.opens += p.opens, g.reads += p.reads, g.bytes_read += p.bytes_read, g.read_ns += p.read_ns,
        g.stats += p.stats;
  }
  std::vector<std::pair<const std::string*, const Group*>> order;
  for (const auto& [role, g] : groups) order.emplace_back(&role, &g);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->pids.size() > b.second->pids.size(); });
  std::string s = std::to_string(jobs) + " processes in " + std::to_string(groups.size()) +
                  " groups (by command and role, summed; `report --format json` lists each process)\n";
  char line[512];
  std::snprintf(line, sizeof(line), "%-6s %-32s %8s %9s %10s %10s %8s  %s\n", "count", "role", "opens", "reads",
                "read", "read time", "stats", "pids");
  s += line;
  for (const auto& [role, g] : order) {
    std::snprintf(line, sizeof(line), "%-6zu %-32s %8llu %9llu %10s %10s %8llu  %s\n", g->pids.size(),
                  EscapeForTerminal(*role).substr(0, 64).c_str(), static_cast<unsigned long long>(g->opens),
                  static_cast<unsigned long long>(g->reads), FormatBytes(g->bytes_read).c_str(),
                  FormatDurationNs(g->read_ns).c_str(), static_cast<unsigned long long>(g->stats),
                  PidSample(g->pids).c_str());
    s += line;
  }
  return s;
}

std::string Overview(const ReportBuilder& report, const IoModel& model, const IoSummary& sum) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof(line), "%llu opens, %llu reads (%s in %s), %llu stats over %zu paths\n",
                static_cast<unsigned long long>(sum.opens), static_cast<unsigned long long>(sum.reads),
                FormatBytes(sum.bytes_read).c_str(), FormatDurationNs(sum.read_ns).c_str(),
                static_cast<unsigned long long>(sum.stats), model.files.size());
  s += line;
  s += "opens: successful open-family calls; reads: read-family calls on traced files that returned >= 0 bytes (EOF reads included); bytes_read: their sum\n\n";
  size_t jobs = 0;
  for (const io::ProcessIo& p : model.processes) jobs += !p.run_wrapper;
  s += jobs > kProcessRowsBeforeGrouping ? GroupedProcessRows(report, model, jobs) : ProcessRows(model);
  return s;
}

std::string Filesystems(const IoModel& model) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof(line), "%-28s %-14s %-10s %7s %9s %10s %10s %10s\n", "mount point", "type", "class",
                "files", "reads", "read", "read time", "open time");
  s += line;
  size_t idle = 0;
  for (const io::MountRow& m : model.mounts) {
    if (m.files == 0) {
      ++idle;
      continue;
    }
    std::snprintf(line, sizeof(line), "%-28s %-14s %-10s %7llu %9llu %10s %10s %10s\n",
                  Shorten(m.mountpoint, 28).c_str(), Shorten(m.fstype, 14).c_str(),
                  std::string(io::FsClassName(m.fs.cls)).c_str(), static_cast<unsigned long long>(m.files),
                  static_cast<unsigned long long>(m.reads), FormatBytes(m.bytes_read).c_str(),
                  FormatDurationNs(m.read_ns).c_str(), FormatDurationNs(m.open_ns).c_str());
    s += line;
  }
  if (idle) s += "(" + std::to_string(idle) + " more mounts with no file activity; see io.mounts in the JSON report)\n";
  return s;
}

// The first ten hotspots, the first ten directories that hold data files read, the
// histograms and the access pattern.
std::string Hotspots(const io::IoView& view, const IoSummary& sum) {
  std::string s;
  char line[512];
  std::snprintf(line, sizeof(line), "%-60s %-10s %10s %10s %6s %10s\n", "path", "type", "I/O time", "read", "opens",
                "reads");
  s += line;
  for (size_t k = 0; k < sum.hotspots.size() && k < 10; ++k) {
    const io::FileStats& f = view.model.files[sum.hotspots[k]];
    std::snprintf(line, sizeof(line), "%-60s %-10s %10s %10s %6llu %10llu\n", Shorten(f.path).c_str(),
                  Shorten(view.FsType(f), 10).c_str(), FormatDurationNs(f.io_ns()).c_str(),
                  FormatBytes(f.bytes_read).c_str(), static_cast<unsigned long long>(f.opens),
                  static_cast<unsigned long long>(f.reads));
    s += line;
  }
  for (size_t k = 0; k < sum.hotspots.size() && k < 10; ++k) {
    const io::FileStats& f = view.model.files[sum.hotspots[k]];
    if (f.counted_from_ns == 0) continue;  // a heavy-hitter row: counted from when it entered
    s += "  " + Shorten(f.path) + ": counted from " + FormatDurationNs(f.counted_after_ns) +
         " after its process started (a heavy hitter after the file slots were full); up to " +
         std::to_string(f.calls_before_max) + " calls before then are in its directory's <more files> row\n";
  }
  s += "\nTop directories of data files by I/O time:\n";
  std::snprintf(line, sizeof(line), "%-50s %7s %7s %10s %10s %10s\n", "directory", "files", "small", "median", "read",
                "I/O time");
  s += line;
  size_t listed = 0;
  for (const io::DirectoryRow& d : sum.directories) {
    if (listed == 10) break;
    if (d.data_files == 0) continue;  // code and stats only: no hotspot
    ++listed;
    std::snprintf(line, sizeof(line), "%-50s %7llu %7llu %10s %10s %10s\n", Shorten(d.path, 50).c_str(),
                  static_cast<unsigned long long>(d.files), static_cast<unsigned long long>(d.small_files),
                  FormatBytes(d.median_size).c_str(), FormatBytes(d.bytes_read).c_str(),
                  FormatDurationNs(d.io_ns()).c_str());
    s += line;
  }
  s += "\nSizes of data files read: " + HistogramLine(sum.data_file_sizes) + "\n";
  s += "Sizes of reads:           " + HistogramLine(sum.read_sizes) + "\n";
  s += "Access: " + std::to_string(sum.sequential_reads) + " sequential, " + std::to_string(sum.random_reads) +
       " random reads\n";
  return s;
}

}  // namespace

void IoSections(const ReportBuilder& report, std::vector<TextSection>& out) {
  const io::IoView view = io::IoView::Of(report.run());
  const IoModel& model = view.model;
  if (model.io_records == 0) {
    out.push_back({"File I/O", "No file I/O recorded (COLABTRACE_IO=0, or nothing was opened).\n"});
    return;
  }
  const IoSummary& sum = report.run().Get<IoSummary>();
  out.push_back({"File I/O", Overview(report, model, sum)});
  out.push_back({"File I/O: filesystems", Filesystems(model)});
  if (sum.hotspots.empty()) {
    // Code, libraries and stats only (a training run on in-memory data): no hotspot.
    out.push_back({"File I/O: hotspots (data files)",
                   "No data file was read: the I/O above is code, libraries and metadata.\n"});
    return;
  }
  out.push_back({"File I/O: hotspots (data files)", Hotspots(view, sum)});
}

}  // namespace colabtrace::analyzer::text
