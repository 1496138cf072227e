// TraceEventExport: traces as Chrome trace-event JSON, the form ui.perfetto.dev and
// chrome://tracing load: {"traceEvents": [...], "displayTimeUnit": "ns"}.
//
// What each trace becomes:
//   - metadata ("M"): process_name (the job's command line), process_labels ("killed"
//     when the trace has no end record), process_sort_index (start order), and
//     thread_name from ThreadName records;
//   - complete events ("X"): every record whose type has a `Dur` field, found through the
//     record table, so a new record type with a duration is exported without a change
//     here. Named by the dump name and, when the record has an api field, the api:
//     "io_read (read)", "gpu_alloc (cudaMalloc)", "lib_load (api 1)";
//   - instant events ("i"): fork, spawn, exec_start, exec_failed, exit, signal, lib_load,
//     lib_unload (any of these whose record carries a `Dur`, as lib_load's dlopen time
//     does, is a complete event instead), and "killed" at the last event of a trace with
//     no end record; also a record whose Dur is a total over several calls (a readdir
//     scan summary), which a slice would misplace;
//   - counters ("C"): "RSS" and "cgroup memory.current" from Sample records, and
//     "GPU <device> live" from GpuAlloc/GpuFree (frees paired with allocations by
//     address);
//   - args: every field of the record, strings resolved, stacks symbolized.
// `ts` and `dur` are microseconds (floats, nanosecond precision), relative to the
// earliest trace start of all processes. A record's ts is taken as the start of the call
// it describes. Partial and killed traces export what was read.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "trace/process_trace.h"

namespace colabtrace::analyzer {

struct TraceEventCounts {
  uint64_t metadata = 0, complete = 0, instant = 0, counter = 0;
  uint64_t total() const { return metadata + complete + instant + counter; }
};

// Writes the JSON document in pieces to `sink` (which returns false on a write error).
// Returns false as soon as the sink fails.
bool ExportTraceEvents(const std::vector<ProcessTrace>& traces,
                       const std::function<bool(std::string_view)>& sink,
                       TraceEventCounts* counts = nullptr);

}  // namespace colabtrace::analyzer
