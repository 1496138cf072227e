// The process table and how each process ended (proc.killed, proc.fatal-signal), plus
// the whole-run host findings (host.memory-pressure, host.shm-small).
//
// How a process ended comes, in this order, from its reaper's wait status (a traced
// parent's wait* call, or `colabtrace run`), its own signal record, its own exit record;
// with none of them it was killed. `colabtrace run`'s own trace (IsRunWrapper) adds
// outside samples (RSS, PSS, USS, cgroup) and is reported under "run", not processes[].
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>

#include <unistd.h>

#include "abi/library_model.h"
#include "analyses/factories.h"
#include "analyses/proc_stat.h"
#include "analyses/process_facts.h"
#include "analyses/symbolize.h"
#include "python/python_stack.h"
#include "report/report.h"
#include "tools/run_metrics.h"

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

// Why a SIGBUS in a /dev/shm mapping happened, from the facts the shim read in its
// handler. tmpfs raises it for a store past the file's end (the page holding the end is
// still the file's) and when it has no page left to give.
enum class ShmBusCause { kUnknown, kPastEnd, kFull };

ShmBusCause ShmBusCauseOf(const format::Signal& s) {
  constexpr uint64_t kPage = 4096;  // tmpfs pages on x86-64
  if ((s.shm_known & format::kShmOffsetAndSize) != 0 &&
      s.shm_offset >= (s.shm_file_size + kPage - 1) / kPage * kPage) {
    return ShmBusCause::kPastEnd;
  }
  if ((s.shm_known & format::kShmFree) != 0 && s.shm_free < kPage) return ShmBusCause::kFull;
  return ShmBusCause::kUnknown;
}

// A runtime's crash handler (libgfortran's backtrace, Rust's stack-overflow report, the
// JVM's hs_err file) takes the fault, reports it, then raises the signal again or
// aborts: the process dies of a signal it sent itself. Where it was interrupted names
// the fault: the frame after the signal trampoline in the death's stack (raised inside
// the handler), or its innermost frame (raised, blocked, and delivered as the handler
// returned to the faulting instruction). A fault record on that thread whose stack
// starts there is the fault, when every handled signal is in the trace (fewer than the
// shim's budget); otherwise only the interrupted frame is known.
struct HandledFault {
  const format::Signal* fault = nullptr;  // the record of the fault, when known
  std::string interrupted;                // the frame a signal handler interrupted
};

HandledFault HandledFaultOf(const ProcessTrace& t, const format::Signal& end) {
  HandledFault out;
  const std::vector<uint64_t>& frames = t.Stack(end.stack);
  if (frames.empty()) return out;
  const std::vector<std::string> names = SymbolizeFrames(t, frames);
  uint64_t pc = frames[0];
  for (size_t i = 0; i + 1 < names.size(); ++i) {
    if (names[i].starts_with(kSignalFrame)) {
      pc = frames[i + 1];
      out.interrupted = names[i + 1];
      break;
    }
  }
  size_t handled = 0;
  for (const auto& s : t.records.Signal) {
    if (&s == &end || s.ts > end.ts) continue;
    ++handled;
    const bool is_fault = s.si_code > 0 && (s.signo == SIGSEGV || s.signo == SIGBUS || s.signo == SIGILL ||
                                            s.signo == SIGFPE);
    const std::vector<uint64_t>& at = t.Stack(s.stack);
    if (s.tid == end.tid && is_fault && !at.empty() && at[0] == pc &&
        (out.fault == nullptr || s.ts >= out.fault->ts)) {
      out.fault = &s;
    }
  }
  if (handled >= format::kMaxRecordedHandledSignals) out.fault = nullptr;
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
    s += EscapeForTerminal(a.str());  // argv is untrusted: no raw newlines or escapes
  }
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
}

// The traced process that sent pid (on host) the SIGKILL that ended it: the last
// successful kill() aimed at pid after since_ns and no later than until_ns; or pid's own
// SIGKILL to a group it is in (target 0 or -1: coreutils timeout ends so).
struct KillSender {
  const ProcessTrace* trace = nullptr;
  const Event<format::KillSent>* kill = nullptr;
};
KillSender KillSenderOf(const std::vector<ProcessTrace>& all, const LifecycleModel& model, const std::string& host,
                        uint32_t pid, uint64_t since_ns, uint64_t until_ns) {
  KillSender best;
  for (const ProcessTrace& o : all) {
    if (o.records.KillSent.empty() || model.HostOf(o) != host) continue;
    const auto& kills = o.records.KillSent;
    for (const auto& k : kills) {
      const bool aimed = k.target == static_cast<int64_t>(pid) || (o.pid() == pid && k.target <= 0);
      if (!aimed || k.signo != SIGKILL || k.result != 0) continue;
      // A record written before the call is void if a failure with its ts follows.
      if (std::any_of(kills.begin(), kills.end(), [&](const auto& f) { return f.ts == k.ts && f.result < 0; })) {
        continue;
      }
      if (k.ts < since_ns || k.ts > until_ns) continue;
      if (best.kill == nullptr || k.ts > best.kill->ts) best = {&o, &k};
    }
  }
  return best;
}

// Past this many processes the text table groups them by role (command and how they
// started), with counts; JSON always lists each one.
constexpr size_t kProcessRowsBeforeGrouping = 40;

std::string EndCell(const Json& end) {
  if (!end["code"].is_null()) return std::to_string(end["code"].as_int());
  if (!end["signal"].is_null()) return SignalName(static_cast<int>(end["signal"].as_int()));
  return "-";
}

// "exited 0" / "signaled SIGPIPE" / "killed SIGKILL" / "killed".
std::string EndSummary(const Json& end) {
  std::string s = end["kind"].is_string() ? end["kind"].str() : "unknown";
  const std::string cell = EndCell(end);
  if (cell != "-") s += " " + cell;
  return s;
}

// The text table: one row per process, or one per role past kProcessRowsBeforeGrouping.
std::string ProcessTable(const std::vector<const Json*>& procs) {
  std::string table;
  char line[512];
  if (procs.size() <= kProcessRowsBeforeGrouping) {
    std::snprintf(line, sizeof(line), "%-8s %-8s %-10s %-8s %-10s %s\n", "pid", "ppid", "end",
                  "code", "peak RSS", "command");
    table += line;
    for (const Json* p : procs) {
      const Json& end = (*p)["end"];
      const Json* traced = p->Find("traced");  // false: a child the shim could not follow
      const bool untraced = traced != nullptr && !traced->boolean();
      std::snprintf(line, sizeof(line), "%-8lld %-8lld %-10s %-8s %-10s %s%s\n",
                    static_cast<long long>((*p)["pid"].as_int()),
                    static_cast<long long>((*p)["ppid"].as_int()), end["kind"].str().c_str(),
                    EndCell(end).c_str(),
                    untraced ? "-" : FormatBytes(static_cast<uint64_t>((*p)["peak_rss_bytes"].as_int())).c_str(),
                    CommandLine((*p)["argv"]).c_str(), untraced ? "  (not traced)" : "");
      table += line;
    }
    return table;
  }
  struct Group {
    size_t count = 0;
    uint64_t peak_rss = 0;
    std::map<std::string, size_t> ends;  // EndSummary -> count
    std::vector<int64_t> pids;
    std::string example;                 // the first member's command line
  };
  std::map<std::string, Group> groups;
  for (const Json* p : procs) {
    Group& g = groups[ProcessRole(*p)];
    if (g.count++ == 0) g.example = CommandLine((*p)["argv"]);
    g.peak_rss = std::max(g.peak_rss, static_cast<uint64_t>((*p)["peak_rss_bytes"].as_int()));
    ++g.ends[EndSummary((*p)["end"])];
    g.pids.push_back((*p)["pid"].as_int());
  }
  // Largest groups first; ties by role.
  std::vector<std::pair<std::string, const Group*>> order;
  for (const auto& [role, g] : groups) order.emplace_back(role, &g);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->count > b.second->count; });
  table += std::to_string(procs.size()) + " processes in " + std::to_string(groups.size()) +
           " groups (by command and role; `report --format json` lists each process)\n";
  std::snprintf(line, sizeof(line), "%-6s %-10s %-32s %-22s %s\n", "count", "peak RSS", "role",
                "ends", "pids");
  table += line;
  for (const auto& [role, g] : order) {
    std::string ends;
    for (const auto& [e, n] : g->ends) {
      if (!ends.empty()) ends += ", ";
      ends += std::to_string(n) + " " + e;
    }
    std::string pids;
    for (size_t k = 0; k < g->pids.size() && k < 3; ++k) {
      pids += (k ? " " : "") + std::to_string(g->pids[k]);
    }
    if (g->pids.size() > 3) pids += " ...";
    std::snprintf(line, sizeof(line), "%-6zu %-10s %-32s %-22s %s\n", g->count,
                  FormatBytes(g->peak_rss).c_str(), EscapeForTerminal(role).substr(0, 64).c_str(), ends.c_str(),
                  pids.c_str());
    table += line;
  }
  return table;
}

// The latest oom_kill reading a process could not take itself: from the samples of the
// processes that outlived it on its host, and from `colabtrace run`'s cgroup readings.
struct OomEvidence {
  uint64_t before = UINT64_MAX, after = UINT64_MAX;
  std::string source;  // who saw the later reading
};

OomEvidence OomKillAround(const ProcessTrace& t, const std::vector<ProcessTrace>& all,
                          const LifecycleModel& model, const std::string& host) {
  OomEvidence e;
  // Before: the earliest reading at or after its start, its own or anyone's on the host.
  auto note_before = [&](uint64_t ts, uint64_t v) {
    if (v == UINT64_MAX || ts < t.start_ns() || ts > t.end_ns()) return;
    if (e.before == UINT64_MAX || v < e.before) e.before = v;
  };
  auto note_after = [&](uint64_t ts, uint64_t v, const std::string& who) {
    if (v == UINT64_MAX || ts < t.end_ns()) return;
    if (e.after == UINT64_MAX || v > e.after) {
      e.after = v;
      e.source = who;
    }
  };
  for (const auto& s : t.records.Sample) {
    note_before(s.ts, s.oom_kill);
    note_after(s.ts, s.oom_kill, "its own last sample");
  }
  for (const auto& other : all) {
    if (&other == &t || model.HostOf(other) != host) continue;
    for (const auto& s : other.records.Sample) {
      note_before(s.ts, s.oom_kill);
      note_after(s.ts, s.oom_kill, "the samples of pid " + std::to_string(other.pid()) +
                                       ", which outlived it");
    }
  }
  for (const CgroupReading& c : model.CgroupReadings(host)) {
    note_before(c.ts, c.oom_kill);
    note_after(c.ts, c.oom_kill,
               "colabtrace run's cgroup samples (pid " + std::to_string(c.wrapper_pid) + ")");
  }
  return e;
}

class ProcessAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "process"; }

  void Run(ReportBuilder& report) override {
    const auto& traces = report.traces();
    auto shared_model = std::make_shared<const LifecycleModel>(traces);
    const LifecycleModel& model = *shared_model;
    std::vector<size_t> jobs;
    for (size_t i = 0; i < traces.size(); ++i) {
      const ProcessTrace& t = traces[i];
      const ProcessFacts f = ProcessFacts::Of(t, &model);
      Json& p = report.process(i);
      FillProcess(t, f, p);
      if (t.truncated) {
        report.AddWarning(t.file + ": tracing stopped early (" + std::string(std::strerror(
                              static_cast<int>(t.header.truncation_errno))) +
                          "); events after that point are missing");
      }
      if (f.run_wrapper) continue;
      jobs.push_back(i);
      AddEndFindings(report, t, f, p, traces, model);
    }
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
    std::vector<const Json*> procs;
    for (size_t i : jobs) procs.push_back(&report.process(i));
    for (const Json* p : report.UntracedProcesses()) procs.push_back(p);
    report.AddText("Processes", ProcessTable(procs));
    if (report.options().keep_models) report.models().lifecycle = std::move(shared_model);
  }

 private:
  // The end object of a process: kind, code, signal (and its name), reaped_by.
  static Json EndObject(EndKind kind, std::optional<int64_t> code, std::optional<int64_t> signal,
                        const std::optional<Reap>& reap) {
    Json end = Json::MakeObject();
    end["kind"] = std::string(EndKindName(kind));
    end["code"] = code ? Json(*code) : Json();
    end["signal"] = signal ? Json(*signal) : Json();
    if (signal) end["signal_name"] = SignalName(static_cast<int>(*signal));
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
  // did), its parent's machine.
  static Json UntracedChildRow(const ProcessTrace& parent, const Json& parent_row,
                               const Event<format::ExecUntraced>& u, const Reap* reap) {
    const std::string exe(parent.Str(u.exe));
    Json p = Json::MakeObject();
    p["pid"] = u.child_pid;
    p["ppid"] = parent.pid();
    p["exe"] = exe;
    Json argv = Json::MakeArray();
    for (std::string_view a : UntracedArgv(parent, u)) argv.Append(std::string(a));
    p["argv"] = std::move(argv);
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
    end["exec_untraced"] = exe;
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

  // Whether the process that wrote t is alive on this machine now: the same boot, its pid
  // present and not a zombie, and started no later than its trace (a reused pid started
  // after the traced process ended). A report made while a run crawls reads such a trace,
  // which has no exit record yet.
  static bool StillRunningHere(const ProcessTrace& t) {
    if (!abi::HostOriginOf(t).same_host) return false;
    const std::optional<ProcStat> st = ReadProcStat(static_cast<pid_t>(t.pid()));
    const long hz = sysconf(_SC_CLK_TCK);
    if (!st || st->ended() || hz <= 0) return false;
    // starttime is in clock ticks since boot; allow one tick and a little for rounding.
    const uint64_t tick_ns = 1000000000ull / static_cast<uint64_t>(hz);
    return st->start_ticks * tick_ns <= t.start_ns() + 2 * tick_ns;
  }

  static void AddEndFindings(ReportBuilder& report, const ProcessTrace& t, const ProcessFacts& f,
                             const Json& p, const std::vector<ProcessTrace>& all,
                             const LifecycleModel& model) {
    const std::string who = "pid " + std::to_string(t.pid()) + " (" + CommandLine(p.Find("argv") ? *p.Find("argv") : Json::MakeArray()) + ")";
    const std::string host = model.HostOf(t);
    if (f.end_kind == EndKind::kKilled) {
      Finding fd;
      fd.id = "proc.killed";
      fd.severity = Severity::kError;
      fd.pid = t.pid();
      Json& ev = fd.evidence;
      // The last RSS: its own last sample, or colabtrace run's later one.
      const auto& samples = t.records.Sample;
      uint64_t last_rss = 0, last_rss_ts = 0;
      bool rss_known = !samples.empty();  // no sample at all (killed as its shim started): unknown
      if (!samples.empty()) last_rss = samples.back().rss_bytes, last_rss_ts = samples.back().ts;
      for (const OutsideSample* s : model.SamplesOf(t)) {
        // RSS 0: read while the kernel was tearing the process down.
        if (s->rss != UINT64_MAX && s->rss != 0 && s->ts >= last_rss_ts) {
          last_rss = s->rss, last_rss_ts = s->ts, rss_known = true;
        }
      }
      const std::string last_rss_text = rss_known ? FormatBytes(last_rss) : "unknown (no sample was taken)";
      ev["last_rss_bytes"] = rss_known ? Json(last_rss) : Json();
      ev["peak_rss_bytes"] = f.peak_rss;
      // The cgroup: colabtrace run's last reading before the end, else the process's own.
      uint64_t cg_max = f.cgroup_max;
      uint64_t cur = samples.empty() ? UINT64_MAX : samples.back().cgroup_current;
      uint64_t cur_ts = samples.empty() ? 0 : samples.back().ts;
      const uint64_t end_ts = f.reap ? f.reap->ts : t.end_ns();
      for (const CgroupReading& c : model.CgroupReadings(host)) {
        if (c.ts > end_ts || c.ts < cur_ts) continue;
        if (c.current != UINT64_MAX) cur = c.current, cur_ts = c.ts;
        if (c.max != UINT64_MAX) cg_max = c.max;
      }
      ev["cgroup_memory_max"] = cg_max == UINT64_MAX ? Json("max") : Json(cg_max);
      ev["cgroup_memory_current"] = cur == UINT64_MAX ? Json() : Json(cur);
      // The killed process cannot see its own OOM kill; the processes that outlive it
      // (its parent, siblings) and colabtrace run read the same cgroup afterwards.
      const OomEvidence oom = OomKillAround(t, all, model, host);
      const bool known = oom.before != UINT64_MAX && oom.after != UINT64_MAX;
      const bool rose = known && oom.after > oom.before;
      ev["oom_kill_before"] = oom.before == UINT64_MAX ? Json() : Json(oom.before);
      ev["oom_kill_after"] = oom.after == UINT64_MAX ? Json() : Json(oom.after);
      ev["oom_kill_rose"] = known ? Json(rose) : Json();
      ev["oom_kill_seen_by"] = oom.source.empty() ? Json() : Json(oom.source);
      ev["last_event_after_start_ns"] = t.end_ns() - t.start_ns();
      ev["last_python_sample"] = LastPythonSampleJson(t);  // where Python last was, if known
      ev["signal"] = f.end_signal ? Json(*f.end_signal) : Json();
      ev["reaped_by"] = f.reap ? Json(static_cast<int64_t>(f.reap->reaper_pid)) : Json();
      const bool running = !f.reap && StillRunningHere(t);
      ev["still_running"] = running;
      if (running) {
        // No exit record yet because it has not exited: the report was made while it ran
        // (a run that crawls). The catalogue's id stays (no end record), the cause is named.
        fd.summary = who + " has no exit record because it is still running (this report was made "
                     "while it ran); last RSS " + last_rss_text;
        fd.advice =
            "Report again once it has ended. While it runs, its trace so far shows where it is: "
            "the last records, the last Python sample (last_python_sample), and with `colabtrace "
            "run` the memory samples.";
        report.AddFinding(std::move(fd));
        return;  // not killed, and not signaled either
      }
      if (f.reap) {
        fd.summary = who + " was killed by SIGKILL (its wait status, reaped by " +
                     (f.reap->by_run ? "colabtrace run" : "its parent") + ", pid " +
                     std::to_string(f.reap->reaper_pid) + ")";
      } else {
        fd.summary = who + " was killed: its trace ends with no exit record";
      }
      // A traced process of the job that sent the SIGKILL itself (a subprocess timeout,
      // multiprocessing's Process.kill()) names the cause; the OOM killer sends none.
      const KillSender sender = KillSenderOf(all, model, host, t.pid(), t.start_ns(), f.reap ? f.reap->ts : UINT64_MAX);
      if (sender.kill != nullptr) {
        const ProcessFacts sf = ProcessFacts::Of(*sender.trace);
        std::string cmd;
        for (std::string_view a : sf.JobArgv(*sender.trace)) cmd += (cmd.empty() ? "" : " ") + std::string(a);
        Json s = Json::MakeObject();
        s["pid"] = sender.trace->pid();
        s["command"] = cmd;
        s["api"] = sender.kill->api == static_cast<uint64_t>(format::KillApi::kKillpg) ? "killpg" : "kill";
        s["at_ns_after_start"] = sender.kill->ts - t.start_ns();
        ev["sender"] = std::move(s);
        fd.summary += sender.trace == &t ? std::string("; it sent SIGKILL to a process group it is in itself")
                                         : "; pid " + std::to_string(sender.trace->pid()) + " (" +
                                               EscapeForTerminal(cmd.size() > 80 ? cmd.substr(0, 77) + "..." : cmd) +
                                               ") sent it with kill()";
        fd.advice =
            "A process of this job killed it on purpose (a subprocess timeout, Process.kill(), "
            "a pool or launcher shutting its workers down). If that was not expected, look at "
            "why the sender gave up on it: a timeout too short, or a worker that hung.";
        report.AddFinding(std::move(fd));
        return;
      }
      if (rose) {
        fd.summary += "; the cgroup's oom_kill count rose from " + std::to_string(oom.before) +
                      " to " + std::to_string(oom.after) + " (seen in " + oom.source +
                      "), so the OOM killer took it";
        fd.advice =
            "The kernel's OOM killer ended it. Lower host memory use: fewer DataLoader "
            "workers, a smaller batch or prefetch_factor, pin_memory=False, or load the "
            "dataset lazily; `dmesg` names the victim and its RSS.";
      } else {
        fd.summary += f.reap ? "; last RSS " + last_rss_text
                             : " (SIGKILL, the OOM killer, or the machine stopped); last RSS " + last_rss_text;
        fd.advice =
            f.reap && !f.reap->by_run
                ? "Its parent reaped it after a SIGKILL: usually the parent (or a timeout "
                  "it runs) killed it on purpose; otherwise check `dmesg` and the cgroup's "
                  "memory.events for the OOM killer."
                : "Something sent SIGKILL: the OOM killer (check `dmesg` and the cgroup's "
                  "memory.events), a job timeout, or the notebook runtime restarting. If "
                  "memory was high, reduce DataLoader workers or batch size.";
      }
      report.AddFinding(std::move(fd));
    }
    // Termination requests (SIGTERM, SIGINT, SIGPIPE, ...) end the process "signaled"
    // without a finding; only crashes are proc.fatal-signal.
    static constexpr int64_t kCrashes[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
    if (f.end_kind != EndKind::kSignaled || !f.end_signal ||
        std::find(std::begin(kCrashes), std::end(kCrashes), *f.end_signal) == std::end(kCrashes)) {
      return;
    }
    const int signo = static_cast<int>(*f.end_signal);
    Finding fd;
    fd.id = "proc.fatal-signal";
    fd.severity = Severity::kError;
    fd.pid = t.pid();
    Json& ev = fd.evidence;
    ev["signal"] = signo;
    ev["signal_name"] = SignalName(signo);
    ev["reaped_by"] = f.reap ? Json(static_cast<int64_t>(f.reap->reaper_pid)) : Json();
    std::string shm;
    const format::Signal* handled_fault = nullptr;
    fd.summary = who + " died of " + SignalName(signo);
    if (const auto* s = f.signal) {
      ev["si_code"] = s->si_code;
      ev["tid"] = s->tid;
      if (s->si_code > 0) {
        // The kernel raised it for a fault: si_addr is the faulting address.
        ev["fault_address"] = FormatHex(s->addr);
        fd.summary += " (fault address " + FormatHex(s->addr) + ")";
      } else {
        // Sent by kill/raise/tgkill/sigqueue: the siginfo holds si_pid (low 32 bits of
        // the si_addr slot) and si_uid (high 32), not an address.
        const uint64_t sender = s->addr & 0xffffffffu;
        ev["sender_pid"] = sender;
        ev["sender_uid"] = s->addr >> 32;
        fd.summary += sender == t.pid() ? " that it sent itself (raise, abort or kill)"
                                        : " sent by pid " + std::to_string(sender);
        const HandledFault hf = sender == t.pid() ? HandledFaultOf(t, *s) : HandledFault{};
        if (const format::Signal* h = hf.fault) {
          Json hj = Json::MakeObject();
          hj["signal"] = static_cast<int64_t>(h->signo);
          hj["signal_name"] = SignalName(static_cast<int>(h->signo));
          hj["fault_address"] = FormatHex(h->addr);
          hj["before_end_ns"] = s->ts - h->ts;
          Json hs = Json::MakeArray();
          for (const std::string& frame : SymbolizeStack(t, t.Stack(h->stack))) hs.Append(frame);
          hj["stack"] = std::move(hs);
          ev["handled_fault"] = std::move(hj);
          handled_fault = h;
          fd.summary += ", " + FormatDurationNs(s->ts - h->ts) + " after its own handler took a " +
                        SignalName(static_cast<int>(h->signo)) + " (fault address " + FormatHex(h->addr) +
                        ") on that thread";
        } else if (!hf.interrupted.empty()) {
          ev["interrupted_frame"] = hf.interrupted;
          fd.summary += ", from inside a signal handler that interrupted " + hf.interrupted;
        }
      }
      Json stack = Json::MakeArray();
      for (const std::string& frame : SymbolizeStack(t, t.Stack(s->stack))) stack.Append(frame);
      ev["stack"] = std::move(stack);
      ev["python_stack"] = PythonStackJson(t, s->py_stack);  // innermost Python frame first
      if (const auto py = PythonStackFrames(t, s->py_stack); !py.empty()) fd.summary += " at " + py.front();
      shm = std::string(t.Str(s->shm_mapping));
    } else {
      ev["stack"] = Json::MakeArray();
      fd.summary += " (from its wait status; its own trace has no signal record)";
    }
    ev["shm_mapping"] = shm.empty() ? Json() : Json(shm);
    if (!shm.empty() && signo == SIGBUS) {
      const format::Signal& s = *f.signal;  // shm comes from its record
      const ShmBusCause cause = ShmBusCauseOf(s);
      if (s.shm_known & format::kShmOffsetAndSize) {
        ev["shm_offset"] = s.shm_offset;
        ev["shm_file_size"] = s.shm_file_size;
      }
      if (s.shm_known & format::kShmFree) ev["shm_free_bytes"] = s.shm_free;
      fd.summary += " inside the /dev/shm mapping " + shm;
      if (cause == ShmBusCause::kPastEnd) {
        ev["shm_cause"] = "past-end-of-file";
        fd.summary += ", past the end of the file (offset " + std::to_string(s.shm_offset) + ", file size " +
                      std::to_string(s.shm_file_size) + ")";
        fd.advice =
            "The process touched its /dev/shm mapping beyond the file's end: the file was "
            "truncated (or replaced) while mapped, or mapped larger than it was sized with "
            "ftruncate. Shared memory did not run out; look for the process that resized or "
            "removed the file, or the size passed to mmap.";
      } else {
        ev["shm_cause"] = cause == ShmBusCause::kFull ? "shm-full" : "unknown";
        if (cause == ShmBusCause::kFull) fd.summary += " with /dev/shm full";
        fd.advice =
            "A SIGBUS in a /dev/shm mapping means shared memory ran out. Enlarge /dev/shm "
            "(docker run --shm-size=8g, or a bigger tmpfs), or use fewer DataLoader workers.";
      }
    } else if (handled_fault != nullptr) {
      fd.advice =
          "The program's own crash handler took the fault (handled_fault) and then ended the "
          "process: a runtime's crash report (the JVM writes hs_err_pid<pid>.log, Rust prints "
          "'has overflowed its stack', gfortran a backtrace on stderr). handled_fault.stack "
          "shows where the fault happened.";
    } else if (signo == SIGABRT) {
      fd.advice =
          "The program aborted (an assertion, std::terminate, or a C++ exception nobody "
          "caught). The stack shows where; run under gdb for the message.";
    } else if (f.signal && f.signal->si_code <= 0) {
      fd.advice =
          "The signal was sent, not caused by a fault: find the sender (sender_pid) and why "
          "it sent it (a test of crash handling, a watchdog, a supervisor).";
    } else {
      fd.advice =
          "A native crash. The stack names the library that crashed; a mismatched "
          "extension or CUDA library build is a common cause (see abi.* findings).";
    }
    report.AddFinding(std::move(fd));
  }
};

// host.memory-pressure and host.shm-small need every process of a host at once. Hosts
// (hostname + boot_id) are never merged: a directory may hold traces of several machines.
class HostAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "host"; }

  void Run(ReportBuilder& report) override {
    const auto& traces = report.traces();
    const LifecycleModel model(traces);
    std::map<std::string, std::vector<const ProcessTrace*>> by_host;
    for (const auto& t : traces) by_host[HostKey(t)].push_back(&t);
    Json hosts = Json::MakeArray();
    for (const auto& [host, members] : by_host) {
      Json mem = MemoryPressure(report, host, members, model, by_host.size() > 1);
      if (!mem.is_null()) hosts.Append(std::move(mem));
      ShmSmall(report, host, members, by_host.size() > 1);
    }
    // The tree's peak memory per host, whether or not it raised a finding.
    Json memory = Json::MakeObject();
    memory["hosts"] = std::move(hosts);
    report.root()["memory"] = std::move(memory);
  }

 private:
  // A worker's private memory (USS) "keeps growing" when it rose by at least this much
  // and in most of its samples.
  static constexpr uint64_t kGrowthBytes = 64ull << 20;
  static constexpr double kRisingShare = 0.7;
  static constexpr size_t kMinSamples = 5;

  static std::string HostName(const std::string& key) { return key.substr(0, key.find('/')); }

  // Workers (processes whose parent is sampled too) whose USS keeps growing.
  // *names gets "pid (+growth), ..." for the summary.
  static Json GrowingWorkers(const std::map<uint32_t, std::vector<OutsideSample>>& samples,
                             std::string* names) {
    Json out = Json::MakeArray();
    for (const auto& [pid, v] : samples) {
      if (v.size() < kMinSamples || !samples.contains(v.back().ppid)) continue;
      std::vector<const OutsideSample*> known;
      for (const auto& s : v) {
        if (s.uss != UINT64_MAX) known.push_back(&s);
      }
      if (known.size() < kMinSamples) continue;
      const uint64_t first = known.front()->uss, last = known.back()->uss;
      if (last < first + kGrowthBytes) continue;
      size_t rising = 0;
      for (size_t k = 1; k < known.size(); ++k) rising += known[k]->uss >= known[k - 1]->uss;
      if (static_cast<double>(rising) < kRisingShare * static_cast<double>(known.size() - 1)) continue;
      const uint64_t span = known.back()->ts - known.front()->ts;
      Json w = Json::MakeObject();
      w["pid"] = pid;
      w["ppid"] = v.back().ppid;
      w["uss_first_bytes"] = first;
      w["uss_last_bytes"] = last;
      w["growth_bytes"] = last - first;
      *names += (names->empty() ? "" : ", ") + std::to_string(pid) + " (+" + FormatBytes(last - first) + ")";
      w["growth_bytes_per_s"] =
          span == 0 ? 0.0 : static_cast<double>(last - first) * 1e9 / static_cast<double>(span);
      out.Append(std::move(w));
    }
    return out;
  }

  // Returns the host's memory summary (null without a known limit); adds the finding.
  static Json MemoryPressure(ReportBuilder& report, const std::string& host,
                             const std::vector<const ProcessTrace*>& members,
                             const LifecycleModel& model, bool multi_host) {
    uint64_t cgroup_max = UINT64_MAX, mem_total = UINT64_MAX;
    for (const ProcessTrace* t : members) {
      const ProcessFacts f = ProcessFacts::Of(*t);
      cgroup_max = std::min(cgroup_max, f.cgroup_max);
      mem_total = std::min(mem_total, f.mem_total);
    }
    const auto& cgroups = model.CgroupReadings(host);
    for (const CgroupReading& c : cgroups) cgroup_max = std::min(cgroup_max, c.max);
    const bool use_cgroup = cgroup_max != UINT64_MAX && cgroup_max < mem_total;
    const uint64_t limit = use_cgroup ? cgroup_max : mem_total;
    if (limit == UINT64_MAX || limit == 0) return Json();

    // 1. The tree's PSS, per round of colabtrace run's samples: shared pages counted once.
    struct Round {
      uint64_t pss = 0;
      std::vector<std::pair<uint32_t, const OutsideSample*>> procs;
    };
    std::map<std::pair<uint32_t, uint64_t>, Round> rounds;  // (wrapper, ts)
    const auto& outside = model.OutsideSamples(host);
    for (const auto& [pid, v] : outside) {
      // RSS stands in for PSS only for a process whose PSS could never be read
      // (permissions); otherwise a sample without PSS is one taken as it exited.
      const bool pss_readable =
          std::any_of(v.begin(), v.end(), [](const OutsideSample& s) { return s.pss != UINT64_MAX; });
      for (const OutsideSample& s : v) {
        const uint64_t m = s.pss != UINT64_MAX ? s.pss : pss_readable ? UINT64_MAX : s.rss;
        if (m == UINT64_MAX) continue;
        Round& r = rounds[{s.wrapper, s.ts}];
        r.pss += m;
        r.procs.emplace_back(pid, &s);
      }
    }
    uint64_t peak = 0, peak_ts = 0;
    const Round* peak_round = nullptr;
    for (const auto& [key, r] : rounds) {
      if (r.pss > peak) peak = r.pss, peak_ts = key.second, peak_round = &r;
    }
    std::string basis = "pss";
    // The processes' own RSS samples summed over time (each process counted from its
    // samples until its last event): the peak, when, and each process's RSS then. With
    // fork_children false, fork children that never exec'd are left out (their RSS is
    // mostly pages shared copy-on-write with the parent; counting them is how a healthy
    // DataLoader reads as 120%); with true, the sum is an upper bound of the tree's
    // mapped memory.
    struct RssPeak {
      uint64_t bytes = 0, ts = 0;
      std::vector<uint64_t> at_peak;  // per member
    };
    auto rss_peak = [&](bool fork_children) {
      struct Point {
        uint64_t ts;
        size_t proc;
        uint64_t rss;
      };
      std::vector<Point> points;
      for (size_t i = 0; i < members.size(); ++i) {
        const ProcessTrace& t = *members[i];
        if (IsRunWrapper(t)) continue;
        if (!fork_children) {
          const ProcessFacts f = ProcessFacts::Of(t);
          const bool forked = f.start && f.start->origin == static_cast<uint64_t>(format::ProcessOrigin::kForkChild);
          if (forked && f.job == f.start) continue;
        }
        for (const auto& s : t.records.Sample) points.push_back({s.ts, i, s.rss_bytes});
        points.push_back({t.end_ns() + 1, i, 0});  // gone after its last event
      }
      std::stable_sort(points.begin(), points.end(),
                       [](const Point& a, const Point& b) { return a.ts < b.ts; });
      RssPeak r;
      std::vector<uint64_t> current(members.size(), 0);
      uint64_t sum = 0;
      for (const Point& pt : points) {
        sum = sum - current[pt.proc] + pt.rss;
        current[pt.proc] = pt.rss;
        if (sum > r.bytes) r.bytes = sum, r.ts = pt.ts, r.at_peak = current;
      }
      return r;
    };
    // 2. With a cgroup limit, the cgroup's charge is what the OOM killer compares, less
    //    the inactive page cache (a tree streaming a dataset fills its cgroup with cache
    //    the kernel drops on demand): colabtrace run reads memory.stat with every cgroup
    //    sample, the shim with its periodic samples. Where no reading has it (processes
    //    that lived less than one sampling period), memory.current is capped at the
    //    tree's summed RSS: memory.current alone counts the page cache, and the cache
    //    another job left in the cgroup, as the tree's memory.
    if (use_cgroup) {
      // The shim's samples as cgroup readings. A periodic sample's inactive_file may be a
      // real 0 (no inactive cache): its working set is memory.current then.
      std::vector<CgroupReading> shim;
      for (const ProcessTrace* t : members) {
        for (const auto& s : t->records.Sample) {
          CgroupReading c;
          c.ts = s.ts;
          c.current = s.cgroup_current;
          c.inactive_file = s.cgroup_inactive_file;
          shim.push_back(c);
        }
      }
      auto recorded = [](const CgroupReading& c) { return c.records_working_set(); };
      const bool have_working_set = std::any_of(cgroups.begin(), cgroups.end(), recorded) ||
                                    std::any_of(shim.begin(), shim.end(), recorded);
      uint64_t cur_peak = 0, cur_ts = 0;
      auto consider = [&](uint64_t v, uint64_t ts) {
        if (v != UINT64_MAX && v > cur_peak) cur_peak = v, cur_ts = ts;
      };
      for (const CgroupReading& c : cgroups) consider(c.working_set(), c.ts);
      for (const CgroupReading& c : shim) {
        // With working sets recorded, the start, fork, exec and exit samples (no memory.stat
        // reading) are left out; without any, memory.current is all there is.
        if (!have_working_set) {
          consider(c.current, c.ts);
        } else if (c.inactive_file != UINT64_MAX) {
          consider(c.working_set(), c.ts);
        }
      }
      if (cur_peak > 0) {
        peak = cur_peak, peak_ts = cur_ts, peak_round = nullptr;
        basis = have_working_set ? "cgroup working set" : "cgroup memory.current";
        if (!have_working_set && rounds.empty()) {
          const RssPeak cap = rss_peak(/*fork_children=*/true);
          if (cap.bytes < peak) {
            peak = cap.bytes, peak_ts = cap.ts;
            basis = "cgroup memory.current, capped at the processes' rss";
          }
        }
      }
    }
    // 3. Without outside samples or a cgroup: the processes' own RSS samples, fork
    //    children that never exec'd left out.
    std::vector<std::pair<uint32_t, uint64_t>> rss_at_peak;
    if (rounds.empty() && basis == "pss") {
      basis = "rss, fork children excluded";
      const RssPeak r = rss_peak(/*fork_children=*/false);
      if (r.bytes > peak) peak = r.bytes, peak_ts = r.ts;
      for (size_t i = 0; i < r.at_peak.size(); ++i) {
        if (r.at_peak[i] != 0) rss_at_peak.emplace_back(members[i]->pid(), r.at_peak[i]);
      }
    }
    const double percent = 100.0 * static_cast<double>(peak) / static_cast<double>(limit);
    Json summary = Json::MakeObject();
    summary["host"] = HostName(host);
    summary["basis"] = basis;
    summary["peak_bytes"] = peak;
    summary["limit_bytes"] = limit;
    summary["limit_source"] = use_cgroup ? "cgroup memory.max" : "MemTotal";
    summary["percent_of_limit"] = percent;
    if (peak_round != nullptr) {
      // What a sum of RSS would have said at the same moment (shared pages counted once
      // per process): the figure never to judge by.
      uint64_t rss_sum = 0;
      for (const auto& [pid, smp] : peak_round->procs) rss_sum += smp->rss == UINT64_MAX ? 0 : smp->rss;
      summary["rss_sum_at_peak_bytes"] = rss_sum;
      summary["processes_at_peak"] = static_cast<uint64_t>(peak_round->procs.size());
    }
    if (peak == 0 || percent < 90.0) return summary;
    Finding fd;
    fd.id = "host.memory-pressure";
    fd.severity = Severity::kWarning;
    fd.evidence = summary;  // the figures, then what the finding adds
    Json& ev = fd.evidence;
    uint64_t first = UINT64_MAX;
    for (const ProcessTrace* t : members) first = std::min(first, t->start_ns());
    ev["at_ns_after_start"] = peak_ts >= first ? peak_ts - first : 0;
    Json procs = Json::MakeArray();
    if (peak_round != nullptr) {
      for (const auto& [pid, s] : peak_round->procs) {
        Json p = Json::MakeObject();
        p["pid"] = pid;
        p["pss_bytes"] = s->pss == UINT64_MAX ? Json() : Json(s->pss);
        p["rss_bytes"] = s->rss == UINT64_MAX ? Json() : Json(s->rss);
        p["uss_bytes"] = s->uss == UINT64_MAX ? Json() : Json(s->uss);
        procs.Append(std::move(p));
      }
    }
    for (const auto& [pid, rss] : rss_at_peak) {
      Json p = Json::MakeObject();
      p["pid"] = pid;
      p["rss_bytes"] = rss;
      procs.Append(std::move(p));
    }
    ev["processes"] = std::move(procs);
    std::string names;
    Json growing = GrowingWorkers(outside, &names);
    // Samples are untrusted: the ratio can exceed any int, and an out-of-range
    // double-to-int conversion is undefined.
    const std::string pct =
        std::to_string(percent < 1e15 ? static_cast<long long>(percent) : 999999999999999ll);
    const std::string what = basis == "pss" ? "the process tree's memory (PSS, shared pages counted once)"
                             : basis == "cgroup memory.current" ? "the cgroup's memory.current"
                             : basis == "cgroup working set"
                                 ? "the cgroup's working set (memory.current less inactive page cache)"
                             : basis == "cgroup memory.current, capped at the processes' rss"
                                 ? "the process tree's RSS, fork children included (the cgroup's memory.current "
                                   "was higher, page cache among it)"
                                                                : "the process tree's RSS (fork children left out)";
    fd.summary = what + " reached " + FormatBytes(peak) + ", " + pct + "% of the " +
                 (use_cgroup ? "cgroup limit " : "host's MemTotal ") + FormatBytes(limit);
    if (multi_host) fd.summary += " on " + EscapeForTerminal(HostName(host));
    if (!growing.array().empty()) {
      fd.summary += "; private memory keeps growing in worker" +
                    std::string(growing.array().size() == 1 ? " " : "s ") + names;
      fd.advice =
          "A worker's private memory (USS) keeps growing: it is touching, and so copying, "
          "the parent's pages (Python objects' reference counts defeat fork's copy-on-write). "
          "Keep the dataset in numpy arrays or tensors rather than lists and dicts of Python "
          "objects, or read samples lazily from disk; fewer workers limit the damage.";
    } else {
      fd.advice =
          "Host memory is nearly exhausted, so the OOM killer is next. Use fewer DataLoader "
          "workers or a smaller batch/prefetch_factor, keep file paths rather than loaded "
          "data in the dataset, and free large arrays you no longer need.";
    }
    ev["growing_workers"] = std::move(growing);
    report.AddFinding(std::move(fd));
    return summary;
  }

  static void ShmSmall(ReportBuilder& report, const std::string& host,
                       const std::vector<const ProcessTrace*>& members, bool multi_host) {
    uint64_t shm_size = UINT64_MAX;
    std::set<uint32_t> shm_users;
    std::vector<std::string> failures;
    uint64_t shm_bytes = 0;  // written to or mapped from /dev/shm files
    for (const ProcessTrace* tp : members) {
      const ProcessTrace& t = *tp;
      const ProcessFacts f = ProcessFacts::Of(t);
      shm_size = std::min(shm_size, f.shm_size);
      // Descriptors open on /dev/shm files, by the time they were opened.
      std::map<int64_t, uint64_t> shm_fds;
      for (const auto& o : t.records.IoOpen) {
        if (t.Str(o.path).starts_with("/dev/shm/")) {
          shm_users.insert(t.pid());
          if (o.fd >= 0) shm_fds[o.fd] = o.ts;
        }
      }
      for (const auto& s : t.records.Signal) {
        if (s.signo == SIGBUS && !t.Str(s.shm_mapping).empty() &&
            ShmBusCauseOf(s) != ShmBusCause::kPastEnd) {  // a truncated file: not a size problem
          failures.push_back("pid " + std::to_string(t.pid()) + ": SIGBUS in " +
                             std::string(t.Str(s.shm_mapping)));
        }
      }
      bool failed = false;
      for (const auto& w : t.records.IoWrite) {
        auto fd = shm_fds.find(w.fd);
        if (fd == shm_fds.end() || fd->second > w.ts) continue;
        if (w.result > 0) shm_bytes += static_cast<uint64_t>(w.result);
        if (w.result == -ENOSPC && !failed) {
          failures.push_back("pid " + std::to_string(t.pid()) +
                             ": a write to /dev/shm failed with ENOSPC");
          failed = true;
        }
      }
      for (const auto& m : t.records.IoMmap) {
        auto fd = shm_fds.find(m.fd);
        if (m.result == 0 && fd != shm_fds.end() && fd->second <= m.ts) shm_bytes += m.length;
      }
    }
    if (shm_size == UINT64_MAX) return;
    // Without a failure, "too small" needs workers that put at least half its size
    // through it (written or mapped, over the run).
    constexpr uint64_t kSmall = 256ull << 20;
    const bool small_for_workers =
        shm_size < kSmall && shm_users.size() >= 2 && shm_bytes >= shm_size / 2;
    if (failures.empty() && !small_for_workers) return;
    Finding fd;
    fd.id = "host.shm-small";
    fd.severity = Severity::kWarning;
    fd.evidence["host"] = HostName(host);
    fd.evidence["shm_size_bytes"] = shm_size;
    fd.evidence["processes_using_shm"] = static_cast<uint64_t>(shm_users.size());
    fd.evidence["bytes_written_or_mapped"] = shm_bytes;
    Json fails = Json::MakeArray();
    for (const auto& s : failures) fails.Append(s);
    fd.evidence["failures"] = std::move(fails);
    fd.summary = "/dev/shm is " + FormatBytes(shm_size) + " and " +
                 std::to_string(shm_users.size()) + " process" +
                 (shm_users.size() == 1 ? " uses" : "es use") + " it" +
                 (failures.empty() ? "" : "; shared-memory writes failed");
    if (multi_host) fd.summary += " on " + EscapeForTerminal(HostName(host));
    fd.advice =
        "DataLoader workers pass batches through /dev/shm. Enlarge it (docker run "
        "--shm-size=8g, or remount the tmpfs larger) or set num_workers=0.";
    report.AddFinding(std::move(fd));
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
    std::string text;
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
      r["processes_sampled"] = static_cast<uint64_t>(pids.size());
      r["trace_file"] = t.file;
      runs.Append(std::move(r));
      text += "colabtrace run (pid " + std::to_string(t.pid()) + ") ran pid " +
              std::to_string(info.child_pid) + " and sampled " + std::to_string(pids.size()) +
              " processes every " + std::to_string(info.sample_ms) + " ms (" +
              std::to_string(t.records.ProcSample.size()) + " samples)\n";
    }
    auto& procs = report.root()["processes"].array();
    for (auto it = wrappers.rbegin(); it != wrappers.rend(); ++it) {
      if (*it < procs.size()) procs.erase(procs.begin() + static_cast<std::ptrdiff_t>(*it));
    }
    report.root()["run"] = std::move(runs);
    report.AddText("Sampled from outside", text);
  }
};

}  // namespace

std::unique_ptr<Analysis> MakeProcessAnalysis() { return std::make_unique<ProcessAnalysis>(); }
std::unique_ptr<Analysis> MakeHostAnalysis() { return std::make_unique<HostAnalysis>(); }
std::unique_ptr<Analysis> MakeRunWrapperAnalysis() { return std::make_unique<RunWrapperAnalysis>(); }

}  // namespace colabtrace::analyzer
