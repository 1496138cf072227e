// How a rank's end reads, and what the dist.* rules share (dist/rules/rules.h).
#include <algorithm>
#include <map>

#include "core/format.h"
#include "dist/rules/rules.h"

namespace colabtrace::analyzer::dist {

std::string EndText(const JobRank& r) {
  switch (r.end_kind) {
    case EndKind::kExited:
      return r.code ? "exited " + std::to_string(*r.code) : "exited";
    case EndKind::kExecUntraced:
      return "exec'd an untraced program";
    case EndKind::kKilled:
      return r.sender_pid != 0 ? "killed by SIGKILL from pid " + std::to_string(r.sender_pid) : "killed by SIGKILL";
    case EndKind::kSignaled: {
      const std::string name = r.signal ? SignalName(static_cast<int>(*r.signal)) : "a signal";
      return r.sender_pid != 0 ? name + " from pid " + std::to_string(r.sender_pid) : name;
    }
  }
  return "";
}

std::string CauseOf(const JobRank& r) {
  switch (r.blame) {
    case Blame::kNone: return "";
    case Blame::kSent: return "signal";
    case Blame::kExit:
      if (r.end_kind != EndKind::kExited) return "signal";
      return r.exception.empty() ? "exit" : "exception";
    case Blame::kOwn: return r.end_kind == EndKind::kKilled ? "killed" : "fatal-signal";
  }
  return "";
}

Json FoldProcErrors(RuleContext& ctx, std::vector<int64_t> pids) {
  const RunModel& run = ctx.run();
  std::map<int64_t, size_t> pid_count;
  for (const ProcessTrace& t : run.traces()) {
    if (!run.facts(t).run_wrapper) ++pid_count[t.pid()];
  }
  pids.erase(std::remove_if(pids.begin(), pids.end(), [&](int64_t p) { return pid_count[p] != 1; }), pids.end());
  Json ids = Json::MakeArray();
  for (const Finding& taken : ctx.Fold([&](const Finding& g) {
         return g.severity == Severity::kError && g.id.rfind("proc.", 0) == 0 &&
                std::find(pids.begin(), pids.end(), g.pid) != pids.end();
       })) {
    Json one = Json::MakeObject();
    one["id"] = taken.id;
    one["pid"] = taken.pid;
    one["summary"] = taken.summary;
    ids.Append(std::move(one));
  }
  return ids;
}

std::vector<int64_t> RankPids(const RunModel& run, const JobRank& r) {
  std::vector<int64_t> pids{r.pid};
  for (size_t w : r.workers) pids.push_back(run.traces()[w].pid());
  return pids;
}

Json ConsequenceJson(RuleContext& ctx, const JobRank& r, int64_t from_ns) {
  Json one = Json::MakeObject();
  one["host"] = r.host;
  one["rank"] = r.rank;
  one["pid"] = r.pid;
  one["end"] = EndJson(r);
  one["role"] = "rank";
  // at_ns values come from untrusted traces: subtracted without signed overflow.
  one["after_ns"] = static_cast<int64_t>(static_cast<uint64_t>(r.at_ns) - static_cast<uint64_t>(from_ns));
  one["folded"] = FoldProcErrors(ctx, RankPids(ctx.run(), r));
  return one;
}

std::string RankList(const std::vector<int64_t>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  }
  return s;
}

void AppendLauncherConsequences(RuleContext& ctx, const Job& job, Json& consequences) {
  const RunModel& run = ctx.run();
  for (size_t l : job.launchers) {
    const ProcessTrace& t = run.traces()[l];
    const ProcessFacts& lf = run.facts(t);
    const bool failed = lf.end_kind == EndKind::kKilled || lf.end_kind == EndKind::kSignaled ||
                        (lf.end_kind == EndKind::kExited && lf.exit_code && *lf.exit_code != 0);
    if (!failed) continue;
    const std::string host = run.lifecycle().HostOf(t);
    Json one = Json::MakeObject();
    one["host"] = host.substr(0, host.find('/'));
    one["rank"] = Json();
    one["pid"] = t.pid();
    one["end"] = EndJson(lf.end_kind, lf.exit_code, lf.end_signal);
    one["role"] = "launcher";
    one["after_ns"] = Json();
    one["folded"] = FoldProcErrors(ctx, {static_cast<int64_t>(t.pid())});
    consequences.Append(std::move(one));
  }
}

}  // namespace colabtrace::analyzer::dist
