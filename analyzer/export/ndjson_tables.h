// The table writers behind NdjsonExport, one file each (ndjson_export.h lists the
// tables). Each writes its rows for every trace of the report.
#pragma once

#include <string>
#include <vector>

#include "export/ndjson_table.h"
#include "report/report.h"

namespace colabtrace::analyzer::ndjson {

struct ExportContext {
  const ReportBuilder& report;
  const Json& doc;                 // the finished report document
  std::vector<std::string> hosts;  // HostIdentity of each of report.traces()

  const std::vector<ProcessTrace>& traces() const { return report.traces(); }

  // The processes[] rows of children that ran a program the shim could not follow
  // ("traced": false), each with the index of the trace that recorded it (recorded_by).
  std::vector<std::pair<const Json*, size_t>> UntracedChildren() const {
    std::vector<std::pair<const Json*, size_t>> out;
    const Json& procs = doc["processes"];
    if (!procs.is_array()) return out;
    for (const Json& p : procs.array()) {
      const Json* traced = p.Find("traced");
      const Json* by = p.Find("recorded_by");
      if (traced == nullptr || traced->boolean() || by == nullptr) continue;
      for (size_t i = 0; i < traces().size(); ++i) {
        if (traces()[i].file == by->str()) out.emplace_back(&p, i);
      }
    }
    return out;
  }
};

void WriteProcesses(const ExportContext& ctx, NdjsonTable& out);
void WriteFindings(const ExportContext& ctx, NdjsonTable& out);
void WriteGpuEvents(const ExportContext& ctx, NdjsonTable& out);
void WriteIoFiles(const ExportContext& ctx, NdjsonTable& out);
void WriteLibraries(const ExportContext& ctx, NdjsonTable& out);
void WriteSamples(const ExportContext& ctx, NdjsonTable& out);

}  // namespace colabtrace::analyzer::ndjson
