// Termination signals sent to other processes: kill and killpg.
//
// A process killed by SIGKILL records nothing of its own end; the sender does. When a
// traced process sends SIGKILL (or SIGTERM, SIGINT, SIGHUP, SIGQUIT) to another process
// or group, its hook writes a kill_sent record (target as kill() takes it, the signal,
// the result), so the report can say who ended a process: a subprocess timeout or
// multiprocessing's Process.kill(), not the OOM killer. Each hook calls the real
// function once and returns its result with errno unchanged. Other signals (SIGUSR1
// ping-pong, SIGCHLD, probes with signal 0, a process signalling itself) are not recorded.
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "raw.h"
#include "real.h"
#include "writer.h"

#include "hooks.def"

namespace colabtrace::shim {
COLABTRACE_DEFINE_REAL_FNS(COLABTRACE_KILL_HOOKS)

namespace {

// Right after the core's start-up (priority 101): see COLABTRACE_RESOLVE_REAL_FNS.
__attribute__((constructor(102))) void ResolveKillRealFunctions() {
  COLABTRACE_RESOLVE_REAL_FNS(COLABTRACE_KILL_HOOKS)
}

bool Terminates(int sig) {
  return sig == SIGKILL || sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT;
}

void EmitKillSent(uint64_t ts, long target, int sig, format::KillApi api, int64_t result) {
  ShimScope scope;
  if (!scope.entered()) return;
  format::KillSent k;
  k.ts = ts;
  k.target = target;
  k.signo = static_cast<uint64_t>(sig);
  k.api = static_cast<uint64_t>(api);
  k.result = result;
  Emit(k);
}

// Calls call() and records the signal when it is one that ends a process and not sent
// to this process alone. A signal to a group this process is in (target 0, -1, or its
// own group: coreutils timeout ends with kill(0, SIGKILL)) may end the sender before
// the call returns, so it is recorded before the call, as sent; if the call fails, a
// second record with the same ts carries the error.
template <class Call> int RecordedKill(long target, int sig, format::KillApi api, Call call) {
  if (!Terminates(sig) || target == g_pid || !Recording()) return call();
  const uint64_t t0 = Ticks();
  const bool hits_self = target == 0 || target == -1 || target == -raw::Syscall6(SYS_getpgid, 0);
  if (hits_self) EmitKillSent(t0, target, sig, api, 0);
  const int r = call();
  const int err = errno;
  if (!hits_self || r != 0) EmitKillSent(t0, target, sig, api, r == 0 ? 0 : -static_cast<int64_t>(err));
  errno = err;
  return r;
}

}  // namespace
}  // namespace colabtrace::shim

using colabtrace::format::KillApi;
namespace real = colabtrace::shim::real;

// Hook entry points: default visibility; the version script limits exports to hooks.def.
#pragma GCC visibility push(default)
extern "C" {

int kill(pid_t pid, int sig) {
  return colabtrace::shim::RecordedKill(pid, sig, KillApi::kKill, [&] { return real::kill.get()(pid, sig); });
}

// killpg(pgrp, sig) is kill(-pgrp, sig); recorded with that target.
int killpg(pid_t pgrp, int sig) {
  return colabtrace::shim::RecordedKill(pgrp > 1 ? -static_cast<long>(pgrp) : static_cast<long>(pgrp), sig,
                                        KillApi::kKillpg, [&] { return real::killpg.get()(pgrp, sig); });
}

}  // extern "C"
#pragma GCC visibility pop
