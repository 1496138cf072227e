// What the I/O report's tables say about the run as a whole, worked out once from the I/O
// model (RunModel::Get<IoSummary>()): the totals, the two size histograms, how files were
// read, the directories of the files by I/O time and the data-file hotspots. The JSON
// (io.totals, io.histograms, io.access, io.directories, io.hotspots) and the text's
// File I/O sections both format from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/file_stats.h"
#include "model/run_model.h"

namespace colabtrace::analyzer::io {

// One directory of the run's files (directories themselves not counted as files): the
// sums over its files, and the data files among them (IoView::ReadData).
struct DirectoryRow {
  std::string path;
  int32_t mount = -1;  // index into IoModel::mounts, -1: none
  uint64_t files = 0, data_files = 0, small_files = 0, median_size = 0, opens = 0, reads = 0,
           bytes_read = 0, read_ns = 0, open_ns = 0, stat_ns = 0, stats = 0;
  uint64_t io_ns() const { return read_ns + open_ns + stat_ns; }
};

struct IoSummary {
  // Over the job's processes (IoModel::processes).
  uint64_t opens = 0, reads = 0, bytes_read = 0, read_ns = 0, stats = 0, open_errors = 0;
  uint64_t data_files_read = 0;   // files whose data was read (IoView::ReadData)
  SizeHistogram data_file_sizes;  // of those files (FileStats::BestSize)
  SizeHistogram read_sizes;       // of every read, all files
  uint64_t sequential_reads = 0, consecutive_reads = 0, random_reads = 0, zero_byte_reads = 0;
  uint64_t files_read_more_than_once = 0;  // data files read through 2 or more opens
  uint64_t reread_bytes = 0;               // over data files
  std::vector<DirectoryRow> directories;   // by I/O time, most first (ties: by path)
  // Up to kHotspots data files whose data was read, by I/O time (ties: model order), as
  // indexes into IoModel::files: the JSON lists them all, the text the first ten.
  static constexpr size_t kHotspots = 20;
  std::vector<size_t> hotspots;

  static IoSummary Build(const RunModel& run);
};

}  // namespace colabtrace::analyzer::io
