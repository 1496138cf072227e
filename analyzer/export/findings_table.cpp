// findings.ndjson: one row per finding of the report. A finding names a pid (0 for the
// whole run); its host is that process's, or "" when the pid is 0 or names processes on
// several hosts.
#include <unordered_map>

#include "export/ndjson_tables.h"

namespace colabtrace::analyzer::ndjson {

void WriteFindings(const ExportContext& ctx, NdjsonTable& out) {
  std::unordered_map<uint32_t, std::string> host_of_pid;
  for (size_t i = 0; i < ctx.traces().size(); ++i) {
    const auto [it, fresh] = host_of_pid.emplace(ctx.traces()[i].pid(), ctx.hosts[i]);
    if (!fresh && it->second != ctx.hosts[i]) it->second.clear();  // ambiguous
  }
  for (const Finding& f : ctx.report.findings()) {
    const auto it = f.pid > 0 ? host_of_pid.find(static_cast<uint32_t>(f.pid)) : host_of_pid.end();
    NdjsonRow row;
    row.Str("host", it == host_of_pid.end() ? std::string() : it->second)
        .I64("pid", f.pid)
        .Str("id", f.id)
        .Str("severity", SeverityName(f.severity))
        .Str("summary", f.summary)
        .Value("evidence", f.evidence)
        .Str("advice", f.advice);
    out.Write(row);
  }
}

}  // namespace colabtrace::analyzer::ndjson
