// colabtrace export: traces as Chrome/Perfetto trace-event JSON, or as NDJSON tables.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/command.h"
#include "export/ndjson_export.h"
#include "cli/flag_reader.h"
#include "export/trace_event_export.h"

namespace colabtrace::cli {
namespace {

using analyzer::FlagReader;

class ExportCommand final : public Command {
 public:
  std::string_view name() const override { return "export"; }
  std::string_view summary() const override {
    return "convert traces to Perfetto trace-event JSON, or to NDJSON tables (DuckDB, pandas)";
  }
  std::string usage() const override {
    return "Usage: colabtrace export [--format perfetto] -o FILE TRACE|DIR...\n"
           "       colabtrace export --format ndjson -o DIR TRACE|DIR...\n\n"
           "Writes traces (files, or directories of *.ctrace) as Chrome trace-event JSON,\n"
           "which ui.perfetto.dev and chrome://tracing open:\n"
           "  - a track per process (named by its command line) and per thread;\n"
           "  - a slice per call with a duration: file I/O, GPU allocations and frees, ...;\n"
           "  - instants for fork, spawn, exec, exit, fatal signals, library loads, and\n"
           "    'killed' where a trace ends with no exit record;\n"
           "  - counters for RSS, cgroup memory.current and live GPU bytes per device;\n"
           "  - every record field in the event's args, strings resolved.\n"
           "Times are relative to the earliest trace start. Partial and killed traces export\n"
           "what could be read.\n\n"
           "--format ndjson writes one newline-delimited JSON file per table into DIR\n"
           "(created if missing): processes, findings, gpu_events, io_files, libraries and\n"
           "samples (.ndjson). Every row has a host and a pid column. Load them into DuckDB\n"
           "with SELECT * FROM read_ndjson_auto('DIR/processes.ndjson'), into pandas with\n"
           "read_json(path, lines=True), into Spark with spark.read.json(path).\n\n"
           "Options:\n"
           "  --format perfetto|ndjson  the output format (default perfetto)\n"
           "  -o, --output FILE|DIR     where to write: perfetto: a file, '-' for stdout;\n"
           "                            ndjson: a directory (required)\n"
           "  -h, --help          show this help\n\n"
           "Exit codes: 0 written, 2 usage error or an input that cannot be read (readable\n"
           "inputs are still exported).\n";
  }

  int Run(const std::vector<std::string>& args) override {
    std::optional<std::string> output;
    std::string format = "perfetto";
    std::vector<std::string> inputs;
    FlagReader r(args);
    while (r.Next()) {
      if (r.positional()) {
        inputs.push_back(r.arg());
      } else if (r.Is("--format")) {
        auto v = r.Value();
        if (!v || (*v != "perfetto" && *v != "ndjson")) {
          return UsageError(name(), "--format takes perfetto (Chrome trace-event JSON) or ndjson "
                                    "(one file per table)");
        }
        format = *v;
      } else if (r.Is("--output", "-o")) {
        output = r.Value();
        if (!output || output->empty()) return UsageError(name(), "-o needs a file name ('-' for stdout)");
      } else {
        return UsageError(name(), "unknown option '" + r.arg() + "'");
      }
    }
    if (!output) return UsageError(name(), "-o FILE is required ('-' for stdout)");
    if (format == "ndjson" && *output == "-") {
      return UsageError(name(), "--format ndjson writes a directory of tables: -o DIR");
    }
    if (inputs.empty()) return UsageError(name(), "no trace or directory given");

    analyzer::TraceSet set = analyzer::LoadTraces(inputs);
    for (const auto& e : set.errors) std::cerr << "colabtrace export: " << e << "\n";
    for (const auto& e : set.skipped) std::cerr << "colabtrace export: warning: skipped " << e << "\n";
    if (set.traces.empty()) {
      std::cerr << "colabtrace export: no readable trace\n";
      return kExitUsage;
    }
    for (const auto& t : set.traces) {
      for (const auto& w : t.warnings) std::cerr << "colabtrace export: warning: " << w << "\n";
    }

    if (format == "ndjson") return ExportTables(set, *output);

    const bool to_stdout = *output == "-";
    // A file appears complete or not at all: write beside it, then rename.
    const std::string tmp = to_stdout ? "" : *output + ".tmp." + std::to_string(getpid());
    std::FILE* out = to_stdout ? stdout : std::fopen(tmp.c_str(), "wb");
    if (out == nullptr) {
      std::cerr << "colabtrace export: cannot write " << *output << ": " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    analyzer::TraceEventCounts counts;
    bool ok = analyzer::ExportTraceEvents(
        set.traces,
        [out](std::string_view s) { return std::fwrite(s.data(), 1, s.size(), out) == s.size(); },
        &counts);
    ok = (to_stdout ? std::fflush(out) == 0 : std::fclose(out) == 0) && ok;
    if (ok && !to_stdout && std::rename(tmp.c_str(), output->c_str()) != 0) ok = false;
    if (!ok) {
      std::cerr << "colabtrace export: cannot write " << *output << ": " << std::strerror(errno) << "\n";
      if (!to_stdout) std::remove(tmp.c_str());
      return kExitUsage;
    }
    if (!to_stdout) {
      std::cerr << "colabtrace export: " << set.traces.size() << " process"
                << (set.traces.size() == 1 ? "" : "es") << ", " << counts.complete << " slices, "
                << counts.instant << " instants, " << counts.counter << " counter values -> "
                << *output << " (open it in ui.perfetto.dev)\n";
    }
    return set.errors.empty() ? kExitOk : kExitUsage;
  }

 private:
  // --format ndjson: the report's model of the traces, as six tables in `dir`.
  int ExportTables(const analyzer::TraceSet& set, const std::string& dir) {
    if (mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
      std::cerr << "colabtrace export: cannot create " << dir << ": " << std::strerror(errno) << "\n";
      return kExitUsage;
    }
    auto report = analyzer::BuildReport(set.traces, {});
    analyzer::NdjsonExportCounts counts;
    std::string error;
    if (!analyzer::ExportNdjson(*report, dir, &counts, &error)) {
      std::cerr << "colabtrace export: " << error << "\n";
      return kExitUsage;
    }
    std::cerr << "colabtrace export: " << counts.processes << " processes, " << counts.findings
              << " findings, " << counts.gpu_events << " GPU events, " << counts.io_files
              << " file rows, " << counts.libraries << " libraries, " << counts.samples
              << " samples -> " << dir << "/*.ndjson\n";
    return set.errors.empty() ? kExitOk : kExitUsage;
  }
};

}  // namespace

std::unique_ptr<Command> MakeExportCommand() { return std::make_unique<ExportCommand>(); }

}  // namespace colabtrace::cli
