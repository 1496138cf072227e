// FileStats and IoModel: the I/O records of every process replayed into per-file,
// per-mount and per-process counters.
//
// The trace is a timeline of calls on descriptors; this is where it becomes one row per
// path. Each process is replayed in time order, descriptor by descriptor: an open binds
// a descriptor to a path (and a new file position), dup shares it, close ends it, and
// every read, seek, fd stat and mapping on it is charged to that path. Rows are summed
// over processes by normalized path.
//
// What each counter means (also printed in the report's "definitions"):
//   opens       successful calls of the open family that created a descriptor: open*,
//               openat*, __open*_2, creat*, fopen*, freopen*, mkstemp*/mkostemp*. Not
//               counted: failed opens (open_errors), fdopen, dup, opendir, inherited
//               descriptors.
//   reads       read-family calls on traced files that returned >= 0 bytes, end-of-file
//               reads (0 bytes) included: read, pread*, readv, preadv*, __read_chk,
//               __pread*_chk, fread*, __fread*_chk, fgets*, getline, getdelim. Failed
//               ones are read_errors. Copies (sendfile, copy_file_range) and mappings
//               are counted apart.
//   bytes_read  the sum of what those reads returned.
//   read_ns     wall time inside those calls.
//   stats       stat-family calls (stat*, lstat*, fstat*, fstatat*, __*xstat*, statx)
//               and access/faccessat/euidaccess/eaccess on the path or on a descriptor
//               of it, failed ones
//               included (stat_errors counts those).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "io/filesystems.h"
#include "model/run_model.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::io {

// Darshan's size bins (inclusive upper bounds): 0-100, 100-1K, 1K-10K, 10K-100K,
// 100K-1M, 1M-4M, 4M-10M, 10M-100M, 100M-1G, 1G+ (K = 1024).
inline constexpr int kSizeBins = 10;
std::string_view SizeBinName(int bin);
int SizeBin(uint64_t bytes);

struct SizeHistogram {
  std::array<uint64_t, kSizeBins> counts{};
  void Add(uint64_t bytes) { ++counts[static_cast<size_t>(SizeBin(bytes))]; }
  uint64_t total() const;
};

struct MountRow {
  uint64_t id = 0;
  uint64_t dev = 0;
  std::string fstype, mountpoint, source;
  FsInfo fs;
  // Activity on files of this mount (all processes).
  uint64_t files = 0, opens = 0, reads = 0, bytes_read = 0, read_ns = 0, open_ns = 0,
           stats = 0, stat_ns = 0;
};

struct FileStats {
  std::string path;            // lexically normalized ("a/./b/../c" -> "a/c")
  std::string host;            // the machine it is on, when the traces come from several
                               // (HostIdentity); "" for a single-host report
  int32_t mount = -1;          // index into IoModel::mounts, -1 unknown
  bool directory = false;      // opened as or stat'ed as a directory
  bool code = false;           // Python/library code, config or pseudo files (see IsDataFile)
  uint64_t opens = 0, open_errors = 0, open_ns = 0, inherited = 0;
  uint64_t reads = 0, read_errors = 0, bytes_read = 0, read_ns = 0, zero_reads = 0;
  uint64_t stats = 0, stat_errors = 0, stat_ns = 0;
  uint64_t path_stats = 0;  // the stats (and access calls) that named a path, not a descriptor
  uint64_t writes = 0, write_errors = 0, bytes_written = 0, write_ns = 0;
  uint64_t mmaps = 0, mapped_bytes = 0, copies = 0, bytes_copied = 0;
  uint64_t zero_copies = 0;  // copy_file_range/sendfile calls out of the file that moved no byte
  bool output = false;       // opened (or tried) for writing or creation: a file the run produces
  uint64_t dir_scans = 0, dir_entries = 0;
  uint64_t sequential_reads = 0, consecutive_reads = 0, random_reads = 0;
  uint64_t passes = 0;    // descriptors (opens) through which at least one byte was read
  uint64_t max_end = 0;   // the highest byte offset any read reached
  uint64_t unplaced_bytes = 0;  // bytes read where the offset was unknown (after an fdopen)
  std::optional<uint64_t> size;  // st_size seen by a stat or measured at open
  uint64_t eof_at = 0;    // position of a 0-byte read (end of file), 0 if none
  SizeHistogram read_sizes;  // reads that returned > 0 bytes
  uint64_t small_reads = 0;  // unbuffered reads (system calls) that returned 1..4096 bytes
  uint64_t stdio_reads = 0;  // fread/fgets/getline calls that returned bytes: served from a
                             // FILE's buffer, their refills are not traced
  // Failed opens that were one step of a search path: the same file name opened fine in
  // another directory by the same process within its next few opens (kSearchWindow; a
  // compiler trying <cstdlib> in each -I directory, ld trying libfoo.a in each -L one).
  uint64_t search_misses = 0;
  // A row that sums the files of a directory that a process's aggregates did not keep one
  // by one (its file slots were full): path is "<directory>/<more files>".
  bool summed_files = false;
  // A file row kept by a heavy-hitter entry (format 1.6: a file that came after the file
  // slots were full): its sums count from counted_from_ns (on the trace's clock; 0: from
  // the start), counted_after_ns after its process started; it may have had up to
  // calls_before_max calls before, which are in its directory's "<more files>" row.
  uint64_t counted_from_ns = 0, counted_after_ns = 0, calls_before_max = 0;
  std::vector<uint32_t> pids;
  std::vector<std::pair<int, uint64_t>> errors;  // errno -> count (opens, reads, writes)
  std::vector<std::string> error_ops;            // "open ENOENT" ... (first few)

  // Best estimate of the file's size: a stat/open measurement, else where reading hit
  // the end, else the furthest byte read.
  uint64_t BestSize() const;
  bool size_known() const { return size.has_value() || eof_at != 0; }
  // Bytes read beyond the most distinct bytes the reads can have covered (the furthest
  // byte read, plus the bytes read at unknown offsets but never more than the file's
  // size): at least this much was read more than once.
  uint64_t reread_bytes() const {
    uint64_t distinct = max_end + unplaced_bytes;
    if (unplaced_bytes && size_known()) distinct = std::min(distinct, BestSize());
    return bytes_read > distinct ? bytes_read - distinct : 0;
  }
  uint64_t io_ns() const { return open_ns + read_ns + stat_ns; }
};

struct ProcessIo {
  uint32_t pid = 0;
  int64_t ppid = 0;
  bool forked = false;
  bool run_wrapper = false;  // `colabtrace run`'s own trace (IsRunWrapper): not a job process
  std::string command;
  uint64_t opens = 0, open_errors = 0, reads = 0, read_errors = 0, bytes_read = 0,
           read_ns = 0, open_ns = 0, stats = 0, stat_ns = 0, writes = 0, bytes_written = 0,
           dir_scans = 0, mmaps = 0, copies = 0, files = 0, records = 0;
  uint64_t unknown_fd_events = 0;  // events on descriptors with no known open
  // The model was built from the trace's I/O aggregates, not its io_* events
  // (IoFromAggregates); then, when its file slots filled, from when new files were summed
  // per directory (ns; 0: never).
  bool from_aggregates = false;
  uint64_t per_directory_from_ns = 0;
  // The same on data files only (not code, libraries, configuration or pseudo files: see
  // LooksLikeCode): what the job reads, whatever the interpreter's caches hold.
  uint64_t data_opens = 0, data_reads = 0, data_bytes_read = 0;
};

class IoModel {
 public:
  // The run's I/O model (RunModel::Get<IoModel>()): every trace, with the run's process
  // facts.
  static IoModel Build(const RunModel& run);
  // The same over any selection of traces (one trace: that process's own files, as
  // `export --format ndjson` writes them per process: ProcessIoModels).
  static IoModel Build(const std::vector<const ProcessTrace*>& traces,
                       const RunModel* run = nullptr);

  std::vector<FileStats> files;
  std::vector<MountRow> mounts;
  std::vector<ProcessIo> processes;  // same order as the traces
  uint64_t io_records = 0;           // I/O records (types 32-63) in all traces
  // Traces from several machines (a directory gathered from a cluster): one path on two
  // hosts is two files, so files and mounts are keyed by host as well.
  bool multi_host = false;

 private:
  friend class ProcessReplay;
  size_t FileIndex(const std::string& normalized);
  int32_t MountIndex(const format::Mount& m, std::string_view fstype, std::string_view mp,
                     std::string_view source);
  absl::flat_hash_map<std::string, size_t> by_path_;  // (host, path) -> files[]
  std::string host_;                                  // of the trace being replayed
  absl::flat_hash_map<std::string, int32_t> mount_by_key_;  // id, mount point, type -> mounts[]
};

// Whether the I/O model of trace t comes from its I/O aggregates (wire.h) rather than its
// io_* events: only when it has them, and either its window gave up I/O events (or its
// cap kept some from being written: TraceWindow), or COLABTRACE_ANALYZER_IGNORE_IO_EVENTS=1
// is set (tests prove with it that the aggregates alone give the same findings).
bool IoFromAggregates(const ProcessTrace& t);

// "a//b/./c/../d" -> "a/b/d" (lexical; ".." at the root stays at the root).
std::string NormalizePath(std::string_view p);

// A data file: not Python or native library code, not configuration under /etc, not a
// pseudo filesystem. The io.* findings look at data files only, so `import torch`
// reading 2,000 small .py files is not "many small files".
bool IsDataFile(const FileStats& f, const std::vector<MountRow>& mounts);

// Adds one file's activity to a row that sums files (a mount's, a directory's): one
// more file, and its opens, reads, bytes read, stats and their times.
template <class Row> void AddFileActivity(Row& row, const FileStats& f) {
  ++row.files;
  row.opens += f.opens;
  row.reads += f.reads;
  row.bytes_read += f.bytes_read;
  row.read_ns += f.read_ns;
  row.open_ns += f.open_ns;
  row.stats += f.stats;
  row.stat_ns += f.stat_ns;
}

// The directory part of a normalized path ("/" for "/x"; "." for a relative "x").
std::string_view DirOf(std::string_view path);

// Each process's own I/O model, as `export --format ndjson` lists files per process
// (RunModel::Get<ProcessIoModels>()).
struct ProcessIoModels {
  std::vector<IoModel> of_trace;  // same order as the run's traces
  static ProcessIoModels Build(const RunModel& run);
};

}  // namespace colabtrace::analyzer::io
