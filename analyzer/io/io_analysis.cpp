// The I/O-hotspot report: io.files[], io.directories[], io.mounts[], histograms,
// processes[].io, the "File I/O" text sections and the io.* findings.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <unordered_map>

#include "report/analyses.h"
#include "io/file_stats.h"
#include "io/rules/rules.h"
#include "model/process_role.h"
#include "report/report.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer {
namespace io {
namespace {


Json HistogramJson(const SizeHistogram& h) {
  Json o = Json::MakeObject();
  for (int i = 0; i < kSizeBins; ++i) o[SizeBinName(i)] = h.counts[static_cast<size_t>(i)];
  return o;
}

std::string HistogramLine(const SizeHistogram& h) {
  std::string s;
  for (int i = 0; i < kSizeBins; ++i) {
    if (h.counts[static_cast<size_t>(i)] == 0) continue;
    if (!s.empty()) s += "  ";
    s += std::string(SizeBinName(i)) + ": " + std::to_string(h.counts[static_cast<size_t>(i)]);
  }
  return s.empty() ? "(none)" : s;
}

std::string Shorten(std::string p, size_t max = 60) {
  for (char& c : p) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  return p.size() <= max ? p : "..." + p.substr(p.size() - (max - 3));
}

struct DirRow {
  std::string path;
  int32_t mount = -1;
  uint64_t files = 0, data_files = 0, small_files = 0, opens = 0, reads = 0, bytes_read = 0,
           read_ns = 0, open_ns = 0, stat_ns = 0, stats = 0;
  std::vector<uint64_t> sizes;
  uint64_t io_ns() const { return read_ns + open_ns + stat_ns; }
};

// One report's pass over the run's I/O model: the JSON, the text and the rules.
class IoPass {
 public:
  explicit IoPass(const RunModel& run) : view_(IoView::Of(run)) {}

  void Run(ReportBuilder& report) {
    BuildDirectories();
    FillProcesses(report);
    FillJson(report);
    FillText(report);
    RunRules(report, FindingArea::kIo);
  }

 private:

  void BuildDirectories() {
    std::map<std::string, DirRow> dirs;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      const FileStats& f = model_.files[i];
      if (f.directory) continue;
      DirRow& d = dirs[std::string(DirOf(f.path))];
      d.path = std::string(DirOf(f.path));
      if (d.mount < 0) d.mount = f.mount;
      ++d.files;
      d.opens += f.opens;
      d.reads += f.reads;
      d.bytes_read += f.bytes_read;
      d.read_ns += f.read_ns;
      d.open_ns += f.open_ns;
      d.stat_ns += f.stat_ns;
      d.stats += f.stats;
      if (view_.ReadData(i)) {
        ++d.data_files;
        d.sizes.push_back(f.BestSize());
        if (f.BestSize() < kSmallFileBytes) ++d.small_files;
      }
    }
    for (auto& [k, d] : dirs) dirs_.push_back(std::move(d));
    std::stable_sort(dirs_.begin(), dirs_.end(),
                     [](const DirRow& a, const DirRow& b) { return a.io_ns() > b.io_ns(); });
  }

  void FillProcesses(ReportBuilder& report) {
    for (size_t i = 0; i < model_.processes.size(); ++i) {
      report.process(i)["io"] = ProcessIoJson(model_.processes[i]);
    }
    for (Json* p : report.UntracedProcesses()) (*p)["io"] = ProcessIoJson(ProcessIo{});
  }

  static Json ProcessIoJson(const ProcessIo& p) {
    Json io = Json::MakeObject();
    io["opens"] = p.opens;
    io["reads"] = p.reads;
    io["bytes_read"] = p.bytes_read;
    io["read_ns"] = p.read_ns;
    io["open_errors"] = p.open_errors;
    io["read_errors"] = p.read_errors;
    io["stats"] = p.stats;
    io["writes"] = p.writes;
    io["bytes_written"] = p.bytes_written;
    io["files"] = p.files;
    io["dir_scans"] = p.dir_scans;
    io["mmaps"] = p.mmaps;
    io["records"] = p.records;
    io["data_opens"] = p.data_opens;
    io["data_reads"] = p.data_reads;
    io["data_bytes_read"] = p.data_bytes_read;
    return io;
  }

  Json FileJson(const FileStats& f) const {
    Json j = Json::MakeObject();
    const MountRow* m = view_.MountOf(f);
    j["path"] = f.path;
    if (!f.host.empty()) j["host"] = f.host;  // only in reports of several hosts
    j["fs_type"] = m ? m->fstype : "unknown";
    j["opens"] = f.opens;
    j["reads"] = f.reads;
    j["bytes_read"] = f.bytes_read;
    j["read_ns"] = f.read_ns;
    j["stats"] = f.stats;
    j["fs_class"] = std::string(FsClassName(m ? m->fs.cls : FsClass::kUnknown));
    j["mount"] = m ? Json(m->mountpoint) : Json();
    j["kind"] = f.directory ? "directory" : "file";
    j["data"] = !f.directory && !f.code && !(m && m->fs.cls == FsClass::kPseudo);
    j["open_errors"] = f.open_errors;
    j["open_ns"] = f.open_ns;
    j["inherited"] = f.inherited;
    j["read_errors"] = f.read_errors;
    j["zero_byte_reads"] = f.zero_reads;
    j["stat_errors"] = f.stat_errors;
    j["stat_ns"] = f.stat_ns;
    j["size"] = f.size_known() || f.max_end > 0 ? Json(f.BestSize()) : Json();
    j["size_source"] = f.size ? "stat" : f.eof_at ? "end-of-file" : f.max_end ? "bytes-read" : "unknown";
    j["writes"] = f.writes;
    j["bytes_written"] = f.bytes_written;
    j["sequential_reads"] = f.sequential_reads;
    j["consecutive_reads"] = f.consecutive_reads;
    j["random_reads"] = f.random_reads;
    j["passes"] = f.passes;
    j["reread_bytes"] = f.reread_bytes();
    j["read_sizes"] = HistogramJson(f.read_sizes);
    if (f.mmaps) {
      j["mmaps"] = f.mmaps;
      j["mapped_bytes"] = f.mapped_bytes;
    }
    if (f.copies) {
      j["copies"] = f.copies;
      j["bytes_copied"] = f.bytes_copied;
    }
    if (f.dir_scans || f.dir_entries) {
      j["dir_scans"] = f.dir_scans;
      j["dir_entries"] = f.dir_entries;
    }
    Json pids = Json::MakeArray();
    for (uint32_t pid : f.pids) pids.Append(pid);
    j["pids"] = std::move(pids);
    if (!f.errors.empty()) {
      Json errs = Json::MakeObject();
      for (const auto& [e, n] : f.errors) errs[ErrnoName(e)] = n;
      j["errors"] = std::move(errs);
    }
    return j;
  }

  void FillJson(ReportBuilder& report) {
    Json io = Json::MakeObject();
    std::vector<size_t> order(model_.files.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return model_.files[a].path < model_.files[b].path; });
    Json files = Json::MakeArray();
    SizeHistogram file_sizes, read_sizes;
    uint64_t seq = 0, consec = 0, random = 0, zero = 0, reread_files = 0, reread_bytes = 0;
    for (size_t i : order) {
      const FileStats& f = model_.files[i];
      files.Append(FileJson(f));
      if (view_.ReadData(i)) file_sizes.Add(f.BestSize());
      for (int b = 0; b < kSizeBins; ++b) read_sizes.counts[static_cast<size_t>(b)] += f.read_sizes.counts[static_cast<size_t>(b)];
      seq += f.sequential_reads;
      consec += f.consecutive_reads;
      random += f.random_reads;
      zero += f.zero_reads;
      if (data_[i] && f.passes >= 2) ++reread_files;
      if (data_[i]) reread_bytes += f.reread_bytes();
    }
    io["files"] = std::move(files);

    Json totals = Json::MakeObject();
    uint64_t opens = 0, reads = 0, bytes = 0, read_ns = 0, stats = 0, open_errors = 0;
    for (const ProcessIo& p : model_.processes) {
      opens += p.opens;
      reads += p.reads;
      bytes += p.bytes_read;
      read_ns += p.read_ns;
      stats += p.stats;
      open_errors += p.open_errors;
    }
    totals["opens"] = opens;
    totals["reads"] = reads;
    totals["bytes_read"] = bytes;
    totals["read_ns"] = read_ns;
    totals["stats"] = stats;
    totals["open_errors"] = open_errors;
    totals["files"] = static_cast<uint64_t>(model_.files.size());
    uint64_t data_files = 0;
    for (size_t i = 0; i < model_.files.size(); ++i) data_files += view_.ReadData(i) ? 1 : 0;
    totals["data_files_read"] = data_files;
    totals["io_records"] = model_.io_records;
    io["totals"] = std::move(totals);

    Json defs = Json::MakeObject();
    defs["opens"] = "successful open-family calls that created a descriptor (open*, openat*, __open*_2, creat*, fopen*, freopen*, mkstemp*, mkostemp*); failed opens are open_errors; fdopen, dup, opendir and inherited descriptors are not opens";
    defs["reads"] = "read-family calls on traced files (read, pread*, readv, preadv*, __read_chk, fread*, fgets*, getline, getdelim) that returned >= 0 bytes, end-of-file reads included; failed reads are read_errors; getc/fgetc are not traced";
    defs["bytes_read"] = "the sum of the byte counts those reads returned";
    defs["read_ns"] = "wall time spent inside those reads";
    defs["stats"] = "stat-family calls (stat*, lstat*, fstat*, fstatat*, __*xstat*, statx) and access/faccessat/euidaccess/eaccess on the path or a descriptor of it, failed ones included";
    defs["passes"] = "separate opens through which at least one byte of the file was read";
    defs["reread_bytes"] = "bytes read beyond the furthest byte read (plus the bytes read at unknown offsets, at most up to the file's size): at least this much was read more than once";
    defs["sequential_reads"] = "reads at or after the end of the previous read on the same open file (consecutive: exactly at it); the first read of an open counts as sequential";
    defs["size_bins"] = "Darshan's bins, upper bounds inclusive, K = 1024";
    io["definitions"] = std::move(defs);

    Json th = Json::MakeObject();
    th["small_file_bytes"] = kSmallFileBytes;
    th["small_files_min"] = kSmallFilesMin;
    th["slow_time_share"] = kSlowTimeShare;
    th["small_read_bytes"] = kSmallReadBytes;
    th["large_file_bytes"] = kLargeFileBytes;
    th["small_reads_min"] = kSmallReadsMin;
    th["reread_min_files"] = kRereadMinFiles;
    th["metadata_min"] = kMetadataMin;
    th["metadata_per_read"] = kMetadataPerRead;
    io["thresholds"] = std::move(th);

    Json hist = Json::MakeObject();
    hist["file_sizes"] = HistogramJson(file_sizes);
    hist["read_sizes"] = HistogramJson(read_sizes);
    io["histograms"] = std::move(hist);
    Json access = Json::MakeObject();
    access["sequential_reads"] = seq;
    access["consecutive_reads"] = consec;
    access["random_reads"] = random;
    access["zero_byte_reads"] = zero;
    access["files_read_more_than_once"] = reread_files;
    access["reread_bytes"] = reread_bytes;
    io["access"] = std::move(access);

    Json dirs = Json::MakeArray();
    for (const DirRow& d : dirs_) {
      Json j = Json::MakeObject();
      j["path"] = d.path;
      const MountRow* m = d.mount >= 0 ? &model_.mounts[static_cast<size_t>(d.mount)] : nullptr;
      j["fs_type"] = m ? m->fstype : "unknown";
      j["files"] = d.files;
      j["data_files_read"] = d.data_files;
      j["small_files"] = d.small_files;
      j["median_size"] = Median(d.sizes);
      j["opens"] = d.opens;
      j["reads"] = d.reads;
      j["bytes_read"] = d.bytes_read;
      j["read_ns"] = d.read_ns;
      j["open_ns"] = d.open_ns;
      j["stats"] = d.stats;
      j["stat_ns"] = d.stat_ns;
      dirs.Append(std::move(j));
    }
    io["directories"] = std::move(dirs);

    Json mounts = Json::MakeArray();
    for (const MountRow& m : model_.mounts) {
      Json j = Json::MakeObject();
      j["id"] = m.id;
      j["mountpoint"] = m.mountpoint;
      j["fs_type"] = m.fstype;
      j["source"] = m.source;
      j["class"] = std::string(FsClassName(m.fs.cls));
      j["label"] = std::string(m.fs.label);
      j["slow"] = m.fs.slow;
      j["files"] = m.files;
      j["opens"] = m.opens;
      j["reads"] = m.reads;
      j["bytes_read"] = m.bytes_read;
      j["read_ns"] = m.read_ns;
      j["open_ns"] = m.open_ns;
      j["stats"] = m.stats;
      mounts.Append(std::move(j));
    }
    io["mounts"] = std::move(mounts);

    Json hot = Json::MakeArray();
    for (size_t i : Hotspots(20)) {
      const FileStats& f = model_.files[i];
      Json j = Json::MakeObject();
      j["path"] = f.path;
      j["fs_type"] = view_.FsType(f);
      j["io_ns"] = f.io_ns();
      j["read_ns"] = f.read_ns;
      j["open_ns"] = f.open_ns;
      j["stat_ns"] = f.stat_ns;
      j["reads"] = f.reads;
      j["bytes_read"] = f.bytes_read;
      hot.Append(std::move(j));
    }
    io["hotspots"] = std::move(hot);

    Json procs = Json::MakeArray();
    for (const ProcessIo& p : model_.processes) {
      if (p.run_wrapper) continue;
      Json j = Json::MakeObject();
      j["pid"] = p.pid;
      j["ppid"] = p.ppid;
      j["role"] = p.forked ? "forked worker" : "process";
      j["command"] = p.command;
      j["opens"] = p.opens;
      j["reads"] = p.reads;
      j["bytes_read"] = p.bytes_read;
      j["read_ns"] = p.read_ns;
      j["stats"] = p.stats;
      j["files"] = p.files;
      procs.Append(std::move(j));
    }
    io["processes"] = std::move(procs);
    report.root()["io"] = std::move(io);
  }

  // The data files whose data was read (IoView::ReadData), by I/O time: a path that was
  // only stat'ed (the interpreter, a site-packages directory) costs no data I/O and is no
  // hotspot.
  std::vector<size_t> Hotspots(size_t n) const {
    std::vector<size_t> idx;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      if (view_.ReadData(i) && model_.files[i].io_ns() > 0) idx.push_back(i);
    }
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return model_.files[a].io_ns() > model_.files[b].io_ns() ||
             (model_.files[a].io_ns() == model_.files[b].io_ns() && a < b);
    });
    if (idx.size() > n) idx.resize(n);
    return idx;
  }

  // The per-process table: one row per job process, or one per role (ProcessRole) past
  // kProcessRowsBeforeGrouping, with sums and a few pids.
  std::string ProcessRows(ReportBuilder& report) const {
    std::string s;
    char line[512];
    size_t jobs = 0;
    for (const ProcessIo& p : model_.processes) jobs += !p.run_wrapper;
    if (jobs > kProcessRowsBeforeGrouping) return GroupedProcessRows(report, jobs);
    std::snprintf(line, sizeof(line), "%-8s %-8s %-14s %8s %9s %10s %10s %8s  %s\n", "pid", "ppid", "role", "opens",
                  "reads", "read", "read time", "stats", "command");
    s += line;
    for (const ProcessIo& p : model_.processes) {
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

  std::string GroupedProcessRows(ReportBuilder& report, size_t jobs) const {
    struct Group {
      std::vector<int64_t> pids;
      uint64_t opens = 0, reads = 0, bytes_read = 0, read_ns = 0, stats = 0;
    };
    std::map<std::string, Group> groups;
    for (size_t i = 0; i < model_.processes.size(); ++i) {
      const ProcessIo& p = model_.processes[i];
      if (p.run_wrapper) continue;
      Group& g = groups[ProcessRole(report.process(i))];
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

  void FillText(ReportBuilder& report) {
    if (model_.io_records == 0) {
      report.AddText("File I/O", "No file I/O recorded (COLABTRACE_IO=0, or nothing was opened).\n");
      return;
    }
    std::string s;
    char line[512];
    uint64_t opens = 0, reads = 0, bytes = 0, read_ns = 0, stats = 0;
    for (const ProcessIo& p : model_.processes) {
      opens += p.opens, reads += p.reads, bytes += p.bytes_read, read_ns += p.read_ns, stats += p.stats;
    }
    std::snprintf(line, sizeof(line), "%llu opens, %llu reads (%s in %s), %llu stats over %zu paths\n",
                  static_cast<unsigned long long>(opens), static_cast<unsigned long long>(reads),
                  FormatBytes(bytes).c_str(), FormatDurationNs(read_ns).c_str(),
                  static_cast<unsigned long long>(stats), model_.files.size());
    s += line;
    s += "opens: successful open-family calls; reads: read-family calls on traced files that returned >= 0 bytes (EOF reads included); bytes_read: their sum\n\n";
    s += ProcessRows(report);
    report.AddText("File I/O", s);

    s.clear();
    std::snprintf(line, sizeof(line), "%-28s %-14s %-10s %7s %9s %10s %10s %10s\n", "mount point", "type", "class",
                  "files", "reads", "read", "read time", "open time");
    s += line;
    size_t idle = 0;
    for (const MountRow& m : model_.mounts) {
      if (m.files == 0) {
        ++idle;
        continue;
      }
      std::snprintf(line, sizeof(line), "%-28s %-14s %-10s %7llu %9llu %10s %10s %10s\n",
                    Shorten(m.mountpoint, 28).c_str(), Shorten(m.fstype, 14).c_str(),
                    std::string(FsClassName(m.fs.cls)).c_str(), static_cast<unsigned long long>(m.files),
                    static_cast<unsigned long long>(m.reads), FormatBytes(m.bytes_read).c_str(),
                    FormatDurationNs(m.read_ns).c_str(), FormatDurationNs(m.open_ns).c_str());
      s += line;
    }
    if (idle) s += "(" + std::to_string(idle) + " more mounts with no file activity; see io.mounts in the JSON report)\n";
    report.AddText("File I/O: filesystems", s);

    s.clear();
    const std::vector<size_t> hotspots = Hotspots(10);
    if (hotspots.empty()) {
      // Code, libraries and stats only (a training run on in-memory data): no hotspot.
      report.AddText("File I/O: hotspots (data files)",
                     "No data file was read: the I/O above is code, libraries and metadata.\n");
      return;
    }
    std::snprintf(line, sizeof(line), "%-60s %-10s %10s %10s %6s %10s\n", "path", "type", "I/O time", "read", "opens", "reads");
    s += line;
    for (size_t i : hotspots) {
      const FileStats& f = model_.files[i];
      std::snprintf(line, sizeof(line), "%-60s %-10s %10s %10s %6llu %10llu\n", Shorten(f.path).c_str(),
                    Shorten(view_.FsType(f), 10).c_str(), FormatDurationNs(f.io_ns()).c_str(),
                    FormatBytes(f.bytes_read).c_str(), static_cast<unsigned long long>(f.opens),
                    static_cast<unsigned long long>(f.reads));
      s += line;
    }
    s += "\nTop directories of data files by I/O time:\n";
    std::snprintf(line, sizeof(line), "%-50s %7s %7s %10s %10s %10s\n", "directory", "files", "small", "median", "read", "I/O time");
    s += line;
    size_t listed = 0;
    for (size_t k = 0; k < dirs_.size() && listed < 10; ++k) {
      const DirRow& d = dirs_[k];
      if (d.data_files == 0) continue;  // code and stats only: no hotspot
      ++listed;
      std::snprintf(line, sizeof(line), "%-50s %7llu %7llu %10s %10s %10s\n", Shorten(d.path, 50).c_str(),
                    static_cast<unsigned long long>(d.files), static_cast<unsigned long long>(d.small_files),
                    FormatBytes(Median(d.sizes)).c_str(), FormatBytes(d.bytes_read).c_str(),
                    FormatDurationNs(d.io_ns()).c_str());
      s += line;
    }
    SizeHistogram fs, rs;
    uint64_t seq = 0, random = 0;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      const FileStats& f = model_.files[i];
      if (view_.ReadData(i)) fs.Add(f.BestSize());
      for (int b = 0; b < kSizeBins; ++b) rs.counts[static_cast<size_t>(b)] += f.read_sizes.counts[static_cast<size_t>(b)];
      seq += f.sequential_reads;
      random += f.random_reads;
    }
    s += "\nSizes of data files read: " + HistogramLine(fs) + "\n";
    s += "Sizes of reads:           " + HistogramLine(rs) + "\n";
    s += "Access: " + std::to_string(seq) + " sequential, " + std::to_string(random) + " random reads\n";
    report.AddText("File I/O: hotspots (data files)", s);
  }


  const IoView view_;  // what the rules read
  const IoModel& model_ = view_.model;
  const std::vector<bool>& data_ = view_.data;
  std::vector<DirRow> dirs_;
};

class IoAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "io"; }
  void Run(ReportBuilder& report) override { IoPass(report.run()).Run(report); }
};

}  // namespace
}  // namespace io

std::unique_ptr<Analysis> MakeIoAnalysis() { return std::make_unique<io::IoAnalysis>(); }

}  // namespace colabtrace::analyzer
