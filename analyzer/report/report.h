// The report: what analyses produce and what the renderers print.
//
// Analyses write into a ReportBuilder: the JSON document (fields fixed by
// shared/PRODUCT.md: processes[], findings[], gpu, libraries[], io), findings with their
// evidence, and text sections for the human report. Renderers (text, json, html) only
// format what is here.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyses/process_facts.h"
#include "report/json.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer {

namespace gpu {
struct AllocationTimeline;
}
namespace io {
class IoModel;
}

enum class Severity { kInfo = 0, kWarning = 1, kError = 2 };
std::string_view SeverityName(Severity s);
std::optional<Severity> ParseSeverity(std::string_view s);

// One diagnosis, keyed by a stable id from the finding catalogue.
struct Finding {
  std::string id;        // e.g. "proc.killed"
  Severity severity = Severity::kWarning;
  int64_t pid = 0;       // 0 when it concerns the whole run
  std::string summary;   // one line
  Json evidence = Json::MakeObject();  // the numbers and paths behind it
  std::string advice;    // what to do about it
};

struct ReportOptions {
  std::optional<std::string> gpu_arch;  // --gpu-arch sm_XY: the what-if architecture
  // --sysroot DIR: where library files recorded on another machine are looked up first
  // (abi::LibraryFiles). "" for none.
  std::string sysroot;
  // Keep the analyses' typed models (ReportModels) for a renderer that draws them (the
  // HTML report). Off, each analysis frees its model when it is done.
  bool keep_models = false;
};

// The typed models the analyses computed, kept after they ran when
// ReportOptions::keep_models is set; each is null otherwise or when its area is not
// built. Renderers read them; they never change them.
struct ReportModels {
  std::shared_ptr<const LifecycleModel> lifecycle;  // cross-trace: reaps, run's samples
  std::shared_ptr<const std::vector<gpu::AllocationTimeline>> gpu;  // per trace, same order
  std::shared_ptr<const io::IoModel> io;
};

// A block of the human-readable report.
struct TextSection {
  std::string title;
  std::string body;  // preformatted lines
};

class ReportBuilder {
 public:
  ReportBuilder(const std::vector<ProcessTrace>& traces, ReportOptions options);

  const std::vector<ProcessTrace>& traces() const { return traces_; }
  const ReportOptions& options() const { return options_; }

  // The whole JSON document; analyses add their top-level fields here.
  Json& root() { return root_; }
  // The processes[] entry of traces()[index] (same order as traces()).
  Json& process(size_t index);
  // The processes[] entries past the traced ones: children that ran a program the shim
  // could not follow ("traced": false), which the process analysis adds from their
  // parents' records. Each analysis gives them its fields with "nothing recorded" values,
  // so every row has the same shape.
  std::vector<Json*> UntracedProcesses();
  // The program an untraced child's row names as its own (its "exe"), or nullptr for a
  // child whose every exec failed (it ran its parent's program: end.exec_failed), which
  // has no libraries[] row.
  static const Json* UntracedProgram(const Json& row);

  void AddFinding(Finding f) { findings_.push_back(std::move(f)); }
  void AddText(std::string title, std::string body) {
    sections_.push_back({std::move(title), std::move(body)});
  }
  // Notes for the reader of the report (e.g. where reading stopped). Also after Finish
  // (the CLI adds the inputs it skipped): they reach the JSON document too.
  void AddWarning(std::string w);

  const std::vector<Finding>& findings() const { return findings_; }
  const std::vector<TextSection>& sections() const { return sections_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  ReportModels& models() { return models_; }
  const ReportModels& models() const { return models_; }

  // The process model every analysis reads, computed once on first use: the lifecycle
  // model across traces (reaps, colabtrace run's samples, hosts) and each trace's facts
  // given it (how it ended, its job image, its parent), so that a process reads as having
  // ended the same way in every area of the report.
  const LifecycleModel& lifecycle();
  std::shared_ptr<const LifecycleModel> shared_lifecycle();
  // t must be one of traces().
  const ProcessFacts& facts(const ProcessTrace& t);

  // Sorts findings (severity, then id, then pid), writes findings[] and warnings[] into
  // the JSON document and returns it.
  const Json& Finish();

 private:
  const std::vector<ProcessTrace>& traces_;
  ReportOptions options_;
  Json root_ = Json::MakeObject();
  std::vector<Finding> findings_;
  std::vector<TextSection> sections_;
  std::vector<std::string> warnings_;
  ReportModels models_;
  std::shared_ptr<const LifecycleModel> lifecycle_;
  std::vector<ProcessFacts> facts_;  // per trace, same order; empty until facts() is asked
  bool finished_ = false;
};

// An analysis turns traces into report fields, text sections and findings.
class Analysis {
 public:
  virtual ~Analysis() = default;
  virtual std::string_view name() const = 0;
  virtual void Run(ReportBuilder& report) = 0;
};

// Every analysis, in the order they run: the process analysis first (it creates the
// processes[] entries the others extend).
std::vector<std::unique_ptr<Analysis>> MakeAllAnalyses();

// Runs every analysis over the traces and returns the finished builder.
std::unique_ptr<ReportBuilder> BuildReport(const std::vector<ProcessTrace>& traces,
                                           ReportOptions options);

// Renderers. `color` adds ANSI colours (the CLI decides: TTY and no NO_COLOR).
std::string RenderText(const ReportBuilder& report, bool color);
std::string RenderJson(const ReportBuilder& report);
// RenderJson's text handed to `sink` in pieces as it is written (Json::DumpStreaming).
bool WriteJson(const ReportBuilder& report, const Json::Sink& sink);
std::string RenderHtml(const ReportBuilder& report);

// Formatting helpers shared by analyses.
std::string FormatBytes(uint64_t bytes);          // "1.5 GiB"
std::string FormatDurationNs(uint64_t ns);        // "12.3 ms"
std::string FormatHex(uint64_t v);                // "0x7f00..."
std::string SignalName(int signo);                // "SIGSEGV"
std::string ErrnoName(int e);                     // "ENOENT" ("errno N" if unknown)
// The last component of a path, trailing slashes ignored ("/a/b/" -> "b"; "/" -> "/").
std::string_view Basename(std::string_view path);
// A trace string made safe for a terminal: control characters (C0, DEL and C1, newline
// and tab included) become \n, \r, \t or \xNN, and bytes that are not valid UTF-8
// become \xNN, so argv or a path from a trace cannot move the cursor, recolour the
// terminal or break a report line. Text renderers apply it to every trace string.
std::string EscapeForTerminal(std::string_view s);

}  // namespace colabtrace::analyzer
