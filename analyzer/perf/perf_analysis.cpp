// The steps analysis: processes[].steps and processes[].workers for every process that
// steps, processes[].in_flight for every process (perf/hang_model.h), and the perf.*
// findings (the rules in perf/rules/).
#include <cmath>

#include "model/process_role.h"
#include "perf/hang_model.h"
#include "perf/rules/rules.h"
#include "perf/step_model.h"
#include "report/analyses.h"
#include "report/report.h"
#include "report/rule_registry.h"

namespace colabtrace::analyzer {
namespace perf {
namespace {

// Fractions to 4 decimals: the JSON says 0.8731, not 0.87309999999999999.
double Rounded(double x) { return std::round(x * 10000.0) / 10000.0; }

Json StepsJson(const ProcessSteps& p) {
  Json s = Json::MakeObject();
  s["count"] = static_cast<uint64_t>(p.count);
  s["source"] = std::string(StepSourceName(p.source));
  s["tid"] = static_cast<uint64_t>(p.tid);
  s["timed"] = static_cast<uint64_t>(p.timed);
  s["analysed"] = static_cast<uint64_t>(p.after_warmup.steps);
  s["median_ns"] = p.median_ns;
  s["p90_ns"] = p.p90_ns;
  s["warmup_ns"] = p.warmup_ns;
  s["input_wait_fraction"] = Rounded(p.after_warmup.input_wait_fraction());
  s["gpu_sync_fraction"] = Rounded(p.after_warmup.gpu_sync_fraction());
  s["io_fraction"] = Rounded(p.after_warmup.io_fraction());
  s["other_fraction"] = Rounded(p.after_warmup.other_fraction());
  s["median_wait_ns"] = p.median_wait_ns;
  s["batch_waits"] = p.batch_waits;
  s["wait_site"] = p.wait_site;
  s["interrupted"] = p.interrupted.has_value();
  if (p.interrupted) s["interrupted_ns"] = p.interrupted->duration_ns();
  // What the report saw in full: every step from full_from_ns on (timed_in_full of them);
  // the figures above come from the step aggregates when from_aggregates is set.
  s["full_from_ns"] = p.full_from_ns;
  s["timed_in_full"] = static_cast<uint64_t>(p.steps.size());
  if (p.from_aggregates) {
    s["from_aggregates"] = true;
    s["periods"] = static_cast<uint64_t>(p.periods.size());
  }
  return s;
}

class PerfAnalysis : public Analysis {
 public:
  std::string_view name() const override { return "perf"; }
  void Run(ReportBuilder& report) override {
    const StepModels& m = report.run().Get<StepModels>();
    for (size_t i = 0; i < m.processes.size(); ++i) {
      Json& row = report.process(m.processes[i].trace);
      row["steps"] = StepsJson(m.processes[i]);
      row["workers"] = WorkersJson(m.workers[i])["workers"];
    }
    // The calls each process had not returned from when its trace ended.
    for (const ProcessHang& p : report.run().Get<HangModel>().processes) {
      Json calls = Json::MakeArray();
      for (const InFlightCall& c : p.calls) calls.Append(InFlightJson(c));
      report.process(p.trace)["in_flight"] = std::move(calls);
    }
    RunRules(report, FindingArea::kPerf);
  }
};

}  // namespace

Json WorkersJson(const StepWorkers& w) {
  Json out = Json::MakeObject();
  Json list = Json::MakeArray();
  for (const WorkerTime& t : w.workers) {
    Json j = Json::MakeObject();
    j["pid"] = t.pid;
    j["worker_id"] = t.worker_id;
    j["dataloader_worker"] = t.dataloader_worker;
    j["alive_ns"] = t.alive_ns;
    j["io_ns"] = t.io_ns;
    if (t.cpu_known) j["cpu_ns"] = t.cpu_ns;
    j["wait_ns"] = t.wait_ns;
    Json io = Json::MakeArray();
    for (const WorkerIo& d : t.io) {
      if (io.array().size() >= 5) break;
      Json r = Json::MakeObject();
      r["mountpoint"] = d.mountpoint;
      r["fs_type"] = d.fs_type;
      r["directory"] = d.directory;
      r["files"] = d.files;
      r["opens"] = d.opens;
      r["open_ns"] = d.open_ns;
      r["reads"] = d.reads;
      r["read_ns"] = d.read_ns;
      r["bytes_read"] = d.bytes_read;
      r["stats"] = d.stats;
      r["stat_ns"] = d.stat_ns;
      io.Append(std::move(r));
    }
    j["io"] = std::move(io);
    list.Append(std::move(j));
  }
  out["workers"] = std::move(list);
  out["busy_workers"] = static_cast<uint64_t>(w.busy_workers);
  out["cpus_allowed"] = w.cpus_allowed;
  out["restarted_workers"] = static_cast<uint64_t>(w.restarted_workers);
  return out;
}

std::string StepperName(const RunModel& run, const ProcessSteps& p) {
  const ProcessTrace& t = run.traces()[p.trace];
  return "[pid " + std::to_string(p.pid) + "] " + CommandLineText(run.facts(t).JobArgv(t));
}

}  // namespace perf

std::unique_ptr<Analysis> MakePerfAnalysis() { return std::make_unique<perf::PerfAnalysis>(); }

}  // namespace colabtrace::analyzer
