// IoView and the small helpers the io.* rules and the report's tables share.
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "io/rules/rules.h"

namespace colabtrace::analyzer::io {

DataFiles DataFiles::Build(const RunModel& run) {
  const IoModel& model = run.Get<IoModel>();
  DataFiles d;
  d.of_file.reserve(model.files.size());
  for (const FileStats& f : model.files) d.of_file.push_back(IsDataFile(f, model.mounts));
  return d;
}

const MountRow* IoView::MountOf(const FileStats& f) const {
  return f.mount >= 0 && static_cast<size_t>(f.mount) < model.mounts.size()
             ? &model.mounts[static_cast<size_t>(f.mount)]
             : nullptr;
}

std::string IoView::FsType(const FileStats& f) const {
  const MountRow* m = MountOf(f);
  return m ? m->fstype : "unknown";
}

bool IoView::Slow(const FileStats& f) const {
  const MountRow* m = MountOf(f);
  return m && m->fs.slow;
}

std::string Percent(double x) {
  char b[16];
  std::snprintf(b, sizeof(b), "%.0f%%", 100.0 * x);
  return b;
}

double Share(uint64_t a, uint64_t b) {
  return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
}

uint64_t Median(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(mid), v.end());
  return v[mid];
}

}  // namespace colabtrace::analyzer::io
