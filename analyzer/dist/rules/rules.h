// The dist.* rules, one file per finding id in this folder, registered in the rule
// registry (report/rule_registry.h) and run by the dist analysis (dist/dist_analysis.cpp)
// over the job model (dist/job_model.h). What they and the analysis share: how a rank's
// end reads.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "dist/job_model.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer::dist {

// {kind, code, signal, signal_name}: as processes[].end gives it (model's EndJson).
using analyzer::EndJson;
inline Json EndJson(const JobRank& r) { return EndJson(r.end_kind, r.code, r.signal); }

// How a rank's end reads in a sentence or a table: "exited 1", "killed by SIGKILL",
// "SIGSEGV", "SIGTERM from pid 40", "exited 0".
std::string EndText(const JobRank& r);

// Why a failed rank stopped, as dist.first-failure's `cause` gives it: "killed" (SIGKILL
// that no traced process sent: the OOM killer, or a kill from outside the job),
// "fatal-signal", "signal" (a termination signal from outside the job), "exit" (a
// non-zero exit), "exception" (a non-zero exit on an uncaught Python exception); "" for a
// rank that did not fail.
std::string CauseOf(const JobRank& r);

// The proc.* errors of these pids (and of no pid that repeats across hosts: a pid names
// one process only where it is unique), taken out of the report (RuleContext::Fold) and
// returned as [{id, pid, summary}]: a consequence's own errors, folded into the dist.*
// finding that explains them.
Json FoldProcErrors(RuleContext& ctx, std::vector<int64_t> pids);

// The pids of rank r and its workers.
std::vector<int64_t> RankPids(const RunModel& run, const JobRank& r);

// One entry of a dist.* finding's consequences: {host, rank, pid, end, role: "rank",
// after_ns (since `from_ns` on the job's axis), folded}.
Json ConsequenceJson(RuleContext& ctx, const JobRank& r, int64_t from_ns);

// "rank 1", "ranks 0, 2 and 3".
std::string RankList(const std::vector<int64_t>& ranks);

// Each failed launcher of the job (torchrun's agent: ChildFailedError) as a consequence:
// {host, rank: null, pid, end, role: "launcher", after_ns: null, folded}.
void AppendLauncherConsequences(RuleContext& ctx, const Job& job, Json& consequences);

}  // namespace colabtrace::analyzer::dist
