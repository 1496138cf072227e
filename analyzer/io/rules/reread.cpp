// io.reread (info)
//
// Rule: on slow storage, at least kRereadMinFiles files were read through two or more
// separate opens (epochs re-reading the dataset), or at least kRereadMinBytes were read
// more than once (rules.h).
#include <algorithm>
#include <map>

#include "io/rules/rules.h"

namespace colabtrace::analyzer::io {

void RereadRule(RuleContext& ctx) {
  const IoView in = IoView::Of(ctx.run());
  uint64_t files = 0, bytes = 0;
  std::vector<size_t> examples;
  for (size_t i = 0; i < in.model.files.size(); ++i) {
    if (!in.data[i] || !in.Slow(in.model.files[i])) continue;
    const FileStats& f = in.model.files[i];
    if (f.passes >= 2) {
      ++files;
      if (examples.size() < 10) examples.push_back(i);
    }
    bytes += f.reread_bytes();
  }
  if (files < kRereadMinFiles && bytes < kRereadMinBytes) return;
  Finding finding = Finding::Of(FindingId::kIoReread, 0);
  Json& ev = finding.evidence;
  ev["files_read_more_than_once"] = files;
  ev["reread_bytes"] = bytes;
  uint64_t max_passes = 0;
  Json ex = Json::MakeArray();
  for (size_t i : examples) {
    const FileStats& f = in.model.files[i];
    max_passes = std::max(max_passes, f.passes);
    Json j = Json::MakeObject();
    j["path"] = f.path;
    j["passes"] = f.passes;
    j["fs_type"] = in.FsType(f);
    ex.Append(std::move(j));
  }
  ev["examples"] = std::move(ex);
  finding.summary = std::to_string(files) + " files on slow storage were read again in later passes (" +
                    FormatBytes(bytes) + " read more than once)";
  ctx.Add(std::move(finding));
}

namespace {
const RuleRegistration kRereadRuleRegistration(RereadRule, {FindingId::kIoReread});
}  // namespace

}  // namespace colabtrace::analyzer::io
