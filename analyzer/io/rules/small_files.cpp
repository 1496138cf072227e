// io.small-files (warning)
//
// Rule: at least kSmallFilesMin data files under kSmallFileBytes were read, and they are
// at least kSmallFilesShare of the data files read (rules.h): per-file open and lookup
// latency then dominates the bytes. The advice says whether a copy to local disk helps
// (not when they lie on tmpfs already).
#include <algorithm>
#include <map>

#include "io/rules/rules.h"

namespace colabtrace::analyzer::io {

void SmallFilesRule(RuleContext& ctx) {
  const IoView in = IoView::Of(ctx.run());
  uint64_t read_files = 0, small = 0, small_bytes = 0, small_ns = 0;
  bool all_in_memory = true;  // every small file lies on tmpfs/ramfs
  std::vector<uint64_t> sizes;
  std::map<std::string, uint64_t> by_dir;
  for (size_t i = 0; i < in.model.files.size(); ++i) {
    if (!in.ReadData(i)) continue;
    const FileStats& f = in.model.files[i];
    ++read_files;
    if (f.BestSize() >= kSmallFileBytes) continue;
    ++small;
    const MountRow* m = in.MountOf(f);
    all_in_memory = all_in_memory && m && m->fs.cls == FsClass::kMemory;
    small_bytes += f.bytes_read;
    small_ns += f.io_ns();
    sizes.push_back(f.BestSize());
    ++by_dir[std::string(DirOf(f.path))];
  }
  if (small < kSmallFilesMin || Share(small, read_files) < kSmallFilesShare) return;
  Finding finding = Finding::Of(FindingId::kIoSmallFiles, 0);
  const uint64_t median = Median(sizes);
  Json& ev = finding.evidence;
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
  finding.summary = std::to_string(small) + " small files read (median " + FormatBytes(median) + ", " +
                    FormatBytes(small_bytes) + " in all) from " + std::to_string(dirs.size()) +
                    (dirs.size() == 1 ? " directory" : " directories") + ", e.g. " + dirs.front().second;
  // Files already in memory (tmpfs, /dev/shm) gain nothing from a copy to disk.
  finding.advice += all_in_memory ? std::string(" (they are on tmpfs already: the cost is the "
                                           "system calls per file, not the storage).")
                             : std::string("; or copy the directory to local disk first (e.g. "
                                           "/content or /tmp) and read from there.");
  ctx.Add(std::move(finding));
}

namespace {
const RuleRegistration kSmallFilesRuleRegistration(SmallFilesRule, {FindingId::kIoSmallFiles});
}  // namespace

}  // namespace colabtrace::analyzer::io
