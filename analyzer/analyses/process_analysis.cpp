// The process table and how each process ended (proc.killed, proc.fatal-signal), plus
// the whole-run host findings (host.memory-pressure, host.shm-small).
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>

#include "analyses/factories.h"
#include "analyses/process_facts.h"
#include "analyses/symbolize.h"
#include "python/python_stack.h"
#include "report/report.h"

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

std::string CommandLine(const Json& argv) {
  std::string s;
  for (const Json& a : argv.array()) {
    if (!s.empty()) s += ' ';
    s += EscapeForTerminal(a.str());
  }
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

class ProcessAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "process"; }

  void Run(ReportBuilder& report) override {
    const auto& traces = report.traces();
    std::string table;
    char line[512];
    std::snprintf(line, sizeof(line), "%-8s %-8s %-10s %-8s %-10s %s\n", "pid", "ppid", "end",
                  "code", "peak RSS", "command");
    table += line;
    for (size_t i = 0; i < traces.size(); ++i) {
      const ProcessTrace& t = traces[i];
      const ProcessFacts f = ProcessFacts::Of(t);
      Json& p = report.process(i);
      FillProcess(t, f, p);
      const Json& end = p["end"];
      const std::string code = end["code"].is_null()
                                   ? (end["signal"].is_null() ? "-" : SignalName(static_cast<int>(end["signal"].as_int())))
                                   : std::to_string(end["code"].as_int());
      std::snprintf(line, sizeof(line), "%-8u %-8lld %-10s %-8s %-10s %s\n", t.pid(),
                    static_cast<long long>(p["ppid"].as_int()), end["kind"].str().c_str(),
                    code.c_str(), FormatBytes(f.peak_rss).c_str(), CommandLine(p["argv"]).c_str());
      table += line;
      if (t.truncated) {
        report.AddWarning(t.file + ": tracing stopped early (" + std::string(std::strerror(
                              static_cast<int>(t.header.truncation_errno))) +
                          "); events after that point are missing");
      }
      AddEndFindings(report, t, f, p, traces);
    }
    report.AddText("Processes", table);
  }

 private:
  static void FillProcess(const ProcessTrace& t, const ProcessFacts& f, Json& p) {
    p["pid"] = t.pid();
    p["ppid"] = f.start ? static_cast<int64_t>(f.start->ppid) : 0;
    p["exe"] = f.job ? std::string(t.Str(f.job->exe)) : std::string();
    Json argv = Json::MakeArray();
    for (const auto& a : t.records.Argv) {
      if (f.job && a.image == f.job->image) argv.Append(std::string(t.Str(a.value)));
    }
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
    p["images"] = std::move(images);
    p["cwd"] = f.job ? std::string(t.Str(f.job->cwd)) : std::string();
    p["start_time"] = IsoTime(t.start_realtime_ns());
    p["duration_ns"] = t.end_ns() - t.start_ns();
    Json end = Json::MakeObject();
    end["kind"] = std::string(EndKindName(f.end_kind));
    end["code"] = f.exit_code ? Json(*f.exit_code) : Json();
    end["signal"] = f.signal ? Json(static_cast<int64_t>(f.signal->signo)) : Json();
    if (f.signal) end["signal_name"] = SignalName(static_cast<int>(f.signal->signo));
    if (f.end_kind == EndKind::kExecUntraced && !t.records.ExecStart.empty()) {
      end["exec_untraced"] = std::string(t.Str(t.records.ExecStart.back().path));
    }
    p["end"] = std::move(end);
    p["trace_truncated"] = t.truncated;
    p["trace_file"] = t.file;
    // Defaults; the I/O and GPU analyses fill in their own figures.
    Json io = Json::MakeObject();
    io["opens"] = 0;
    io["reads"] = 0;
    io["bytes_read"] = 0;
    p["io"] = std::move(io);
    p["peak_rss_bytes"] = f.peak_rss;
    Json gpu = Json::MakeObject();
    for (const char* k : {"allocations", "frees", "failed_allocations", "peak_bytes", "leaked_bytes"}) {
      gpu[k] = 0;
    }
    p["gpu"] = std::move(gpu);
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

  static void AddEndFindings(ReportBuilder& report, const ProcessTrace& t, const ProcessFacts& f,
                             const Json& p, const std::vector<ProcessTrace>& all) {
    const std::string who = "pid " + std::to_string(t.pid()) + " (" + CommandLine(p.Find("argv") ? *p.Find("argv") : Json::MakeArray()) + ")";
    if (f.end_kind == EndKind::kKilled) {
      Finding fd;
      fd.id = "proc.killed";
      fd.severity = Severity::kError;
      fd.pid = t.pid();
      Json& ev = fd.evidence;
      const auto& samples = t.records.Sample;
      const uint64_t last_rss = samples.empty() ? 0 : samples.back().rss_bytes;
      ev["last_rss_bytes"] = last_rss;
      ev["peak_rss_bytes"] = f.peak_rss;
      ev["cgroup_memory_max"] = f.cgroup_max == UINT64_MAX ? Json("max") : Json(f.cgroup_max);
      const uint64_t cur = samples.empty() ? UINT64_MAX : samples.back().cgroup_current;
      ev["cgroup_memory_current"] = cur == UINT64_MAX ? Json() : Json(cur);
      // The killed process cannot see its own OOM kill; the processes that outlive it
      // (its parent, siblings) sample the same cgroup afterwards.
      const uint64_t before = samples.empty() ? UINT64_MAX : samples.front().oom_kill;
      uint64_t after = samples.empty() ? UINT64_MAX : samples.back().oom_kill;
      for (const auto& other : all) {
        for (const auto& s : other.records.Sample) {
          if (s.ts >= t.end_ns() && s.oom_kill != UINT64_MAX &&
              (after == UINT64_MAX || s.oom_kill > after)) {
            after = s.oom_kill;
          }
        }
      }
      const bool known = before != UINT64_MAX && after != UINT64_MAX;
      const bool rose = known && after > before;
      ev["oom_kill_before"] = before == UINT64_MAX ? Json() : Json(before);
      ev["oom_kill_after"] = after == UINT64_MAX ? Json() : Json(after);
      ev["oom_kill_rose"] = known ? Json(rose) : Json();
      ev["last_event_after_start_ns"] = t.end_ns() - t.start_ns();
      ev["last_python_sample"] = LastPythonSampleJson(t);  // where Python last was, if known
      fd.summary = who + " was killed: its trace ends with no exit record";
      if (rose) {
        fd.summary += "; the cgroup's oom_kill count rose from " + std::to_string(before) +
                      " to " + std::to_string(after) + ", so the OOM killer took it";
        fd.advice =
            "The kernel's OOM killer ended it. Lower host memory use: fewer DataLoader "
            "workers, a smaller batch or prefetch_factor, pin_memory=False, or load the "
            "dataset lazily; `dmesg` names the victim and its RSS.";
      } else {
        fd.summary += " (SIGKILL, the OOM killer, or the machine stopped); last RSS " +
                      FormatBytes(last_rss);
        fd.advice =
            "Something sent SIGKILL: the OOM killer (check `dmesg` and the cgroup's "
            "memory.events), a job timeout, or the notebook runtime restarting. If memory "
            "was high, reduce DataLoader workers or batch size.";
      }
      report.AddFinding(std::move(fd));
    }
    // Termination requests (SIGTERM, SIGINT, ...) end the process "signaled" without a
    // finding; only crashes are proc.fatal-signal.
    static constexpr uint64_t kCrashes[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
    if (f.signal && std::find(std::begin(kCrashes), std::end(kCrashes), f.signal->signo) !=
                        std::end(kCrashes)) {
      const auto& s = *f.signal;
      Finding fd;
      fd.id = "proc.fatal-signal";
      fd.severity = Severity::kError;
      fd.pid = t.pid();
      Json& ev = fd.evidence;
      ev["signal"] = s.signo;
      ev["signal_name"] = SignalName(static_cast<int>(s.signo));
      ev["si_code"] = s.si_code;
      ev["fault_address"] = FormatHex(s.addr);
      ev["tid"] = s.tid;
      Json stack = Json::MakeArray();
      for (const std::string& frame : SymbolizeStack(t, t.Stack(s.stack))) stack.Append(frame);
      ev["stack"] = std::move(stack);
      ev["python_stack"] = PythonStackJson(t, s.py_stack);  // innermost Python frame first
      if (const auto py = PythonStackFrames(t, s.py_stack); !py.empty()) fd.summary += " at " + py.front();
      const std::string shm(t.Str(s.shm_mapping));
      ev["shm_mapping"] = shm.empty() ? Json() : Json(shm);
      fd.summary = who + " died of " + SignalName(static_cast<int>(s.signo)) +
                   " (fault address " + FormatHex(s.addr) + ")";
      if (!shm.empty() && s.signo == SIGBUS) {
        fd.summary += " inside the /dev/shm mapping " + shm;
        fd.advice =
            "A SIGBUS in a /dev/shm mapping means shared memory ran out. Enlarge /dev/shm "
            "(docker run --shm-size=8g, or a bigger tmpfs), or use fewer DataLoader workers.";
      } else if (s.signo == SIGABRT) {
        fd.advice =
            "The program aborted (an assertion, std::terminate, or a C++ exception nobody "
            "caught). The stack shows where; run under gdb for the message.";
      } else {
        fd.advice =
            "A native crash. The stack names the library that crashed; a mismatched "
            "extension or CUDA library build is a common cause (see abi.* findings).";
      }
      report.AddFinding(std::move(fd));
    }
  }
};

// host.memory-pressure and host.shm-small need every process at once.
class HostAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "host"; }

  void Run(ReportBuilder& report) override {
    const auto& traces = report.traces();
    MemoryPressure(report, traces);
    ShmSmall(report, traces);
  }

 private:
  static void MemoryPressure(ReportBuilder& report, const std::vector<ProcessTrace>& traces) {
    uint64_t cgroup_max = UINT64_MAX, mem_total = UINT64_MAX;
    struct Point {
      uint64_t ts;
      size_t proc;
      uint64_t rss;
    };
    std::vector<Point> points;
    for (size_t i = 0; i < traces.size(); ++i) {
      const ProcessFacts f = ProcessFacts::Of(traces[i]);
      cgroup_max = std::min(cgroup_max, f.cgroup_max);
      mem_total = std::min(mem_total, f.mem_total);
      for (const auto& s : traces[i].records.Sample) points.push_back({s.ts, i, s.rss_bytes});
      points.push_back({traces[i].end_ns() + 1, i, 0});  // gone after its last event
    }
    const bool use_cgroup = cgroup_max != UINT64_MAX && cgroup_max < mem_total;
    const uint64_t limit = use_cgroup ? cgroup_max : mem_total;
    if (limit == UINT64_MAX || limit == 0 || points.empty()) return;
    std::stable_sort(points.begin(), points.end(),
                     [](const Point& a, const Point& b) { return a.ts < b.ts; });
    std::vector<uint64_t> current(traces.size(), 0);
    uint64_t sum = 0, peak = 0, peak_ts = 0;
    std::vector<uint64_t> at_peak;
    for (const Point& pt : points) {
      sum = sum - current[pt.proc] + pt.rss;
      current[pt.proc] = pt.rss;
      if (sum > peak) {
        peak = sum;
        peak_ts = pt.ts;
        at_peak = current;
      }
    }
    if (static_cast<double>(peak) < 0.9 * static_cast<double>(limit)) return;
    Finding fd;
    fd.id = "host.memory-pressure";
    fd.severity = Severity::kWarning;
    Json& ev = fd.evidence;
    ev["peak_tree_rss_bytes"] = peak;
    ev["limit_bytes"] = limit;
    ev["limit_source"] = use_cgroup ? "cgroup memory.max" : "MemTotal";
    ev["percent_of_limit"] = 100.0 * static_cast<double>(peak) / static_cast<double>(limit);
    uint64_t first = UINT64_MAX;
    for (const auto& t : traces) first = std::min(first, t.start_ns());
    ev["at_ns_after_start"] = peak_ts >= first ? peak_ts - first : 0;
    Json procs = Json::MakeArray();
    for (size_t i = 0; i < traces.size(); ++i) {
      if (at_peak[i] == 0) continue;
      Json p = Json::MakeObject();
      p["pid"] = traces[i].pid();
      p["rss_bytes"] = at_peak[i];
      procs.Append(std::move(p));
    }
    ev["processes"] = std::move(procs);
    // Samples are untrusted: the ratio can exceed any int, and an out-of-range
    // double-to-int conversion is undefined.
    const double percent = 100.0 * static_cast<double>(peak) / static_cast<double>(limit);
    fd.summary = "the process tree's RSS reached " + FormatBytes(peak) + ", " +
                 std::to_string(percent < 1e15 ? static_cast<long long>(percent) : 999999999999999ll) +
                 "% of the " + (use_cgroup ? "cgroup limit " : "host's MemTotal ") +
                 FormatBytes(limit);
    fd.advice =
        "Host memory is nearly exhausted, so the OOM killer is next. Each DataLoader worker "
        "holds a copy of what the dataset object references: keep file paths, not loaded "
        "data, in the dataset; use fewer workers; avoid Python lists of objects (copy-on-"
        "access defeats fork's sharing).";
    report.AddFinding(std::move(fd));
  }

  static void ShmSmall(ReportBuilder& report, const std::vector<ProcessTrace>& traces) {
    uint64_t shm_size = UINT64_MAX;
    std::set<uint32_t> shm_users;
    std::vector<std::string> failures;
    for (const auto& t : traces) {
      const ProcessFacts f = ProcessFacts::Of(t);
      shm_size = std::min(shm_size, f.shm_size);
      bool uses = false;
      for (const auto& o : t.records.IoOpen) {
        if (t.Str(o.path).starts_with("/dev/shm/")) uses = true;
      }
      if (uses) shm_users.insert(t.pid());
      for (const auto& s : t.records.Signal) {
        if (s.signo == SIGBUS && !t.Str(s.shm_mapping).empty()) {
          failures.push_back("pid " + std::to_string(t.pid()) + ": SIGBUS in " +
                             std::string(t.Str(s.shm_mapping)));
        }
      }
      if (uses) {
        for (const auto& w : t.records.IoWrite) {
          if (w.result == -ENOSPC) {
            failures.push_back("pid " + std::to_string(t.pid()) + ": a write failed with ENOSPC");
            break;
          }
        }
      }
    }
    if (shm_size == UINT64_MAX) return;
    constexpr uint64_t kSmall = 256ull << 20;
    const bool small_for_workers = shm_size < kSmall && shm_users.size() >= 2;
    if (failures.empty() && !small_for_workers) return;
    Finding fd;
    fd.id = "host.shm-small";
    fd.severity = Severity::kWarning;
    fd.evidence["shm_size_bytes"] = shm_size;
    fd.evidence["processes_using_shm"] = static_cast<uint64_t>(shm_users.size());
    Json fails = Json::MakeArray();
    for (const auto& s : failures) fails.Append(s);
    fd.evidence["failures"] = std::move(fails);
    fd.summary = "/dev/shm is " + FormatBytes(shm_size) + " and " +
                 std::to_string(shm_users.size()) + " processes use it" +
                 (failures.empty() ? "" : "; shared-memory writes failed");
    fd.advice =
        "DataLoader workers pass batches through /dev/shm. Enlarge it (docker run "
        "--shm-size=8g, or remount the tmpfs larger) or set num_workers=0.";
    report.AddFinding(std::move(fd));
  }
};

}  // namespace

std::unique_ptr<Analysis> MakeProcessAnalysis() { return std::make_unique<ProcessAnalysis>(); }
std::unique_ptr<Analysis> MakeHostAnalysis() { return std::make_unique<HostAnalysis>(); }

}  // namespace colabtrace::analyzer
