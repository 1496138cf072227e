// dist.hang (error)
//
// Rule: the job stopped making progress because one or more ranks never entered the
// collective the others waited in (dist::JobModel's hang verdict: the waiters ended in a
// collective, in flight when they stopped or raised by its timeout; the others were
// blocked elsewhere, stopped from outside while they waited, gone, or have no trace). It
// holds also when the waiters timed out and exited first: their exits are its
// consequences, and there is no dist.first-failure then. The waiters' own proc.* errors
// (proc.python-exception for the timeout, proc.hang, proc.killed) fold into it; the
// ranks at fault keep theirs.
//
// Evidence: {rank (the lowest that never entered), ranks, missing_ranks, pid, host (of
// the lowest that never entered and has a trace; null when none has), blocked_in (that
// one's), collective: {op, seq, comm, count, dtype, where}, waiting: [{host, rank,
// pid, waited_ns, raised, python_stack}], consequences: [{host, rank, pid, end, role,
// after_ns, folded}], job}. blocked_in: {state ("blocked": in a call that had not
// returned; "stopped": ended from outside, in no call the shim notes; "exited": gone
// before the collective; "missing": no trace), call (processes[].in_flight's entry, or
// null), end, steps, python_stack (from `colabtrace run --hang-timeout`, else the rank's
// last Python sample of that thread)}. seq is the collective's number in its process
// group, null where unknown; comm names the group ("group 1", the default one) or the NCCL
// communicator ("nccl comm 0x..." and its id, the same on every rank; the collective a
// rank waits in is then the last one it issued on the stream its GPU synchronisation waits
// for).
#include <algorithm>

#include "core/format.h"
#include "dist/rules/rules.h"
#include "model/python_stack.h"
#include "perf/hang_model.h"
#include "process/rules/rules.h"

namespace colabtrace::analyzer::dist {
namespace {

Json StackJson(const std::vector<std::string>& frames) {
  if (frames.empty()) return Json();
  Json a = Json::MakeArray();
  for (const std::string& f : frames) a.Append(f);
  return a;
}

// The Python stack of thread tid of trace t while it sat in a call from since_ns to
// until_ns: `colabtrace run --hang-timeout`'s outside reading, else the last py_sample of
// that thread taken meanwhile (innermost first); empty when neither (a sample from before
// shows where the thread was, not where it sat).
std::vector<std::string> ThreadStack(const ProcessTrace& t, const perf::ProcessHang* p, uint32_t tid,
                                     uint64_t since_ns, uint64_t until_ns = UINT64_MAX) {
  if (p != nullptr) {
    for (const perf::OutsideThread& o : p->outside) {
      if (o.tid == tid && !o.python_stack.empty()) return o.python_stack;
    }
  }
  for (auto it = t.records.PySample.rbegin(); it != t.records.PySample.rend() && it->ts >= since_ns; ++it) {
    if (it->tid == tid && it->ts <= until_ns) return PythonStackFrames(t, it->py_stack);
  }
  return {};
}

std::string Seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", static_cast<double>(ns) / 1e9);
  return buf;
}

void HangRule(RuleContext& ctx) {
  const RunModel& run = ctx.run();
  const JobModel& jobs = run.Get<JobModel>();
  const perf::HangModel& hangs = run.Get<perf::HangModel>();
  for (const Job& job : jobs.jobs) {
    if (!job.waited_in || (job.hung.empty() && job.missing.empty())) continue;
    const JobRank& in = job.ranks[*job.waited_in];
    const RankWait& w = *in.waiting;
    std::vector<int64_t> ranks;
    for (size_t i : job.hung) ranks.push_back(job.ranks[i].rank);
    for (int64_t m : job.missing) ranks.push_back(m);
    std::sort(ranks.begin(), ranks.end());

    // The lowest rank that never entered and has a trace names the finding.
    const JobRank* c = nullptr;
    for (size_t i : job.hung) {
      if (c == nullptr || job.ranks[i].rank < c->rank) c = &job.ranks[i];
    }
    Finding f = Finding::Of(FindingId::kDistHang, c != nullptr ? c->pid : in.pid);
    Json& ev = f.evidence;
    ev["rank"] = ranks.front();
    Json rank_list = Json::MakeArray();
    for (int64_t r : ranks) rank_list.Append(r);
    ev["ranks"] = std::move(rank_list);
    Json missing = Json::MakeArray();
    for (int64_t m : job.missing) missing.Append(m);
    ev["missing_ranks"] = std::move(missing);
    ev["job"] = job.job;

    std::string blocked_text;
    Json blocked = Json::MakeObject();
    if (c == nullptr) {
      blocked["state"] = "missing";
      blocked["call"] = Json();
      blocked["end"] = Json();
      blocked["steps"] = Json();
      blocked["python_stack"] = Json();
      // "it has no trace", "rank 2 has no trace", "none of them has a trace".
      blocked_text = std::string(c == nullptr && ranks.size() > 1 ? "has a trace" : "has no trace") +
                     " (its host's folder is missing, or it was never traced)";
      ev["pid"] = Json();
      ev["host"] = Json();
    } else {
      ev["pid"] = c->pid;
      ev["host"] = c->host;
      const ProcessTrace& t = run.traces()[c->trace];
      const perf::ProcessHang* p = hangs.Of(c->trace);
      const perf::InFlightCall* call = p != nullptr ? rules::TellingCall(*p) : nullptr;
      blocked["end"] = EndJson(*c);
      blocked["steps"] = static_cast<uint64_t>(c->steps);
      if (call != nullptr) {
        blocked["state"] = "blocked";
        blocked["call"] = perf::InFlightJson(*call);
        const std::vector<std::string> stack = !call->python_stack.empty() ? call->python_stack
                                                                           : ThreadStack(t, p, call->tid, call->since_ns);
        blocked["python_stack"] = StackJson(stack);
        const std::string line = ProgramFrame(stack);
        blocked_text = "was blocked " + Seconds(call->blocked_ns) + " in " + rules::InFlightTarget(*call) +
                       (line.empty() ? "" : " at " + line);
      } else {
        const bool exited = c->end_kind == EndKind::kExited;
        blocked["state"] = exited ? "exited" : "stopped";
        blocked["call"] = Json();
        const std::vector<std::string> stack = ThreadStack(t, p, static_cast<uint32_t>(c->pid), 0);
        blocked["python_stack"] = StackJson(stack);
        const std::string line = ProgramFrame(stack);
        blocked_text = exited ? EndText(*c) + " after " + std::to_string(c->steps) + " step" +
                                    (c->steps == 1 ? "" : "s") + " without entering it"
                              : "was in no call the shim notes" + (line.empty() ? "" : " (last seen at " + line + ")") +
                                    " until it was stopped (" + EndText(*c) + ")";
      }
      if (c->steps > 0 && c->end_kind != EndKind::kExited) blocked_text += " at step " + std::to_string(c->steps + 1);
    }
    ev["blocked_in"] = std::move(blocked);

    Json coll = Json::MakeObject();
    coll["op"] = w.op;
    coll["seq"] = w.seq != 0 ? Json(w.seq) : Json();
    coll["comm"] = w.group != 0 ? Json(CommName(w.group, w.nccl)) : Json();
    coll["count"] = w.count;
    coll["dtype"] = w.dtype.empty() ? Json() : Json(w.dtype);
    coll["where"] = w.where.empty() ? Json() : Json(w.where);
    ev["collective"] = std::move(coll);

    Json waiting = Json::MakeArray();
    std::vector<int64_t> waiter_ranks;
    uint64_t longest = 0;
    for (size_t i : job.waiters) {
      const JobRank& r = job.ranks[i];
      const RankWait& rw = *r.waiting;
      Json one = Json::MakeObject();
      one["host"] = r.host;
      one["rank"] = r.rank;
      one["pid"] = r.pid;
      one["waited_ns"] = rw.waited_ns;
      one["raised"] = rw.raised;
      one["op"] = rw.op;
      one["seq"] = rw.seq != 0 ? Json(rw.seq) : Json();
      std::vector<std::string> stack = ThreadStack(run.traces()[r.trace], hangs.Of(r.trace), rw.tid, rw.since_ns,
                                                   rw.since_ns + rw.waited_ns);
      if (stack.empty() && !rw.where.empty()) stack.push_back(rw.where);
      one["python_stack"] = StackJson(stack);
      waiting.Append(std::move(one));
      waiter_ranks.push_back(r.rank);
      longest = std::max(longest, rw.waited_ns);
    }
    ev["waiting"] = std::move(waiting);

    Json consequences = Json::MakeArray();
    // Consequences are timed from when the waiters entered the collective.
    const auto from = static_cast<int64_t>(w.since_ns + in.axis_base);
    std::string ends;
    for (size_t i : job.consequences) {
      consequences.Append(ConsequenceJson(ctx, job.ranks[i], from));
      const std::string e = EndText(job.ranks[i]);
      if (ends.find(e) == std::string::npos) ends += (ends.empty() ? "" : ", ") + e;
    }
    AppendLauncherConsequences(ctx, job, consequences);
    ev["consequences"] = std::move(consequences);

    // Who the blocked text is about: the one rank, the lowest with a trace, or all of
    // them when none has one.
    const std::string subject = ranks.size() == 1 ? "it "
                                : c == nullptr    ? "none of them "
                                                  : "rank " + std::to_string(c->rank) + " ";
    const bool timed_out = std::any_of(job.waiters.begin(), job.waiters.end(),
                                       [&](size_t i) { return job.ranks[i].waiting->raised; });
    f.summary = RankList(ranks) + (c != nullptr ? " (host " + c->host + ", pid " + std::to_string(c->pid) + ")" : "") +
                " never entered " + rules::CollectiveText(w.op, w.seq, w.where) + ": " + subject + blocked_text + "; " + RankList(waiter_ranks) +
                " waited in it up to " + Seconds(longest) +
                (timed_out ? " and gave up (" + ends + ")" : "");
    ctx.Add(std::move(f));
  }
}

const RuleRegistration kHangRuleRegistration(HangRule, {FindingId::kDistHang});

}  // namespace
}  // namespace colabtrace::analyzer::dist
