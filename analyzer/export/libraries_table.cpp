// libraries.ndjson: one row per object loaded in a process (the library inventory the
// report's libraries[] comes from), in load order.
#include "abi/library_inventory.h"
#include "export/ndjson_tables.h"

namespace colabtrace::analyzer::ndjson {

void WriteLibraries(const ExportContext& ctx, NdjsonTable& out) {
  for (size_t i = 0; i < ctx.traces().size(); ++i) {
    const ProcessTrace& t = ctx.traces()[i];
    const abi::LibraryInventory& inv = ctx.report.run().Get<abi::LibraryInventories>().of_trace[i];
    for (const abi::LoadedLibrary& o : inv.objects) {
      NdjsonRow row;
      row.Str("host", ctx.hosts[i])
          .U64("pid", t.pid())
          .Str("path", o.path)
          .Str("soname", o.soname)
          .Str("build_id", o.build_id)
          .Str("loaded_by", o.loaded_by)
          .Str("requested", o.requested)
          .Str("how", abi::LibApiName(o.api))
          .U64("loaded_ns", o.loaded_ns);
      if (o.unloaded_ns) {
        row.U64("unloaded_ns", *o.unloaded_ns);
      } else {
        row.Null("unloaded_ns");
      }
      out.Write(row);
    }
  }
  // A child that ran a program the shim could not follow: that program, as libraries[]
  // lists it (no trace of its own: no load times).
  for (const auto& [p, parent] : ctx.UntracedChildren()) {
    const Json* exe = ReportBuilder::UntracedProgram(*p);
    if (exe == nullptr) continue;
    NdjsonRow row;
    row.Str("host", ctx.hosts[parent])
        .Value("pid", (*p)["pid"])
        .Value("path", *exe)
        .Str("soname", "")
        .Str("build_id", "")
        .Str("loaded_by", "")
        .Str("requested", "")
        .Str("how", abi::LibApiName(format::LibApi::kStartup))
        .Null("loaded_ns")
        .Null("unloaded_ns");
    out.Write(row);
  }
}

}  // namespace colabtrace::analyzer::ndjson
