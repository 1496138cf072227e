// The dist.* rules, one file per finding id in this folder, registered in the rule
// registry (report/rule_registry.h) and run by the dist analysis (dist/dist_analysis.cpp)
// over the job model (dist/job_model.h). What they and the analysis share: how a rank's
// end reads.
#pragma once

#include <string>

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
// non-zero exit); "" for a rank that did not fail.
std::string CauseOf(const JobRank& r);

}  // namespace colabtrace::analyzer::dist
