#include "report/rule_registry.h"

#include <algorithm>
#include <deque>
#include <stdexcept>

#include "report/report.h"

namespace colabtrace::analyzer {
namespace {

// A deque: registrations never move the rules already in it.
std::deque<RegisteredRule>& Registry() {
  static std::deque<RegisteredRule> rules;
  return rules;
}

}  // namespace

const RunModel& RuleContext::run() const { return report_.run(); }

void RuleContext::Add(Finding finding) {
  const FindingSpec* spec = FindFindingSpec(finding.id);
  if (spec == nullptr || std::find(ids_.begin(), ids_.end(), spec->id) == ids_.end()) {
    throw std::logic_error("a rule added finding " + finding.id + ", which it did not register");
  }
  if (!spec->severity_varies && finding.severity != spec->severity) {
    throw std::logic_error("a rule gave finding " + finding.id + " severity " +
                           std::string(SeverityName(finding.severity)) + ", which the catalogue does not allow");
  }
  report_.AddFinding(std::move(finding));
}

std::vector<Finding> RuleContext::Fold(const std::function<bool(const Finding&)>& which) {
  return report_.TakeFindings([&](const Finding& f) {
    const FindingSpec* spec = FindFindingSpec(f.id);
    return spec != nullptr && std::find(ids_.begin(), ids_.end(), spec->id) == ids_.end() && which(f);
  });
}

RuleRegistration::RuleRegistration(Rule rule, std::initializer_list<FindingId> ids) {
  Registry().push_back(RegisteredRule{rule, std::vector<FindingId>(ids)});
}

std::vector<const RegisteredRule*> RegisteredRules() {
  std::vector<const RegisteredRule*> out;
  for (const RegisteredRule& r : Registry()) out.push_back(&r);
  std::stable_sort(out.begin(), out.end(), [](const RegisteredRule* a, const RegisteredRule* b) {
    return a->ids.front() < b->ids.front();
  });
  return out;
}

std::vector<const RegisteredRule*> RulesOf(FindingId id) {
  std::vector<const RegisteredRule*> out;
  for (const RegisteredRule* r : RegisteredRules()) {
    if (std::find(r->ids.begin(), r->ids.end(), id) != r->ids.end()) out.push_back(r);
  }
  return out;
}

void RunRules(ReportBuilder& report, FindingArea area) {
  for (const RegisteredRule* r : RegisteredRules()) {
    if (SpecOf(r->ids.front()).area != area) continue;
    RuleContext ctx(report, r->ids);
    r->rule(ctx);
  }
}

}  // namespace colabtrace::analyzer
