// proc.fatal-signal (error)
//
// Rule: a job process that died of SIGSEGV, SIGBUS, SIGABRT, SIGILL or SIGFPE.
// Termination requests (SIGTERM, SIGINT, SIGPIPE, ...) end a process "signaled" without a
// finding. The evidence gives the fault address for a kernel-generated fault (si_code >
// 0) or the sender for raise/kill, the native stack, the Python stack, the fault a
// runtime's own crash handler took before it ended the process (handled_fault), and, for
// a SIGBUS inside a /dev/shm mapping, whether the store was past the file's end or the
// tmpfs was full.
#include <algorithm>
#include <csignal>

#include "process/rules/rules.h"
#include "model/symbolize.h"
#include "model/python_stack.h"

namespace colabtrace::analyzer::rules {

ShmBusCause ShmBusCauseOf(const format::Signal& s) {
  constexpr uint64_t kPage = 4096;  // tmpfs pages on x86-64
  if ((s.shm_known & format::kShmOffsetAndSize) != 0 &&
      s.shm_offset >= (s.shm_file_size + kPage - 1) / kPage * kPage) {
    return ShmBusCause::kPastEnd;
  }
  if ((s.shm_known & format::kShmFree) != 0 && s.shm_free < kPage) return ShmBusCause::kFull;
  return ShmBusCause::kUnknown;
}

namespace {

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

HandledFault HandledFaultOf(SymbolCache& symbols, const ProcessTrace& t, const format::Signal& end) {
  HandledFault out;
  const std::vector<uint64_t>& frames = t.Stack(end.stack);
  if (frames.empty()) return out;
  const std::vector<std::string> names = symbols.Frames(t, frames);
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

}  // namespace

namespace {

void ProcFatalSignalOf(RuleContext& ctx, const ProcessEnd& e) {
  const ProcessTrace& t = e.t;
  const ProcessFacts& f = ctx.run().facts(t);
  const std::string& who = e.who;
  static constexpr int64_t kCrashes[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
  if (f.end_kind != EndKind::kSignaled || !f.end_signal ||
      std::find(std::begin(kCrashes), std::end(kCrashes), *f.end_signal) == std::end(kCrashes)) {
    return;
  }
  const int signo = static_cast<int>(*f.end_signal);
  Finding finding = Finding::Of(FindingId::kProcFatalSignal, t.pid());
  Json& ev = finding.evidence;
  ev["signal"] = signo;
  ev["signal_name"] = SignalName(signo);
  ev["reaped_by"] = f.reap ? Json(static_cast<int64_t>(f.reap->reaper_pid)) : Json();
  std::string shm;
  const format::Signal* handled_fault = nullptr;
  finding.summary = who + " died of " + SignalName(signo);
  if (const auto* s = f.signal) {
    ev["si_code"] = s->si_code;
    ev["tid"] = s->tid;
    if (s->si_code > 0) {
      // The kernel raised it for a fault: si_addr is the faulting address.
      ev["fault_address"] = FormatHex(s->addr);
      finding.summary += " (fault address " + FormatHex(s->addr) + ")";
    } else {
      // Sent by kill/raise/tgkill/sigqueue: the siginfo holds si_pid (low 32 bits of
      // the si_addr slot) and si_uid (high 32), not an address.
      const uint64_t sender = s->addr & 0xffffffffu;
      ev["sender_pid"] = sender;
      ev["sender_uid"] = s->addr >> 32;
      finding.summary += sender == t.pid() ? " that it sent itself (raise, abort or kill)"
                                      : " sent by pid " + std::to_string(sender);
      const HandledFault hf = sender == t.pid() ? HandledFaultOf(ctx.run().symbols(), t, *s) : HandledFault{};
      if (const format::Signal* h = hf.fault) {
        Json hj = Json::MakeObject();
        hj["signal"] = static_cast<int64_t>(h->signo);
        hj["signal_name"] = SignalName(static_cast<int>(h->signo));
        hj["fault_address"] = FormatHex(h->addr);
        hj["before_end_ns"] = s->ts - h->ts;
        Json hs = Json::MakeArray();
        for (const std::string& frame : ctx.run().symbols().Stack(t, t.Stack(h->stack))) hs.Append(frame);
        hj["stack"] = std::move(hs);
        ev["handled_fault"] = std::move(hj);
        handled_fault = h;
        finding.summary += ", " + FormatDurationNs(s->ts - h->ts) + " after its own handler took a " +
                           SignalName(static_cast<int>(h->signo)) + " (fault address " + FormatHex(h->addr) +
                           ") on that thread";
      } else if (!hf.interrupted.empty()) {
        ev["interrupted_frame"] = hf.interrupted;
        finding.summary += ", from inside a signal handler that interrupted " + hf.interrupted;
      }
    }
    Json stack = Json::MakeArray();
    for (const std::string& frame : ctx.run().symbols().Stack(t, t.Stack(s->stack))) stack.Append(frame);
    ev["stack"] = std::move(stack);
    ev["python_stack"] = PythonStackJson(t, s->py_stack);  // innermost Python frame first
    if (const auto py = PythonStackFrames(t, s->py_stack); !py.empty()) finding.summary += " at " + py.front();
    shm = std::string(t.Str(s->shm_mapping));
  } else {
    ev["stack"] = Json::MakeArray();
    finding.summary += " (from its wait status; its own trace has no signal record)";
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
    finding.summary += " inside the /dev/shm mapping " + shm;
    if (cause == ShmBusCause::kPastEnd) {
      ev["shm_cause"] = "past-end-of-file";
      finding.summary += ", past the end of the file (offset " + std::to_string(s.shm_offset) + ", file size " +
                         std::to_string(s.shm_file_size) + ")";
      finding.advice =
          "The process touched its /dev/shm mapping beyond the file's end: the file was "
          "truncated (or replaced) while mapped, or mapped larger than it was sized with "
          "ftruncate. Shared memory did not run out; look for the process that resized or "
          "removed the file, or the size passed to mmap.";
    } else {
      ev["shm_cause"] = cause == ShmBusCause::kFull ? "shm-full" : "unknown";
      if (cause == ShmBusCause::kFull) finding.summary += " with /dev/shm full";
      finding.advice =
          "A SIGBUS in a /dev/shm mapping means shared memory ran out. Enlarge /dev/shm "
          "(docker run --shm-size=8g, or a bigger tmpfs), or use fewer DataLoader workers.";
    }
  } else if (handled_fault != nullptr) {
    finding.advice =
        "The program's own crash handler took the fault (handled_fault) and then ended the "
        "process: a runtime's crash report (the JVM writes hs_err_pid<pid>.log, Rust prints "
        "'has overflowed its stack', gfortran a backtrace on stderr). handled_fault.stack "
        "shows where the fault happened.";
  } else if (signo == SIGABRT) {
    finding.advice =
        "The program aborted (an assertion, std::terminate, or a C++ exception nobody "
        "caught). The stack shows where; run under gdb for the message.";
  } else if (f.signal && f.signal->si_code <= 0) {
    finding.advice =
        "The signal was sent, not caused by a fault: find the sender (sender_pid) and why "
        "it sent it (a test of crash handling, a watchdog, a supervisor).";
  }  // else a native crash: the catalogue's advice
  ctx.Add(std::move(finding));
}

void ProcFatalSignalRule(RuleContext& ctx) { ForEachJobProcess(ctx, ProcFatalSignalOf); }

const RuleRegistration kProcFatalSignalRuleRegistration(ProcFatalSignalRule,
    {FindingId::kProcFatalSignal});

}  // namespace

}  // namespace colabtrace::analyzer::rules
