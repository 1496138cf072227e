// io.metadata-heavy (info)
//
// Rule: path-based metadata calls (stats by path, open attempts, directory scans) number
// at least kMetadataMin and at least kMetadataPerRead per data read (rules.h: what counts
// and what does not).
#include <algorithm>
#include <map>

#include "io/rules/rules.h"

namespace colabtrace::analyzer::io {

void MetadataHeavyRule(RuleContext& ctx) {
  const IoView in = IoView::Of(ctx.run());
  uint64_t meta = 0, data_reads = 0, meta_ns = 0, path_stats = 0, open_attempts = 0, scans = 0;
  std::vector<std::pair<uint64_t, size_t>> top;
  for (size_t i = 0; i < in.model.files.size(); ++i) {
    const FileStats& f = in.model.files[i];
    const MountRow* m = in.MountOf(f);
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
  for (const auto& [n, i] : top) by_dir[std::string(DirOf(in.model.files[i].path))] += n;
  std::vector<std::pair<uint64_t, std::string>> dirs;
  for (auto& [d, n] : by_dir) dirs.emplace_back(n, d);
  std::sort(dirs.begin(), dirs.end(), [](auto& a, auto& b) { return a.first > b.first; });
  Finding finding = Finding::Of(FindingId::kIoMetadataHeavy, 0);
  Json& ev = finding.evidence;
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
  finding.summary = std::to_string(meta) + " metadata calls (stats, opens, directory scans) against " +
                    std::to_string(data_reads) + " data reads; most in " + dirs.front().second;
  ctx.Add(std::move(finding));
}

namespace {
const RuleRegistration kMetadataHeavyRuleRegistration(MetadataHeavyRule,
    {FindingId::kIoMetadataHeavy});
}  // namespace

}  // namespace colabtrace::analyzer::io
