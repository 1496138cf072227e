#include "core/finding.h"

namespace colabtrace::analyzer {

std::string_view SeverityName(Severity s) {
  switch (s) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
  }
  return "info";
}

std::optional<Severity> ParseSeverity(std::string_view s) {
  if (s == "error") return Severity::kError;
  if (s == "warning") return Severity::kWarning;
  if (s == "info") return Severity::kInfo;
  return std::nullopt;
}

Finding Finding::Of(FindingId id, int64_t pid) {
  const FindingSpec& spec = SpecOf(id);
  Finding finding;
  finding.id = std::string(spec.name);
  finding.severity = spec.severity;
  finding.pid = pid;
  finding.advice = std::string(spec.advice);
  return finding;
}

}  // namespace colabtrace::analyzer
