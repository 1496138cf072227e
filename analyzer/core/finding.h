// Finding: one diagnosis, keyed by a stable id from the finding catalogue, with its
// severity. The type every rule produces and every renderer prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/json.h"

namespace colabtrace::analyzer {

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

}  // namespace colabtrace::analyzer
