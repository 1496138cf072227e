// The role of a process: what it ran, as CI budgets, diffs and the reports group
// processes (analyzer/ci, the process table, the HTML processes section).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/json.h"

namespace colabtrace::analyzer {

// The role of a processes[] entry of the report: the basename of the job's executable,
// plus, for an interpreter (python, shells, node, perl, ruby...), the main script's
// basename ("python3.11 train.py"), "-m module", or "-c" (with the imported module for
// multiprocessing's `from X import ...` launchers). A forked child that did not exec
// (a DataLoader worker) gets " (fork)" appended to the role it inherited.
std::string ProcessRole(const Json& process);

// An argv as one line for a terminal: each argument escaped (EscapeForTerminal), joined
// by spaces, cut to 120 characters ("..."). Of a processes[] row's argv, or of a trace's
// own (ProcessFacts::JobArgv).
std::string CommandLineText(const std::vector<std::string_view>& argv);
std::string CommandLineText(const Json& argv);

// Past this many processes the text report's per-process sections (the process table,
// Libraries, File I/O, GPU memory, Python stacks) group them by role, with counts and a
// few pids; `report --format json` always lists each one.
inline constexpr size_t kProcessRowsBeforeGrouping = 40;

// A group's pids as the text report shows them: the first three, then " ..." when there
// are more ("101 102 103 ...").
std::string PidSample(const std::vector<int64_t>& pids);

}  // namespace colabtrace::analyzer
