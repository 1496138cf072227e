#include "io/io_summary.h"

#include <algorithm>
#include <map>

#include "io/rules/rules.h"

namespace colabtrace::analyzer::io {
namespace {

std::vector<DirectoryRow> Directories(const IoView& view) {
  const IoModel& model = view.model;
  std::map<std::string, DirectoryRow> dirs;
  std::map<std::string, std::vector<uint64_t>> sizes;
  for (size_t i = 0; i < model.files.size(); ++i) {
    const FileStats& f = model.files[i];
    if (f.directory) continue;
    const std::string dir(DirOf(f.path));
    DirectoryRow& d = dirs[dir];
    d.path = dir;
    if (d.mount < 0) d.mount = f.mount;
    AddFileActivity(d, f);
    if (view.ReadData(i)) {
      ++d.data_files;
      sizes[dir].push_back(f.BestSize());
      if (f.BestSize() < kSmallFileBytes) ++d.small_files;
    }
  }
  std::vector<DirectoryRow> out;
  out.reserve(dirs.size());
  for (auto& [path, d] : dirs) {
    if (auto it = sizes.find(path); it != sizes.end()) d.median_size = Median(std::move(it->second));
    out.push_back(std::move(d));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const DirectoryRow& a, const DirectoryRow& b) { return a.io_ns() > b.io_ns(); });
  return out;
}

std::vector<size_t> Hotspots(const IoView& view, size_t n) {
  const IoModel& model = view.model;
  std::vector<size_t> idx;
  for (size_t i = 0; i < model.files.size(); ++i) {
    if (view.ReadData(i) && model.files[i].io_ns() > 0) idx.push_back(i);
  }
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return model.files[a].io_ns() > model.files[b].io_ns() ||
           (model.files[a].io_ns() == model.files[b].io_ns() && a < b);
  });
  if (idx.size() > n) idx.resize(n);
  return idx;
}

}  // namespace

IoSummary IoSummary::Build(const RunModel& run) {
  const IoView view = IoView::Of(run);
  const IoModel& model = view.model;
  IoSummary s;
  for (const ProcessIo& p : model.processes) {
    s.opens += p.opens;
    s.reads += p.reads;
    s.bytes_read += p.bytes_read;
    s.read_ns += p.read_ns;
    s.stats += p.stats;
    s.open_errors += p.open_errors;
  }
  for (size_t i = 0; i < model.files.size(); ++i) {
    const FileStats& f = model.files[i];
    if (view.ReadData(i)) {
      ++s.data_files_read;
      s.data_file_sizes.Add(f.BestSize());
    }
    for (size_t b = 0; b < f.read_sizes.counts.size(); ++b) s.read_sizes.counts[b] += f.read_sizes.counts[b];
    s.sequential_reads += f.sequential_reads;
    s.consecutive_reads += f.consecutive_reads;
    s.random_reads += f.random_reads;
    s.zero_byte_reads += f.zero_reads;
    if (view.data[i]) {
      if (f.passes >= 2) ++s.files_read_more_than_once;
      s.reread_bytes += f.reread_bytes();
    }
  }
  s.directories = Directories(view);
  s.hotspots = Hotspots(view, kHotspots);
  return s;
}

}  // namespace colabtrace::analyzer::io
