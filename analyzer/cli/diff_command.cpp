// colabtrace diff: two runs side by side.
#include <iostream>

#include "cli/command.h"
#include "cli/flag_reader.h"
#include "ci/run_diff.h"

namespace colabtrace::cli {
namespace {

using analyzer::FlagReader;

class DiffCommand final : public Command {
 public:
  std::string_view name() const override { return "diff"; }
  std::string_view summary() const override { return "compare two runs side by side"; }
  std::string usage() const override {
    return "Usage: colabtrace diff [options] A B\n\n"
           "A and B are runs: each a trace file or a directory of *.ctrace. Prints the metrics\n"
           "of the whole run and of each process role (as `colabtrace baseline` groups them)\n"
           "in two columns with the delta B - A, then the finding ids only in A, only in B,\n"
           "and in both.\n\n"
           "Options:\n"
           "  --format text|json   output format (default text)\n"
           "  -o, --output FILE    write to FILE instead of stdout\n"
           "  --gpu-arch sm_XY     analyse both runs with this GPU architecture\n"
           "  --sysroot DIR        read library files under DIR first (a copy of the\n"
           "                       recording machine's files, used when build ids match)\n"
           "  -h, --help           show this help\n\n"
           "Exit codes: 0 compared (whatever the differences), 2 usage error or an input that\n"
           "cannot be read.\n";
  }

  int Run(const std::vector<std::string>& args) override {
    std::string format = "text", output;
    analyzer::ReportOptions options;
    std::vector<std::string> inputs;
    FlagReader r(args);
    while (r.Next()) {
      if (r.positional()) {
        inputs.push_back(r.arg());
      } else if (r.Is("--format")) {
        auto v = r.Value();
        if (!v || (*v != "text" && *v != "json")) return UsageError(name(), "--format takes text or json");
        format = *v;
      } else if (r.Is("--output", "-o")) {
        auto v = r.Value();
        if (!v || v->empty()) return UsageError(name(), "-o needs a file name");
        output = *v;
      } else if (auto bad = TakeReportFlag(r, options)) {
        if (!bad->empty()) return UsageError(name(), *bad);
      } else {
        return UsageError(name(), "unknown option '" + r.arg() + "'");
      }
    }
    if (inputs.size() != 2) {
      return UsageError(name(), "expects two runs, A and B (each a trace or a directory), got " +
                                    std::to_string(inputs.size()));
    }
    std::optional<analyzer::RunMetrics> runs[2];
    for (int k = 0; k < 2; ++k) {
      std::vector<std::string> errors;
      runs[k] = analyzer::MeasureInputs({inputs[k]}, options, &errors);
      for (const auto& e : errors) std::cerr << "colabtrace diff: " << (k ? "B: " : "A: ") << e << "\n";
      if (!runs[k]) return kExitUsage;
      for (const auto& w : runs[k]->warnings) {
        std::cerr << "colabtrace diff: " << (k ? "B" : "A") << ": warning: " << w << "\n";
      }
    }
    const analyzer::RunDiff diff = analyzer::DiffRuns(*runs[0], *runs[1], inputs[0], inputs[1]);
    const std::string text = format == "json"
                                 ? analyzer::RenderDiffJson(diff).Dump(2) + "\n"
                                 : analyzer::RenderDiffText(diff, output.empty() && UseColor(1));
    return WriteOutput(output, text) ? kExitOk : kExitUsage;
  }
};

}  // namespace

std::unique_ptr<Command> MakeDiffCommand() { return std::make_unique<DiffCommand>(); }

}  // namespace colabtrace::cli
