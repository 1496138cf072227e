// The I/O-hotspot report's JSON: io.files[], io.directories[], io.mounts[], histograms,
// processes[].io, and the io.* findings (the rules in io/rules/).
#include <algorithm>

#include "io/file_stats.h"
#include "io/io_summary.h"
#include "io/rules/rules.h"
#include "report/analyses.h"
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

// One report's pass over the run's I/O model: the JSON and the rules (the text sections
// are render/text/io_sections.cpp's, from the same IoModel and IoSummary).
class IoPass {
 public:
  explicit IoPass(const RunModel& run) : view_(IoView::Of(run)), summary_(run.Get<IoSummary>()) {}

  void Run(ReportBuilder& report) {
    FillProcesses(report);
    FillJson(report);
    RunRules(report, FindingArea::kIo);
  }

 private:
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
    // Only where the model came from the trace's I/O aggregates (IoFromAggregates).
    if (p.from_aggregates) {
      io["from_aggregates"] = true;
      io["per_directory_from_ns"] = p.per_directory_from_ns ? Json(p.per_directory_from_ns) : Json();
    }
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
    j["kind"] = f.directory || f.summed_files ? "directory" : "file";
    if (f.summed_files) j["summed_files"] = true;  // a directory's files not kept one by one
    if (f.counted_from_ns != 0) {  // a heavy-hitter row: its sums count from then
      j["counted_from_ns"] = f.counted_from_ns;
      j["calls_before_max"] = f.calls_before_max;
    }
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
    for (size_t i : order) files.Append(FileJson(model_.files[i]));
    io["files"] = std::move(files);

    const IoSummary& sum = summary_;
    Json totals = Json::MakeObject();
    totals["opens"] = sum.opens;
    totals["reads"] = sum.reads;
    totals["bytes_read"] = sum.bytes_read;
    totals["read_ns"] = sum.read_ns;
    totals["stats"] = sum.stats;
    totals["open_errors"] = sum.open_errors;
    totals["files"] = static_cast<uint64_t>(model_.files.size());
    totals["data_files_read"] = sum.data_files_read;
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
    hist["file_sizes"] = HistogramJson(sum.data_file_sizes);
    hist["read_sizes"] = HistogramJson(sum.read_sizes);
    io["histograms"] = std::move(hist);
    Json access = Json::MakeObject();
    access["sequential_reads"] = sum.sequential_reads;
    access["consecutive_reads"] = sum.consecutive_reads;
    access["random_reads"] = sum.random_reads;
    access["zero_byte_reads"] = sum.zero_byte_reads;
    access["files_read_more_than_once"] = sum.files_read_more_than_once;
    access["reread_bytes"] = sum.reread_bytes;
    io["access"] = std::move(access);

    Json dirs = Json::MakeArray();
    for (const DirectoryRow& d : sum.directories) {
      Json j = Json::MakeObject();
      j["path"] = d.path;
      const MountRow* m = d.mount >= 0 ? &model_.mounts[static_cast<size_t>(d.mount)] : nullptr;
      j["fs_type"] = m ? m->fstype : "unknown";
      j["files"] = d.files;
      j["data_files_read"] = d.data_files;
      j["small_files"] = d.small_files;
      j["median_size"] = d.median_size;
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
    for (size_t i : sum.hotspots) {
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

  const IoView view_;  // what the rules read
  const IoSummary& summary_;
  const IoModel& model_ = view_.model;
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
