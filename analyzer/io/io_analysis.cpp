// The I/O-hotspot report: io.files[], io.directories[], io.mounts[], histograms,
// processes[].io, the "File I/O" text sections and the io.* findings.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <unordered_map>

#include "analyses/factories.h"
#include "io/file_stats.h"
#include "report/report.h"

namespace colabtrace::analyzer {
namespace io {
namespace {

// ---- finding thresholds --------------------------------------------------------------------
// Each finding looks at data files only (IsDataFile: not Python/library code, /etc, or a
// pseudo filesystem), so interpreter start-up and `import torch` never trigger them.

// io.small-files: a file under 1 MiB is "small" (a JPEG, a .npy sample, a short text).
// Fires when at least 1,000 small data files were read and they are at least half of
// the data files read: per-file open/stat latency then dominates the bytes.
constexpr uint64_t kSmallFileBytes = 1u << 20;
constexpr uint64_t kSmallFilesMin = 1000;
constexpr double kSmallFilesShare = 0.5;

// io.network-filesystem: slow mounts (network, FUSE, 9p/virtiofs) took at least half of
// the data files' I/O time (open + read + stat), and at least 10 files or 16 MiB were
// read from them (one config file on Drive is not a pipeline).
constexpr double kSlowTimeShare = 0.5;
constexpr uint64_t kSlowMinFiles = 10;
constexpr uint64_t kSlowMinBytes = 16u << 20;

// io.small-reads: most reads (at least half of at least 1,000) on files of 1 MiB or more
// returned 4 KiB or less. Only system calls count: an fread or fgets is served from its
// FILE's buffer (sort's small freads refill it in 4-12 KiB reads we do not see).
constexpr uint64_t kSmallReadBytes = 4096;
constexpr uint64_t kLargeFileBytes = 1u << 20;
constexpr uint64_t kSmallReadsMin = 1000;
constexpr double kSmallReadsShare = 0.5;

// io.reread: on slow storage, at least 20 files were read through two or more separate
// opens (epochs re-reading the dataset), or at least 64 MiB were read more than once.
constexpr uint64_t kRereadMinFiles = 20;
constexpr uint64_t kRereadMinBytes = 64u << 20;

// io.metadata-heavy: path-based metadata calls (stat/lstat/access by path, open attempts,
// directory opens) number at least 2,000 and at least 5 per data read (a read, or a
// copy_file_range/sendfile out of the file, that moved bytes). fstat on an open
// descriptor is not counted: it costs no lookup; nor are the files the run opens for
// writing or creation (its output, not its data), nor stats of directories (the import
// system's sys.path checks).
constexpr uint64_t kMetadataMin = 2000;
constexpr double kMetadataPerRead = 5.0;

// io.errors: any failed read or write (EINTR/EAGAIN aside), or an open failing with a
// storage error (EIO, ESTALE, ENOTCONN, ...) or a limit (EMFILE, ENOSPC, ...); EMFILE,
// ENFILE and ENOMEM are the process's or host's limits, counted on every path. Lookup
// failures (ENOENT, EACCES, ENOTDIR, ...) of opens on data paths count from 10 on, since
// programs probe for optional files all the time (failed stats and opendirs never count),
// and only on paths that never opened or stat'ed successfully in the run: git looks for
// its index before it writes one, a cache looks an entry up before it creates it; nor
// on the steps of an upward search (one file name missed in a directory and its parent:
// rustup's rust-toolchain tried from the working directory up to /), nor on the steps of
// a search path (the name opened from another directory right after: a C++ compiler
// trying <cstdlib> in every -I directory; FileStats::search_misses). A read
// of a directory (EISDIR, from a loop over a listing that meets a subdirectory) is the
// program's own mistake, seen at once as an exception, not storage trouble: not counted.
// Nor are names in angle brackets ("<unknown>", "<string>"): CPython's name for code that
// came from no file, which it still fopen()s to quote the line of a SyntaxError (every
// failing ast.parse or compile of a string); no data file is called so.
constexpr uint64_t kLookupErrorsMin = 10;

bool IsCodeWithoutFile(std::string_view path) {
  const std::string_view name = Basename(path);
  return name.size() >= 2 && name.front() == '<' && name.back() == '>';
}

// Errors of the process's (or the host's) descriptor table or memory, not of the path:
// they mean the program ran out of a limit (a descriptor leak, ulimit -n) whatever file
// it was opening, so they count on every path, code and pseudo files included.
bool IsProcessLimit(int e) { return e == EMFILE || e == ENFILE || e == ENOMEM; }

// Writes that ran out of room: a full filesystem, a quota, a file-size limit (ulimit -f,
// RLIMIT_FSIZE) or the filesystem's largest file. The storage works; no remount helps.
bool IsSpaceError(int e) { return e == ENOSPC || e == EDQUOT || e == EFBIG; }

bool IsHardError(int e) {
  switch (e) {
    case EIO: case ENXIO: case ESTALE: case ENOTCONN: case ETIMEDOUT: case EREMOTEIO:
    case ECONNRESET: case ECONNABORTED: case EHOSTDOWN: case EHOSTUNREACH: case ENETDOWN:
    case ENETUNREACH: case ENOMEDIUM: case EMFILE: case ENFILE: case ENOSPC: case EDQUOT:
    case EROFS: case EBADMSG: case EFBIG: case ENOMEM:
      return true;
    default:
      return false;
  }
}

std::string ErrName(int e) {
  if (const char* n = strerrorname_np(e)) return n;
  return "errno " + std::to_string(e);
}

std::string Percent(double x) {
  char b[16];
  std::snprintf(b, sizeof(b), "%.0f%%", 100.0 * x);
  return b;
}

double Share(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  return v[mid];
}

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

class IoAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "io"; }

  void Run(ReportBuilder& report) override {
    model_ = IoModel::Build(report.traces());
    for (const FileStats& f : model_.files) data_.push_back(IsDataFile(f, model_.mounts));
    BuildDirectories();
    FillProcesses(report);
    FillJson(report);
    FillText(report);
    SmallFiles(report);
    NetworkFilesystem(report);
    SmallReads(report);
    Reread(report);
    MetadataHeavy(report);
    Errors(report);
    if (report.options().keep_models) report.models().io = std::make_shared<const IoModel>(std::move(model_));
  }

 private:
  const MountRow* MountOf(const FileStats& f) const {
    return f.mount >= 0 && static_cast<size_t>(f.mount) < model_.mounts.size()
               ? &model_.mounts[static_cast<size_t>(f.mount)]
               : nullptr;
  }
  std::string FsType(const FileStats& f) const {
    const MountRow* m = MountOf(f);
    return m ? m->fstype : "unknown";
  }
  bool Slow(const FileStats& f) const {
    const MountRow* m = MountOf(f);
    return m && m->fs.slow;
  }
  bool ReadData(size_t i) const { return data_[i] && model_.files[i].bytes_read > 0; }

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
      if (ReadData(i)) {
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
    const MountRow* m = MountOf(f);
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
      for (const auto& [e, n] : f.errors) errs[ErrName(e)] = n;
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
      if (ReadData(i)) file_sizes.Add(f.BestSize());
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
    for (size_t i = 0; i < model_.files.size(); ++i) data_files += ReadData(i) ? 1 : 0;
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
      j["fs_type"] = FsType(f);
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

  std::vector<size_t> Hotspots(size_t n) const {
    std::vector<size_t> idx;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      if (data_[i] && model_.files[i].io_ns() > 0) idx.push_back(i);
    }
    std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
      return model_.files[a].io_ns() > model_.files[b].io_ns() ||
             (model_.files[a].io_ns() == model_.files[b].io_ns() && a < b);
    });
    if (idx.size() > n) idx.resize(n);
    return idx;
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
    std::snprintf(line, sizeof(line), "%-60s %-10s %10s %10s %6s %10s\n", "path", "type", "I/O time", "read", "opens", "reads");
    s += line;
    for (size_t i : Hotspots(10)) {
      const FileStats& f = model_.files[i];
      std::snprintf(line, sizeof(line), "%-60s %-10s %10s %10s %6llu %10llu\n", Shorten(f.path).c_str(),
                    Shorten(FsType(f), 10).c_str(), FormatDurationNs(f.io_ns()).c_str(),
                    FormatBytes(f.bytes_read).c_str(), static_cast<unsigned long long>(f.opens),
                    static_cast<unsigned long long>(f.reads));
      s += line;
    }
    s += "\nTop directories by I/O time:\n";
    std::snprintf(line, sizeof(line), "%-50s %7s %7s %10s %10s %10s\n", "directory", "files", "small", "median", "read", "I/O time");
    s += line;
    for (size_t k = 0; k < dirs_.size() && k < 10; ++k) {
      const DirRow& d = dirs_[k];
      // No data file read there (code, stats only): no size to take a median of.
      std::snprintf(line, sizeof(line), "%-50s %7llu %7llu %10s %10s %10s\n", Shorten(d.path, 50).c_str(),
                    static_cast<unsigned long long>(d.files), static_cast<unsigned long long>(d.small_files),
                    d.sizes.empty() ? "-" : FormatBytes(Median(d.sizes)).c_str(), FormatBytes(d.bytes_read).c_str(),
                    FormatDurationNs(d.io_ns()).c_str());
      s += line;
    }
    SizeHistogram fs, rs;
    uint64_t seq = 0, random = 0;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      const FileStats& f = model_.files[i];
      if (ReadData(i)) fs.Add(f.BestSize());
      for (int b = 0; b < kSizeBins; ++b) rs.counts[static_cast<size_t>(b)] += f.read_sizes.counts[static_cast<size_t>(b)];
      seq += f.sequential_reads;
      random += f.random_reads;
    }
    s += "\nSizes of data files read: " + HistogramLine(fs) + "\n";
    s += "Sizes of reads:           " + HistogramLine(rs) + "\n";
    s += "Access: " + std::to_string(seq) + " sequential, " + std::to_string(random) + " random reads\n";
    report.AddText("File I/O: hotspots (data files)", s);
  }

  // ---- findings ------------------------------------------------------------------------

  void SmallFiles(ReportBuilder& report) {
    uint64_t read_files = 0, small = 0, small_bytes = 0, small_ns = 0;
    bool all_in_memory = true;  // every small file lies on tmpfs/ramfs
    std::vector<uint64_t> sizes;
    std::map<std::string, uint64_t> by_dir;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      if (!ReadData(i)) continue;
      const FileStats& f = model_.files[i];
      ++read_files;
      if (f.BestSize() >= kSmallFileBytes) continue;
      ++small;
      const MountRow* m = MountOf(f);
      all_in_memory = all_in_memory && m && m->fs.cls == FsClass::kMemory;
      small_bytes += f.bytes_read;
      small_ns += f.io_ns();
      sizes.push_back(f.BestSize());
      ++by_dir[std::string(DirOf(f.path))];
    }
    if (small < kSmallFilesMin || Share(small, read_files) < kSmallFilesShare) return;
    Finding fd;
    fd.id = "io.small-files";
    fd.severity = Severity::kWarning;
    const uint64_t median = Median(sizes);
    Json& ev = fd.evidence;
    ev["count"] = small;
    ev["data_files_read"] = read_files;
    ev["median_size"] = median;
    ev["bytes_read"] = small_bytes;
    ev["io_ns"] = small_ns;
    ev["threshold_bytes"] = kSmallFileBytes;
    std::vector<std::pair<uint64_t, std::string>> dirs;
    for (auto& [d, n] : by_dir) dirs.emplace_back(n, d);
    std::sort(dirs.begin(), dirs.end(), [](auto& a, auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
    Json dj = Json::MakeArray();
    for (size_t k = 0; k < dirs.size() && k < 10; ++k) {
      Json d = Json::MakeObject();
      d["path"] = dirs[k].second;
      d["files"] = dirs[k].first;
      dj.Append(std::move(d));
    }
    ev["directories"] = std::move(dj);
    ev["directory_count"] = static_cast<uint64_t>(dirs.size());
    fd.summary = std::to_string(small) + " small files read (median " + FormatBytes(median) + ", " +
                 FormatBytes(small_bytes) + " in all) from " + std::to_string(dirs.size()) +
                 (dirs.size() == 1 ? " directory" : " directories") + ", e.g. " + dirs.front().second;
    fd.advice =
        "Per-file open and lookup latency dominates when samples are small files. Pack them "
        "into a few large shards (100 MB or more): tar shards read with WebDataset, "
        "TFRecord, or an LMDB/HDF5 file";
    // Files already in memory (tmpfs, /dev/shm) gain nothing from a copy to disk.
    fd.advice += all_in_memory ? std::string(" (they are on tmpfs already: the cost is the "
                                             "system calls per file, not the storage).")
                               : std::string("; or copy the directory to local disk first (e.g. "
                                             "/content or /tmp) and read from there.");
    report.AddFinding(std::move(fd));
  }

  void NetworkFilesystem(ReportBuilder& report) {
    uint64_t total_ns = 0, slow_ns = 0, slow_files = 0, slow_bytes = 0;
    std::map<int32_t, std::array<uint64_t, 4>> per_mount;  // files, bytes, io_ns, reads
    for (size_t i = 0; i < model_.files.size(); ++i) {
      if (!data_[i]) continue;
      const FileStats& f = model_.files[i];
      total_ns += f.io_ns();
      if (!Slow(f)) continue;
      slow_ns += f.io_ns();
      if (f.bytes_read > 0) ++slow_files;
      slow_bytes += f.bytes_read;
      auto& pm = per_mount[f.mount];
      pm[0] += f.bytes_read > 0 ? 1 : 0;
      pm[1] += f.bytes_read;
      pm[2] += f.io_ns();
      pm[3] += f.reads;
    }
    if (slow_ns == 0 || Share(slow_ns, total_ns) < kSlowTimeShare) return;
    if (slow_files < kSlowMinFiles && slow_bytes < kSlowMinBytes) return;
    Finding fd;
    fd.id = "io.network-filesystem";
    fd.severity = Severity::kWarning;
    Json& ev = fd.evidence;
    ev["slow_io_ns"] = slow_ns;
    ev["total_io_ns"] = total_ns;
    ev["share"] = Share(slow_ns, total_ns);
    ev["files_read"] = slow_files;
    ev["bytes_read"] = slow_bytes;
    Json mounts = Json::MakeArray();
    std::string names;
    for (const auto& [mi, v] : per_mount) {
      const MountRow& m = model_.mounts[static_cast<size_t>(mi)];
      Json j = Json::MakeObject();
      j["mountpoint"] = m.mountpoint;
      j["fs_type"] = m.fstype;
      j["label"] = std::string(m.fs.label);
      j["files_read"] = v[0];
      j["bytes_read"] = v[1];
      j["io_ns"] = v[2];
      j["reads"] = v[3];
      mounts.Append(std::move(j));
      if (!names.empty()) names += ", ";
      names += m.mountpoint + " (" + m.fstype + ")";
    }
    ev["mounts"] = std::move(mounts);
    fd.summary = Percent(Share(slow_ns, total_ns)) + " of data-file I/O time (" + FormatDurationNs(slow_ns) +
                 ") went to network/FUSE storage: " + names + "; " + std::to_string(slow_files) +
                 " files, " + FormatBytes(slow_bytes) + " read there";
    fd.advice =
        "Every open, stat and read on this mount crosses a network or a FUSE daemon. Stage "
        "the dataset on local disk before training (copy or rsync it, or unpack one "
        "archive, to /content or /tmp), or read it as a few large shards (tar/WebDataset, "
        "TFRecord) so the latency is paid once per shard, not per sample.";
    report.AddFinding(std::move(fd));
  }

  void SmallReads(ReportBuilder& report) {
    uint64_t reads = 0, small = 0;
    std::vector<std::pair<uint64_t, size_t>> top;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      if (!data_[i]) continue;
      const FileStats& f = model_.files[i];
      if (f.BestSize() < kLargeFileBytes) continue;
      const uint64_t s = f.small_reads;
      const uint64_t nonzero = f.read_sizes.total() - std::min(f.read_sizes.total(), f.stdio_reads);
      reads += nonzero;
      small += s;
      if (s > 0) top.emplace_back(s, i);
    }
    if (reads < kSmallReadsMin || Share(small, reads) < kSmallReadsShare) return;
    std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.first > b.first; });
    Finding fd;
    fd.id = "io.small-reads";
    fd.severity = Severity::kInfo;
    Json& ev = fd.evidence;
    ev["small_reads"] = small;
    ev["reads_on_large_files"] = reads;
    ev["share"] = Share(small, reads);
    Json files = Json::MakeArray();
    for (size_t k = 0; k < top.size() && k < 10; ++k) {
      const FileStats& f = model_.files[top[k].second];
      Json j = Json::MakeObject();
      j["path"] = f.path;
      j["size"] = f.BestSize();
      j["reads"] = f.reads;
      j["mean_read_bytes"] = f.reads ? f.bytes_read / f.reads : 0;
      files.Append(std::move(j));
    }
    ev["files"] = std::move(files);
    fd.summary = Percent(Share(small, reads)) + " of " + std::to_string(reads) +
                 " reads on files of 1 MiB or more returned 4 KiB or less, e.g. " +
                 model_.files[top.front().second].path;
    fd.advice =
        "Each small read is a system call (and on network storage a round trip). Read "
        "large files in bigger blocks: open with a larger buffer (open(path, 'rb', "
        "buffering=1<<20)), read whole records at once, or memory-map the file (numpy.load "
        "with mmap_mode, np.memmap).";
    report.AddFinding(std::move(fd));
  }

  void Reread(ReportBuilder& report) {
    uint64_t files = 0, bytes = 0;
    std::vector<size_t> examples;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      if (!data_[i] || !Slow(model_.files[i])) continue;
      const FileStats& f = model_.files[i];
      if (f.passes >= 2) {
        ++files;
        if (examples.size() < 10) examples.push_back(i);
      }
      bytes += f.reread_bytes();
    }
    if (files < kRereadMinFiles && bytes < kRereadMinBytes) return;
    Finding fd;
    fd.id = "io.reread";
    fd.severity = Severity::kInfo;
    Json& ev = fd.evidence;
    ev["files_read_more_than_once"] = files;
    ev["reread_bytes"] = bytes;
    uint64_t max_passes = 0;
    Json ex = Json::MakeArray();
    for (size_t i : examples) {
      const FileStats& f = model_.files[i];
      max_passes = std::max(max_passes, f.passes);
      Json j = Json::MakeObject();
      j["path"] = f.path;
      j["passes"] = f.passes;
      j["fs_type"] = FsType(f);
      ex.Append(std::move(j));
    }
    ev["examples"] = std::move(ex);
    fd.summary = std::to_string(files) + " files on slow storage were read again in later passes (" +
                 FormatBytes(bytes) + " read more than once)";
    fd.advice =
        "Each epoch fetches the same files from slow storage again. Copy the dataset to "
        "local disk once, or cache decoded samples in memory or on local disk after the "
        "first epoch (e.g. a cached Dataset, or persistent_workers with an in-worker cache).";
    report.AddFinding(std::move(fd));
  }

  void MetadataHeavy(ReportBuilder& report) {
    uint64_t meta = 0, data_reads = 0, meta_ns = 0, path_stats = 0, open_attempts = 0, scans = 0;
    std::vector<std::pair<uint64_t, size_t>> top;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      const FileStats& f = model_.files[i];
      const MountRow* m = MountOf(f);
      if (f.code || (m && m->fs.cls == FsClass::kPseudo)) continue;
      // A copy_file_range or sendfile out of the file (cp, shutil.copy) reads its data too.
      // Reads of a file the run wrote (a cache of decoded samples read back in later
      // epochs) are data reads like any other.
      data_reads += f.reads - std::min(f.reads, f.zero_reads) + f.copies - std::min(f.copies, f.zero_copies);
      // Files the run writes or creates: their lookups (does the target exist yet?) are
      // part of producing output (shutil.copytree checks each destination three times),
      // not of finding the data it reads.
      if (f.output) continue;
      // A directory counts by its scans and opens, not its stats: Python's import system
      // stats every sys.path directory (the working directory included) again and again
      // to see whether it changed; a loader checks files, not their directories.
      const uint64_t stats = f.directory ? 0 : f.path_stats;
      const uint64_t mo = stats + f.opens + f.open_errors + f.dir_scans;
      meta += mo;
      path_stats += stats;
      open_attempts += f.opens + f.open_errors;
      scans += f.dir_scans;
      meta_ns += f.stat_ns + f.open_ns;
      if (mo > 0) top.emplace_back(mo, i);
    }
    if (meta < kMetadataMin ||
        static_cast<double>(meta) < kMetadataPerRead * static_cast<double>(std::max<uint64_t>(data_reads, 1))) {
      return;
    }
    std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.first > b.first; });
    std::map<std::string, uint64_t> by_dir;
    for (const auto& [n, i] : top) by_dir[std::string(DirOf(model_.files[i].path))] += n;
    std::vector<std::pair<uint64_t, std::string>> dirs;
    for (auto& [d, n] : by_dir) dirs.emplace_back(n, d);
    std::sort(dirs.begin(), dirs.end(), [](auto& a, auto& b) { return a.first > b.first; });
    Finding fd;
    fd.id = "io.metadata-heavy";
    fd.severity = Severity::kInfo;
    Json& ev = fd.evidence;
    ev["metadata_calls"] = meta;
    ev["path_stats"] = path_stats;
    ev["open_attempts"] = open_attempts;
    ev["directory_scans"] = scans;
    ev["data_reads"] = data_reads;
    ev["metadata_ns"] = meta_ns;
    Json dj = Json::MakeArray();
    for (size_t k = 0; k < dirs.size() && k < 10; ++k) {
      Json d = Json::MakeObject();
      d["path"] = dirs[k].second;
      d["metadata_calls"] = dirs[k].first;
      dj.Append(std::move(d));
    }
    ev["directories"] = std::move(dj);
    fd.summary = std::to_string(meta) + " metadata calls (stats, opens, directory scans) against " +
                 std::to_string(data_reads) + " data reads; most in " + dirs.front().second;
    fd.advice =
        "The program looks files up far more often than it reads them (os.path.exists/isfile "
        "checks, glob or os.walk every epoch, listdir in __getitem__). Build the file list "
        "once, keep it (or an index file) in memory, and drop per-sample existence checks; "
        "on network storage each lookup is a round trip.";
    report.AddFinding(std::move(fd));
  }

  // Whether each file is a step of an upward search: it was never found, and neither
  // was the same file name in its parent directory or in one of its subdirectories.
  // Tools look for their configuration from the working directory up to / (rustup's
  // rust-toolchain, a linter's pyproject.toml, npm's package.json); every miss on the way
  // is a probe, not a missing data file.
  std::vector<bool> UpwardSearchSteps() const {
    std::vector<bool> step(model_.files.size(), false);
    std::unordered_map<std::string_view, size_t> missing;  // path -> file index
    for (size_t i = 0; i < model_.files.size(); ++i) {
      const FileStats& f = model_.files[i];
      const bool exists = f.opens > 0 || f.stats > f.stat_errors;
      if (!exists && !f.errors.empty() && !f.path.empty() && f.path[0] == '/') missing.emplace(f.path, i);
    }
    std::string up;
    for (const auto& [path, i] : missing) {
      const std::string_view dir = DirOf(path);
      if (dir == "/") continue;
      const std::string_view parent = DirOf(dir);
      up.assign(parent);
      if (up != "/") up += '/';
      up += path.substr(dir.size() + 1);
      auto it = missing.find(up);
      if (it == missing.end()) continue;
      step[i] = true;
      step[it->second] = true;
    }
    return step;
  }

  void Errors(ReportBuilder& report) {
    const std::vector<bool> upward_search = UpwardSearchSteps();
    uint64_t hard = 0, lookup = 0, limits = 0, space = 0;
    std::map<std::string, uint64_t> by_errno;
    Json paths = Json::MakeArray();
    size_t listed = 0;
    for (size_t i = 0; i < model_.files.size(); ++i) {
      const FileStats& f = model_.files[i];
      if (f.errors.empty()) continue;
      const bool data = !f.code && !(MountOf(f) && MountOf(f)->fs.cls == FsClass::kPseudo);
      // The path exists (it opened or stat'ed fine at some point): its failed lookups
      // were a race with its creation or an existence check, not a missing file.
      const bool exists = f.opens > 0 || f.stats > f.stat_errors;
      uint64_t file_hard = 0, file_lookup = 0;
      for (const auto& [e, n] : f.errors) {
        if (e == EINTR || e == EAGAIN) continue;
        const bool io_failure = f.read_errors + f.write_errors > 0 && !IsHardError(e) &&
                                e != ENOENT && e != ENOTDIR && e != EACCES && e != EPERM && e != ELOOP &&
                                e != EEXIST && e != ENAMETOOLONG && e != EISDIR;
        const bool rw_failed = f.read_errors + f.write_errors > 0;
        if ((IsHardError(e) && (data || rw_failed || IsProcessLimit(e))) || io_failure) {
          // Open-time errors on pseudo or system paths (ENXIO on /dev/tty without a
          // terminal, say) are probes, not storage trouble; read/write failures count
          // everywhere.
          file_hard += n;
          if (IsProcessLimit(e)) limits += n;
          if (IsSpaceError(e)) space += n;
        } else if (data && f.open_errors > f.search_misses && !exists && !upward_search[i] &&
                   !IsCodeWithoutFile(f.path)) {
          // Only failed opens of files: a failed stat or opendir is a probe (pyenv's
          // hook directories, Python's import path), not a missing data file; nor is a
          // search-path step (the name found in a later directory: search_misses).
          file_lookup += std::min<uint64_t>(n, f.open_errors - f.search_misses);
        } else {
          continue;
        }
        by_errno[ErrName(e)] += n;
      }
      // Read/write failures are never lookups, whatever the errno.
      hard += file_hard;
      lookup += file_lookup;
      if ((file_hard || file_lookup) && listed < 20) {
        Json j = Json::MakeObject();
        j["path"] = f.path;
        Json ops = Json::MakeArray();
        for (const auto& op : f.error_ops) ops.Append(op);
        j["errors"] = std::move(ops);
        j["open_errors"] = f.open_errors;
        j["read_errors"] = f.read_errors;
        j["write_errors"] = f.write_errors;
        paths.Append(std::move(j));
        ++listed;
      }
    }
    if (hard == 0 && lookup < kLookupErrorsMin) return;
    Finding fd;
    fd.id = "io.errors";
    fd.severity = Severity::kWarning;
    Json& ev = fd.evidence;
    Json errs = Json::MakeObject();
    std::string list;
    for (const auto& [name, n] : by_errno) {
      errs[name] = n;
      if (!list.empty()) list += ", ";
      list += std::to_string(n) + " " + name;
    }
    ev["by_errno"] = std::move(errs);
    ev["storage_errors"] = hard;
    ev["lookup_errors"] = lookup;
    ev["limit_errors"] = limits;
    ev["space_errors"] = space;
    ev["paths"] = std::move(paths);
    fd.summary = "file operations failed: " + list;
    if (!ev["paths"].array().empty()) fd.summary += "; e.g. " + ev["paths"].array().front()["path"].str();
    fd.advice = limits > 0
                    ? "Opens failed because a limit ran out: EMFILE means the process reached its "
                      "open-descriptor limit (ulimit -n), ENFILE the system's, ENOMEM kernel memory. "
                      "Look for files, sockets or DataLoader workers that are opened and never "
                      "closed (use `with open(...)`), or raise the limit (ulimit -n, "
                      "resource.setrlimit(RLIMIT_NOFILE))."
                : hard > space
                    ? "Reads or opens failed with storage errors (EIO, ESTALE, ENOTCONN...): the "
                      "mount may have dropped (a Drive/FUSE daemon that died or timed out, an "
                      "NFS server gone). Remount, copy the data to local disk, and retry."
                : space > 0
                    ? "Writes ran out of room: ENOSPC means the filesystem is full (df -h), EDQUOT "
                      "a disk quota, EFBIG a file-size limit (ulimit -f, RLIMIT_FSIZE) or the "
                      "filesystem's largest file. Free space or write checkpoints and outputs to "
                      "a larger disk, or raise the limit."
                    : "Many opens failed on data paths (missing files or permissions): check "
                      "the dataset's file list against what is on disk, and the paths' base "
                      "directory (a relative path depends on the working directory).";
    report.AddFinding(std::move(fd));
  }

  IoModel model_;
  std::vector<bool> data_;
  std::vector<DirRow> dirs_;
};

}  // namespace
}  // namespace io

std::unique_ptr<Analysis> MakeIoAnalysis() { return std::make_unique<io::IoAnalysis>(); }

}  // namespace colabtrace::analyzer
