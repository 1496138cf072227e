// colabtrace baseline: record the metrics of a good run as a budget for `check`.
#include <cmath>
#include <cstdlib>
#include <iostream>

#include "cli/command.h"
#include "ci/budget.h"
#include "cli/flag_reader.h"

namespace colabtrace::cli {
namespace {

using analyzer::FlagReader;

// A non-negative decimal number, optionally with a trailing '%'.
std::optional<double> ParseAmount(std::string text, bool allow_percent) {
  if (allow_percent && !text.empty() && text.back() == '%') text.pop_back();
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

std::string MetricTable() {
  std::string out;
  char line[160];
  for (const auto& m : analyzer::kMetrics) {
    const char* rule = m.rule == analyzer::MetricLimitRule::kExact          ? "exact"
                       : m.rule == analyzer::MetricLimitRule::kTolerance    ? "+tolerance"
                       : m.rule == analyzer::MetricLimitRule::kTimed        ? "+tolerance +slack"
                       : m.rule == analyzer::MetricLimitRule::kResident     ? "+tolerance +rss"
                       : m.rule == analyzer::MetricLimitRule::kTwiceAsSlow  ? "x2 +1 ms"
                       : m.rule == analyzer::MetricLimitRule::kSharePoints  ? "+15 points"
                                                                            : "not checked";
    std::snprintf(line, sizeof(line), "  %-24s %-18s %s\n", std::string(m.name).c_str(), rule,
                  std::string(m.meaning).c_str());
    out += line;
  }
  return out;
}

class BaselineCommand final : public Command {
 public:
  std::string_view name() const override { return "baseline"; }
  std::string_view summary() const override {
    return "CI: record the metrics of a good run as a budget (budget.json)";
  }
  std::string usage() const override {
    return "Usage: colabtrace baseline [options] -o budget.json TRACE|DIR...\n\n"
           "Analyses a good run as `colabtrace report` does and writes its metrics, each with\n"
           "an allowed maximum, for `colabtrace check`. Processes are grouped by role: the\n"
           "executable's basename, plus the script for interpreters (\"python3.11 train.py\",\n"
           "\"python3.11 -m pkg\"); forked children that did not exec, such as DataLoader\n"
           "workers, get \" (fork)\". The whole run (\"total\") and each role get:\n\n" +
           MetricTable() +
           "\nDefault limits:\n"
           "  exact              the max is the observed value: failed GPU allocations, leaked\n"
           "                     GPU bytes and process counts must not grow at all\n"
           "  +tolerance         value + 10% (--tolerance), rounded down: 10 reads allow 11\n"
           "  +tolerance +slack  durations also get 1 s (--time-slack) for timer and\n"
           "                     scheduler noise, so short runs do not flap\n"
           "  +tolerance +rss    peak RSS also gets 1 MiB (--rss-slack): it is the highest\n"
           "                     of the shim's samples, and what they find moves with timing\n"
           "Every finding present is recorded as allowed; `check` fails on new ones.\n\n"
           "budget.json is meant to be edited: raise a \"max\" to loosen a limit, set it to null\n"
           "to stop checking that metric, delete a role, or add a finding id to allow it.\n"
           "`check` applies the file exactly as written.\n\n"
           "Options:\n"
           "  -o, --output FILE      where to write the budget, '-' for stdout (required)\n"
           "  --tolerance PCT        allowed growth of the +tolerance metrics (default 10)\n"
           "  --time-slack SECONDS   extra allowance on durations (default 1)\n"
           "  --rss-slack MIB        extra allowance on peak RSS (default 1)\n"
           "  --gpu-arch sm_XY       analyse as `report --gpu-arch` does; check reuses it\n"
           "  --sysroot DIR          read library files under DIR first, as `report` does\n"
           "  -h, --help             show this help\n\n"
           "Exit codes: 0 written, 2 usage error or an input that cannot be read.\n";
  }

  int Run(const std::vector<std::string>& args) override {
    std::optional<std::string> output;
    analyzer::BudgetPolicy policy;
    analyzer::ReportOptions options;
    std::vector<std::string> inputs;
    FlagReader r(args);
    while (r.Next()) {
      if (r.positional()) {
        inputs.push_back(r.arg());
      } else if (r.Is("--output", "-o")) {
        output = r.Value();
        if (!output || output->empty()) return UsageError(name(), "-o needs a file name ('-' for stdout)");
      } else if (r.Is("--tolerance")) {
        auto v = r.Value();
        auto pct = v ? ParseAmount(*v, true) : std::nullopt;
        if (!pct) return UsageError(name(), "--tolerance takes a percentage >= 0, like 10 or 12.5");
        policy.tolerance_percent = *pct;
      } else if (r.Is("--time-slack")) {
        auto v = r.Value();
        auto secs = v ? ParseAmount(*v, false) : std::nullopt;
        if (!secs || *secs > 1e9) return UsageError(name(), "--time-slack takes seconds >= 0, like 1 or 0.5");
        policy.time_slack_ns = static_cast<uint64_t>(std::llround(*secs * 1e9));
      } else if (r.Is("--rss-slack")) {
        auto v = r.Value();
        auto mib = v ? ParseAmount(*v, false) : std::nullopt;
        if (!mib || *mib > 1e9) return UsageError(name(), "--rss-slack takes MiB >= 0, like 1 or 0.5");
        policy.rss_slack_bytes = static_cast<uint64_t>(std::llround(*mib * 1048576.0));
      } else if (auto bad = TakeReportFlag(r, options)) {
        if (!bad->empty()) return UsageError(name(), *bad);
      } else {
        return UsageError(name(), "unknown option '" + r.arg() + "'");
      }
    }
    if (!output) return UsageError(name(), "-o FILE is required ('-' for stdout)");
    if (inputs.empty()) return UsageError(name(), "no trace or directory given");

    std::vector<std::string> errors;
    auto run = analyzer::MeasureInputs(inputs, options, &errors);
    if (!run) {
      for (const auto& e : errors) std::cerr << "colabtrace baseline: " << e << "\n";
      std::cerr << "colabtrace baseline: no budget written\n";
      return kExitUsage;
    }
    for (const auto& w : run->warnings) std::cerr << "colabtrace baseline: warning: " << w << "\n";
    for (const auto& f : run->findings) {
      if (f.severity == analyzer::Severity::kInfo) continue;
      std::cerr << "colabtrace baseline: note: this run has " << analyzer::SeverityName(f.severity)
                << " finding " << f.id << "; the budget allows it (remove it from \"findings\" "
                << "to make check fail on it)\n";
    }
    const analyzer::Budget budget = analyzer::MakeBudget(*run, policy, options.gpu_arch);
    if (!WriteOutput(*output, analyzer::FormatBudget(budget))) return kExitUsage;
    if (*output != "-") {
      std::cerr << "colabtrace baseline: " << run->total.pids.size() << " process"
                << (run->total.pids.size() == 1 ? "" : "es") << " in " << run->roles.size()
                << " role" << (run->roles.size() == 1 ? "" : "s") << ", " << run->findings.size()
                << " finding id" << (run->findings.size() == 1 ? "" : "s") << " -> " << *output
                << "\n";
    }
    return kExitOk;
  }
};

}  // namespace

std::unique_ptr<Command> MakeBaselineCommand() { return std::make_unique<BaselineCommand>(); }

}  // namespace colabtrace::cli
