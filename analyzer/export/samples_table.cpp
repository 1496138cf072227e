// samples.ndjson: one row per resource sample. source "shim": the process's own Sample
// records (RSS, cgroup memory.current, threads); source "run": what `colabtrace run`
// read from outside (/proc/PID/smaps_rollup: RSS, PSS, USS, swap), with `sampler_pid` the
// wrapper's pid. Unknown values (UINT64_MAX in the trace) are null.
#include "export/ndjson_tables.h"

namespace colabtrace::analyzer::ndjson {
namespace {

void Bytes(NdjsonRow& row, std::string_view key, uint64_t v) {
  if (v == UINT64_MAX) {
    row.Null(key);
  } else {
    row.U64(key, v);
  }
}

}  // namespace

void WriteSamples(const ExportContext& ctx, NdjsonTable& out) {
  for (size_t i = 0; i < ctx.traces().size(); ++i) {
    const ProcessTrace& t = ctx.traces()[i];
    for (const auto& s : t.records.Sample) {
      NdjsonRow row;
      row.Str("host", ctx.hosts[i]).U64("pid", t.pid()).U64("ts_ns", s.ts).Str("source", "shim");
      Bytes(row, "rss_bytes", s.rss_bytes);
      row.Null("pss_bytes").Null("uss_bytes").Null("swap_bytes");
      Bytes(row, "vm_bytes", s.vm_bytes);
      row.U64("threads", s.threads);
      Bytes(row, "cgroup_current", s.cgroup_current);
      Bytes(row, "oom_kill", s.oom_kill);
      row.Null("sampler_pid");
      out.Write(row);
    }
    for (const auto& s : t.records.ProcSample) {
      NdjsonRow row;
      row.Str("host", ctx.hosts[i]).U64("pid", s.pid).U64("ts_ns", s.ts).Str("source", "run");
      Bytes(row, "rss_bytes", s.rss_bytes);
      Bytes(row, "pss_bytes", s.pss_bytes);
      Bytes(row, "uss_bytes", s.uss_bytes);
      Bytes(row, "swap_bytes", s.swap_bytes);
      row.Null("vm_bytes").U64("threads", s.threads).Null("cgroup_current").Null("oom_kill");
      row.U64("sampler_pid", t.pid());
      out.Write(row);
    }
  }
}

}  // namespace colabtrace::analyzer::ndjson
