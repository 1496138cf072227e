// io.errors (warning)
//
// Rule: a failed read or write, an open failing with a storage error or a limit, or at
// least kLookupErrorsMin lookup failures of opens on data paths that never existed in the
// run and were no probe (rules.h: the probes left out). The advice follows the kind:
// a limit (EMFILE...), storage (EIO, ESTALE...), space (ENOSPC, EDQUOT, EFBIG), lookups.
#include <algorithm>
#include <map>
#include <cerrno>
#include <string_view>
#include <unordered_map>

#include "io/rules/rules.h"

namespace colabtrace::analyzer::io {
namespace {

bool IsCodeWithoutFile(std::string_view path) {
  const std::string_view name = Basename(path);
  return name.size() >= 2 && name.front() == '<' && name.back() == '>';
}

// Errors of the process's (or the host's) descriptor table or memory, not of the path:
// they mean the program ran out of a limit (a descriptor leak, ulimit -n) whatever file
// it was opening, so they count on every path, code and pseudo files included.
bool IsProcessLimit(int e) { return e == EMFILE || e == ENFILE || e == ENOMEM; }

// Writes that ran out of room: a full filesystem, a quota, a file-size limit (ulimit -f,
// RLIMIT_FSIZE) or the filesystem's largest file. The storage works; no remount helps.
bool IsSpaceError(int e) { return e == ENOSPC || e == EDQUOT || e == EFBIG; }

bool IsHardError(int e) {
  switch (e) {
    case EIO: case ENXIO: case ESTALE: case ENOTCONN: case ETIMEDOUT: case EREMOTEIO:
    case ECONNRESET: case ECONNABORTED: case EHOSTDOWN: case EHOSTUNREACH: case ENETDOWN:
    case ENETUNREACH: case ENOMEDIUM: case EMFILE: case ENFILE: case ENOSPC: case EDQUOT:
    case EROFS: case EBADMSG: case EFBIG: case ENOMEM:
      return true;
    default:
      return false;
  }
}

// Whether each file is a step of an upward search: it was never found, and neither
// was the same file name in its parent directory or in one of its subdirectories.
// Tools look for their configuration from the working directory up to / (rustup's
// rust-toolchain, a linter's pyproject.toml, npm's package.json); every miss on the way
// is a probe, not a missing data file.
std::vector<bool> UpwardSearchSteps(const IoView& in) {
  std::vector<bool> step(in.model.files.size(), false);
  std::unordered_map<std::string_view, size_t> missing;  // path -> file index
  for (size_t i = 0; i < in.model.files.size(); ++i) {
    const FileStats& f = in.model.files[i];
    const bool exists = f.opens > 0 || f.stats > f.stat_errors;
    if (!exists && !f.errors.empty() && !f.path.empty() && f.path[0] == '/') missing.emplace(f.path, i);
  }
  std::string up;
  for (const auto& [path, i] : missing) {
    const std::string_view dir = DirOf(path);
    if (dir == "/") continue;
    const std::string_view parent = DirOf(dir);
    up.assign(parent);
    if (up != "/") up += '/';
    up += path.substr(dir.size() + 1);
    auto it = missing.find(up);
    if (it == missing.end()) continue;
    step[i] = true;
    step[it->second] = true;
  }
  return step;
}

}  // namespace

namespace {

constexpr std::string_view kLimitsAdvice =
    "Opens failed because a limit ran out: EMFILE means the process reached its "
    "open-descriptor limit (ulimit -n), ENFILE the system's, ENOMEM kernel memory. "
    "Look for files, sockets or DataLoader workers that are opened and never "
    "closed (use `with open(...)`), or raise the limit (ulimit -n, "
    "resource.setrlimit(RLIMIT_NOFILE)).";
constexpr std::string_view kStorageAdvice =
    "Reads or opens failed with storage errors (EIO, ESTALE, ENOTCONN...): the "
    "mount may have dropped (a Drive/FUSE daemon that died or timed out, an "
    "NFS server gone). Remount, copy the data to local disk, and retry.";
constexpr std::string_view kSpaceAdvice =
    "Writes ran out of room: ENOSPC means the filesystem is full (df -h), EDQUOT "
    "a disk quota, EFBIG a file-size limit (ulimit -f, RLIMIT_FSIZE) or the "
    "filesystem's largest file. Free space or write checkpoints and outputs to "
    "a larger disk, or raise the limit.";

}  // namespace

void ErrorsRule(RuleContext& ctx) {
  const IoView in = IoView::Of(ctx.run());
  const std::vector<bool> upward_search = UpwardSearchSteps(in);
  uint64_t hard = 0, lookup = 0, limits = 0, space = 0;
  std::map<std::string, uint64_t> by_errno;
  Json paths = Json::MakeArray();
  size_t listed = 0;
  for (size_t i = 0; i < in.model.files.size(); ++i) {
    const FileStats& f = in.model.files[i];
    if (f.errors.empty()) continue;
    const bool data = !f.code && !(in.MountOf(f) && in.MountOf(f)->fs.cls == FsClass::kPseudo);
    // The path exists (it opened or stat'ed fine at some point): its failed lookups
    // were a race with its creation or an existence check, not a missing file.
    const bool exists = f.opens > 0 || f.stats > f.stat_errors;
    uint64_t file_hard = 0, file_lookup = 0;
    for (const auto& [e, n] : f.errors) {
      if (e == EINTR || e == EAGAIN) continue;
      const bool io_failure = f.read_errors + f.write_errors > 0 && !IsHardError(e) &&
                              e != ENOENT && e != ENOTDIR && e != EACCES && e != EPERM && e != ELOOP &&
                              e != EEXIST && e != ENAMETOOLONG && e != EISDIR;
      const bool rw_failed = f.read_errors + f.write_errors > 0;
      if ((IsHardError(e) && (data || rw_failed || IsProcessLimit(e))) || io_failure) {
        // Open-time errors on pseudo or system paths (ENXIO on /dev/tty without a
        // terminal, say) are probes, not storage trouble; read/write failures count
        // everywhere.
        file_hard += n;
        if (IsProcessLimit(e)) limits += n;
        if (IsSpaceError(e)) space += n;
      } else if (data && f.open_errors > f.search_misses && !exists && !upward_search[i] &&
                 !IsCodeWithoutFile(f.path)) {
        // Only failed opens of files: a failed stat or opendir is a probe (pyenv's
        // hook directories, Python's import path), not a missing data file; nor is a
        // search-path step (the name found in a later directory: search_misses).
        file_lookup += std::min<uint64_t>(n, f.open_errors - f.search_misses);
      } else {
        continue;
      }
      by_errno[ErrnoName(e)] += n;
    }
    // Read/write failures are never lookups, whatever the errno.
    hard += file_hard;
    lookup += file_lookup;
    if ((file_hard || file_lookup) && listed < 20) {
      Json j = Json::MakeObject();
      j["path"] = f.path;
      Json ops = Json::MakeArray();
      for (const auto& op : f.error_ops) ops.Append(op);
      j["errors"] = std::move(ops);
      j["open_errors"] = f.open_errors;
      j["read_errors"] = f.read_errors;
      j["write_errors"] = f.write_errors;
      paths.Append(std::move(j));
      ++listed;
    }
  }
  if (hard == 0 && lookup < kLookupErrorsMin) return;
  Finding finding = Finding::Of(FindingId::kIoErrors, 0);
  Json& ev = finding.evidence;
  Json errs = Json::MakeObject();
  std::string list;
  for (const auto& [name, n] : by_errno) {
    errs[name] = n;
    if (!list.empty()) list += ", ";
    list += std::to_string(n) + " " + name;
  }
  ev["by_errno"] = std::move(errs);
  ev["storage_errors"] = hard;
  ev["lookup_errors"] = lookup;
  ev["limit_errors"] = limits;
  ev["space_errors"] = space;
  ev["paths"] = std::move(paths);
  finding.summary = "file operations failed: " + list;
  if (!ev["paths"].array().empty()) finding.summary += "; e.g. " + ev["paths"].array().front()["path"].str();
  // The catalogue's advice is for lookup failures on data paths.
  if (limits > 0) {
    finding.advice = std::string(kLimitsAdvice);
  } else if (hard > space) {
    finding.advice = std::string(kStorageAdvice);
  } else if (space > 0) {
    finding.advice = std::string(kSpaceAdvice);
  }
  ctx.Add(std::move(finding));
}

namespace {
const RuleRegistration kErrorsRuleRegistration(ErrorsRule, {FindingId::kIoErrors});
}  // namespace

}  // namespace colabtrace::analyzer::io
