// io_files.ndjson: one row per (process, file): the process's own I/O on the path, from
// the same replay as the report's io.files[] (io/file_stats.h defines every counter), run
// on that process alone. The report sums a path over processes; here a path read by
// three DataLoader workers is three rows, one per pid.
#include "export/ndjson_tables.h"
#include "io/file_stats.h"

namespace colabtrace::analyzer::ndjson {

void WriteIoFiles(const ExportContext& ctx, NdjsonTable& out) {
  for (size_t i = 0; i < ctx.traces().size(); ++i) {
    const ProcessTrace& t = ctx.traces()[i];
    const io::IoModel& model = ctx.report.run().Get<io::ProcessIoModels>().of_trace[i];
    for (const io::FileStats& f : model.files) {
      const io::MountRow* m = f.mount >= 0 && static_cast<size_t>(f.mount) < model.mounts.size()
                                  ? &model.mounts[static_cast<size_t>(f.mount)]
                                  : nullptr;
      NdjsonRow row;
      row.Str("host", ctx.hosts[i])
          .U64("pid", t.pid())
          .Str("path", f.path)
          .Str("kind", f.directory ? "directory" : "file")
          .Str("fs_type", m ? std::string_view(m->fstype) : std::string_view())
          .Str("fs_class", m ? io::FsClassName(m->fs.cls) : std::string_view())
          .Str("mount", m ? std::string_view(m->mountpoint) : std::string_view())
          .U64("opens", f.opens)
          .U64("open_errors", f.open_errors)
          .U64("inherited", f.inherited)
          .U64("reads", f.reads)
          .U64("read_errors", f.read_errors)
          .U64("bytes_read", f.bytes_read)
          .U64("read_ns", f.read_ns)
          .U64("stats", f.stats)
          .U64("stat_errors", f.stat_errors)
          .U64("writes", f.writes)
          .U64("bytes_written", f.bytes_written)
          .U64("mmaps", f.mmaps)
          .U64("copies", f.copies)
          .U64("bytes_copied", f.bytes_copied);
      if (f.size_known()) {
        row.U64("size", f.BestSize());
      } else {
        row.Null("size");
      }
      out.Write(row);
    }
  }
}

}  // namespace colabtrace::analyzer::ndjson
