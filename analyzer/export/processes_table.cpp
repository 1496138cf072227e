// processes.ndjson: one row per traced process, from the report's processes[] entries
// (the end kind and peak RSS need the whole lifecycle model, so the report computes
// them once). `colabtrace run`'s own trace is not a process of the job (the report lists
// it under "run"); its samples are in samples.ndjson.
#include "model/process_facts.h"
#include "export/ndjson_tables.h"

namespace colabtrace::analyzer::ndjson {

void WriteProcesses(const ExportContext& ctx, NdjsonTable& out) {
  const Json& procs = ctx.doc["processes"];
  if (!procs.is_array()) return;
  size_t entry = 0;  // processes[] skips the run wrappers' traces
  for (size_t i = 0; i < ctx.traces().size(); ++i) {
    const ProcessTrace& t = ctx.traces()[i];
    if (IsRunWrapper(t)) continue;
    if (entry >= procs.array().size()) break;
    const Json& p = procs.array()[entry++];
    const Json& end = p["end"];
    const Json& io = p["io"];
    const Json& gpu = p["gpu"];
    NdjsonRow row;
    row.Str("host", ctx.hosts[i])
        .Value("hostname", p["host"]["hostname"])
        .U64("pid", t.pid())
        .Value("ppid", p["ppid"])
        .Value("exe", p["exe"])
        .Value("argv", p["argv"])
        .Value("cwd", p["cwd"])
        .Value("start_time", p["start_time"])
        .U64("start_ns", t.start_ns())
        .U64("end_ns", t.end_ns())
        .Value("end_kind", end["kind"])
        .Value("exit_code", end["code"])
        .Value("signal", end["signal"])
        .Value("reaped_by", end["reaped_by"])
        .Bool("trace_truncated", t.truncated)
        .Value("peak_rss_bytes", p["peak_rss_bytes"])
        .Value("opens", io["opens"])
        .Value("reads", io["reads"])
        .Value("bytes_read", io["bytes_read"])
        .Value("read_ns", io["read_ns"])
        .Value("stats", io["stats"])
        .Value("gpu_allocations", gpu["allocations"])
        .Value("gpu_frees", gpu["frees"])
        .Value("gpu_failed_allocations", gpu["failed_allocations"])
        .Value("gpu_peak_bytes", gpu["peak_bytes"])
        .Value("gpu_leaked_bytes", gpu["leaked_bytes"])
        .Value("libraries_loaded", p["libraries"]["loaded"])
        .Str("trace_file", t.file);
    out.Write(row);
  }
  // Then the children the shim could not follow (static or secure-exec programs): rows
  // the report made from their parent's trace (recorded_by), with no figures of their own.
  for (const auto& [row_json, parent] : ctx.UntracedChildren()) {
    const Json& p = *row_json;
    const Json& end = p["end"];
    NdjsonRow row;
    row.Str("host", ctx.hosts[parent])
        .Value("hostname", p["host"]["hostname"])  // its parent's machine
        .Value("pid", p["pid"])
        .Value("ppid", p["ppid"])
        .Value("exe", p["exe"])
        .Value("argv", p["argv"])
        .Value("cwd", Json())
        .Value("start_time", p["start_time"])
        .Value("start_ns", Json())
        .Value("end_ns", Json())
        .Value("end_kind", end["kind"])
        .Value("exit_code", end["code"])
        .Value("signal", end["signal"])
        .Value("reaped_by", end["reaped_by"])
        .Bool("trace_truncated", false);
    // Not traced: no figures (null, not 0) in the columns every row has.
    for (const char* col : {"peak_rss_bytes", "opens", "reads", "bytes_read", "read_ns", "stats", "gpu_allocations",
                            "gpu_frees", "gpu_failed_allocations", "gpu_peak_bytes", "gpu_leaked_bytes",
                            "libraries_loaded"}) {
      row.Value(col, Json());
    }
    row.Str("trace_file", "");
    out.Write(row);
  }
}

}  // namespace colabtrace::analyzer::ndjson
