// NdjsonExport: `colabtrace export --format ndjson -o DIR`: a fleet's traces as six
// tables, one newline-delimited JSON file each, for an existing engine (DuckDB, Spark,
// pandas) instead of a home-made one:
//
//   processes.ndjson   one row per traced process (the report's processes[] facts)
//   findings.ndjson    one row per finding (id, severity, summary, evidence, advice)
//   gpu_events.ndjson  one row per GPU allocation or free call (GpuAlloc/GpuFree records)
//   io_files.ndjson    one row per (process, file): that process's own I/O on the path
//   libraries.ndjson   one row per object loaded in a process
//   samples.ndjson     one row per resource sample: the shim's own (source "shim") and
//                      those `colabtrace run` took from outside (source "run")
//
// Every row carries `host` (the machine: HostIdentity, "machine:<id>", "boot:<id>",
// "host:<name>" or "" when the trace recorded none) and `pid`, so rows of many hosts can
// be grouped and joined. Times are CLOCK_MONOTONIC nanoseconds of the recording host
// (`*_ns`); addresses are "0x..." strings.
#pragma once

#include <cstdint>
#include <string>

#include "report/report.h"

namespace colabtrace::analyzer {

struct NdjsonExportCounts {
  uint64_t processes = 0, findings = 0, gpu_events = 0, io_files = 0, libraries = 0,
           samples = 0;
};

// Writes the six tables of the report's traces into `dir` (which must exist). Each table
// appears complete or not at all. Returns false with *error set on a write error.
bool ExportNdjson(ReportBuilder& report, const std::string& dir,
                  NdjsonExportCounts* counts, std::string* error);

}  // namespace colabtrace::analyzer
