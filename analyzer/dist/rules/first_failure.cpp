// dist.first-failure (error)
//
// Rule: in a job whose ranks failed, the rank that stopped first (dist::JobModel's
// verdict: a fatal signal, a SIGKILL no traced process sent, a non-zero exit; a killed
// rank stopped at its last sign of life), never merely the first that exited, and never
// a rank whose end the launcher sent it. Every other rank's failure that followed is its
// consequence (the launcher's SIGTERM, a collective timeout, a lost connection: exit 1),
// and so is its launcher's own failure (torchrun's ChildFailedError). A consequence gets
// no error of its own: its proc.* errors (and its workers') fold into the consequence's
// entry (`folded`); the culprit keeps its own beside this one. A process is matched to
// its findings by pid, so a pid that repeats across hosts folds nothing.
//
// Evidence: {rank, pid, host, cause, at_ns (from the job's first start), end, steps,
// job, restart, world_size, consequences: [{host, rank, pid, end, role, after_ns,
// folded}]}. A job with no verdict (the job model's problems) gets no finding: the report
// states why instead.
#include <algorithm>

#include "core/format.h"
#include "dist/rules/rules.h"

namespace colabtrace::analyzer::dist {
namespace {

std::string CauseText(const JobRank& r) {
  const std::string cause = CauseOf(r);
  if (cause == "killed") return "was killed by SIGKILL with no exit record (the OOM killer, or a kill from outside the job)";
  if (cause == "fatal-signal") return "crashed with " + EndText(r);
  if (cause == "signal") return "was ended by " + EndText(r) + " from outside the job";
  if (cause == "exception") return "raised " + r.exception + " (" + EndText(r) + ")";
  return EndText(r);
}

void FirstFailureRule(RuleContext& ctx) {
  const RunModel& run = ctx.run();
  const JobModel& jobs = run.Get<JobModel>();
  for (const Job& job : jobs.jobs) {
    if (!job.first_failure) continue;
    const JobRank& c = job.ranks[*job.first_failure];
    Finding f = Finding::Of(FindingId::kDistFirstFailure, c.pid);
    Json& ev = f.evidence;
    ev["rank"] = c.rank;
    ev["pid"] = c.pid;
    ev["host"] = c.host;
    ev["cause"] = CauseOf(c);
    ev["at_ns"] = c.at_ns;
    ev["end"] = EndJson(c);
    ev["steps"] = static_cast<uint64_t>(c.steps);
    ev["job"] = job.job;
    ev["restart"] = job.restart ? Json(*job.restart) : Json();
    ev["world_size"] = job.world_size ? Json(*job.world_size) : Json();

    Json consequences = Json::MakeArray();
    std::vector<int64_t> consequence_ranks;
    std::string ends;
    for (size_t i : job.consequences) {
      const JobRank& r = job.ranks[i];
      consequences.Append(ConsequenceJson(ctx, r, c.at_ns));
      consequence_ranks.push_back(r.rank);
      const std::string e = EndText(r);
      if (ends.find(e) == std::string::npos) ends += (ends.empty() ? "" : ", ") + e;
    }
    // The launcher's own failure (torchrun's ChildFailedError: exit 1) followed too.
    AppendLauncherConsequences(ctx, job, consequences);
    ev["consequences"] = std::move(consequences);

    f.summary = "rank " + std::to_string(c.rank) + " (host " + c.host + ", pid " + std::to_string(c.pid) +
                ") failed first: it " + CauseText(c) +
                (c.steps > 0 ? " after " + std::to_string(c.steps) + " step" + (c.steps == 1 ? "" : "s") : "") +
                " at " + FormatDurationNs(static_cast<uint64_t>(std::max<int64_t>(c.at_ns, 0))) + " into the job";
    std::sort(consequence_ranks.begin(), consequence_ranks.end());
    if (!consequence_ranks.empty()) {
      f.summary += "; " + RankList(consequence_ranks) + " ended after it (" + ends + ") as its consequence" +
                   (consequence_ranks.size() == 1 ? "" : "s");
    }
    ctx.Add(std::move(f));
  }
}

const RuleRegistration kFirstFailureRuleRegistration(FirstFailureRule, {FindingId::kDistFirstFailure});

}  // namespace
}  // namespace colabtrace::analyzer::dist
