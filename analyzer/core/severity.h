// Severity of a finding: information, warning or error.
#pragma once

#include <optional>
#include <string_view>

namespace colabtrace::analyzer {

enum class Severity { kInfo = 0, kWarning = 1, kError = 2 };
std::string_view SeverityName(Severity s);  // "info", "warning", "error"
std::optional<Severity> ParseSeverity(std::string_view s);

}  // namespace colabtrace::analyzer
