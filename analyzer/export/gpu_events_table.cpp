// gpu_events.ndjson: one row per GPU allocation or free call (GpuAlloc and GpuFree
// records; a runtime call that reached the driver is one record, so one cudaMalloc is one
// row), in time order per process. A free takes the memory kind of the allocation at its
// address.
#include <unordered_map>

#include "export/ndjson_tables.h"
#include "gpu/gpu_api.h"

namespace colabtrace::analyzer::ndjson {
namespace {

template <class R>
void CommonColumns(NdjsonRow& row, const std::string& host, const ProcessTrace& t,
                   const Event<R>& e, std::string_view event, gpu::MemKind kind) {
  row.Str("host", host)
      .U64("pid", t.pid())
      .U64("tid", e.tid)
      .U64("ts_ns", e.ts)
      .Str("event", event)
      .Str("api", gpu::GpuApiLabel(e.api))
      .Str("layer", e.layer == 0 ? "runtime" : "driver")
      .Str("kind", kind == gpu::MemKind::kNone ? "" : gpu::MemKindName(kind))
      .I64("device", e.device)
      .Str("addr", FormatHex(e.addr))
      .I64("rc", e.rc)
      .Str("error", e.rc == 0 ? std::string_view() : gpu::GpuErrorName(e.rc, e.layer == 0))
      .U64("dur_ns", e.dur);
}

}  // namespace

void WriteGpuEvents(const ExportContext& ctx, NdjsonTable& out) {
  for (size_t i = 0; i < ctx.traces().size(); ++i) {
    const ProcessTrace& t = ctx.traces()[i];
    const auto& allocs = t.records.GpuAlloc;
    const auto& frees = t.records.GpuFree;
    std::unordered_map<uint64_t, gpu::MemKind> kind_at;  // live allocations by address
    size_t a = 0, f = 0;
    while (a < allocs.size() || f < frees.size()) {
      NdjsonRow row;
      if (f >= frees.size() || (a < allocs.size() && allocs[a].ts <= frees[f].ts)) {
        const auto& e = allocs[a++];
        const gpu::MemKind kind = gpu::ClassifyGpuApi(e.api).kind;
        if (e.rc == 0 && e.addr != 0) kind_at[e.addr] = kind;
        CommonColumns(row, ctx.hosts[i], t, e, "alloc", kind);
        row.U64("size", e.size);
      } else {
        const auto& e = frees[f++];
        gpu::MemKind kind = gpu::MemKind::kNone;
        if (auto it = kind_at.find(e.addr); it != kind_at.end()) {
          kind = it->second;
          if (e.rc == 0) kind_at.erase(it);
        }
        CommonColumns(row, ctx.hosts[i], t, e, "free", kind);
        row.Null("size");
      }
      out.Write(row);
    }
  }
}

}  // namespace colabtrace::analyzer::ndjson
