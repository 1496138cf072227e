// colabtrace report: the diagnosis of one or more traces.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include "cli/command.h"
#include "render/render.h"
#include "report/report.h"

namespace colabtrace::cli {
namespace {

// WriteOutput for the JSON report, written piece by piece as it is rendered (the same
// bytes; "cannot write PATH" for a file). A failed write to stdout (a full disk behind a
// redirection) is exit 2 too: a large fwrite that fails leaves nothing for fflush to
// report, so the stream's error flag is checked as well.
bool WriteJsonOutput(const std::string& path, const analyzer::ReportBuilder& report) {
  if (path.empty() || path == "-") {
    analyzer::WriteJson(report, [](std::string_view piece) {
      return std::fwrite(piece.data(), 1, piece.size(), stdout) == piece.size();
    });
    if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return true;
    std::cerr << "colabtrace: cannot write to standard output: " << std::strerror(errno) << "\n";
    return false;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  analyzer::WriteJson(report, [&out](std::string_view piece) {
    out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
    return static_cast<bool>(out);
  });
  out.close();
  if (!out) {
    std::cerr << "colabtrace: cannot write " << path << "\n";
    return false;
  }
  return true;
}

using analyzer::Severity;

class ReportCommand final : public Command {
 public:
  std::string_view name() const override { return "report"; }
  std::string_view summary() const override { return "diagnose traces: findings, processes, GPU, libraries, I/O"; }
  std::string usage() const override {
    return "Usage: colabtrace report [options] TRACE|DIR...\n\n"
           "Reads traces (files, or directories of *.ctrace) and prints the diagnosis.\n\n"
           "Options:\n"
           "  --format text|json|html  output format (default text)\n"
           "  -o, --output FILE        write the report to FILE instead of stdout\n"
           "  --gpu-arch sm_XY         check loaded CUDA libraries against this GPU\n"
           "                           architecture (e.g. sm_75 for a T4, sm_80 for an A100)\n"
           "  --sysroot DIR            read the library files a trace names under DIR first (a\n"
           "                           copy of the recording machine's files; used only when\n"
           "                           their build id matches the trace)\n"
           "  --fail-on SEVERITY       exit 1 if any finding is at or above SEVERITY\n"
           "                           (info, warning or error)\n"
           "  -h, --help               show this help\n\n"
           "Exit codes: 0 fine, 1 findings at or above --fail-on, 2 usage error or an input\n"
           "that cannot be read (a partly readable trace still gets a report, with a warning).\n";
  }

  int Run(const std::vector<std::string>& args) override {
    std::string format = "text", output;
    analyzer::ReportOptions options;
    std::optional<Severity> fail_on;
    std::vector<std::string> inputs;
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      auto value = [&](std::string_view flag) -> std::optional<std::string> {
        if (a == flag) {
          if (i + 1 >= args.size()) return std::nullopt;
          return args[++i];
        }
        return a.substr(flag.size() + 1);  // --flag=value
      };
      auto is = [&](std::string_view flag) {
        return a == flag || a.starts_with(std::string(flag) + "=");
      };
      if (is("--format")) {
        auto v = value("--format");
        if (!v || (*v != "text" && *v != "json" && *v != "html")) {
          return UsageError(name(), "--format takes text, json or html");
        }
        format = *v;
      } else if (a == "-o" || is("--output")) {
        auto v = a == "-o" ? (i + 1 < args.size() ? std::optional<std::string>(args[++i]) : std::nullopt)
                           : value("--output");
        if (!v) return UsageError(name(), "-o needs a file name");
        output = *v;
      } else if (is("--gpu-arch")) {
        auto v = value("--gpu-arch");
        if (!v || !IsGpuArch(*v)) return UsageError(name(), kGpuArchUsage);
        options.gpu_arch = *v;
      } else if (is("--sysroot")) {
        auto v = value("--sysroot");
        if (!v || !IsSysroot(*v)) return UsageError(name(), kSysrootUsage);
        options.sysroot = *v;
      } else if (is("--fail-on")) {
        auto v = value("--fail-on");
        fail_on = v ? analyzer::ParseSeverity(*v) : std::nullopt;
        if (!fail_on) return UsageError(name(), "--fail-on takes info, warning or error");
      } else if (a == "--") {
        inputs.insert(inputs.end(), args.begin() + static_cast<long>(i) + 1, args.end());
        break;
      } else if (a.starts_with("-") && a != "-") {
        return UsageError(name(), "unknown option '" + a + "'");
      } else {
        inputs.push_back(a);
      }
    }
    if (inputs.empty()) return UsageError(name(), "no trace or directory given");

    const bool progress = isatty(2);
    if (progress) std::cerr << "colabtrace: reading traces...\r" << std::flush;
    analyzer::TraceSet set = analyzer::LoadTraces(inputs);
    if (progress) std::cerr << "                              \r" << std::flush;
    for (const auto& e : set.errors) std::cerr << "colabtrace report: " << e << "\n";
    for (const auto& e : set.skipped) std::cerr << "colabtrace report: warning: skipped " << e << "\n";
    if (set.traces.empty()) {
      // Each unreadable input already has its one line; say more only if none did.
      if (set.errors.empty() && set.skipped.empty()) std::cerr << "colabtrace report: no readable trace\n";
      return kExitUsage;
    }
    auto report = analyzer::BuildReport(set.traces, options);
    for (const auto& e : set.errors) report->AddWarning("unreadable input: " + e);
    // Unreadable files inside a directory: named, and the rest is reported as usual.
    for (const auto& e : set.skipped) report->AddWarning("skipped unreadable trace: " + e);
    std::string text;
    if (format == "json") {
      // Streamed as it is rendered: the report of a fleet is tens of MB of text.
      if (!WriteJsonOutput(output, *report)) return kExitUsage;
    } else if (format == "html") {
      text = analyzer::RenderHtml(*report);
    } else {
      text = analyzer::RenderText(*report, output.empty() && UseColor(1));
    }
    if (format != "json" && !WriteOutput(output, text)) return kExitUsage;
    if (!set.errors.empty()) return kExitUsage;
    if (fail_on) {
      for (const auto& f : report->findings()) {
        if (f.severity >= *fail_on) return kExitFindings;
      }
    }
    return kExitOk;
  }
};

}  // namespace

std::unique_ptr<Command> MakeReportCommand() { return std::make_unique<ReportCommand>(); }

}  // namespace colabtrace::cli
