#include "model/process_facts.h"

#include <sys/wait.h>

#include <algorithm>
#include <climits>
#include <iterator>
#include <csignal>
#include <set>
#include <map>

#include "core/format.h"

namespace colabtrace::analyzer {

std::string_view EndKindName(EndKind k) {
  switch (k) {
    case EndKind::kExited:
    case EndKind::kExecUntraced: return "exited";
    case EndKind::kSignaled: return "signaled";
    case EndKind::kKilled: return "killed";
  }
  return "killed";
}

Json EndJson(EndKind kind, std::optional<int64_t> code, std::optional<int64_t> signal) {
  Json end = Json::MakeObject();
  end["kind"] = std::string(EndKindName(kind));
  end["code"] = code ? Json(*code) : Json();
  end["signal"] = signal ? Json(*signal) : Json();
  if (signal) end["signal_name"] = SignalName(static_cast<int>(*signal));
  return end;
}

std::string_view UntracedWhyName(uint64_t why) {
  switch (static_cast<format::ExecUntracedWhy>(why)) {
    case format::ExecUntracedWhy::kNoPreload: return "no-preload";
    case format::ExecUntracedWhy::kStatic: return "static";
    case format::ExecUntracedWhy::kSecure: return "secure-exec";
    case format::ExecUntracedWhy::kExecFailed: return "exec-failed";
  }
  return "unknown";
}

WaitEnd EndOfWaitStatus(uint32_t status) {
  const int st = static_cast<int>(status);
  WaitEnd e;
  if (WIFSIGNALED(st)) {
    e.signal = WTERMSIG(st);
    e.kind = *e.signal == SIGKILL ? EndKind::kKilled : EndKind::kSignaled;
  } else {
    e.kind = EndKind::kExited;
    e.code = WEXITSTATUS(st);
  }
  return e;
}

std::string HostKey(const ProcessTrace& t) {
  std::string_view host, boot;
  for (const auto& h : t.records.HostInfo) {
    const std::string_view key = t.Str(h.key);
    if (key == "hostname") host = t.Str(h.value);
    if (key == "boot_id") boot = t.Str(h.value);
  }
  return std::string(host) + "/" + std::string(boot);
}

bool IsRunWrapper(const ProcessTrace& t) { return !t.records.RunInfo.empty(); }

std::vector<std::string> HostKeys(const std::vector<const ProcessTrace*>& traces) {
  std::vector<std::string> keys;
  keys.reserve(traces.size());
  std::set<std::string> complete;  // keys with both a hostname and a boot id
  auto parts = [](const std::string& k) {
    const size_t slash = k.find('/');
    return std::pair<std::string_view, std::string_view>(std::string_view(k).substr(0, slash),
                                                         std::string_view(k).substr(slash + 1));
  };
  for (const ProcessTrace* t : traces) {
    keys.push_back(HostKey(*t));
    const auto [host, boot] = parts(keys.back());
    if (!host.empty() && !boot.empty()) complete.insert(keys.back());
  }
  // A key missing a part (the process was killed between its host records) takes the
  // one complete key that agrees with the part it has, if exactly one does.
  for (std::string& k : keys) {
    const auto [host, boot] = parts(k);
    if (!host.empty() && !boot.empty()) continue;
    const std::string* match = nullptr;
    size_t matches = 0;
    for (const std::string& c : complete) {
      const auto [ch, cb] = parts(c);
      if ((host.empty() || host == ch) && (boot.empty() || boot == cb)) match = &c, ++matches;
    }
    if (matches == 1) k = *match;
  }
  return keys;
}

namespace {

// True if the last image's last act was an exec that neither failed nor was adopted by a
// traced image: the process went on as a program the shim does not see (its
// environment dropped LD_PRELOAD), so the missing exit record does not mean a kill.
bool EndsInUntracedExec(const ProcessTrace& t, const format::ProcessStart* job) {
  if (t.records.ExecStart.empty()) return false;
  const auto& last = t.records.ExecStart.back();  // tables are sorted by time
  if (job != nullptr && job->image > last.image) {
    return false;  // a later image adopted the trace
  }
  for (const auto& f : t.records.ExecFailed) {
    if (f.image == last.image && f.ts >= last.ts) return false;
  }
  return true;
}

// The start record of t's last image (the job), or nullptr.
const Event<format::ProcessStart>* LastImageStart(const ProcessTrace& t) {
  const auto& starts = t.records.ProcessStart;
  if (starts.empty()) return nullptr;
  return &*std::max_element(starts.begin(), starts.end(), [](auto& a, auto& b) { return a.image < b.image; });
}

// The ExecUntraced record of the exec that ended t (EndsInUntracedExec), if the shim
// wrote one.
const Event<format::ExecUntraced>* UntracedImage(const ProcessTrace& t, const format::ProcessStart* job) {
  if (!EndsInUntracedExec(t, job)) return nullptr;
  const auto& last = t.records.ExecStart.back();
  for (const auto& u : t.records.ExecUntraced) {
    if (u.child_pid == 0 && u.image == last.image && u.ts == last.ts) return &u;
  }
  return nullptr;
}

// A crash signal is recorded even when the program's own handler takes it, so a signal
// record ends the process only if the process did nothing after it: no record on the
// signalled thread, and none on another thread later than kOtherThreadsGraceNs (other
// threads run on for a moment while the kernel tears the process down).
constexpr uint64_t kOtherThreadsGraceNs = 100'000'000;

bool ContinuedAfter(const ProcessTrace& t, const format::Signal& sig, uint32_t sig_tid) {
  bool continued = false;
  auto scan = [&](const auto& table) {
    if (continued) return;
    auto it = UpperBoundTs(table, sig.ts);
    for (; it != table.end() && !continued; ++it) {
      if (it->tid == sig_tid || it->ts > sig.ts + kOtherThreadsGraceNs) continued = true;
    }
  };
#define CT_SCAN(code, Name, dumpname)                                                    \
  if constexpr (format::RecordType::Name != format::RecordType::String &&                \
                format::RecordType::Name != format::RecordType::Stack &&                 \
                format::RecordType::Name != format::RecordType::Clock) {                 \
    scan(t.records.Name);                                                                \
  }
  COLABTRACE_RECORD_TYPES(CT_SCAN)
#undef CT_SCAN
  return continued;
}

}  // namespace

std::vector<int64_t> ParentPids(const std::vector<const ProcessTrace*>& traces) {
  struct Birth {
    uint64_t ts;
    uint32_t parent;
  };
  // The parent writes its fork record after the child may have written its start: a
  // birth counts for a trace that started up to kSlackNs before it.
  constexpr uint64_t kSlackNs = 1'000'000'000;
  using HostPid = std::pair<std::string, uint32_t>;
  const std::vector<std::string> host = HostKeys(traces);
  std::map<HostPid, std::vector<Birth>> births;     // by child pid
  std::map<HostPid, std::vector<uint64_t>> trace_starts;  // by pid
  for (size_t i = 0; i < traces.size(); ++i) {
    const ProcessTrace& t = *traces[i];
    trace_starts[{host[i], t.pid()}].push_back(t.start_ns());
    auto note = [&](int64_t child, uint64_t ts) {
      if (child > 0 && child <= INT32_MAX) births[{host[i], static_cast<uint32_t>(child)}].push_back({ts, t.pid()});
    };
    for (const auto& f : t.records.Fork) note(f.child_pid, f.ts);
    for (const auto& s : t.records.Spawn) note(s.child_pid, s.ts);
  }
  for (auto& [k, v] : trace_starts) std::sort(v.begin(), v.end());
  std::vector<int64_t> out(traces.size(), 0);
  for (size_t i = 0; i < traces.size(); ++i) {
    const ProcessTrace& t = *traces[i];
    const auto& starts = t.records.ProcessStart;
    if (!starts.empty()) {
      out[i] = static_cast<int64_t>(
          std::min_element(starts.begin(), starts.end(), [](auto& a, auto& b) { return a.image < b.image; })->ppid);
    }
    auto it = births.find({host[i], t.pid()});
    if (it == births.end()) continue;
    // A pid may be reused within a run: this trace's birth is the latest one after the
    // previous trace of its pid began and before this one did (plus the slack).
    const uint64_t start = t.start_ns();
    const std::vector<uint64_t>& same_pid = trace_starts[{host[i], t.pid()}];
    auto prev = std::lower_bound(same_pid.begin(), same_pid.end(), start);
    const uint64_t after = prev == same_pid.begin() ? 0 : *std::prev(prev) + kSlackNs;
    const Birth* best = nullptr;
    for (const Birth& b : it->second) {
      if (b.ts > after && b.ts <= start + kSlackNs && (best == nullptr || b.ts > best->ts)) best = &b;
    }
    if (best != nullptr) out[i] = best->parent;
  }
  return out;
}

// ---- LifecycleModel -------------------------------------------------------------------

LifecycleModel::LifecycleModel(const std::vector<ProcessTrace>& traces) : traces_(traces) {
  {
    std::vector<const ProcessTrace*> all;
    all.reserve(traces.size());
    for (const ProcessTrace& t : traces) all.push_back(&t);
    ppid_ = ParentPids(all);
    host_of_ = HostKeys(all);
  }
  for (uint32_t i = 0; i < traces.size(); ++i) {
    const ProcessTrace& t = traces[i];
    const std::string& host = host_of_[i];
    const bool wrapper = IsRunWrapper(t);
    if (!wrapper) starts_[{host, t.pid()}].push_back(t.start_ns());
    for (const auto& w : t.records.WaitStatus) {
      if (w.pid <= 0 || w.pid > INT32_MAX) continue;
      reaps_[{host, static_cast<uint32_t>(w.pid)}].push_back(
          {w.ts, static_cast<uint32_t>(w.status), t.pid(), wrapper});
    }
    if (!wrapper) continue;
    auto& by_pid = samples_[host];
    for (const auto& s : t.records.ProcSample) {
      if (s.pid == 0 || s.pid > UINT32_MAX) continue;
      by_pid[static_cast<uint32_t>(s.pid)].push_back(
          {s.ts, static_cast<uint32_t>(s.ppid), s.rss_bytes, s.pss_bytes, s.uss_bytes,
           t.Str(s.cgroup), i, s.utime_ns + s.stime_ns});
    }
    for (const auto& c : t.records.CgroupSample) {
      cgroups_[host].push_back({c.ts, c.current, c.max, c.oom_kill, t.pid(), c.inactive_file});
    }
  }
  auto by_ts = [](const auto& a, const auto& b) { return a.ts < b.ts; };
  for (auto& [k, v] : reaps_) std::stable_sort(v.begin(), v.end(), by_ts);
  for (auto& [k, v] : starts_) std::sort(v.begin(), v.end());
  for (auto& [h, m] : samples_) {
    for (auto& [p, v] : m) std::stable_sort(v.begin(), v.end(), by_ts);
  }
  for (auto& [h, v] : cgroups_) std::stable_sort(v.begin(), v.end(), by_ts);
}

size_t LifecycleModel::IndexOf(const ProcessTrace& t) const {
  if (!traces_.empty() && &t >= &traces_.front() && &t <= &traces_.back()) {
    return static_cast<size_t>(&t - &traces_.front());
  }
  return SIZE_MAX;
}

const Reap* LifecycleModel::ReapOf(const ProcessTrace& t) const {
  const size_t i = IndexOf(t);
  return i == SIZE_MAX ? nullptr : ReapOf(host_of_[i], t.pid(), t.start_ns());
}

const Reap* LifecycleModel::ReapOf(const std::string& host, uint32_t pid, uint64_t since_ns) const {
  auto it = reaps_.find({host, pid});
  if (it == reaps_.end()) return nullptr;
  for (const Reap& r : it->second) {
    if (r.ts >= since_ns) return &r;
  }
  return nullptr;
}

bool LifecycleModel::TracedSince(const std::string& host, uint32_t pid, uint64_t since_ns) const {
  auto it = starts_.find({host, pid});
  return it != starts_.end() && std::any_of(it->second.begin(), it->second.end(),
                                            [&](uint64_t s) { return s >= since_ns; });
}

std::string LifecycleModel::HostOf(const ProcessTrace& t) const {
  const size_t i = IndexOf(t);
  return i == SIZE_MAX ? HostKey(t) : host_of_[i];
}

int64_t LifecycleModel::ParentPidOf(const ProcessTrace& t) const {
  const size_t i = IndexOf(t);
  return i == SIZE_MAX ? -1 : ppid_[i];
}

std::vector<const OutsideSample*> LifecycleModel::SamplesOf(const ProcessTrace& t) const {
  std::vector<const OutsideSample*> out;
  const size_t i = IndexOf(t);
  if (i == SIZE_MAX) return out;
  auto host = samples_.find(host_of_[i]);
  if (host == samples_.end()) return out;
  auto pid = host->second.find(t.pid());
  if (pid == host->second.end()) return out;
  uint64_t limit = UINT64_MAX;
  if (const Reap* r = ReapOf(t)) limit = r->ts;
  if (auto s = starts_.find({host_of_[i], t.pid()}); s != starts_.end()) {
    auto next = std::upper_bound(s->second.begin(), s->second.end(), t.start_ns());
    if (next != s->second.end()) limit = std::min(limit, *next);
  }
  // A fork child's trace starts a moment after the kernel created it.
  constexpr uint64_t kStartSlackNs = 5'000'000;
  const uint64_t from = t.start_ns() > kStartSlackNs ? t.start_ns() - kStartSlackNs : 0;
  for (const OutsideSample& s : pid->second) {
    if (s.ts >= from && s.ts <= limit) out.push_back(&s);
  }
  return out;
}

const std::vector<CgroupReading>& LifecycleModel::CgroupReadings(const std::string& host) const {
  static const std::vector<CgroupReading> kNone;
  auto it = cgroups_.find(host);
  return it == cgroups_.end() ? kNone : it->second;
}

const std::map<uint32_t, std::vector<OutsideSample>>& LifecycleModel::OutsideSamples(
    const std::string& host) const {
  static const std::map<uint32_t, std::vector<OutsideSample>> kNone;
  auto it = samples_.find(host);
  return it == samples_.end() ? kNone : it->second;
}

// ---- ProcessFacts ---------------------------------------------------------------------

ProcessFacts ProcessFacts::Of(const ProcessTrace& t, const LifecycleModel* model) {
  ProcessFacts f;
  f.run_wrapper = IsRunWrapper(t);
  const auto& starts = t.records.ProcessStart;
  if (!starts.empty()) {
    f.start = &*std::min_element(starts.begin(), starts.end(),
                                 [](auto& a, auto& b) { return a.image < b.image; });
    f.job = LastImageStart(t);
    f.ppid = static_cast<int64_t>(f.start->ppid);
  }
  if (const int64_t ppid = model ? model->ParentPidOf(t) : -1; ppid >= 0) f.ppid = ppid;
  f.untraced = UntracedImage(t, f.job);
  const auto* exit = t.records.Exit.empty() ? nullptr : &t.records.Exit.back();
  const auto* sig = t.records.Signal.empty() ? nullptr : &t.records.Signal.back();
  // The signal record is the end only if no exit followed and the process did not go on
  // (a handler of its own took it).
  const bool sig_ends = sig != nullptr && (exit == nullptr || exit->ts < sig->ts) &&
                        !ContinuedAfter(t, *sig, sig->tid);
  if (const Reap* r = model ? model->ReapOf(t) : nullptr; r != nullptr) {
    // The reaper's wait status is exact.
    f.reap = *r;
    const WaitEnd e = EndOfWaitStatus(r->status);
    f.end_kind = e.kind;
    f.exit_code = e.code;
    f.end_signal = e.signal;
    if (e.signal && sig_ends && sig->signo == static_cast<uint64_t>(*e.signal)) f.signal = sig;
  } else if (sig_ends) {
    f.end_kind = EndKind::kSignaled;
    f.signal = sig;
    f.end_signal = static_cast<int64_t>(sig->signo);
  } else if (exit != nullptr) {
    f.end_kind = EndKind::kExited;
    if (exit->how != static_cast<uint64_t>(format::ExitHow::kDestructor)) f.exit_code = exit->code;
  } else if (t.exec_pending || EndsInUntracedExec(t, f.job)) {
    f.end_kind = EndKind::kExecUntraced;
  } else if (t.ended) {
    // The shim closed the trace at a clean exit, but the exit record itself was lost
    // (tracing had stopped: full disk, size limit). Exited, code unknown.
    f.end_kind = EndKind::kExited;
  } else {
    // No end record, or a handled signal and then nothing: killed.
    f.end_kind = EndKind::kKilled;
  }
  for (const auto& s : t.records.Sample) f.peak_rss = std::max(f.peak_rss, s.rss_bytes);
  if (model != nullptr) {
    for (const OutsideSample* s : model->SamplesOf(t)) {
      if (s->rss != UINT64_MAX) f.peak_rss = std::max(f.peak_rss, s->rss);
    }
  }
  for (const auto& h : t.records.HostNum) {
    const std::string_view key = t.Str(h.key);
    if (key == "cgroup_memory_max") f.cgroup_max = h.value;
    if (key == "mem_total") f.mem_total = h.value;
    if (key == "shm_size") f.shm_size = h.value;
  }
  return f;
}

const Event<format::ExecUntraced>* UntracedExecOf(const ProcessTrace& t) {
  return UntracedImage(t, LastImageStart(t));
}

std::string_view ProcessFacts::JobExe(const ProcessTrace& t) const {
  if (untraced != nullptr) return t.Str(untraced->exe);
  return job != nullptr ? t.Str(job->exe) : std::string_view();
}

std::vector<std::string_view> UntracedArgv(const ProcessTrace& t, const Event<format::ExecUntraced>& u) {
  std::vector<const Event<format::ExecArgv>*> args;  // one ts: ordered by index, not by table
  for (const auto& a : t.records.ExecArgv) {
    if (a.image == u.image && a.tid == u.tid && a.ts == u.ts) args.push_back(&a);
  }
  std::stable_sort(args.begin(), args.end(), [](auto* x, auto* y) { return x->index < y->index; });
  std::vector<std::string_view> argv;
  for (const auto* a : args) argv.push_back(t.Str(a->value));
  return argv;
}

std::vector<std::string_view> ProcessFacts::JobArgv(const ProcessTrace& t) const {
  std::vector<std::string_view> argv;
  if (untraced != nullptr) {
    argv = UntracedArgv(t, *untraced);
  } else if (job != nullptr) {
    for (const auto& a : t.records.Argv) {
      if (a.image == job->image) argv.push_back(t.Str(a.value));
    }
  }
  return argv;
}

}  // namespace colabtrace::analyzer
