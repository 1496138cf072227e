// The text report's sections (`report --format text`, and the HTML page's "Text report"),
// one file per section, each formatted from the finished report: its JSON document and
// the run model's typed models (report.run()). Past kProcessRowsBeforeGrouping processes
// (model/process_role.h) every per-process section groups them by role.
#pragma once

#include <string>
#include <vector>

#include "core/json.h"
#include "report/report.h"

namespace colabtrace::analyzer {

// A block of the human-readable report.
struct TextSection {
  std::string title;
  std::string body;  // preformatted lines
};

}  // namespace colabtrace::analyzer

namespace colabtrace::analyzer::text {

// Every section, in the report's order: Ranks, Processes, the File I/O sections, GPU memory,
// Libraries, the Python sections, Sampled from outside.
std::vector<TextSection> TextSections(const ReportBuilder& report);

// processes[] row of each of report.traces() (same order), nullptr for `colabtrace run`'s
// own trace, which has none (it is under "run").
std::vector<const Json*> RowsOfTraces(const ReportBuilder& report);

// How a processes[] row's "end" reads in a table: "exited 0", "signaled SIGPIPE",
// "killed SIGKILL", "killed".
std::string EndSummary(const Json& end);

// The sections, each appended to `out` when the report has something to say.
// Ranks: the table of each multi-rank job's ranks (the report's "dist"), before Processes.
void RanksSection(const ReportBuilder& report, std::vector<TextSection>& out);
void ProcessesSection(const ReportBuilder& report, std::vector<TextSection>& out);
void IoSections(const ReportBuilder& report, std::vector<TextSection>& out);
void GpuMemorySection(const ReportBuilder& report, std::vector<TextSection>& out);
void LibrariesSection(const ReportBuilder& report, std::vector<TextSection>& out);
void PythonSections(const ReportBuilder& report, std::vector<TextSection>& out);
void SampledSection(const ReportBuilder& report, std::vector<TextSection>& out);

}  // namespace colabtrace::analyzer::text
