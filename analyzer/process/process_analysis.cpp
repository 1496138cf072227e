// The processes[] rows and the text process table; runs the proc.* rules on each job
// process and the host.* rules once per host (process/rules/, one file per finding id).
//
// How a process ended comes, in this order, from its reaper's wait status (a traced
// parent's wait* call, or `colabtrace run`), its own signal record, its own exit record;
// with none of them it was killed. `colabtrace run`'s own trace (IsRunWrapper) adds
// outside samples (RSS, PSS, USS, cgroup) and is reported under "run", not processes[].
#include <algorithm>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>

#include "report/analyses.h"
#include "model/process_facts.h"
#include "process/rules/rules.h"
#include "report/rule_registry.h"
#include "report/report.h"
#include "model/process_role.h"

namespace colabtrace::analyzer {
namespace {

using format::ExitHow;

std::string IsoTime(uint64_t realtime_ns) {
  const time_t secs = static_cast<time_t>(realtime_ns / 1000000000ull);
  struct tm tm = {};
  char buf[40] = "";
  // A hostile header can hold a time whose year overflows struct tm.
  if (gmtime_r(&secs, &tm) == nullptr ||
      std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
    return "unknown";
  }
  char out[48];
  std::snprintf(out, sizeof(out), "%s.%03lluZ", buf,
                static_cast<unsigned long long>((realtime_ns / 1000000ull) % 1000));
  return out;
}


// A JSON object filled by key in O(1) per Set; later values replace earlier ones.
class KeyedObject {
 public:
  void Set(std::string_view key, Json value) {
    auto [it, fresh] = index_.try_emplace(std::string(key), members_.size());
    if (fresh) {
      members_.emplace_back(std::string(key), std::move(value));
    } else {
      members_[it->second].second = std::move(value);
    }
  }
  Json Take() { return Json(std::move(members_)); }

 private:
  Json::Object members_;
  std::unordered_map<std::string, size_t> index_;
};

// The latest oom_kill reading a process could not take itself: from the samples of the

class ProcessAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "process"; }

  void Run(ReportBuilder& report) override {
    const auto& traces = report.traces();
    const LifecycleModel& model = report.run().lifecycle();
    std::vector<size_t> jobs;
    for (size_t i = 0; i < traces.size(); ++i) {
      const ProcessTrace& t = traces[i];
      const ProcessFacts& f = report.run().facts(t);
      Json& p = report.process(i);
      FillProcess(t, f, p);
      if (t.truncated) {
        report.AddWarning(t.file + ": tracing stopped early (" + std::string(std::strerror(
                              static_cast<int>(t.header.truncation_errno))) +
                          "); events after that point are missing");
      }
      if (f.run_wrapper) continue;
      // Only a process that ended on an uncaught Python exception has one.
      if (const auto* e = report.run().Get<rules::PythonExceptions>().Of(t)) {
        p["exception"] = rules::PythonExceptions::ToJson(*e);
      }
      jobs.push_back(i);
    }
    RunRules(report, FindingArea::kProcess);
    // Children that ran a program the shim could not follow (posix_spawn'd, or vfork'd
    // and exec'd, into a static or secure-exec program): no trace of their own, so their
    // rows come from their parent's records, after the traced processes' rows.
    for (size_t i = 0; i < traces.size(); ++i) {
      const ProcessTrace& t = traces[i];
      if (IsRunWrapper(t)) continue;
      const std::string host = model.HostOf(t);
      for (const auto& u : t.records.ExecUntraced) {
        if (u.child_pid == 0 || u.child_pid > INT32_MAX) continue;
        const auto pid = static_cast<uint32_t>(u.child_pid);
        if (model.TracedSince(host, pid, u.ts)) continue;  // it wrote a trace after all
        report.root()["processes"].Append(
            UntracedChildRow(t, report.process(i), u, model.ReapOf(host, pid, u.ts)));
      }
    }
  }

 private:
  // The end object of a process: kind, code, signal (and its name), reaped_by.
  static Json EndObject(EndKind kind, std::optional<int64_t> code, std::optional<int64_t> signal,
                        const std::optional<Reap>& reap) {
    Json end = EndJson(kind, code, signal);
    end["reaped_by"] = reap ? Json(static_cast<int64_t>(reap->reaper_pid)) : Json();
    if (reap) end["reaped_by_run"] = reap->by_run;
    return end;
  }

  // The fields every processes[] row carries that only a trace of its own could fill.
  static void EmptyProcessFigures(Json& p) {
    Json io = Json::MakeObject();
    io["opens"] = 0;
    io["reads"] = 0;
    io["bytes_read"] = 0;
    p["io"] = std::move(io);
    p["peak_rss_bytes"] = 0;
    Json gpu = Json::MakeObject();
    for (const char* k : {"allocations", "frees", "failed_allocations", "peak_bytes", "leaked_bytes"}) {
      gpu[k] = 0;
    }
    p["gpu"] = std::move(gpu);
  }

  // An images[] entry for a program the shim could not follow.
  static Json UntracedImageJson(uint64_t image, const std::string& exe, uint64_t why) {
    Json im = Json::MakeObject();
    im["image"] = image;
    im["exe"] = exe;
    im["traced"] = false;
    im["untraced_why"] = UntracedWhyName(why);
    return im;
  }

  // The row of a child that ran untraced program u names (parent's records and row
  // only): its exe and argv, the end its parent's wait saw (exited, code unknown, if none
  // did), its parent's machine. A vfork child whose every exec failed (why exec-failed)
  // ran its parent's program until it exited: that is its exe and argv, and
  // end.exec_failed names the program it tried and the error.
  static Json UntracedChildRow(const ProcessTrace& parent, const Json& parent_row,
                               const Event<format::ExecUntraced>& u, const Reap* reap) {
    const bool exec_failed = u.why == static_cast<uint64_t>(format::ExecUntracedWhy::kExecFailed);
    const std::string tried(parent.Str(u.exe));
    Json tried_argv = Json::MakeArray();
    for (std::string_view a : UntracedArgv(parent, u)) tried_argv.Append(std::string(a));
    const std::string exe = exec_failed ? parent_row["exe"].str() : tried;
    Json p = Json::MakeObject();
    p["pid"] = u.child_pid;
    p["ppid"] = parent.pid();
    p["exe"] = exe;
    p["argv"] = exec_failed ? parent_row["argv"] : tried_argv;
    p["origin"] = "fork";
    p["traced"] = false;
    Json images = Json::MakeArray();
    images.Append(UntracedImageJson(0, exe, u.why));
    p["images"] = std::move(images);
    p["cwd"] = std::string();
    const uint64_t since_start = u.ts > parent.start_ns() ? u.ts - parent.start_ns() : 0;
    p["start_time"] = IsoTime(parent.start_realtime_ns() + since_start);
    p["duration_ns"] = reap != nullptr && reap->ts > u.ts ? reap->ts - u.ts : 0;
    std::optional<Reap> r;
    WaitEnd e{EndKind::kExecUntraced, std::nullopt, std::nullopt};
    if (reap != nullptr) r = *reap, e = EndOfWaitStatus(reap->status);
    Json end = EndObject(e.kind, e.code, e.signal, r);
    if (exec_failed) {
      Json failed = Json::MakeObject();
      failed["path"] = tried;
      failed["argv"] = std::move(tried_argv);
      failed["error"] = ErrnoName(static_cast<int>(u.err));
      end["exec_failed"] = std::move(failed);
    } else {
      end["exec_untraced"] = exe;
    }
    p["end"] = std::move(end);
    p["trace_truncated"] = false;
    p["trace_file"] = std::string();
    p["recorded_by"] = parent.file;  // no trace of its own: its parent's names it
    EmptyProcessFigures(p);
    p["threads"] = Json::MakeArray();
    p["children"] = Json::MakeArray();
    p["env"] = Json::MakeObject();         // not recorded
    p["host"] = parent_row["host"];        // its parent's machine
    return p;
  }

  static void FillProcess(const ProcessTrace& t, const ProcessFacts& f, Json& p) {
    if (f.run_wrapper) p["role"] = "colabtrace-run";
    p["pid"] = t.pid();
    p["ppid"] = f.ppid;
    p["exe"] = std::string(f.JobExe(t));
    Json argv = Json::MakeArray();
    for (std::string_view a : f.JobArgv(t)) argv.Append(std::string(a));
    p["argv"] = std::move(argv);
    p["origin"] = !f.start ? "unknown"
                  : f.start->origin == static_cast<uint64_t>(format::ProcessOrigin::kForkChild)
                      ? "fork"
                      : "start";
    Json images = Json::MakeArray();
    for (const auto& s : t.records.ProcessStart) {
      Json im = Json::MakeObject();
      im["image"] = s.image;
      im["exe"] = std::string(t.Str(s.exe));
      images.Append(std::move(im));
    }
    if (f.untraced != nullptr) {  // the image the shim could not follow (no trace of its own)
      images.Append(UntracedImageJson(f.untraced->image + 1, std::string(t.Str(f.untraced->exe)), f.untraced->why));
    }
    p["images"] = std::move(images);
    p["cwd"] = f.job ? std::string(t.Str(f.job->cwd)) : std::string();
    p["start_time"] = IsoTime(t.start_realtime_ns());
    p["duration_ns"] = t.end_ns() - t.start_ns();
    Json end = EndObject(f.end_kind, f.exit_code, f.end_signal, f.reap);
    if (f.end_kind == EndKind::kExecUntraced && !t.records.ExecStart.empty()) {
      end["exec_untraced"] = std::string(t.Str(t.records.ExecStart.back().path));
    }
    p["end"] = std::move(end);
    p["trace_truncated"] = t.truncated;
    p["trace_file"] = t.file;
    Json window = Json::MakeObject();
    window["full_from_ns"] = t.window.full_from_ns;
    window["events_in_full"] = t.window.events_in_full;
    window["events_total"] = t.window.events_total;
    window["capped"] = t.window.capped;
    window["compacted"] = t.window.compacted;
    p["window"] = std::move(window);
    // Defaults; the I/O and GPU analyses fill in their own figures.
    EmptyProcessFigures(p);
    p["peak_rss_bytes"] = f.peak_rss;
    std::set<uint32_t> tids;
    for (const auto& s : t.records.Sample) tids.insert(s.tid);
    Json threads = Json::MakeArray();
    for (const auto& tn : t.records.ThreadName) {
      Json th = Json::MakeObject();
      th["tid"] = tn.tid;
      th["name"] = std::string(t.Str(tn.name));
      threads.Append(std::move(th));
    }
    p["threads"] = std::move(threads);
    // The shim could not read this interpreter's frames: its records have no Python
    // stacks, and the report says so by version rather than leave them silently empty.
    for (const auto& n : t.records.ShimNote) {
      const bool unknown = n.code == static_cast<uint64_t>(format::ShimNoteCode::kPythonStacksUnavailable);
      if (!unknown && n.code != static_cast<uint64_t>(format::ShimNoteCode::kPythonLayoutMismatch)) continue;
      Json ps = Json::MakeObject();
      ps["available"] = false;
      ps["version"] = std::to_string(n.value >> 8) + "." + std::to_string(n.value & 0xFF);
      ps["interpreter"] = std::string(t.Str(n.text));
      ps["why"] = unknown ? "no frame layout for this CPython version"
                          : "this build's frames do not fit the layout of its version";
      p["python_stacks"] = std::move(ps);
      break;
    }
    Json children = Json::MakeArray();
    for (const auto& fk : t.records.Fork) {
      if (fk.child_pid > 0) children.Append(fk.child_pid);
    }
    for (const auto& sp : t.records.Spawn) {
      if (sp.child_pid > 0) children.Append(sp.child_pid);
    }
    p["children"] = std::move(children);
    // The last value of each name, in first-seen order. Built through an index:
    // Json::operator[] is a linear search, and a trace may hold millions of records.
    KeyedObject env;
    for (const auto& e : t.records.EnvVar) {
      env.Set(t.Str(e.name), e.redacted ? Json("<redacted>")
                             : e.source == static_cast<uint64_t>(format::EnvSource::kUnsetenv)
                                 ? Json()
                                 : Json(std::string(t.Str(e.value))));
    }
    p["env"] = env.Take();
    KeyedObject host;
    for (const auto& h : t.records.HostInfo) host.Set(t.Str(h.key), std::string(t.Str(h.value)));
    for (const auto& h : t.records.HostNum) {
      host.Set(t.Str(h.key), h.value == UINT64_MAX ? Json("max") : Json(h.value));
    }
    p["host"] = host.Take();
  }
};

// host.memory-pressure and host.shm-small need every process of a host at once. Hosts
// (hostname + boot_id) are never merged: a directory may hold traces of several machines.
class HostAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "host"; }

  void Run(ReportBuilder& report) override {
    RunRules(report, FindingArea::kHost);
    Json hosts = Json::MakeArray();
    for (const rules::HostMemory::Host& h : report.run().Get<rules::HostMemory>().hosts) {
      if (!h.figures.is_null()) hosts.Append(h.figures);
    }
    // The tree's peak memory per host, whether or not it raised a finding.
    Json memory = Json::MakeObject();
    memory["hosts"] = std::move(hosts);
    report.root()["memory"] = std::move(memory);
  }
};


// Runs last: `colabtrace run`'s own trace is not a job process. Its processes[] entry
// (filled like any other so far, so every analysis kept its index) moves to "run".
class RunWrapperAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "run-wrapper"; }

  void Run(ReportBuilder& report) override {
    const auto& traces = report.traces();
    std::vector<size_t> wrappers;
    for (size_t i = 0; i < traces.size(); ++i) {
      if (IsRunWrapper(traces[i])) wrappers.push_back(i);
    }
    if (wrappers.empty()) return;
    Json runs = Json::MakeArray();
    for (size_t i : wrappers) {
      const ProcessTrace& t = traces[i];
      const auto& info = t.records.RunInfo.front();
      std::set<uint64_t> pids;
      for (const auto& s : t.records.ProcSample) pids.insert(s.pid);
      Json r = Json::MakeObject();
      r["pid"] = t.pid();
      r["child_pid"] = info.child_pid;
      r["sample_ms"] = info.sample_ms;
      r["samples"] = static_cast<uint64_t>(t.records.ProcSample.size());
      // How often PSS was read: its fixed period (COLABTRACE_PSS_MS), or 0 when it followed
      // its cost budget; the samples that carry it; and the longest a process went
      // without a reading (from its first sample, or between two readings).
      r["pss_ms"] = info.pss_ms;
      uint64_t with_pss = 0, max_gap = 0;
      std::map<uint64_t, std::pair<uint64_t, bool>> since;  // pid -> (last reading or first sample, read)
      for (const auto& s : t.records.ProcSample) {
        auto [it, first] = since.try_emplace(s.pid, s.ts, false);
        if (s.pss_bytes == UINT64_MAX) continue;
        ++with_pss;
        if (!first || it->second.second) max_gap = std::max(max_gap, s.ts - std::min(s.ts, it->second.first));
        it->second = {s.ts, true};
      }
      r["pss_samples"] = with_pss;
      r["pss_max_gap_ms"] = max_gap / 1000000;
      r["processes_sampled"] = static_cast<uint64_t>(pids.size());
      // The job cap (COLABTRACE_JOB_MAX_MB): the output folder's disk space at run's last
      // check and the most at any check, after the compactions of that check.
      if (!t.records.JobDisk.empty()) {
        const auto& last = t.records.JobDisk.back();
        uint64_t peak = 0;
        for (const auto& d : t.records.JobDisk) peak = std::max(peak, d.bytes);
        Json job = Json::MakeObject();
        job["max_bytes"] = last.max_bytes;
        job["bytes"] = last.bytes;
        job["peak_bytes"] = peak;
        job["traces"] = last.traces;
        job["compacted"] = last.compacted;
        job["process_max_mb"] = last.process_max_mb;
        r["job"] = std::move(job);
      }
      r["trace_file"] = t.file;
      runs.Append(std::move(r));
    }
    auto& procs = report.root()["processes"].array();
    for (auto it = wrappers.rbegin(); it != wrappers.rend(); ++it) {
      if (*it < procs.size()) procs.erase(procs.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    report.root()["run"] = std::move(runs);
  }
};

}  // namespace

std::unique_ptr<Analysis> MakeProcessAnalysis() { return std::make_unique<ProcessAnalysis>(); }
std::unique_ptr<Analysis> MakeHostAnalysis() { return std::make_unique<HostAnalysis>(); }
std::unique_ptr<Analysis> MakeRunWrapperAnalysis() { return std::make_unique<RunWrapperAnalysis>(); }

}  // namespace colabtrace::analyzer