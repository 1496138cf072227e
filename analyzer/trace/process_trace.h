// ProcessTrace: one decoded .ctrace file, and the reader that produces it.
//
// The reader treats every byte as untrusted. It decodes what is readable, stops at the
// first damage in a chunk with a warning that names the file offset, and never crashes
// or loops. Record timestamps and durations come out in nanoseconds on the host's
// CLOCK_MONOTONIC (comparable across the processes of one boot).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "colabtrace/format/gpu_live.h"
#include "colabtrace/format/records.h"
#include "colabtrace/format/step_agg.h"
#include "colabtrace/format/sample_tiers.h"
#include "colabtrace/format/io_heavy.h"
#include "colabtrace/format/wire.h"
#include "trace/packed_table.h"

namespace colabtrace::analyzer {

// The errno of a failed call's "-errno" result field. Trace values are untrusted: a value
// outside -4095..-1 (never a kernel errno, and -INT64_MIN would overflow) gives 0.
inline int ErrnoOfResult(int64_t result) {
  return result < 0 && result >= -4095 ? static_cast<int>(-result) : 0;
}

struct KeptBytes;  // the reader's copy of a trace's strings, stacks and build-ids

// One table per record type, each sorted by time. Generated from the record table,
// so a new record type appears here by itself: `trace.records.IoRead`. A table is a
// std::vector<Event<R>>, or for the high-volume file I/O records a PackedTable<R>
// (packed_table.h: iterated, indexed and searched by time the same way, decoded as read).
struct RecordTables {
#define CT_TABLE(code, Name, dumpname) TableOf<format::Name> Name;
  COLABTRACE_RECORD_TYPES(CT_TABLE)
#undef CT_TABLE
};

struct ReadStats {
  uint64_t chunks = 0;
  uint64_t records = 0;
  uint64_t unknown_records = 0;  // types this reader does not know (skipped by length)
  uint64_t record_bytes = 0;     // framed bytes of all records
};

// The I/O aggregate chunks of a trace (wire.h, "I/O aggregate chunks"): every claimed
// slot of every exec image, in chunk order, widened to 64-bit counts (IoAggSums),
// durations converted to nanoseconds.
struct IoAggregates {
  bool present = false;  // the trace has aggregate chunks (format 1.3 and later)
  std::vector<format::IoAggSums> slots;  // kind kIoAggFile or kIoAggDirectory only, widened
  struct Image {
    uint32_t image = 0;
    format::IoAggInfo info{};
    uint64_t files_full_ns = 0;  // info.files_full_ticks converted; 0: never full
    format::IoHeavyInfo heavy{};  // its heavy-hitter table's facts (1.6; zero: none)
  };
  std::vector<Image> images;  // one per exec image that has aggregates
  // The heavy-hitter entries held (format 1.6, io_heavy.h), each also in `slots` as a
  // file slot: from when its sums count, and the calls its file may have had before
  // (Space-Saving's error; those are in its directory's row).
  struct Heavy {
    uint64_t path = 0;  // String id
    uint64_t from_ticks = 0, from_ns = 0;
    uint64_t error = 0;
  };
  std::vector<Heavy> heavy;
};

// The step aggregate chunks of a trace (format/step_agg.h): one series per exec image and
// step source whose three chunks were all found. Times in nanoseconds (boundaries and
// period spans on the trace's clock; parts as durations, kStepIoCalls a count).
struct StepSeries {
  uint32_t image = 0;
  uint32_t source = 0;  // format::StepSource, or format::kStepAggBatchWaits
  uint32_t tid = 0;
  uint64_t boundaries = 0, steps = 0, other_threads = 0, clamped = 0, folds = 0;
  uint64_t period_steps = 0;
  uint64_t first_ns = 0, last_ns = 0;  // the first and the latest boundary summed
  struct Span {
    uint64_t steps = 0, start_ns = 0, end_ns = 0;
    std::array<uint64_t, format::kStepParts> sums{};
  };
  Span all;     // every timed step summed (start_ns, end_ns: the first's start, the last's end)
  Span warmup;  // the first timed step (steps 1), when there is one
  std::vector<Span> periods;  // in time order; empty when the trace ended while they were folded
  bool periods_torn = false;  // so they were
  struct Bin {
    uint32_t bucket = 0;  // format::StepHistBucket's number
    uint64_t low_ns = 0, high_ns = 0, count = 0;
  };
  // Per histogram part (StepPart below kStepHistParts): its non-empty buckets, ascending,
  // and the warm-up step's bucket.
  std::array<std::vector<Bin>, format::kStepHistParts> hist;
  std::array<uint32_t, format::kStepHistParts> warmup_bucket{};
};
struct StepAggregates {
  bool present = false;  // the trace has step aggregate chunks (format 1.4 and later)
  std::vector<StepSeries> series;
};

// The window (wire.h, "event chunks"): which droppable records (format::IsDroppable) the
// trace holds in full, and how many the process wrote. A trace from before format 1.3
// holds them all: events_in_full == events_total, full_from_ns the trace's start.
struct TraceWindow {
  uint64_t full_from_ns = 0;    // every droppable record from then on is in the trace
  uint64_t events_in_full = 0;  // droppable records in the trace
  uint64_t events_total = 0;    // droppable records the process wrote (given way or not)
  uint64_t events_lost = 0;     // of those, never written: the cap left no room
  bool capped = false;          // the hard cap cut the window short
  bool compacted = false;       // `colabtrace run` removed its event chunks (1.4)
  uint64_t window_bytes = 0, window_ns = 0, max_bytes = 0;  // the settings (0: older trace)
  uint64_t recycled_chunks = 0;  // event chunks rewritten
};

// The thinned-sample chunks (format/sample_tiers.h, 1.4): per exec image, the run's exact
// peaks (times in ns) and how the tiers stand. For the part of the run the window gave up,
// the reader makes Sample records of the tiers' entries (two per entry: its maxima at the
// time RSS peaked, its last values at its end), and a Clock and PySample of the last ones
// when the window gave those up: every reader of Sample records sees the thinned series.
struct ThinnedSamples {
  struct Image {
    uint32_t image = 0;
    bool run_known = false;          // ThinRun was written (a periodic sample was taken)
    format::ThinRunHalf run{};       // peaks' times converted to ns
    uint64_t entries[format::kThinTiers] = {};  // valid entries per tier
    uint64_t interval_ns[format::kThinTiers] = {};
    uint64_t folds = 0;              // tier 2's folds
  };
  std::vector<Image> images;
  uint64_t made_samples = 0;         // Sample records the reader made from the tiers
  // `colabtrace run`'s trace (1.5, CTRW chunks): per process it sampled and per cgroup
  // whose tiers are in the file, the exact peaks (ticks: run's are CLOCK_MONOTONIC ns);
  // ProcSample and CgroupSample records made of their entries as above.
  struct RunSet {
    uint32_t set = 0;                // the chunks' image field
    uint64_t kind = 0;               // format::kRunThinProcess or kRunThinCgroup
    uint64_t pid = 0;                // 0: a cgroup
    bool run_known = false;
    format::ThinRunHalf run{};       // peak_vm is PSS, peak_cgroup USS (sample_tiers.h)
  };
  std::vector<RunSet> run_sets;
  uint64_t made_run_samples = 0;
};

// The GPU live-set chunks (format/gpu_live.h, 1.5) of the trace's latest exec image that
// has them whole: the allocations live when the trace was read, and the counters. Times
// (slots' ticks, peak_ticks, first_ticks, full_first_ticks) converted to ns.
struct GpuLiveSet {
  bool present = false;
  uint32_t image = 0;
  format::GpuLiveInfo info{};
  std::array<format::GpuLiveCounters, format::kGpuLiveEntries> counters{};
  std::vector<format::GpuLiveSlot> slots;  // live ones (key > kGpuLiveBusy), by (ticks, key)
  // The live device bytes sampled over the run (GpuLiveHistory; empty in older traces),
  // by time, each time once.
  std::vector<format::GpuLivePoint> history;
};

class ProcessTrace {
 public:
  std::string file;                 // where it was read from
  format::FileHeader header{};
  bool truncated = false;           // the shim stopped tracing early (disk, size limit)
  bool ended = false;               // the shim closed the trace at a clean exit
  bool exec_pending = false;        // the last image exec'd into a program not traced
  std::vector<std::string> warnings;  // damage found while reading, with offsets
  ReadStats stats;
  TraceWindow window;
  RecordTables records;
  IoAggregates io_aggregates;
  StepAggregates step_aggregates;
  ThinnedSamples thinned;
  GpuLiveSet gpu_live;

  // The text of String record `id`; "" for 0 or an unknown id.
  std::string_view Str(uint64_t id) const;
  // The frames of Stack record `id`, innermost first; empty for 0 or unknown.
  const std::vector<uint64_t>& Stack(uint64_t id) const;

  uint32_t pid() const { return header.pid; }
  uint64_t start_ns() const { return start_ns_; }  // CLOCK_MONOTONIC at trace start
  uint64_t end_ns() const { return end_ns_; }      // latest record time
  uint64_t start_realtime_ns() const { return header.start_realtime_ns; }

 private:
  friend class TraceDecoder;
  friend std::optional<ProcessTrace> ParseTrace(std::vector<uint8_t>, std::string, std::string*);
  // The Bytes fields' contents (strings, stacks, build-ids), copied out of the file:
  // every String/Bytes view points here.
  std::shared_ptr<const KeptBytes> bytes_;
  // String and Stack records by id. The shim numbers them 1, 2, 3, ... so they live in
  // dense vectors indexed by id; ids past what a dense vector may hold (a hostile trace)
  // go to the maps.
  std::vector<std::string_view> strings_;
  std::unordered_map<uint64_t, std::string_view> sparse_strings_;
  std::vector<std::vector<uint64_t>> stacks_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> sparse_stacks_;
  uint64_t start_ns_ = 0;
  uint64_t end_ns_ = 0;
};

// The machine a trace was recorded on: its HostInfo machine_id, else boot_id, else
// hostname; "" when it recorded none. Traces with different values come from different
// hosts (their paths, pids and devices are not comparable).
std::string HostIdentity(const ProcessTrace& t);

// Decodes a whole trace held in memory. Returns nullopt, with *error set to one clear
// sentence, when the bytes are not a readable trace at all (empty, not a trace, an
// unsupported version). Damage after a valid header yields a partial trace with
// warnings instead.
std::optional<ProcessTrace> ParseTrace(std::vector<uint8_t> bytes, std::string name,
                                       std::string* error);

// Reads and decodes a trace file (see ParseTrace).
std::optional<ProcessTrace> ReadTraceFile(const std::string& path, std::string* error);

// All traces named on a command line: files, and directories (every *.ctrace inside).
// A file named on the command line that cannot be read is an error (exit 2); a file
// found in a named directory that cannot be read (a zero-filled or foreign *.ctrace
// among thousands) is skipped with a warning naming it, and the rest is reported.
struct TraceSet {
  std::vector<ProcessTrace> traces;
  std::vector<std::string> errors;   // inputs that could not be read, one line each
  std::vector<std::string> skipped;  // unreadable files inside directories, one line each
};
TraceSet LoadTraces(const std::vector<std::string>& paths);

}  // namespace colabtrace::analyzer
