// proc.hang (error)
//
// Rule: the job hung (perf::HangModel, perf/hang_model.h): `colabtrace run --hang-timeout`
// ended it for making no progress, or a process that did not end cleanly had a thread
// blocked in one call for at least the threshold (10 s, and 10 median steps of the job's
// stepping process) while the job made no step for as long. One finding for the job: its
// pid is the stepping process when it is stuck, else the first stuck process. Evidence,
// for every process of the job that did not end cleanly: its role, whether it was stuck,
// and each thread's call in flight (call, path or descriptor, mount and type, stream and
// kernels in flight newest first, the batch wait's line, and, from `colabtrace run
// --hang-timeout`, its Python stack); the job's last step, the time since and the median
// step; the thresholds. The summary tells the chain: each stuck process's longest call,
// the stepping process first. The advice follows the stuck calls: a slow or network
// mount, a GPU kernel, a wait for a child, the input pipeline.
#include <algorithm>

#include "perf/hang_model.h"
#include "process/rules/rules.h"

namespace colabtrace::analyzer::rules {
namespace {

using format::InFlightCall;

// The DataLoader worker id a process said it has, or -1.
int64_t WorkerIdOf(const ProcessTrace& t) {
  for (const auto& r : t.records.ProcessRole) {
    if (r.role == static_cast<uint64_t>(format::ProcessRoleKind::kDataLoaderWorker)) {
      return static_cast<int64_t>(r.worker_id);
    }
  }
  return -1;
}

// The job's main process: the one that steps, else the root of the job (its parent is
// not one of the job's traced processes).
bool IsMain(const RunModel& run, const perf::HangModel& m, const perf::ProcessHang& p) {
  if (m.stepping_trace) return *m.stepping_trace == p.trace;
  const int64_t ppid = run.lifecycle().ParentPidOf(run.traces()[p.trace]);
  for (const perf::ProcessHang& o : m.processes) {
    if (static_cast<int64_t>(run.traces()[o.trace].pid()) == ppid) return false;
  }
  return true;
}

// "the main process (pid 12)", "DataLoader worker 1 (pid 14)", "pid 15 (python3)".
std::string NameOf(const RunModel& run, const perf::HangModel& m, const perf::ProcessHang& p) {
  const ProcessTrace& t = run.traces()[p.trace];
  const std::string pid = "pid " + std::to_string(t.pid());
  if (IsMain(run, m, p)) return "the main process (" + pid + ")";
  const int64_t w = WorkerIdOf(t);
  if (w >= 0) return "DataLoader worker " + std::to_string(w) + " (" + pid + ")";
  return pid + " (" + std::string(Basename(run.facts(t).JobExe(t))) + ")";
}

std::string Seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

std::string CollectiveText(const std::string& op, uint64_t seq, const std::string& where) {
  std::string s = op == "ddp_all_reduce" ? "DDP's gradient all-reduce" : op;
  if (seq != 0) s += " #" + std::to_string(seq);
  if (!where.empty()) s += (op == "ddp_all_reduce" ? " in backward() at " : " at ") + where;
  return s;
}

std::string InFlightTarget(const perf::InFlightCall& c) {
  const auto call = static_cast<InFlightCall>(c.call);
  if (call == InFlightCall::kBatchWait) return "the wait for the next batch" + (c.where.empty() ? "" : " at " + c.where);
  if (call == InFlightCall::kCollective) return CollectiveText(c.api, c.seq, c.where);
  std::string s = c.api + "()";
  if (call == InFlightCall::kGpuSync) {
    const auto& k = c.kernels.array();
    if (!k.empty()) {
      s += " waiting for kernel " + k.front()["kernel"].str();
      if (k.size() > 1) s += " (and " + std::to_string(k.size() - 1) + " more launched before it)";
    }
    return s;
  }
  if (call == InFlightCall::kWait && c.pid) {
    return s + (*c.pid > 0 ? " for pid " + std::to_string(*c.pid) : std::string(" for a child"));
  }
  if (!c.path.empty()) {
    s += " of " + EscapeForTerminal(c.path);
  } else if (c.fd) {
    s += " of fd " + std::to_string(*c.fd);
  }
  if (!c.fs_type.empty()) s += " (" + c.fs_type + ")";
  return s;
}

const perf::InFlightCall* TellingCall(const perf::ProcessHang& p) {
  const perf::InFlightCall* best = nullptr;
  for (const perf::InFlightCall& c : p.calls) {
    if (best == nullptr || c.level < best->level || (c.level == best->level && c.blocked_ns > best->blocked_ns)) {
      best = &c;
    }
  }
  return best;
}

namespace {

// "waited 14.2 s for the next batch at train.py:25 in main", "was blocked 14.0 s in
// read() of /mnt/x.bin (fuse.slowfs)".
std::string CallPhrase(const perf::InFlightCall& c) {
  if (static_cast<InFlightCall>(c.call) == InFlightCall::kBatchWait) {
    return "waited " + Seconds(c.blocked_ns) + " for the next batch" + (c.where.empty() ? "" : " at " + c.where);
  }
  return "was blocked " + Seconds(c.blocked_ns) + " in " + InFlightTarget(c);
}

std::string AdviceFor(const perf::HangModel& m, const RunModel& run) {
  bool slow_mount = false, gpu = false, wait_child = false, batch = false;
  for (const perf::ProcessHang& p : m.processes) {
    if (!p.stuck) continue;
    for (const perf::InFlightCall& c : p.calls) {
      if (c.blocked_ns < m.threshold_ns) continue;
      const auto call = static_cast<InFlightCall>(c.call);
      slow_mount |= c.slow_fs;
      gpu |= call == InFlightCall::kGpuSync;
      wait_child |= call == InFlightCall::kWait;
      batch |= call == InFlightCall::kBatchWait;
    }
  }
  (void)run;
  std::string a;
  if (slow_mount) {
    a += "A read on a network or FUSE mount never returned (a Drive or gcsfuse mount that stopped "
         "answering): copy the data to local disk first, or pack it into shards, and give the "
         "DataLoader a timeout (DataLoader(timeout=...)) so that a stuck worker raises. ";
  }
  if (gpu) {
    a += "A GPU kernel never finished: the kernels in flight are listed newest first; run the "
         "kernel alone (CUDA_LAUNCH_BLOCKING=1, compute-sanitizer) to see whether it waits on "
         "something that never happens (a flag, a peer in a collective, a spin loop). ";
  }
  if (wait_child) a += "A process waited for a child that never ended: see what that child was blocked in. ";
  if (batch && !slow_mount) {
    a += "The step loop waited for a batch that never came: see what its DataLoader workers were "
         "blocked in, and give the DataLoader a timeout (DataLoader(timeout=...)). ";
  }
  if (m.ended_by != "hang-timeout") {
    a += "Run under `colabtrace run --hang-timeout SECONDS` to end such a job by itself with every "
         "thread's Python stack.";
  }
  while (!a.empty() && a.back() == ' ') a.pop_back();
  return a;
}

void ProcHangRule(RuleContext& ctx) {
  const RunModel& run = ctx.run();
  const perf::HangModel& m = run.Get<perf::HangModel>();
  if (!m.hung) return;
  // Who the finding is about: the stepping process when it is stuck, else the first stuck.
  const perf::ProcessHang* lead = nullptr;
  if (m.stepping_trace) {
    const perf::ProcessHang* s = m.Of(*m.stepping_trace);
    if (s != nullptr && s->stuck) lead = s;
  }
  for (const perf::ProcessHang& p : m.processes) {
    if (lead == nullptr && p.stuck) lead = &p;
  }
  for (const perf::ProcessHang& p : m.processes) {
    if (lead == nullptr && !p.ended_cleanly) lead = &p;
  }
  if (lead == nullptr) return;
  const ProcessTrace& lt = run.traces()[lead->trace];
  Finding f = Finding::Of(FindingId::kProcHang, lt.pid());
  Json& ev = f.evidence;

  // The chain: the lead first, then the other stuck processes in trace order.
  std::vector<const perf::ProcessHang*> chain{lead};
  for (const perf::ProcessHang& p : m.processes) {
    if (&p != lead && p.stuck) chain.push_back(&p);
  }
  std::string summary;
  uint64_t stopped = 0;
  for (const perf::ProcessHang& p : m.processes) {
    if (!p.ended_cleanly) stopped = std::max(stopped, p.stopped_ns);
  }
  // Ended by --hang-timeout: the job made no progress until run decided so (after that,
  // only the ending).
  if (m.decided_ns != 0) stopped = m.decided_ns;
  if (m.stepping_trace && m.last_step > 0 && stopped > m.last_step_ns) {
    summary = "no step for " + Seconds(stopped - m.last_step_ns) + " after step " + std::to_string(m.last_step) +
              " (median step " + FormatDurationNs(m.median_step_ns) + "): ";
  } else if (!m.stepping_trace) {
    summary = "no progress: ";
  }
  std::vector<int64_t> stuck_pids;
  bool first = true;
  for (const perf::ProcessHang* p : chain) {
    const perf::InFlightCall* c = TellingCall(*p);
    if (c == nullptr) continue;
    summary += (first ? "" : "; ") + NameOf(run, m, *p) + " " + CallPhrase(*c);
    first = false;
  }
  if (first) summary += NameOf(run, m, *lead) + " was in no call the shim notes (busy, or in an untraced wait)";
  if (m.ended_by == "hang-timeout") {
    summary += "; colabtrace run ended the job after " + Seconds(m.hang_timeout_ns.value_or(0)) +
               " without progress (--hang-timeout)";
  } else if (m.ended_by == "still-running") {
    summary += "; still stuck when this report was made";
  } else {
    summary += "; then the job was killed";
  }
  f.summary = summary;
  f.advice = AdviceFor(m, run);

  ev["ended_by"] = m.ended_by;
  ev["threshold_ns"] = m.threshold_ns;
  ev["min_blocked_ns"] = perf::kHangMinBlockedNs;
  ev["median_step_multiple"] = perf::kHangStepMultiple;
  ev["median_step_ns"] = m.stepping_trace ? Json(m.median_step_ns) : Json();
  ev["last_step"] = m.stepping_trace ? Json(m.last_step) : Json();
  ev["since_last_step_ns"] =
      m.stepping_trace && stopped > m.last_step_ns ? Json(stopped - m.last_step_ns) : Json();
  ev["hang_timeout_ns"] = m.hang_timeout_ns ? Json(*m.hang_timeout_ns) : Json();
  Json procs = Json::MakeArray();
  for (const perf::ProcessHang& p : m.processes) {
    if (p.ended_cleanly) continue;
    const ProcessTrace& t = run.traces()[p.trace];
    if (p.stuck) stuck_pids.push_back(t.pid());
    Json j = Json::MakeObject();
    j["pid"] = t.pid();
    const int64_t w = WorkerIdOf(t);
    j["role"] = IsMain(run, m, p) ? "main" : w >= 0 ? "dataloader-worker" : "child";
    j["worker_id"] = w >= 0 ? Json(w) : Json();
    j["exe"] = std::string(run.facts(t).JobExe(t));
    j["stuck"] = p.stuck;
    j["stopped_known"] = p.end_known;
    Json calls = Json::MakeArray();
    for (const perf::InFlightCall& c : p.calls) calls.Append(perf::InFlightJson(c));
    j["in_flight"] = std::move(calls);
    if (!p.outside.empty()) {
      Json threads = Json::MakeArray();
      for (const perf::OutsideThread& o : p.outside) {
        Json th = Json::MakeObject();
        th["tid"] = static_cast<uint64_t>(o.tid);
        th["comm"] = o.comm;
        th["state"] = o.kernel_state != 0 ? Json(std::string(1, o.kernel_state)) : Json();
        th["syscall"] = o.syscall;
        Json s = Json::MakeArray();
        for (const std::string& line : o.python_stack) s.Append(line);
        th["python_stack"] = o.python_stack.empty() ? Json() : std::move(s);
        threads.Append(std::move(th));
      }
      j["threads"] = std::move(threads);
    }
    procs.Append(std::move(j));
  }
  Json pids = Json::MakeArray();
  for (int64_t p : stuck_pids) pids.Append(p);
  ev["stuck_pids"] = std::move(pids);
  ev["processes"] = std::move(procs);
  ctx.Add(std::move(f));
}

const RuleRegistration kProcHangRuleRegistration(ProcHangRule, {FindingId::kProcHang});

}  // namespace
}  // namespace colabtrace::analyzer::rules
