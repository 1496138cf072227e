// The io.* rules, one file per finding id in this folder, each registered in the rule
// registry (report/rule_registry.h). Each reads the run's typed I/O model (IoModel,
// io/file_stats.h) through an IoView (IoView::Of) and adds its finding; IoAnalysis
// (io/io_analysis.cpp) writes io.files[], io.directories[] and the rest of io.*, and runs the
// rules (RunRules). The thresholds are here, with what each rule means, because the
// report lists them too (io.thresholds).
#pragma once

#include <string>
#include <vector>

#include "core/format.h"
#include "io/file_stats.h"
#include "model/run_model.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer::io {

// ---- thresholds ---------------------------------------------------------------------------
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

// Which of the run's files are data files (IsDataFile), per IoModel file; built once
// (RunModel::Get<DataFiles>()).
struct DataFiles {
  std::vector<bool> of_file;
  static DataFiles Build(const RunModel& run);
};

// The model as the rules read it: which files are data files (IsDataFile), and each
// file's mount.
struct IoView {
  const IoModel& model;
  const std::vector<bool>& data;  // per file: a data file (IsDataFile)

  static IoView Of(const RunModel& run) { return {run.Get<IoModel>(), run.Get<DataFiles>().of_file}; }

  const MountRow* MountOf(const FileStats& f) const;
  std::string FsType(const FileStats& f) const;  // "unknown" without a mount
  bool Slow(const FileStats& f) const;           // on a network, FUSE or 9p/virtiofs mount
  bool ReadData(size_t i) const { return data[i] && model.files[i].bytes_read > 0; }
};


// Shared by the rules and the report's tables.
std::string Percent(double x);                   // "42%"
double Share(uint64_t a, uint64_t b);            // a / b, 0 when b is 0
uint64_t Median(std::vector<uint64_t> v);        // 0 when empty

}  // namespace colabtrace::analyzer::io
