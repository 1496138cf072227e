// io.small-reads (info)
//
// Rule: at least kSmallReadsShare of at least kSmallReadsMin system-call reads on data
// files of kLargeFileBytes or more returned kSmallReadBytes or less (rules.h); stdio reads
// are served from a FILE's buffer and do not count.
#include <algorithm>
#include <map>

#include "io/rules/rules.h"

namespace colabtrace::analyzer::io {

void SmallReadsRule(RuleContext& ctx) {
  const IoView in = IoView::Of(ctx.run());
  uint64_t reads = 0, small = 0;
  std::vector<std::pair<uint64_t, size_t>> top;
  for (size_t i = 0; i < in.model.files.size(); ++i) {
    if (!in.data[i]) continue;
    const FileStats& f = in.model.files[i];
    if (f.BestSize() < kLargeFileBytes) continue;
    const uint64_t s = f.small_reads;
    const uint64_t nonzero = f.read_sizes.total() - std::min(f.read_sizes.total(), f.stdio_reads);
    reads += nonzero;
    small += s;
    if (s > 0) top.emplace_back(s, i);
  }
  if (reads < kSmallReadsMin || Share(small, reads) < kSmallReadsShare) return;
  std::sort(top.begin(), top.end(), [](auto& a, auto& b) { return a.first > b.first; });
  Finding finding = Finding::Of(FindingId::kIoSmallReads, 0);
  Json& ev = finding.evidence;
  ev["small_reads"] = small;
  ev["reads_on_large_files"] = reads;
  ev["share"] = Share(small, reads);
  Json files = Json::MakeArray();
  for (size_t k = 0; k < top.size() && k < 10; ++k) {
    const FileStats& f = in.model.files[top[k].second];
    Json j = Json::MakeObject();
    j["path"] = f.path;
    j["size"] = f.BestSize();
    j["reads"] = f.reads;
    j["mean_read_bytes"] = f.reads ? f.bytes_read / f.reads : 0;
    files.Append(std::move(j));
  }
  ev["files"] = std::move(files);
  finding.summary = Percent(Share(small, reads)) + " of " + std::to_string(reads) +
                    " reads on files of 1 MiB or more returned 4 KiB or less, e.g. " +
                    in.model.files[top.front().second].path;
  ctx.Add(std::move(finding));
}

namespace {
const RuleRegistration kSmallReadsRuleRegistration(SmallReadsRule, {FindingId::kIoSmallReads});
}  // namespace

}  // namespace colabtrace::analyzer::io
