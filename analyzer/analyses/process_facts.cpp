#include "analyses/process_facts.h"

#include <algorithm>

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

}  // namespace

ProcessFacts ProcessFacts::Of(const ProcessTrace& t) {
  ProcessFacts f;
  const auto& starts = t.records.ProcessStart;
  if (!starts.empty()) {
    f.start = &*std::min_element(starts.begin(), starts.end(),
                                 [](auto& a, auto& b) { return a.image < b.image; });
    f.job = &*std::max_element(starts.begin(), starts.end(),
                               [](auto& a, auto& b) { return a.image < b.image; });
  }
  const auto* exit = t.records.Exit.empty() ? nullptr : &t.records.Exit.back();
  const auto* sig = t.records.Signal.empty() ? nullptr : &t.records.Signal.back();
  if (sig != nullptr && (exit == nullptr || exit->ts < sig->ts)) {
    f.end_kind = EndKind::kSignaled;
    f.signal = sig;
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
    f.end_kind = EndKind::kKilled;
  }
  for (const auto& s : t.records.Sample) f.peak_rss = std::max(f.peak_rss, s.rss_bytes);
  for (const auto& h : t.records.HostNum) {
    const std::string_view key = t.Str(h.key);
    if (key == "cgroup_memory_max") f.cgroup_max = h.value;
    if (key == "mem_total") f.mem_total = h.value;
    if (key == "shm_size") f.shm_size = h.value;
  }
  return f;
}

}  // namespace colabtrace::analyzer
