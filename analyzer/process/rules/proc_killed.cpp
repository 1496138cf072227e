// proc.killed (error)
//
// Rule: a job process with no end record (the catalogue's definition): no exit record,
// no fatal signal record, and no reaper's wait status other than SIGKILL; unless its job
// hung (perf::HangModel): then proc.hang says what it was blocked in. The evidence
// gives the last RSS (its own last sample or `colabtrace run`'s later one), the cgroup's
// memory.max and memory.current, and whether oom_kill rose (read by the processes that
// outlived it and by `colabtrace run`, since the killed process cannot see its own OOM
// kill). The summary and advice name the cause in this order:
// - it is still running here (a report made while the run crawls: no end yet);
// - a traced process of the job sent the SIGKILL (kill_sent records: a subprocess
//   timeout, Process.kill(), coreutils timeout -s KILL); the OOM killer sends none;
// - the cgroup's oom_kill count rose: the OOM killer took it;
// - otherwise SIGKILL from outside the job, the OOM killer, or the machine stopping; the
//   advice speaks of memory only when memory was high or is unknown (memory_high).
#include <algorithm>
#include <csignal>


#include "model/local_host.h"
#include "model/python_stack.h"
#include "perf/hang_model.h"
#include "process/rules/rules.h"

namespace colabtrace::analyzer::rules {
namespace {

// Whether memory was high when the process died: the cgroup at 90% of its limit (the
// host.memory-pressure threshold), or the process itself at half of MemTotal (the OOM
// killer picks the largest process). Unknown without a limit to compare with.
enum class MemoryVerdict { kUnknown, kLow, kHigh };
constexpr double kMemoryHighShare = 0.9;
constexpr double kProcessHighShareOfMemTotal = 0.5;

MemoryVerdict MemoryAtTheEnd(uint64_t cgroup_current, uint64_t cgroup_max, uint64_t rss, uint64_t mem_total) {
  bool known = false;
  if (cgroup_current != UINT64_MAX && cgroup_max != UINT64_MAX && cgroup_max > 0) {
    known = true;
    if (static_cast<double>(cgroup_current) >= kMemoryHighShare * static_cast<double>(cgroup_max)) return MemoryVerdict::kHigh;
  }
  if (rss > 0 && mem_total != UINT64_MAX && mem_total > 0) {
    known = true;
    if (static_cast<double>(rss) >= kProcessHighShareOfMemTotal * static_cast<double>(mem_total)) return MemoryVerdict::kHigh;
  }
  return known ? MemoryVerdict::kLow : MemoryVerdict::kUnknown;
}

// SIGKILL from outside the job while memory was low: not the OOM killer, so no memory advice.
constexpr const char* kAdviceMemoryLow =
    "Something outside the job sent SIGKILL: a job time limit, an idle timeout, a person, or the "
    "notebook runtime restarting. Memory was not high (memory_high: false), so the OOM killer is "
    "unlikely. If the job had stopped making progress before it was killed, it hung: its last "
    "records and last_python_sample show what it was doing, and `colabtrace run` samples how "
    "long it sat there.";

// SIGKILL from outside the job while memory was low and the process was inside a call
// that had not returned (perf::HangModel's calls in flight): it may have hung there.
std::string KilledInsideAdvice(const perf::InFlightCall& c) {
  std::string a =
      "Something outside the job sent SIGKILL (a job time limit, an idle timeout, a person, or the "
      "notebook runtime restarting) while it was inside " + InFlightTarget(c) +
      "; memory was not high (memory_high: false), so the OOM killer is unlikely. Nothing recorded "
      "when the kill came, so how long it had sat in that call is unknown: if it sat there until "
      "the kill, it hung";
  switch (static_cast<format::InFlightCall>(c.call)) {
    case format::InFlightCall::kGpuSync:
      a += " on a GPU kernel that never finished (in_flight lists the kernels, newest first)";
      break;
    case format::InFlightCall::kBatchWait:
      a += " waiting for a batch: see what its DataLoader workers were inside";
      break;
    default:
      if (c.slow_fs) a += " on a network or FUSE mount that stopped answering";
      break;
  }
  a += ". Run it under `colabtrace run --hang-timeout SECONDS`: run times the wait, reads every "
       "thread's Python stack, and ends a job that makes no progress for that long.";
  return a;
}

// The traced process that sent pid (on host) the SIGKILL that ended it: the last
// successful kill() aimed at pid after since_ns and no later than until_ns; or pid's own
// SIGKILL to a group it is in (target 0 or -1: coreutils timeout ends so).
struct KillSender {
  const ProcessTrace* trace = nullptr;
  const Event<format::KillSent>* kill = nullptr;
};
KillSender KillSenderOf(const std::vector<ProcessTrace>& all, const LifecycleModel& model, const std::string& host,
                        uint32_t pid, uint64_t since_ns, uint64_t until_ns) {
  KillSender best;
  for (const ProcessTrace& o : all) {
    if (o.records.KillSent.empty() || model.HostOf(o) != host) continue;
    const auto& kills = o.records.KillSent;
    for (const auto& k : kills) {
      const bool aimed = k.target == static_cast<int64_t>(pid) || (o.pid() == pid && k.target <= 0);
      if (!aimed || k.signo != SIGKILL || k.result != 0) continue;
      // A record written before the call is void if a failure with its ts follows.
      if (std::any_of(kills.begin(), kills.end(), [&](const auto& f) { return f.ts == k.ts && f.result < 0; })) {
        continue;
      }
      if (k.ts < since_ns || k.ts > until_ns) continue;
      if (best.kill == nullptr || k.ts > best.kill->ts) best = {&o, &k};
    }
  }
  return best;
}

// processes that outlived it on its host, and from `colabtrace run`'s cgroup readings.
struct OomEvidence {
  uint64_t before = UINT64_MAX, after = UINT64_MAX;
  std::string source;  // who saw the later reading
};

OomEvidence OomKillAround(const ProcessTrace& t, const std::vector<ProcessTrace>& all,
                          const LifecycleModel& model, const std::string& host) {
  OomEvidence e;
  // Before: the earliest reading at or after its start, its own or anyone's on the host.
  auto note_before = [&](uint64_t ts, uint64_t v) {
    if (v == UINT64_MAX || ts < t.start_ns() || ts > t.end_ns()) return;
    if (e.before == UINT64_MAX || v < e.before) e.before = v;
  };
  auto note_after = [&](uint64_t ts, uint64_t v, const std::string& who) {
    if (v == UINT64_MAX || ts < t.end_ns()) return;
    if (e.after == UINT64_MAX || v > e.after) {
      e.after = v;
      e.source = who;
    }
  };
  for (const auto& s : t.records.Sample) {
    note_before(s.ts, s.oom_kill);
    note_after(s.ts, s.oom_kill, "its own last sample");
  }
  for (const auto& other : all) {
    if (&other == &t || model.HostOf(other) != host) continue;
    for (const auto& s : other.records.Sample) {
      note_before(s.ts, s.oom_kill);
      note_after(s.ts, s.oom_kill, "the samples of pid " + std::to_string(other.pid()) +
                                       ", which outlived it");
    }
  }
  for (const CgroupReading& c : model.CgroupReadings(host)) {
    note_before(c.ts, c.oom_kill);
    note_after(c.ts, c.oom_kill,
               "colabtrace run's cgroup samples (pid " + std::to_string(c.wrapper_pid) + ")");
  }
  return e;
}



}  // namespace

namespace {

void ProcKilledOf(RuleContext& ctx, const ProcessEnd& e) {
  const ProcessTrace& t = e.t;
  const ProcessFacts& f = ctx.run().facts(t);
  const std::string& who = e.who;
  const std::vector<ProcessTrace>& all = ctx.run().traces();
  const LifecycleModel& model = ctx.run().lifecycle();
  const std::string host = model.HostOf(t);
  if (f.end_kind != EndKind::kKilled) return;
  // A process of a job that hung is proc.hang's (what it was blocked in), not a kill.
  const perf::HangModel& hang = ctx.run().Get<perf::HangModel>();
  const perf::ProcessHang* in = hang.Of(static_cast<size_t>(&t - all.data()));
  if (hang.hung && in != nullptr) return;
  Finding finding = Finding::Of(FindingId::kProcKilled, t.pid());
  Json& ev = finding.evidence;
  // The last RSS: its own last sample, or colabtrace run's later one.
  const auto& samples = t.records.Sample;
  uint64_t last_rss = 0, last_rss_ts = 0;
  bool rss_known = !samples.empty();  // no sample at all (killed as its shim started): unknown
  if (!samples.empty()) last_rss = samples.back().rss_bytes, last_rss_ts = samples.back().ts;
  for (const OutsideSample* s : model.SamplesOf(t)) {
    // RSS 0: read while the kernel was tearing the process down.
    if (s->rss != UINT64_MAX && s->rss != 0 && s->ts >= last_rss_ts) {
      last_rss = s->rss, last_rss_ts = s->ts, rss_known = true;
    }
  }
  const std::string last_rss_text = rss_known ? FormatBytes(last_rss) : "unknown (no sample was taken)";
  ev["last_rss_bytes"] = rss_known ? Json(last_rss) : Json();
  ev["peak_rss_bytes"] = f.peak_rss;
  // The cgroup: colabtrace run's last reading before the end, else the process's own.
  uint64_t cg_max = f.cgroup_max;
  uint64_t cur = samples.empty() ? UINT64_MAX : samples.back().cgroup_current;
  uint64_t cur_ts = samples.empty() ? 0 : samples.back().ts;
  const uint64_t end_ts = f.reap ? f.reap->ts : t.end_ns();
  for (const CgroupReading& c : model.CgroupReadings(host)) {
    if (c.ts > end_ts || c.ts < cur_ts) continue;
    if (c.current != UINT64_MAX) cur = c.current, cur_ts = c.ts;
    if (c.max != UINT64_MAX) cg_max = c.max;
  }
  ev["cgroup_memory_max"] = cg_max == UINT64_MAX ? Json("max") : Json(cg_max);
  ev["cgroup_memory_current"] = cur == UINT64_MAX ? Json() : Json(cur);
  const MemoryVerdict memory = MemoryAtTheEnd(cur, cg_max, rss_known ? std::max(last_rss, f.peak_rss) : f.peak_rss,
                                              f.mem_total);
  ev["memory_high"] = memory == MemoryVerdict::kUnknown ? Json() : Json(memory == MemoryVerdict::kHigh);
  // The killed process cannot see its own OOM kill; the processes that outlive it
  // (its parent, siblings) and colabtrace run read the same cgroup afterwards.
  const OomEvidence oom = OomKillAround(t, all, model, host);
  const bool known = oom.before != UINT64_MAX && oom.after != UINT64_MAX;
  const bool rose = known && oom.after > oom.before;
  ev["oom_kill_before"] = oom.before == UINT64_MAX ? Json() : Json(oom.before);
  ev["oom_kill_after"] = oom.after == UINT64_MAX ? Json() : Json(oom.after);
  ev["oom_kill_rose"] = known ? Json(rose) : Json();
  ev["oom_kill_seen_by"] = oom.source.empty() ? Json() : Json(oom.source);
  ev["last_event_after_start_ns"] = t.end_ns() - t.start_ns();
  ev["last_python_sample"] = LastPythonSampleJson(t);  // where Python last was, if known
  ev["signal"] = f.end_signal ? Json(*f.end_signal) : Json();
  ev["reaped_by"] = f.reap ? Json(static_cast<int64_t>(f.reap->reaper_pid)) : Json();
  const bool running = !f.reap && StillRunningHere(t);
  ev["still_running"] = running;
  if (running) {
    // No exit record yet because it has not exited: the report was made while it ran
    // (a run that crawls). The catalogue's id stays (no end record), the cause is named.
    finding.summary = who + " has no exit record because it is still running (this report was made "
                      "while it ran); last RSS " + last_rss_text;
    finding.advice =
        "Report again once it has ended. While it runs, its trace so far shows where it is: "
        "the last records, the last Python sample (last_python_sample), and with `colabtrace "
        "run` the memory samples.";
    ctx.Add(std::move(finding));
    return;  // not killed, and not signaled either
  }
  // What it was inside when the kill came: the calls it had not returned from. Nothing saw
  // when that was (or the job's hang would be proc.hang's), so how long it sat there is
  // unknown; the summary names the telling call and when it entered it.
  const perf::InFlightCall* inside = in != nullptr ? TellingCall(*in) : nullptr;
  Json calls = Json::MakeArray();
  if (in != nullptr) {
    for (const perf::InFlightCall& c : in->calls) calls.Append(perf::InFlightJson(c));
  }
  ev["in_flight"] = std::move(calls);
  const std::string inside_text =
      inside == nullptr ? std::string()
                        : "; it was killed inside " + InFlightTarget(*inside) + ", entered at +" +
                              FormatDurationNs(inside->since_ns > t.start_ns() ? inside->since_ns - t.start_ns() : 0);
  if (f.reap) {
    finding.summary = who + " was killed by SIGKILL (its wait status, reaped by " +
                      (f.reap->by_run ? "colabtrace run" : "its parent") + ", pid " +
                      std::to_string(f.reap->reaper_pid) + ")";
  } else {
    finding.summary = who + " was killed: its trace ends with no exit record";
  }
  // A traced process of the job that sent the SIGKILL itself (a subprocess timeout,
  // multiprocessing's Process.kill()) names the cause; the OOM killer sends none.
  const KillSender sender = KillSenderOf(all, model, host, t.pid(), t.start_ns(), f.reap ? f.reap->ts : UINT64_MAX);
  if (sender.kill != nullptr) {
    const ProcessFacts& sf = ctx.run().facts(*sender.trace);
    std::string cmd;
    for (std::string_view a : sf.JobArgv(*sender.trace)) cmd += (cmd.empty() ? "" : " ") + std::string(a);
    Json s = Json::MakeObject();
    s["pid"] = sender.trace->pid();
    s["command"] = cmd;
    s["api"] = sender.kill->api == static_cast<uint64_t>(format::KillApi::kKillpg) ? "killpg" : "kill";
    s["at_ns_after_start"] = sender.kill->ts - t.start_ns();
    ev["sender"] = std::move(s);
    finding.summary += sender.trace == &t ? std::string("; it sent SIGKILL to a process group it is in itself")
                                     : "; pid " + std::to_string(sender.trace->pid()) + " (" +
                                           EscapeForTerminal(cmd.size() > 80 ? cmd.substr(0, 77) + "..." : cmd) +
                                           ") sent it with kill()";
    finding.advice =
        "A process of this job killed it on purpose (a subprocess timeout, Process.kill(), "
        "a pool or launcher shutting its workers down). If that was not expected, look at "
        "why the sender gave up on it: a timeout too short, or a worker that hung.";
    finding.summary += inside_text;
    ctx.Add(std::move(finding));
    return;
  }
  if (rose) {
    finding.summary += "; the cgroup's oom_kill count rose from " + std::to_string(oom.before) +
                       " to " + std::to_string(oom.after) + " (seen in " + oom.source +
                       "), so the OOM killer took it";
    finding.advice =
        "The kernel's OOM killer ended it. Lower host memory use: fewer DataLoader "
        "workers, a smaller batch or prefetch_factor, pin_memory=False, or load the "
        "dataset lazily; `dmesg` names the victim and its RSS.";
  } else {
    finding.summary += f.reap ? "; last RSS " + last_rss_text
                         : " (SIGKILL, the OOM killer, or the machine stopped); last RSS " + last_rss_text;
    if (f.reap && !f.reap->by_run) {
      finding.advice =
          "Its parent reaped it after a SIGKILL: usually the parent (or a timeout "
          "it runs) killed it on purpose; otherwise check `dmesg` and the cgroup's "
          "memory.events for the OOM killer.";
    } else if (memory == MemoryVerdict::kLow && inside != nullptr) {
      finding.advice = KilledInsideAdvice(*inside);
    } else if (memory == MemoryVerdict::kLow) {  // else the catalogue's advice
      finding.advice = kAdviceMemoryLow;
    }
  }
  finding.summary += inside_text;
  ctx.Add(std::move(finding));
}

void ProcKilledRule(RuleContext& ctx) { ForEachJobProcess(ctx, ProcKilledOf); }

const RuleRegistration kProcKilledRuleRegistration(ProcKilledRule, {FindingId::kProcKilled});

}  // namespace

}  // namespace colabtrace::analyzer::rules
