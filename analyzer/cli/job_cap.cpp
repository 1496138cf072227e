#include "cli/job_cap.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cli/run_sampler.h"
#include "colabtrace/format/wire.h"
#include "core/format.h"
#include "trace/trace_compaction.h"

namespace colabtrace::cli {
namespace {

// A whole number of MiB in [min, max] into *out; false for anything else.
bool ParseMb(const char* v, uint64_t min, uint64_t max, uint64_t* out) {
  if (v == nullptr || *v < '0' || *v > '9') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (errno != 0 || *end != '\0' || n < min || n > max) return false;
  *out = n;
  return true;
}

bool IsTraceName(const std::string& name) {
  return name.size() > 7 && name.compare(name.size() - 7, 7, ".ctrace") == 0 && name[0] != '.';
}

// The pid a trace's header names (0 when it is no trace, or not readable yet).
pid_t PidOf(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return 0;
  format::FileHeader h = {};
  const bool whole = pread(fd, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h));
  close(fd);
  return whole && format::HasValidMagic(h) ? static_cast<pid_t>(h.pid) : 0;
}

}  // namespace

JobCapSettings JobCapSettings::From(const char* job_max_mb, const char* max_mb) {
  JobCapSettings s;
  if (job_max_mb != nullptr && *job_max_mb != '\0' && !ParseMb(job_max_mb, 1, kMaxMb, &s.job_max_mb)) {
    s.warnings.push_back("colabtrace run: COLABTRACE_JOB_MAX_MB=" + std::string(job_max_mb) +
                         " is not MiB from 1 to " + std::to_string(kMaxMb) + "; using " +
                         std::to_string(kDefaultMb));
    s.job_max_mb = kDefaultMb;
  }
  const uint64_t share = std::clamp(s.job_max_mb / kShare, kProcessMinMb, kProcessMaxMb);
  s.process_max_mb = share;
  if (max_mb == nullptr || *max_mb == '\0') return s;
  uint64_t given = 0;
  if (!ParseMb(max_mb, kProcessMinMb, kProcessMaxMb, &given)) {
    s.warnings.push_back("colabtrace run: COLABTRACE_MAX_MB=" + std::string(max_mb) + " is not MiB from " +
                         std::to_string(kProcessMinMb) + " to " + std::to_string(kProcessMaxMb) + "; using " +
                         std::to_string(share) + " (COLABTRACE_JOB_MAX_MB / " + std::to_string(kShare) + ")");
  } else if (given > share) {
    s.warnings.push_back("colabtrace run: COLABTRACE_MAX_MB=" + std::string(max_mb) + " lowered to " +
                         std::to_string(share) + " (COLABTRACE_JOB_MAX_MB=" + std::to_string(s.job_max_mb) + " / " +
                         std::to_string(kShare) + ")");
  } else {
    s.process_max_mb = given;
  }
  return s;
}

JobCap::JobCap(std::string dir, const JobCapSettings& settings, std::string own_trace)
    : dir_(std::move(dir)),
      max_bytes_(settings.job_max_mb << 20),
      process_max_mb_(settings.process_max_mb),
      own_trace_(std::move(own_trace)) {
  for (const std::string& name : List()) {
    if (dir_ + "/" + name != own_trace_) earlier_.insert(name);
  }
}

std::vector<std::string> JobCap::List() {
  struct stat st;
  if (stat(dir_.c_str(), &st) != 0) return {};
  if (listed_settled_ && st.st_mtim.tv_sec == listed_mtime_.tv_sec && st.st_mtim.tv_nsec == listed_mtime_.tv_nsec) {
    return {};
  }
  // A change in the same tick of the file system's clock as the listing would leave the
  // time as it was: the folder is not read again only when the listing was taken a
  // second or more after the last change.
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const bool settled = now.tv_sec > st.st_mtim.tv_sec + 1;
  std::vector<std::string> fresh;
  DIR* d = opendir(dir_.c_str());
  if (d == nullptr) return fresh;
  while (const dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (IsTraceName(name) && seen_.insert(name).second) fresh.push_back(std::move(name));
  }
  closedir(d);
  listed_mtime_ = st.st_mtim;
  listed_settled_ = settled;
  return fresh;
}

JobCap::Outcome JobCap::Check(const std::vector<std::string>& listed, const std::set<pid_t>& running,
                              RunTraceWriter& out, bool last) {
  ++checks_;
  std::vector<std::string> names = std::move(pending_);
  pending_.clear();
  names.insert(names.end(), listed.begin(), listed.end());
  for (const std::string& name : names) {
    if (earlier_.contains(name) || traces_.contains(name)) continue;
    const std::string path = dir_ + "/" + name;
    Trace t;
    t.pid = path == own_trace_ ? getpid() : PidOf(path);
    if (t.pid == 0) {  // its header is not written yet: the next check
      pending_.push_back(name);
      continue;
    }
    traces_.emplace(name, t);
  }
  uint64_t total = 0;
  std::vector<std::pair<uint64_t, std::string>> candidates;  // (ended order, name)
  for (auto& [name, t] : traces_) {
    if (!t.ended) {  // an ended one's bytes are final (its process wrote its last)
      const std::string path = dir_ + "/" + name;
      if (path != own_trace_ && !running.contains(t.pid)) {
        t.ended = true;
        t.ended_order = checks_;
      }
      t.bytes = analyzer::DiskBytes(path);
    }
    total += t.bytes;
    if (t.ended && !t.compacted) candidates.emplace_back(t.ended_order, name);
  }
  std::sort(candidates.begin(), candidates.end());
  bool compacted_now = false;
  Outcome o;
  for (const auto& [order, name] : candidates) {
    if (total <= max_bytes_) break;
    Trace& t = traces_[name];
    const analyzer::CompactionResult r = analyzer::CompactTrace(dir_ + "/" + name);
    t.compacted = true;  // compacted, or nothing it holds can go: not tried again
    if (!r.error.empty() && !said_failed_) {
      said_failed_ = true;
      o.say.push_back("colabtrace run: cannot compact " + dir_ + "/" + name + ": " + r.error);
    }
    if (!r.compacted) continue;
    ++compacted_;
    compacted_now = true;
    total = total - std::min(total, t.bytes) + r.bytes_after;
    t.bytes = r.bytes_after;
  }
  o.bytes = total;
  if (total > max_bytes_ && !said_over_) {
    bool any_left = false;
    for (const auto& [name, t] : traces_) any_left = any_left || (t.ended && !t.compacted);
    if (!any_left) {
      said_over_ = true;
      size_t live = 0;
      for (const auto& [name, t] : traces_) live += !t.ended && dir_ + "/" + name != own_trace_;
      o.say.push_back("colabtrace run: the job's traces take " + analyzer::FormatBytes(total) +
                      ", more than COLABTRACE_JOB_MAX_MB=" + std::to_string(max_bytes_ >> 20) +
                      " MiB, with every ended process's trace compacted (" + std::to_string(live) +
                      " still running, each capped at COLABTRACE_MAX_MB=" + std::to_string(process_max_mb_) + ")");
    }
  }
  if (checks_ == 1 || compacted_now || total > peak_ || last) {
    format::JobDisk d;
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    d.ts = static_cast<uint64_t>(now.tv_sec) * 1000000000ull + static_cast<uint64_t>(now.tv_nsec);
    d.bytes = total;
    d.max_bytes = max_bytes_;
    d.traces = traces_.size();
    d.compacted = compacted_;
    d.process_max_mb = process_max_mb_;
    out.Append(d);
    out.Flush();
  }
  peak_ = std::max(peak_, total);
  return o;
}

}  // namespace colabtrace::cli
