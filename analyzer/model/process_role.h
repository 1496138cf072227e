// The role of a process: what it ran, as CI budgets, diffs and the reports group
// processes (analyzer/ci, the process table, the HTML processes section).
#pragma once

#include <string>

#include "core/json.h"

namespace colabtrace::analyzer {

// The role of a processes[] entry of the report: the basename of the job's executable,
// plus, for an interpreter (python, shells, node, perl, ruby...), the main script's
// basename ("python3.11 train.py"), "-m module", or "-c" (with the imported module for
// multiprocessing's `from X import ...` launchers). A forked child that did not exec
// (a DataLoader worker) gets " (fork)" appended to the role it inherited.
std::string ProcessRole(const Json& process);

}  // namespace colabtrace::analyzer
