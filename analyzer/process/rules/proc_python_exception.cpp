// proc.python-exception (error; KeyboardInterrupt: info)
//
// Rule: a job process that ended on an uncaught Python exception, from the PyException
// records the Python start-up hook writes (python/colabtrace/_startup):
// - the main thread's (sys.excepthook), when the process then did not exit 0 (an
//   interpreter's top level calls the hook only on its way out; a REPL that printed an
//   error and went on to exit 0 ended on none);
// - else, in a process that ended unsuccessfully (a non-zero exit, a signal, a kill), the
//   last exception that ended a thread other than the main one (threading.excepthook):
//   that thread's death is what the process ended on, whether its main thread then called
//   sys.exit(1), os._exit or died of a signal. A thread that died in a process that went
//   on to exit 0 ended nothing.
// - A DataLoader worker's records (passed on: torch's worker loop caught it and sends it
//   to the main process) never make a finding of their own. When the main process's
//   exception carries torch's "Original Traceback", the worker that passed it on (a child
//   of the main process, the latest record at or before the main one's, of the same type
//   where one is) is its `worker` evidence: one finding, on the main process.
// - A torch.multiprocessing.spawn process's (spawned: torch's wrapper caught the
//   function's exception, passed its traceback to the parent and exited 1) counts as the
//   main thread's: the process ended on it. Its evidence says `spawned`.
// SystemExit is an exit and is never recorded. KeyboardInterrupt is a person's stop: info.
// The evidence is {type, message, python_stack} plus message_bytes, frames, raised_in,
// thread and worker (PythonExceptions::ToJson); processes[].exception holds the same.
#include <algorithm>

#include "model/python_stack.h"
#include "process/rules/rules.h"

namespace colabtrace::analyzer::rules {
namespace {

// torch's ExceptionWrapper.reraise message: "Caught ValueError in DataLoader worker
// process 0.\nOriginal Traceback (most recent call last):\n...".
constexpr std::string_view kTorchReraiseMark = "Original Traceback";

// The traceback split at the innermost frame of the program's own code: python_stack
// from there outward, raised_in the frames inside it. With no program frame, all of it.
void SplitAtProgramFrame(std::vector<std::string> frames, std::vector<std::string>* python_stack,
                         std::vector<std::string>* raised_in) {
  const auto first = std::find_if(frames.begin(), frames.end(),
                                  [](const std::string& f) { return IsProgramFrame(f); });
  if (first == frames.end()) {
    *python_stack = std::move(frames);
    raised_in->clear();
    return;
  }
  raised_in->assign(frames.begin(), first);
  python_stack->assign(first, frames.end());
}

bool Is(const format::PyException& r, format::PyExceptionHow how) {
  return r.how == static_cast<uint64_t>(how);
}

Json StringArray(const std::vector<std::string>& v) {
  Json a = Json::MakeArray();
  for (const std::string& s : v) a.Append(s);
  return a;
}

// The first line of a message, cut for a one-line summary.
std::string FirstLine(std::string_view message) {
  constexpr size_t kSummaryChars = 160;
  std::string_view line = message.substr(0, message.find('\n'));
  if (line.size() <= kSummaryChars) return std::string(line);
  return std::string(line.substr(0, kSummaryChars)) + "...";
}

// The worker that passed on the exception `e` of process t re-raised: its latest
// kPassedOn record at or before e's time, among t's children on t's host (the same type
// preferred).
void FindWorker(const RunModel& run, const ProcessTrace& t, PythonExceptions::Exception& e) {
  const LifecycleModel& model = run.lifecycle();
  const std::string host = model.HostOf(t);
  const ProcessTrace* best = nullptr;
  const Event<format::PyException>* best_record = nullptr;
  bool best_same_type = false;
  for (const ProcessTrace& w : run.traces()) {
    if (&w == &t || run.facts(w).run_wrapper || model.ParentPidOf(w) != static_cast<int64_t>(t.pid()) ||
        model.HostOf(w) != host || w.start_ns() < t.start_ns()) {
      continue;
    }
    for (const auto& r : w.records.PyException) {
      if (!Is(r, format::PyExceptionHow::kPassedOn) || r.ts > e.ts) continue;
      const bool same_type = w.Str(r.type) == e.type;
      if (best_record == nullptr || (same_type && !best_same_type) ||
          (same_type == best_same_type && r.ts >= best_record->ts)) {
        best = &w;
        best_record = &r;
        best_same_type = same_type;
      }
    }
  }
  if (best == nullptr) return;
  e.worker.pid = best->pid();
  e.worker.type = std::string(best->Str(best_record->type));
  e.worker.message = std::string(best->Str(best_record->message));
  SplitAtProgramFrame(PythonStackFrames(*best, best_record->py_stack), &e.worker.python_stack,
                      &e.worker.raised_in);
}

}  // namespace

Json PythonExceptions::ToJson(const Exception& e) {
  Json j = Json::MakeObject();
  j["type"] = e.type;
  j["message"] = e.message;
  j["python_stack"] = StringArray(e.python_stack);
  j["message_bytes"] = e.message_bytes;
  j["frames"] = e.frames;
  j["raised_in"] = StringArray(e.raised_in);
  j["thread"] = e.thread;
  if (e.spawned) j["spawned"] = true;
  if (e.worker.pid != 0) {
    Json w = Json::MakeObject();
    w["pid"] = e.worker.pid;
    w["type"] = e.worker.type;
    w["message"] = e.worker.message;
    w["python_stack"] = StringArray(e.worker.python_stack);
    w["raised_in"] = StringArray(e.worker.raised_in);
    j["worker"] = std::move(w);
  }
  return j;
}

PythonExceptions PythonExceptions::Build(const RunModel& run) {
  PythonExceptions out;
  for (const ProcessTrace& t : run.traces()) {
    const ProcessFacts& f = run.facts(t);
    if (f.run_wrapper || t.records.PyException.empty()) continue;
    if (f.end_kind == EndKind::kExecUntraced) continue;  // it went on as another program
    if (f.end_kind == EndKind::kExited && f.exit_code && *f.exit_code == 0) continue;
    // The last image's records only: an exec ends the interpreter that raised before it.
    uint64_t since = 0;
    if (!t.records.ProcessStart.empty()) since = t.records.ProcessStart.back().ts;
    const Event<format::PyException>* main = nullptr;
    const Event<format::PyException>* thread = nullptr;
    for (const auto& r : t.records.PyException) {
      if (r.ts < since) continue;
      if (format::EndedItsProcess(r.how)) main = &r;
      if (Is(r, format::PyExceptionHow::kThread)) thread = &r;
    }
    const Event<format::PyException>* r = main != nullptr ? main : thread;
    if (r == nullptr) continue;
    Exception e;
    e.type = std::string(t.Str(r->type));
    e.message = std::string(t.Str(r->message));
    e.message_bytes = r->message_bytes;
    e.frames = r->frames;
    e.thread = r == thread;
    e.spawned = Is(*r, format::PyExceptionHow::kSpawned);
    e.interrupt = e.type == "KeyboardInterrupt";
    e.ts = r->ts;
    SplitAtProgramFrame(PythonStackFrames(t, r->py_stack), &e.python_stack, &e.raised_in);
    if (e.message.find(kTorchReraiseMark) != std::string::npos) FindWorker(run, t, e);
    out.by_trace.emplace(&t, std::move(e));
  }
  return out;
}

namespace {

void ProcPythonExceptionOf(RuleContext& ctx, const ProcessEnd& p) {
  const PythonExceptions::Exception* e = ctx.run().Get<PythonExceptions>().Of(p.t);
  if (e == nullptr) return;
  Finding finding = Finding::Of(FindingId::kProcPythonException, p.t.pid());
  finding.evidence = PythonExceptions::ToJson(*e);
  std::string summary = p.who + (e->spawned ? " ended on " : " ended on an uncaught ") + e->type;
  if (!e->message.empty()) summary += ": " + FirstLine(e->message);
  if (!e->python_stack.empty()) summary += " at " + e->python_stack.front();
  if (e->thread) summary += " (in a thread other than the main one)";
  if (e->spawned) {
    summary += " (raised in the function torch.multiprocessing.spawn ran: torch's wrapper "
               "passed it to the parent and exited 1)";
  }
  if (e->worker.pid != 0) {
    summary += "; raised in DataLoader worker pid " + std::to_string(e->worker.pid);
    if (!e->worker.python_stack.empty()) summary += " at " + e->worker.python_stack.front();
    finding.advice =
        "A DataLoader worker raised this while loading a batch (worker.python_stack: the "
        "dataset's own line first), and the main process raised it again. Fix the dataset "
        "code or the sample it failed on; DataLoader(num_workers=0) runs it in the main "
        "process, where a debugger can stop at it.";
  }
  if (e->interrupt) {
    finding.severity = Severity::kInfo;
    finding.advice =
        "Stopped by KeyboardInterrupt (Ctrl-C, or SIGINT from a supervisor): a person's or "
        "a tool's stop, not a failure of the program. python_stack says where it was.";
  }
  finding.summary = std::move(summary);
  ctx.Add(std::move(finding));
}

void ProcPythonExceptionRule(RuleContext& ctx) { ForEachJobProcess(ctx, ProcPythonExceptionOf); }

const RuleRegistration kProcPythonExceptionRuleRegistration(ProcPythonExceptionRule,
    {FindingId::kProcPythonException});

}  // namespace

}  // namespace colabtrace::analyzer::rules
