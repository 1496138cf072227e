// io.network-filesystem (warning)
//
// Rule: slow mounts (network, FUSE, 9p/virtiofs) took at least kSlowTimeShare of the data
// files' I/O time (open + read + stat), and at least kSlowMinFiles files or
// kSlowMinBytes were read from them (rules.h). The evidence is per mount.
#include <algorithm>
#include <map>
#include <array>

#include "io/rules/rules.h"

namespace colabtrace::analyzer::io {

void NetworkFilesystemRule(RuleContext& ctx) {
  const IoView in = IoView::Of(ctx.run());
  uint64_t total_ns = 0, slow_ns = 0, slow_files = 0, slow_bytes = 0;
  std::map<int32_t, std::array<uint64_t, 4>> per_mount;  // files, bytes, io_ns, reads
  for (size_t i = 0; i < in.model.files.size(); ++i) {
    if (!in.data[i]) continue;
    const FileStats& f = in.model.files[i];
    total_ns += f.io_ns();
    if (!in.Slow(f)) continue;
    slow_ns += f.io_ns();
    if (f.bytes_read > 0) ++slow_files;
    slow_bytes += f.bytes_read;
    auto& pm = per_mount[f.mount];
    pm[0] += f.bytes_read > 0 ? 1 : 0;
    pm[1] += f.bytes_read;
    pm[2] += f.io_ns();
    pm[3] += f.reads;
  }
  if (slow_ns == 0 || Share(slow_ns, total_ns) < kSlowTimeShare) return;
  if (slow_files < kSlowMinFiles && slow_bytes < kSlowMinBytes) return;
  Finding finding = Finding::Of(FindingId::kIoNetworkFilesystem, 0);
  Json& ev = finding.evidence;
  ev["slow_io_ns"] = slow_ns;
  ev["total_io_ns"] = total_ns;
  ev["share"] = Share(slow_ns, total_ns);
  ev["files_read"] = slow_files;
  ev["bytes_read"] = slow_bytes;
  Json mounts = Json::MakeArray();
  std::string names;
  for (const auto& [mi, v] : per_mount) {
    const MountRow& m = in.model.mounts[static_cast<size_t>(mi)];
    Json j = Json::MakeObject();
    j["mountpoint"] = m.mountpoint;
    j["fs_type"] = m.fstype;
    j["label"] = std::string(m.fs.label);
    j["files_read"] = v[0];
    j["bytes_read"] = v[1];
    j["io_ns"] = v[2];
    j["reads"] = v[3];
    mounts.Append(std::move(j));
    if (!names.empty()) names += ", ";
    names += m.mountpoint + " (" + m.fstype + ")";
  }
  ev["mounts"] = std::move(mounts);
  finding.summary = Percent(Share(slow_ns, total_ns)) + " of data-file I/O time (" + FormatDurationNs(slow_ns) +
                    ") went to network/FUSE storage: " + names + "; " + std::to_string(slow_files) +
                    " files, " + FormatBytes(slow_bytes) + " read there";
  ctx.Add(std::move(finding));
}

namespace {
const RuleRegistration kNetworkFilesystemRuleRegistration(NetworkFilesystemRule,
    {FindingId::kIoNetworkFilesystem});
}  // namespace

}  // namespace colabtrace::analyzer::io
