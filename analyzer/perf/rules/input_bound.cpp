// perf.input-bound (warning from 20% of step time, information from 5%)
//
// Rule: after the warm-up step, the step loop's thread waited for its next batch for at
// least kInputBoundInfo of the step time (kInputBoundWarning: a warning), over at least
// kMinStepsAnalysed steps. The evidence follows the wait to its cause: the workers
// (DataLoader workers, else the stepping process's descendants) and what their time went
// to inside the steps (file I/O by mount and directory, CPU from their samples, waiting),
// or, with no workers, the step loop's own file calls inside its waits: file I/O or CPU
// when it is half their time, or 30% and more than the other; else they mostly waited
// themselves (found on an H200: workers that slept 96% of their time were called busy
// computing because their 4% of CPU beat their 0.2% of file I/O). The advice is the
// cause's (kAdvice*), plus persistent_workers when workers were started again after the
// first step.
#include <algorithm>
#include <cmath>
#include <utility>

#include "core/format.h"
#include "io/rules/rules.h"
#include "perf/rules/rules.h"

namespace colabtrace::analyzer::perf {
namespace {

using io::Percent;
using io::Share;

constexpr std::string_view kAdviceSlowStorage =
    "The batches wait for slow storage. Stage the data on local disk first (copy it once "
    "to the machine's own disk, e.g. /content or a local SSD), or pack the small files "
    "into a few large shards (tar/WebDataset, TFRecord, one array file) read "
    "sequentially: each open on a network or FUSE mount is a round trip.";
constexpr std::string_view kAdviceLocalStorage =
    "The batches wait for file I/O. Pack the small files into a few large shards read "
    "sequentially, keep decoded samples in memory between epochs, or raise num_workers so "
    "more files are read at once.";
constexpr std::string_view kAdviceMoreWorkers =
    "The workers are busy computing while CPUs the job may use are idle: raise "
    "num_workers (up to the CPUs the job may use).";
constexpr std::string_view kAdviceAllCpusBusy =
    "Every CPU the job may use is busy with the workers' transforms: make them lighter "
    "(decode and resize once and cache the result, move augmentation to the GPU) or run on "
    "more cores.";
constexpr std::string_view kAdviceNoWorkers =
    "The batches are loaded in the training process itself, between steps: use a "
    "DataLoader with num_workers > 0 so that loading overlaps the step.";
constexpr std::string_view kAdviceWorkersWait =
    "The workers mostly wait themselves (neither reading files nor computing): look for a "
    "lock, a queue or a remote service they share; raise prefetch_factor and num_workers.";
constexpr std::string_view kAdviceRestarts =
    " Workers are started again every epoch: pass persistent_workers=True to the "
    "DataLoader.";

// The workers' file I/O summed by mount and directory: the five with the most I/O time.
std::vector<WorkerIo> StorageOf(const std::vector<const std::vector<WorkerIo>*>& lists) {
  std::vector<WorkerIo> rows;
  for (const auto* list : lists) rows.insert(rows.end(), list->begin(), list->end());
  std::vector<WorkerIo> out = MergeByDirectory(std::move(rows));
  if (out.size() > 5) out.resize(5);
  return out;
}

Json StorageJson(const std::vector<WorkerIo>& storage) {
  Json out = Json::MakeArray();
  for (const WorkerIo& d : storage) {
    Json j = Json::MakeObject();
    j["mountpoint"] = d.mountpoint;
    j["fs_type"] = d.fs_type;
    j["slow_fs"] = d.slow_fs;
    j["directory"] = d.directory;
    j["files"] = d.files;
    j["opens"] = d.opens;
    j["bytes_read"] = d.bytes_read;
    j["io_ns"] = d.io_ns();
    j["open_latency_ns"] = d.opens ? d.open_ns / d.opens : 0;
    j["read_ns_per_file"] = d.files ? d.read_ns / d.files : 0;
    out.Append(std::move(j));
  }
  return out;
}

std::string PidList(const StepWorkers& w) {
  std::string s;
  for (size_t i = 0; i < w.workers.size(); ++i) {
    if (i == 6) {
      s += " and " + std::to_string(w.workers.size() - i) + " more";
      break;
    }
    if (i > 0) s += ", ";
    s += std::to_string(w.workers[i].pid);
  }
  return s;
}

void InputBoundRule(RuleContext& ctx) {
  const RunModel& run = ctx.run();
  const StepModels& m = run.Get<StepModels>();
  for (size_t k = 0; k < m.processes.size(); ++k) {
    const ProcessSteps& p = m.processes[k];
    const StepWorkers& w = m.workers[k];
    if (p.after_warmup.steps < kMinStepsAnalysed) continue;
    const double fraction = p.after_warmup.input_wait_fraction();
    if (fraction < kInputBoundInfo) continue;

    Finding f = Finding::Of(FindingId::kPerfInputBound, p.pid);
    f.severity = fraction >= kInputBoundWarning ? Severity::kWarning : Severity::kInfo;
    Json& ev = f.evidence;
    ev["input_wait_fraction"] = std::round(fraction * 10000.0) / 10000.0;
    ev["steps_analysed"] = static_cast<uint64_t>(p.after_warmup.steps);
    ev["source"] = std::string(StepSourceName(p.source));
    ev["median_step_ns"] = p.median_ns;
    ev["median_wait_ns"] = p.median_wait_ns;
    ev["wait_site"] = p.wait_site;
    Json thresholds = Json::MakeObject();
    thresholds["warning_fraction"] = kInputBoundWarning;
    thresholds["info_fraction"] = kInputBoundInfo;
    ev["thresholds"] = std::move(thresholds);

    uint64_t alive = 0, io = 0, cpu = 0, waiting = 0;
    std::vector<const std::vector<WorkerIo>*> io_lists;
    for (const WorkerTime& t : w.workers) {
      alive += t.alive_ns;
      io += t.io_ns;
      cpu += t.cpu_ns;
      waiting += t.wait_ns;
      io_lists.push_back(&t.io);
    }
    Json workers = WorkersJson(w);
    ev["workers"] = std::move(workers["workers"]);
    ev["worker_pids"] = Json::MakeArray();
    for (const WorkerTime& t : w.workers) ev["worker_pids"].Append(Json(t.pid));
    ev["busy_workers"] = static_cast<uint64_t>(w.busy_workers);
    ev["cpus_allowed"] = w.cpus_allowed;
    ev["restarted_workers"] = static_cast<uint64_t>(w.restarted_workers);
    ev["workers_io_share"] = Share(io, alive);
    ev["workers_cpu_share"] = Share(cpu, alive);
    ev["workers_wait_share"] = Share(waiting, alive);

    // The cause, and the storage behind it when it is I/O.
    std::string cause, because;
    std::string_view advice;
    std::vector<WorkerIo> storage;
    const std::vector<WorkerIo> own_io = w.workers.empty() ? DataIoOf(run, p.trace) : std::vector<WorkerIo>{};
    if (w.workers.empty()) {
      const double io_share = Share(p.after_warmup.wait_io_ns, p.after_warmup.input_wait_ns);
      ev["wait_io_share"] = io_share;
      if (io_share >= kWorkersMostly) {
        storage = StorageOf({&own_io});
        cause = "storage";
        because = "the step loop itself spent " + Percent(io_share) + " of its waits in file I/O";
      } else {
        cause = "no-workers";
        because = "the batches are loaded in the step loop's own process";
        advice = kAdviceNoWorkers;
      }
    } else {
      const double io_share = Share(io, alive), cpu_share = Share(cpu, alive);
      if (io_share >= kWorkersMostly || (io_share >= cpu_share && io_share >= 0.3)) {
        storage = StorageOf(io_lists);
        cause = "storage";
        because = "workers " + PidList(w) + " spent " + Percent(io_share) + " of their time in file I/O";
      } else if (cpu_share >= kWorkersMostly || (cpu_share > io_share && cpu_share >= 0.3)) {
        const bool idle_cpus = w.cpus_allowed > 0 && static_cast<double>(w.busy_workers) + 1.0 < w.cpus_allowed;
        cause = idle_cpus ? "cpu-idle-cpus" : "cpu-all-busy";
        advice = idle_cpus ? kAdviceMoreWorkers : kAdviceAllCpusBusy;
        because = "workers " + PidList(w) + " spent " + Percent(cpu_share) + " of their time on the CPU (" +
                  std::to_string(w.busy_workers) + " busy, " +
                  (w.cpus_allowed > 0 ? std::to_string(static_cast<int>(w.cpus_allowed)) : std::string("?")) +
                  " CPUs allowed)";
      } else {
        cause = "workers-wait";
        advice = kAdviceWorkersWait;
        because = "workers " + PidList(w) + " spent " + Percent(Share(waiting, alive)) + " of their time waiting";
      }
    }
    if (cause == "storage") {
      const bool slow = !storage.empty() && storage.front().slow_fs;
      advice = slow ? kAdviceSlowStorage : kAdviceLocalStorage;
      if (!storage.empty()) {
        const WorkerIo& d = storage.front();
        because += " on " + (d.mountpoint.empty() ? std::string("an unknown mount") : d.mountpoint) +
                   (d.fs_type.empty() ? "" : " (" + d.fs_type + ")") +
                   (d.directory == d.mountpoint ? "" : ", " + d.directory) + ": " +
                   FormatDurationNs(d.opens ? d.open_ns / d.opens : 0) + " per open";
      }
      ev["storage"] = StorageJson(storage);
    }
    ev["cause"] = cause;
    f.advice = std::string(advice);
    if (w.restarted_workers > 0) f.advice += kAdviceRestarts;

    f.summary = Percent(fraction) + " of step time waited for the next batch (" +
                std::to_string(p.after_warmup.steps) + " steps after warm-up, median step " +
                FormatDurationNs(p.median_ns) + ", median wait " + FormatDurationNs(p.median_wait_ns) + ")" +
                (p.wait_site.empty() ? "" : " at " + p.wait_site) + "; " + because;
    ctx.Add(std::move(f));
  }
}

const RuleRegistration kInputBoundRuleRegistration(InputBoundRule, {FindingId::kPerfInputBound});

}  // namespace
}  // namespace colabtrace::analyzer::perf
