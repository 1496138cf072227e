// Finding: one diagnosis, keyed by a stable id from the finding catalogue, with its
// severity. The type every rule produces and every renderer prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding_catalog.h"
#include "core/json.h"
#include "core/severity.h"

namespace colabtrace::analyzer {

// One diagnosis. A rule makes it with Finding::Of, never with an id of its own spelling.
struct Finding {
  std::string id;        // e.g. "proc.killed"
  Severity severity = Severity::kWarning;
  int64_t pid = 0;       // 0 when it concerns the whole run
  std::string summary;   // one line
  Json evidence = Json::MakeObject();  // the numbers and paths behind it
  std::string advice;    // what to do about it
  // The library files it is about (abi.duplicate-library's copies, abi.mixed-cuda-majors'
  // libraries), typed for the renderers that highlight them; not in the JSON, whose
  // evidence names the same paths.
  std::vector<std::string> files;

  // A finding of `id` about process `pid` (0: the whole run), with the catalogue's
  // default severity and advice; the rule fills the summary and evidence.
  static Finding Of(FindingId id, int64_t pid);
};

}  // namespace colabtrace::analyzer
