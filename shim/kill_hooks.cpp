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

// Calls call() and records the signal when it is one that ends a process and not sent
// to this process alone.
template <class Call> int RecordedKill(long target, int sig, format::KillApi api, Call call) {
  if (!Terminates(sig) || target == g_pid || !Recording()) return call();
  const uint64_t t0 = Ticks();
  const int r = call();
  const int err = errno;
  {
    ShimScope scope;
    if (scope.entered()) {
      format::KillSent k;
      k.ts = t0;
      k.target = target;
      k.signo = static_cast<uint64_t>(sig);
      k.api = static_cast<uint64_t>(api);
      k.result = r == 0 ? 0 : -static_cast<int64_t>(err);
      Emit(k);
    }
  }
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
