// Reaping children: wait, waitpid, wait3, wait4 and waitid.
//
// A parent's wait status is the exact end of its child: the signal that killed it, or
// its exit code, even when the child's own trace has no end record (SIGKILL, an exec into
// an untraced program). Each hook calls the real function once with the caller's
// arguments and returns its result and errno unchanged; when the call reaped a child it
// writes a wait_status record (child pid, wait status word, ts = when the call
// returned). Nothing is written for WNOHANG's "no child yet", WNOWAIT peeks, or stopped
// and continued reports: only a reap ends a child.
//
// A wait that may block is noted in flight while it lasts (state.h): a parent killed
// while it waited for a stuck child says so. A WNOHANG poll takes the periodic resource
// sample when one is due: a process that polls its children while it waits for them
// (a DataLoader checks its workers every 5 s) keeps its trace's clock moving, so a
// report can tell how long its workers were blocked.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "real.h"
#include "state.h"

#include "hooks.def"

namespace colabtrace::shim {
COLABTRACE_DEFINE_REAL_FNS(COLABTRACE_WAIT_HOOKS)

namespace {

// Right after the core's start-up (priority 101): see COLABTRACE_RESOLVE_REAL_FNS.
__attribute__((constructor(102))) void ResolveWaitRealFunctions() {
  COLABTRACE_RESOLVE_REAL_FNS(COLABTRACE_WAIT_HOOKS)
}

// Writes the record for a call that returned pid `r` with wait status `status`.
void RecordReap(pid_t r, int status, format::WaitApi api) {
  if (r <= 0 || !(WIFEXITED(status) || WIFSIGNALED(status)) || !Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::WaitStatus w;
  w.ts = Ticks();
  w.pid = r;
  w.status = static_cast<uint32_t>(status);
  w.api = static_cast<uint64_t>(api);
  Emit(w);
}

// The wait status word for a waitid result (0 when it was not a reap).
int StatusFromSiginfo(const siginfo_t& si) {
  switch (si.si_code) {
    case CLD_EXITED: return (si.si_status & 0xff) << 8;
    case CLD_KILLED: return si.si_status & 0x7f;
    case CLD_DUMPED: return (si.si_status & 0x7f) | 0x80;
    default: return 0x7f;  // stopped, trapped or continued: WIFSTOPPED-like, never a reap
  }
}

// Calls a wait-status API once (call(st) -> pid) and records the reap. A null status
// pointer still gets the status (the hook passes its own); a caller's pointer is passed
// through untouched, so a bad one still fails with EFAULT.
// Before a wait call: its in-flight note (nullptr for a poll, which samples instead).
format::CallNote* BeginWait(format::WaitApi api, int64_t pid, int options) {
  if (!Recording()) return nullptr;
  const uint64_t now = Ticks();
  if ((options & WNOHANG) != 0) {
    if (now >= __atomic_load_n(&g_sample_due_ticks, __ATOMIC_RELAXED)) {
      ShimScope scope;
      if (scope.entered()) g_sample_hook(now);
    }
    return nullptr;
  }
  return BeginNote(&format::ThreadNotes::call, format::InFlightCall::kWait, static_cast<uint32_t>(api), now,
                   static_cast<uint64_t>(pid));
}

template <class Call> pid_t Reaping(int* status, format::WaitApi api, int64_t pid, int options, Call call) {
  int local = 0;
  int* st = status != nullptr ? status : &local;
  format::CallNote* note = BeginWait(api, pid, options);
  const pid_t r = call(st);
  EndNote(note);
  if (r > 0) {
    const int saved = errno;
    RecordReap(r, *st, api);
    errno = saved;
  }
  return r;
}

}  // namespace
}  // namespace colabtrace::shim

using colabtrace::format::WaitApi;
using colabtrace::shim::RecordReap;
namespace real = colabtrace::shim::real;

// Hook entry points: default visibility; the version script limits exports to hooks.def.
#pragma GCC visibility push(default)
extern "C" {

pid_t wait(int* status) {
  return colabtrace::shim::Reaping(status, WaitApi::kWait, -1, 0,
                                   [](int* st) { return real::wait.get()(st); });
}

pid_t waitpid(pid_t pid, int* status, int options) {
  return colabtrace::shim::Reaping(status, WaitApi::kWaitpid, pid, options, [&](int* st) {
    return real::waitpid.get()(pid, st, options);
  });
}

pid_t wait3(int* status, int options, struct rusage* usage) {
  return colabtrace::shim::Reaping(status, WaitApi::kWait3, -1, options, [&](int* st) {
    return real::wait3.get()(st, options, usage);
  });
}

pid_t wait4(pid_t pid, int* status, int options, struct rusage* usage) {
  return colabtrace::shim::Reaping(status, WaitApi::kWait4, pid, options, [&](int* st) {
    return real::wait4.get()(pid, st, options, usage);
  });
}

int waitid(idtype_t idtype, id_t id, siginfo_t* info, int options) {
  siginfo_t local = {};
  siginfo_t* si = info != nullptr ? info : &local;
  // The kernel writes si_pid 0 when WNOHANG found no child ready.
  colabtrace::format::CallNote* note = colabtrace::shim::BeginWait(
      WaitApi::kWaitid, idtype == P_PID ? static_cast<int64_t>(id) : -1, options);
  const int r = real::waitid.get()(idtype, id, si, options);
  colabtrace::shim::EndNote(note);
  if (r == 0 && (options & WNOWAIT) == 0 && si->si_pid > 0) {
    const int saved = errno;
    RecordReap(si->si_pid, colabtrace::shim::StatusFromSiginfo(*si), WaitApi::kWaitid);
    errno = saved;
  }
  return r;
}

}  // extern "C"
#pragma GCC visibility pop
