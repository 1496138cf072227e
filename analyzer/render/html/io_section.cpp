// I/O: where the time went, by directory and by filesystem class; the sizes of the data
// files read (Darshan's bins: the small-file histogram); the files that took the most
// time. Data files only (io::IsDataFile: not code, configuration or pseudo files), as
// the io.* findings count them. Drawn from the run model's IoModel.
#include <algorithm>
#include <map>

#include "io/file_stats.h"
#include "render/html/escape.h"
#include "render/html/sections.h"
#include "render/html/svg.h"

namespace colabtrace::analyzer::html {
namespace {

using io::FileStats;
using io::IoModel;

struct TimeRow {
  uint64_t ns = 0, files = 0, bytes = 0;
};

std::vector<Bar> TopBars(const std::map<std::string, TimeRow>& rows, size_t* omitted) {
  std::vector<std::pair<std::string, TimeRow>> v(rows.begin(), rows.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  *omitted = v.size() > kMaxBars ? v.size() - kMaxBars : 0;
  if (v.size() > kMaxBars) v.resize(kMaxBars);
  std::vector<Bar> bars;
  for (const auto& [name, r] : v) {
    bars.push_back({name, static_cast<double>(r.ns), FormatDurationNs(r.ns),
                    name + ": " + FormatDurationNs(r.ns) + " in open, read and stat calls on " +
                        std::to_string(r.files) + " files, " + FormatBytes(r.bytes) + " read",
                    "bar"});
  }
  return bars;
}

}  // namespace

std::string IoSection(const PageContext& ctx) {
  std::string s = "<section id=\"io\"><h2>File I/O</h2>\n";
  const IoModel* m = &ctx.report.run().Get<IoModel>();
  std::map<std::string, TimeRow> by_dir, by_class;
  io::SizeHistogram sizes;
  std::vector<const FileStats*> files;
  for (const FileStats& f : m->files) {
    if (f.directory || !io::IsDataFile(f, m->mounts)) continue;
    if (f.bytes_read > 0) sizes.Add(f.BestSize());
    if (f.io_ns() == 0 && f.bytes_read == 0) continue;
    files.push_back(&f);
    std::string dir(io::DirOf(f.path));
    if (!f.host.empty()) dir = f.host + ":" + dir;
    TimeRow& d = by_dir[dir];
    d.ns += f.io_ns(), ++d.files, d.bytes += f.bytes_read;
    const io::MountRow* mount =
        f.mount >= 0 && static_cast<size_t>(f.mount) < m->mounts.size() ? &m->mounts[static_cast<size_t>(f.mount)] : nullptr;
    std::string cls = mount ? std::string(io::FsClassName(mount->fs.cls)) : "unknown";
    if (mount && !mount->fs.label.empty()) cls += " (" + std::string(mount->fs.label) + ")";
    TimeRow& c = by_class[cls];
    c.ns += f.io_ns(), ++c.files, c.bytes += f.bytes_read;
  }
  if (files.empty() && sizes.total() == 0) return s + "<p>No data files were read.</p></section>\n";
  size_t omitted = 0;
  s += "<h3>Time by directory</h3>\n" + BarChart(TopBars(by_dir, &omitted), "I/O time by directory");
  s += MoreNote(omitted, "directories");
  s += "<h3>Time by filesystem class</h3>\n" + BarChart(TopBars(by_class, &omitted), "I/O time by filesystem class");
  s += MoreNote(omitted, "filesystem classes");

  // The small-file histogram: data files read, by size.
  std::vector<Bar> bins;
  for (int b = 0; b < io::kSizeBins; ++b) {
    const uint64_t n = sizes.counts[static_cast<size_t>(b)];
    bins.push_back({std::string(io::SizeBinName(b)), static_cast<double>(n), std::to_string(n),
                    std::to_string(n) + " files of " + std::string(io::SizeBinName(b)) + " bytes read",
                    b <= 4 ? "bar small" : "bar"});
  }
  s += "<h3>Sizes of the files read</h3>\n<figure class=\"sizes\" data-files=\"" + std::to_string(sizes.total()) +
       "\">" + BarChart(bins, "data files read, by size") + "<figcaption>" + std::to_string(sizes.total()) +
       " data files read (bins in bytes, K = 1024; files under 1 MiB highlighted)</figcaption></figure>\n";

  // The files that took the most time.
  std::stable_sort(files.begin(), files.end(), [](const FileStats* a, const FileStats* b) {
    return a->io_ns() != b->io_ns() ? a->io_ns() > b->io_ns() : a->bytes_read > b->bytes_read;
  });
  const size_t shown = std::min(files.size(), kMaxBars * 2);
  s += "<h3>Files by I/O time</h3>\n<table class=\"files\"><thead><tr><th>path</th><th>filesystem</th><th>opens</th>"
       "<th>reads</th><th>read</th><th>size</th><th>time</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < shown; ++i) {
    const FileStats& f = *files[i];
    const io::MountRow* mount =
        f.mount >= 0 && static_cast<size_t>(f.mount) < m->mounts.size() ? &m->mounts[static_cast<size_t>(f.mount)] : nullptr;
    s += "<tr><td class=\"path\">" + Text(f.host.empty() ? f.path : f.host + ":" + f.path) + "</td><td>" +
         Text(mount ? mount->fstype : "unknown") + "</td><td>" + std::to_string(f.opens) + "</td><td>" +
         std::to_string(f.reads) + "</td><td>" + FormatBytes(f.bytes_read) + "</td><td>" +
         (f.size_known() || f.bytes_read > 0 ? FormatBytes(f.BestSize()) : "") + "</td><td>" +
         FormatDurationNs(f.io_ns()) + "</td></tr>\n";
  }
  s += "</tbody></table>\n" + MoreNote(files.size() - shown, "files");
  return s + "</section>\n";
}

}  // namespace colabtrace::analyzer::html
