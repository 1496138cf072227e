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
};

void WriteProcesses(const ExportContext& ctx, NdjsonTable& out);
void WriteFindings(const ExportContext& ctx, NdjsonTable& out);
void WriteGpuEvents(const ExportContext& ctx, NdjsonTable& out);
void WriteIoFiles(const ExportContext& ctx, NdjsonTable& out);
void WriteLibraries(const ExportContext& ctx, NdjsonTable& out);
void WriteSamples(const ExportContext& ctx, NdjsonTable& out);

}  // namespace colabtrace::analyzer::ndjson
