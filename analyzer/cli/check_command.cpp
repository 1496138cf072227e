// colabtrace check: compare a run with a budget written by `baseline` (CI).
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "ci/budget.h"
#include "cli/flag_reader.h"

namespace colabtrace::cli {
namespace {

using analyzer::FlagReader;
using analyzer::Severity;

class CheckCommand final : public Command {
 public:
  std::string_view name() const override { return "check"; }
  std::string_view summary() const override {
    return "CI: compare a run with a budget; exit 1 on a regression";
  }
  std::string usage() const override {
    return "Usage: colabtrace check --baseline budget.json [options] TRACE|DIR...\n\n"
           "Measures a run as `colabtrace baseline` does and compares it with the budget.\n"
           "Prints a table on stdout: scope (total or a role), metric, baseline, limit, now,\n"
           "verdict. A regression is:\n"
           "  - a metric above its \"max\" in the budget (a null max is not checked), or\n"
           "  - a finding whose id the budget does not list (or lists at a lower severity),\n"
           "    at or above --fail-on.\n"
           "Roles that are new or absent are listed but do not fail by themselves; the total\n"
           "process count catches them.\n\n"
           "Options:\n"
           "  --baseline FILE      the budget to check against (required)\n"
           "  --junit FILE         also write JUnit XML: one testcase per metric and per\n"
           "                       finding; regressions are failures\n"
           "  --fail-on SEVERITY   new findings at or above SEVERITY fail (info, warning or\n"
           "                       error; default warning)\n"
           "  --gpu-arch sm_XY     analyse with this GPU architecture (default: the budget's)\n"
           "  --sysroot DIR        read library files under DIR first, as `report` does\n"
           "  -h, --help           show this help\n\n"
           "With GITHUB_STEP_SUMMARY set (GitHub Actions), also appends a Markdown table to\n"
           "that file: metric, baseline, value, band, verdict.\n\n"
           "Exit codes: 0 no regression, 1 regressions, 2 usage error, an input that cannot be\n"
           "read, or a malformed budget.\n";
  }

  int Run(const std::vector<std::string>& args) override {
    std::optional<std::string> budget_path, junit;
    Severity fail_on = Severity::kWarning;
    analyzer::ReportOptions options;
    std::vector<std::string> inputs;
    FlagReader r(args);
    while (r.Next()) {
      if (r.positional()) {
        inputs.push_back(r.arg());
      } else if (r.Is("--baseline")) {
        budget_path = r.Value();
        if (!budget_path || budget_path->empty()) return UsageError(name(), "--baseline needs a budget file");
      } else if (r.Is("--junit")) {
        junit = r.Value();
        if (!junit || junit->empty()) return UsageError(name(), "--junit needs a file name");
      } else if (r.Is("--fail-on")) {
        auto v = r.Value();
        auto s = v ? analyzer::ParseSeverity(*v) : std::nullopt;
        if (!s) return UsageError(name(), "--fail-on takes info, warning or error");
        fail_on = *s;
      } else if (auto bad = TakeReportFlag(r, options)) {
        if (!bad->empty()) return UsageError(name(), *bad);
      } else {
        return UsageError(name(), "unknown option '" + r.arg() + "'");
      }
    }
    if (!budget_path) return UsageError(name(), "--baseline budget.json is required");
    if (inputs.empty()) return UsageError(name(), "no trace or directory given");

    std::ifstream in(*budget_path, std::ios::binary);
    if (!in) {
      std::cerr << "colabtrace check: cannot read the budget " << *budget_path << ": "
                << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    std::stringstream text;
    text << in.rdbuf();
    std::string error;
    std::vector<std::string> budget_warnings;
    auto budget = analyzer::ParseBudget(text.str(), &error, &budget_warnings);
    if (!budget) {
      std::cerr << "colabtrace check: " << *budget_path << " is not a valid budget: " << error
                << "\n";
      return kExitUsage;
    }
    for (const auto& w : budget_warnings) std::cerr << "colabtrace check: " << *budget_path << ": " << w << "\n";
    if (!options.gpu_arch) options.gpu_arch = budget->gpu_arch;

    std::vector<std::string> errors;
    auto run = analyzer::MeasureInputs(inputs, options, &errors);
    if (!run) {
      for (const auto& e : errors) std::cerr << "colabtrace check: " << e << "\n";
      return kExitUsage;
    }
    for (const auto& w : run->warnings) std::cerr << "colabtrace check: warning: " << w << "\n";

    const analyzer::CheckResult result = analyzer::CheckRun(*budget, *run, fail_on);
    if (junit && !WriteOutput(*junit, analyzer::RenderCheckJUnit(result, *budget_path))) {
      return kExitUsage;
    }
    if (!WriteOutput("-", analyzer::RenderCheckText(result, *budget_path, UseColor(1)))) {
      return kExitUsage;
    }
    // GitHub Actions: the job's summary page shows this Markdown (appended: other steps
    // write there too). A failure to write it is reported and does not change the verdict.
    if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY"); summary != nullptr && *summary != '\0') {
      std::ofstream md(summary, std::ios::binary | std::ios::app);
      md << analyzer::RenderCheckMarkdown(result, *budget_path);
      if (!md.flush()) {
        std::cerr << "colabtrace check: cannot append to GITHUB_STEP_SUMMARY " << summary << ": "
                  << std::strerror(errno) << "\n";
      }
    }
    return result.regressions == 0 ? kExitOk : kExitFindings;
  }
};

}  // namespace

std::unique_ptr<Command> MakeCheckCommand() { return std::make_unique<CheckCommand>(); }

}  // namespace colabtrace::cli
