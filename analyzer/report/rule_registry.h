// The rules behind the finding catalogue, one signature, registered clang-tidy style.
//
// A rule is a function `void Rule(RuleContext& ctx)`: it reads the run model
// (ctx.run(): facts, lifecycle, symbols, and an area's model through run.Get<T>()) and
// adds its findings with ctx.Add. Each rule file registers its rule against the ids it
// decides, at static initialisation:
//
//   namespace { const RuleRegistration kLeakRuleRegistration(LeakRule, {FindingId::kGpuLeak}); }
//
// Every catalogue id has exactly one rule (tests/core/finding_catalog_test.cpp checks
// it), and a rule may only add findings of the ids it registered. An area's analysis
// runs the rules of its area (RunRules) where it used to call them by hand; the rules
// of an area run in catalogue order of their first id.
#pragma once

#include <functional>
#include <initializer_list>
#include <string_view>
#include <vector>

#include "core/finding.h"
#include "core/finding_catalog.h"
#include "model/run_model.h"

namespace colabtrace::analyzer {

class ReportBuilder;

class RuleContext {
 public:
  RuleContext(ReportBuilder& report, std::span<const FindingId> ids) : report_(report), ids_(ids) {}

  const RunModel& run() const;
  // Adds a finding to the report. Throws std::logic_error for an id the rule did not
  // register, or a severity other than the catalogue's default for an id whose severity
  // does not vary (FindingSpec::severity_varies).
  void Add(Finding finding);
  // Takes out of the report the findings of other rules (already run) that `which`
  // selects, and returns them: the findings this rule's finding explains, which it lists
  // in its evidence instead (dist.first-failure folds its consequences' proc.* errors).
  // A rule may fold only findings of areas below its own (their rules ran first).
  std::vector<Finding> Fold(const std::function<bool(const Finding&)>& which);

 private:
  ReportBuilder& report_;
  std::span<const FindingId> ids_;
};

using Rule = void (*)(RuleContext& ctx);

struct RegisteredRule {
  Rule rule = nullptr;
  std::vector<FindingId> ids;  // the ids it decides; the first names its area
};

// Registers `rule` as the one rule behind `ids` (a small family: gpu.oom and
// gpu.oom-fragmentation are decided together). A second rule for one id is a
// programming error: the registry keeps both and the catalogue test fails.
class RuleRegistration {
 public:
  RuleRegistration(Rule rule, std::initializer_list<FindingId> ids);
};

// Every registered rule, in catalogue order of its first id.
std::vector<const RegisteredRule*> RegisteredRules();
// The rules that decide `id` (one, unless the registry is wrong).
std::vector<const RegisteredRule*> RulesOf(FindingId id);

// Runs the rules whose first id is of `area`, in catalogue order, adding their findings
// to `report`.
void RunRules(ReportBuilder& report, FindingArea area);

}  // namespace colabtrace::analyzer
