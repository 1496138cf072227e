// The report: what analyses produce and what the renderers print.
//
// Analyses write into a ReportBuilder: the JSON document (fields fixed by
// shared/PRODUCT.md: processes[], findings[], gpu, libraries[], io) and findings with
// their evidence. Renderers (text, json, html) only format what is here and in the run
// model (report.run()).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "core/format.h"
#include "core/json.h"
#include "model/process_facts.h"
#include "model/run_model.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer {

// --gpu-arch and --sysroot: what the run model is read with.
using ReportOptions = RunOptions;

class ReportBuilder {
 public:
  ReportBuilder(const std::vector<ProcessTrace>& traces, ReportOptions options);

  // The run model every analysis, renderer and exporter reads (model/run_model.h).
  const RunModel& run() const { return run_; }
  const std::vector<ProcessTrace>& traces() const { return run_.traces(); }
  const ReportOptions& options() const { return run_.options(); }

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

  // Adds a finding; throws std::logic_error when its id is not in the finding catalogue
  // (core/finding_catalog.h). Rules add theirs through RuleContext::Add
  // (report/rule_registry.h).
  void AddFinding(Finding f);
  // Takes the findings `which` selects out of the report and returns them, in the order
  // they were added: a finding that explains others (dist.first-failure: a consequence's
  // proc.killed) lists them in its evidence instead. Rules fold through RuleContext::Fold.
  std::vector<Finding> TakeFindings(const std::function<bool(const Finding&)>& which);
  // Notes for the reader of the report (e.g. where reading stopped). Also after Finish
  // (the CLI adds the inputs it skipped): they reach the JSON document too.
  void AddWarning(std::string w);

  const std::vector<Finding>& findings() const { return findings_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  // The JSON document, for renderers (after Finish).
  const Json& document() const { return root_; }

  // Sorts findings (severity, then id, then pid), writes findings[] and warnings[] into
  // the JSON document and returns it.
  const Json& Finish();

 private:
  RunModel run_;
  Json root_ = Json::MakeObject();
  std::vector<Finding> findings_;
  std::vector<std::string> warnings_;
  bool finished_ = false;
};

// An analysis turns the run model into report fields and findings.
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

}  // namespace colabtrace::analyzer
