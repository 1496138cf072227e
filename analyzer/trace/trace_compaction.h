// Compaction of an ended process's trace (issue 39, the job cap of `colabtrace run`): a
// copy of the trace without its event chunks (CTEV: the droppable records, whose sums the
// I/O aggregate chunks hold) and without the chunks it never used, renamed over the
// original. Every other chunk is kept byte for byte, whatever its magic (record chunks,
// state, ring, NCCL and aggregate chunks, and magics this reader does not know), each one's
// trailing zeros left as a hole; a record chunk of its own (tid 0) is appended holding a
// trace_compacted record, from which the reader counts the events removed, so
// processes[].window.events_total is what it was; its ts is the latest of the removed
// records' (so the trace ends when it ended).
//
// A kill at any instant leaves the trace readable: the copy is written beside the trace,
// as ".NAME.compacting" (no .ctrace extension: readers of the folder skip it), and only a
// rename(2) replaces the original, so the name holds the whole old file or the whole new
// one. A copy left by a kill is removed by the next compaction of the same trace.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace colabtrace::analyzer {

struct CompactionResult {
  bool compacted = false;     // the file is now its compacted copy
  std::string error;          // why it was not ("" when it was, or there was nothing to drop)
  uint64_t events = 0;        // droppable records removed
  uint64_t event_chunks = 0;  // event chunks removed
  uint64_t bytes_before = 0;  // disk space of the file (st_blocks * 512) before
  uint64_t bytes_after = 0;   // and after (bytes_before when not compacted)
};

// Compacts the trace at `path`, which no process may still write (its process ended).
// A trace that is not of format 1.3 or later with the shim's chunk size, or that has no
// event chunk and no unused chunk, is left as it is; one without I/O aggregate chunks
// keeps its event chunks (nothing else holds their sums). `before_step` (tests) is called with
// 0, 1, 2, ... before each system call that changes the disk.
CompactionResult CompactTrace(const std::string& path, const std::function<void(int)>& before_step = {});

// The disk space of a file: st_blocks * 512 (what du counts); 0 when it cannot be read.
uint64_t DiskBytes(const std::string& path);

}  // namespace colabtrace::analyzer
