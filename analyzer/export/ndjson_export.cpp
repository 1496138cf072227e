#include "export/ndjson_export.h"

#include "export/ndjson_tables.h"

namespace colabtrace::analyzer {

bool ExportNdjson(ReportBuilder& report, const std::string& dir,
                  NdjsonExportCounts* counts, std::string* error) {
  ndjson::ExportContext ctx{report, report.root(), {}};
  ctx.hosts.reserve(report.traces().size());
  for (const ProcessTrace& t : report.traces()) ctx.hosts.push_back(HostIdentity(t));
  struct TableSpec {
    const char* name;
    void (*write)(const ndjson::ExportContext&, NdjsonTable&);
    uint64_t NdjsonExportCounts::*count;
  };
  static constexpr TableSpec kTables[] = {
      {"processes", ndjson::WriteProcesses, &NdjsonExportCounts::processes},
      {"findings", ndjson::WriteFindings, &NdjsonExportCounts::findings},
      {"gpu_events", ndjson::WriteGpuEvents, &NdjsonExportCounts::gpu_events},
      {"io_files", ndjson::WriteIoFiles, &NdjsonExportCounts::io_files},
      {"libraries", ndjson::WriteLibraries, &NdjsonExportCounts::libraries},
      {"samples", ndjson::WriteSamples, &NdjsonExportCounts::samples},
  };
  for (const TableSpec& spec : kTables) {
    NdjsonTable table;
    if (!table.Open(dir, spec.name, error)) return false;
    spec.write(ctx, table);
    if (!table.Commit(error)) return false;
    if (counts) counts->*spec.count = table.rows();
  }
  return true;
}

}  // namespace colabtrace::analyzer
