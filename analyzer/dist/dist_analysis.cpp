// The dist analysis: processes[].dist for every rank and worker, the report's "dist"
// (each job: its ranks, how each ended, what is missing, the verdict or why there is
// none), the statements of bad input as report warnings, and the dist.* rules
// (dist/rules/). It runs after the process and perf analyses: dist.first-failure folds
// the proc.* errors of a failure's consequences.
#include <algorithm>

#include "dist/job_model.h"
#include "dist/rules/rules.h"
#include "report/analyses.h"
#include "report/report.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer {
namespace {

Json OptionalNumber(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(); }

std::string JobName(const dist::Job& job) {
  std::string s = "job " + (job.job.empty() ? std::string("(no job id)") : job.job);
  if (job.restart) s += " (restart " + std::to_string(*job.restart) + ")";
  return s;
}

class DistAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "dist"; }

  void Run(ReportBuilder& report) override {
    const dist::JobModel& model = report.run().Get<dist::JobModel>();
    if (model.processes.empty()) return;
    for (const dist::RankProcess& p : model.processes) {
      const dist::LauncherIdentity& id = p.identity;
      Json d = Json::MakeObject();
      d["rank"] = OptionalNumber(id.problems.empty() ? id.rank : std::nullopt);
      d["local_rank"] = OptionalNumber(id.local_rank);
      d["world_size"] = OptionalNumber(id.world_size);
      d["host"] = p.host;
      d["job"] = id.job;
      d["restart"] = OptionalNumber(id.restart);
      d["role"] = std::string(dist::RoleName(p.role));
      d["launcher"] = id.launcher;
      if (!id.problems.empty()) {
        Json problems = Json::MakeArray();
        for (const std::string& s : id.problems) problems.Append(s);
        d["problems"] = std::move(problems);
      }
      report.process(p.trace)["dist"] = std::move(d);
    }
    Json jobs = Json::MakeArray();
    for (const dist::Job& job : model.jobs) {
      jobs.Append(JobJson(report, job));
      for (const std::string& problem : job.problems) report.AddWarning(JobName(job) + ": " + problem);
      if (job.stopped_from_outside) {
        report.AddWarning(JobName(job) +
                          ": every rank that failed was ended by a signal a traced process sent (the launcher's "
                          "teardown), and none failed on its own: the job was stopped from outside");
      }
    }
    Json notes = Json::MakeArray();
    for (const std::string& n : model.notes) {
      notes.Append(n);
      report.AddWarning(n);
    }
    Json out = Json::MakeObject();
    out["jobs"] = std::move(jobs);
    out["notes"] = std::move(notes);
    report.root()["dist"] = std::move(out);
    RunRules(report, FindingArea::kDist);
  }

 private:
  static Json JobJson(const ReportBuilder& report, const dist::Job& job) {
    Json j = Json::MakeObject();
    j["job"] = job.job;
    j["launcher"] = job.launcher;
    j["restart"] = OptionalNumber(job.restart);
    j["world_size"] = OptionalNumber(job.world_size);
    Json hosts = Json::MakeArray();
    for (const std::string& h : job.hosts) hosts.Append(h);
    j["hosts"] = std::move(hosts);
    // Which clock ordered the ranks' stops, and how far two hosts' may disagree.
    j["clock"] = job.clock;
    j["clock_uncertainty_ns"] = job.clock_uncertainty_ns;
    Json ranks = Json::MakeArray();
    for (size_t i = 0; i < job.ranks.size(); ++i) {
      const dist::JobRank& r = job.ranks[i];
      Json row = Json::MakeObject();
      row["rank"] = r.rank;
      row["host"] = r.host;
      row["pid"] = r.pid;
      row["steps"] = static_cast<uint64_t>(r.steps);
      row["end"] = dist::EndJson(r);
      row["end_text"] = dist::EndText(r);
      row["failed"] = r.failed();
      row["stopped_at_ns"] = r.at_ns;
      row["workers"] = static_cast<uint64_t>(r.workers.size());
      row["first_failure"] = job.first_failure && *job.first_failure == i;
      row["never_entered"] = std::find(job.hung.begin(), job.hung.end(), i) != job.hung.end();
      // Its collectives per process group over the whole run (kept whole however far the
      // window rolled).
      Json groups = Json::MakeArray();
      for (const auto& [group, g] : r.groups) {
        Json one = Json::MakeObject();
        one["group"] = group;
        one["collectives"] = g.collectives;
        one["raised"] = g.raised;
        one["last_seq"] = g.entered != 0 ? Json(g.entered) : Json();
        one["time_ns"] = g.time_ns;
        groups.Append(std::move(one));
      }
      row["collectives"] = std::move(groups);
      if (r.waiting) {
        Json w = Json::MakeObject();
        w["op"] = r.waiting->op;
        w["seq"] = r.waiting->seq != 0 ? Json(r.waiting->seq) : Json();
        w["where"] = r.waiting->where.empty() ? Json() : Json(r.waiting->where);
        w["waited_ns"] = r.waiting->waited_ns;
        w["raised"] = r.waiting->raised;
        row["waiting"] = std::move(w);
      } else {
        row["waiting"] = Json();
      }
      ranks.Append(std::move(row));
    }
    j["ranks"] = std::move(ranks);
    Json missing = Json::MakeArray();
    for (int64_t m : job.missing) missing.Append(m);
    j["missing_ranks"] = std::move(missing);
    Json problems = Json::MakeArray();
    for (const std::string& p : job.problems) problems.Append(p);
    j["problems"] = std::move(problems);
    Json launchers = Json::MakeArray();
    for (size_t l : job.launchers) launchers.Append(static_cast<int64_t>(report.traces()[l].pid()));
    j["launcher_pids"] = std::move(launchers);
    j["first_failure_rank"] = job.first_failure ? Json(job.ranks[*job.first_failure].rank) : Json();
    j["stopped_from_outside"] = job.stopped_from_outside;
    Json hung = Json::MakeArray();
    for (size_t i : job.hung) hung.Append(job.ranks[i].rank);
    j["never_entered_ranks"] = std::move(hung);
    j["all_waiting"] = job.all_waiting;
    return j;
  }
};

}  // namespace

std::unique_ptr<Analysis> MakeDistAnalysis() { return std::make_unique<DistAnalysis>(); }

}  // namespace colabtrace::analyzer
