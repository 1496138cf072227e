// StepModels: the training steps of every process that steps, and where their time went.
//
// A process steps when its trace has step boundaries. They come from its best source, so
// a program that marks its own steps is never counted twice:
//   1. its own markers (Step records, StepSource::kMarker: colabtrace.step(n));
//   2. else the optimizer steps the Python start-up hook saw (StepSource::kOptimizer);
//   3. else its batch waits (BatchWait records: each batch starts a step).
// All boundaries come from one thread, the one that wrote most of them (the step loop).
// Step i runs from boundary i to boundary i + 1; a process that ended (or was killed)
// after its last boundary was inside a step then, which is kept apart as `interrupted`
// (never a slow step).
//
// Each step's wall time is split with a precedence, so that nothing counts twice:
//   input wait  the step loop's thread waiting for its next batch (BatchWait);
//   GPU sync    outside that, the thread blocked in a CUDA synchronising call (GpuSync);
//   file I/O    outside both, the thread inside file calls (open, read, stat...);
//   other       the rest: host compute and Python.
// The first step is the warm-up: it is in `steps` and in the figures, but the fractions
// and medians the verdicts use are over steps[1..] ("after warm-up").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/run_model.h"
#include "trace/process_trace.h"

namespace colabtrace::analyzer::perf {

enum class StepSourceKind : uint8_t { kMarker, kOptimizer, kDataLoader };
// "marker", "optimizer", "dataloader": the JSON's processes[].steps.source.
std::string_view StepSourceName(StepSourceKind s);

// Where one step's wall time went. The four parts add up to end_ns - start_ns.
struct StepTime {
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t input_wait_ns = 0, gpu_sync_ns = 0, io_ns = 0, other_ns = 0;
  // The step loop thread's file calls inside this step (all of them, also those inside
  // a batch wait): their count and time, for "I/O latency grew".
  uint64_t io_calls = 0, io_call_ns = 0;
  // Of input_wait_ns, the time the step loop's thread was itself in file calls: the
  // batch was loaded in this thread (num_workers=0).
  uint64_t wait_io_ns = 0;
  uint64_t duration_ns() const { return end_ns - start_ns; }
};

// Sums of the parts over a range of steps, and each part's fraction of the whole.
struct StepShares {
  size_t steps = 0;
  uint64_t total_ns = 0, input_wait_ns = 0, gpu_sync_ns = 0, io_ns = 0, other_ns = 0;
  uint64_t wait_io_ns = 0;
  double input_wait_fraction() const;
  double gpu_sync_fraction() const;
  double io_fraction() const;
  double other_fraction() const;
  static StepShares Of(const std::vector<StepTime>& steps, size_t begin, size_t end);
};

// The sums of a run of consecutive steps (the step aggregates' periods): `sum`'s start_ns
// and end_ns are the run's span, its parts the steps' sums.
struct StepPeriod {
  size_t steps = 0;
  StepTime sum;
};

// The steps of one process.
//
// When the window gave up step records (or COLABTRACE_ANALYZER_IGNORE_STEP_EVENTS=1, a
// test switch) and the trace has step aggregates (format/step_agg.h), the whole run's
// figures come from them (`from_aggregates`): count, after_warmup, the medians and p90
// (from log-bucketed histograms: within 0.4%), batch_waits; `steps` then holds only the
// steps in full (from full_from_ns on) and `periods` the sums per period of all of them.
struct ProcessSteps {
  size_t trace = 0;  // index into run.traces()
  int64_t pid = 0;
  uint32_t tid = 0;  // the step loop's thread
  StepSourceKind source = StepSourceKind::kMarker;
  size_t count = 0;                     // its step boundaries: the steps it took
  // The timed steps, between consecutive boundaries (and, for optimizer steps, which end
  // an iteration, the first iteration up to the first of them), in time order.
  // [0] is the warm-up.
  std::vector<StepTime> steps;
  std::optional<StepTime> interrupted;  // the step the process was in when its trace ended
  bool ended_cleanly = false;           // the trace ends with an exit (not killed/truncated)
  // Over steps[1..] (all steps when there is only one): the verdicts' figures.
  StepShares after_warmup;
  uint64_t median_ns = 0, p90_ns = 0;   // step duration
  uint64_t median_wait_ns = 0;          // per-step input wait
  // The Python line that waited for batches most often ("train.py:25 in main"), "" unknown.
  std::string wait_site;
  uint64_t batch_waits = 0;             // BatchWait records of the step loop's thread
  bool from_aggregates = false;
  uint64_t warmup_ns = 0;     // the first timed step's duration (0: none)
  size_t timed = 0;           // timed steps of the whole run (steps.size() unless summed)
  uint64_t full_from_ns = 0;  // every step from then on is in `steps`
  std::vector<StepPeriod> periods;  // summed only: after warm-up, in time order
};

// The nearest-rank p-th percentile (as PercentileOf) of the values a step aggregate
// histogram counts (its non-empty bins, ascending), less one value in bucket `skip` (the
// warm-up) when skip_one: the middle of its bucket, within half a bucket (0.4%) of the
// exact value from 8,192 ticks up; 0 in the first bucket (values under 64 ticks).
uint64_t HistPercentile(const std::vector<StepSeries::Bin>& bins, bool skip_one, uint32_t skip, double p);

// Whether t's step figures come from its step aggregates (see ProcessSteps).
bool StepsFromAggregates(const ProcessTrace& t);

// A process working for a stepping one during its steps: its DataLoader workers (marked
// by ProcessRole), else its descendants that were alive then.
struct WorkerIo {
  std::string mountpoint, fs_type;  // "" when the mount is unknown
  bool slow_fs = false;             // a network, FUSE or VM-shared filesystem
  std::string directory;            // the files' parent directory
  uint64_t files = 0, opens = 0, open_ns = 0, reads = 0, read_ns = 0, bytes_read = 0, stats = 0,
           stat_ns = 0;
  uint64_t io_ns() const { return open_ns + read_ns + stat_ns; }
  // Adds o's counts (not its names) to this row's.
  void Add(const WorkerIo& o) {
    files += o.files;
    opens += o.opens;
    open_ns += o.open_ns;
    reads += o.reads;
    read_ns += o.read_ns;
    bytes_read += o.bytes_read;
    stats += o.stats;
    stat_ns += o.stat_ns;
  }
};

struct WorkerTime {
  size_t trace = 0;
  int64_t pid = 0;
  bool dataloader_worker = false;  // said so itself (ProcessRole)
  int64_t worker_id = -1;          // the DataLoader's id of it, -1 unknown
  uint64_t alive_ns = 0;           // its lifetime inside the steps' span
  uint64_t io_ns = 0;              // time in file calls (all threads)
  uint64_t cpu_ns = 0;             // utime + stime from its samples (0: none sampled)
  bool cpu_known = false;
  uint64_t wait_ns = 0;            // alive - io - cpu, never below 0
  std::vector<WorkerIo> io;        // by mount and directory, most I/O time first
};

// The workers behind one stepping process, and the CPUs the job may use.
struct StepWorkers {
  size_t stepping = 0;  // index into StepModels::processes
  std::vector<WorkerTime> workers;
  // Workers whose CPU time was at least half their lifetime (busy computing).
  size_t busy_workers = 0;
  // CPUs the job may use: the affinity mask's count, lowered by the cgroup CPU quota
  // (HostNum cpu_count, cgroup_cpu_quota_millicpus); 0 unknown.
  double cpus_allowed = 0;
  // Worker processes that started after the first step of the stepping process (workers
  // restarted each epoch: persistent_workers=False).
  size_t restarted_workers = 0;
};

struct StepModels {
  std::vector<ProcessSteps> processes;  // the processes that step, in trace order
  std::vector<StepWorkers> workers;     // same order as processes
  // The steps of trace t, or nullptr when it does not step.
  const ProcessSteps* Of(size_t trace) const;
  const StepWorkers* WorkersOf(size_t trace) const;
  static StepModels Build(const RunModel& run);
};

// File calls (every I/O record with a duration) of trace t that started inside [a, b):
// their number and time; of thread tid only, when tid is not 0.
struct FileCallTime {
  uint64_t calls = 0, ns = 0;
  uint64_t mean_ns() const { return calls ? ns / calls : 0; }
};
FileCallTime FileCallsIn(const ProcessTrace& t, uint64_t a, uint64_t b, uint32_t tid = 0);

// Rows summed by mount point and directory, most I/O time first.
std::vector<WorkerIo> MergeByDirectory(std::vector<WorkerIo> rows);

// A process's data files (io::IsDataFile) by mount and directory, most I/O time first.
std::vector<WorkerIo> DataIoOf(const RunModel& run, size_t trace);

// The p-th percentile (0 < p <= 1) of a list of values by nearest rank (p = 0.5: the
// median); 0 for none.
uint64_t PercentileOf(std::vector<uint64_t> values, double p);

}  // namespace colabtrace::analyzer::perf
