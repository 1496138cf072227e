// Fatal signals: SIGSEGV, SIGBUS, SIGABRT, SIGILL and SIGFPE.
//
// The shim keeps its own handler installed in the kernel for these five signals and
// shows the program the disposition the program itself set: sigaction() and signal()
// for them read and write an emulated table. On delivery the handler records the
// signal (fault address, native stack, the /dev/shm file behind a SIGBUS) into a chunk
// of its own, then either calls the program's handler or restores the default and lets
// the signal take the process down exactly as it would have without us.
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <signal.h>
#include <ucontext.h>

#include <cstring>

#include "config.h"
#include "core_hooks.h"
#include "modules.h"
#include "raw.h"
#include "python/python_stack.h"
#include "writer.h"

namespace colabtrace::shim {
namespace {

// Crashes: always recorded (with the native stack), whoever handles them.
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
// Termination requests: recorded only when the default action is about to end the
// process (a multiprocessing.Pool worker stopped with SIGTERM reads as "signaled", not as
// killed with no end record). With a program handler installed they are passed on
// untouched.
constexpr int kTerminationSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
constexpr int kMaxRecordedSignals = 16;

struct Emulated {
  bool ours = false;            // our handler is the kernel's disposition
  struct sigaction app = {};    // what the program believes is installed
};
Emulated g_sig[NSIG];
int g_recorded = 0;
int g_in_handler = 0;

// The signals whose disposition the shim emulates (crashes and termination requests).
bool IsFatal(int sig) {
  for (int s : kCrashSignals) {
    if (s == sig) return true;
  }
  for (int s : kTerminationSignals) {
    if (s == sig) return true;
  }
  return false;
}

bool IsCrash(int sig) {
  for (int s : kCrashSignals) {
    if (s == sig) return true;
  }
  return false;
}

bool IsFunction(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) ? a.sa_sigaction != nullptr
                                    : (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN);
}

// Emits a String record with a fresh id (no interning: the intern table may be in use by
// the very thread we interrupted).
uint64_t EmitStringHere(ThreadState& w, const char* s, size_t n) {
  format::FileHeader* h = g_trace.header();
  if (h == nullptr) return 0;
  format::String r;
  r.ts = Ticks();
  r.id = __atomic_fetch_add(&h->next_string_id, 1, __ATOMIC_RELAXED);
  r.text = format::Bytes{reinterpret_cast<const uint8_t*>(s), static_cast<uint32_t>(n)};
  EmitFromSignalHandler(w, r);
  return r.id;
}

// Finds the /dev/shm file mapped at addr by streaming /proc/self/maps.
uint64_t FindShmMapping(ThreadState& w, uintptr_t addr) {
  const int fd = raw::Open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  char line[1024];
  size_t len = 0;
  uint64_t id = 0;
  for (;;) {
    const long n = raw::Read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    for (long i = 0; i < n && id == 0; ++i) {
      if (buf[i] != '\n') {
        if (len + 1 < sizeof(line)) line[len++] = buf[i];
        continue;
      }
      line[len] = '\0';
      len = 0;
      uintptr_t lo = 0, hi = 0;
      const char* p = line;
      while (*p && *p != '-') lo = lo * 16 + static_cast<uintptr_t>(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10), ++p;
      if (*p == '-') ++p;
      while (*p && *p != ' ') hi = hi * 16 + static_cast<uintptr_t>(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10), ++p;
      if (addr < lo || addr >= hi) continue;
      const char* path = std::strstr(line, " /dev/shm/");
      if (path != nullptr) id = EmitStringHere(w, path + 1, std::strlen(path + 1));
      break;
    }
    if (id != 0) break;
  }
  raw::Close(fd);
  return id;
}

void RecordSignal(int sig, siginfo_t* info, void* uc) {
  // A vfork child runs on its parent's memory: its crash is not the parent's.
  if (!g_recording || InVforkChild() || __atomic_add_fetch(&g_recorded, 1, __ATOMIC_ACQ_REL) > kMaxRecordedSignals) {
    return;
  }
  ThreadState w;
  w.signal_context = true;
  w.tid = static_cast<uint32_t>(raw::Gettid());
  w.generation = g_generation;  // forces OpenChunk's "new chunk" path below
  w.chunk = nullptr;
  format::Signal rec;
  rec.ts = Ticks();
  rec.signo = static_cast<uint64_t>(sig);
  rec.si_code = info ? info->si_code : 0;
  rec.addr = info ? reinterpret_cast<uint64_t>(info->si_addr) : 0;
  rec.tid = w.tid;
  // The native stack, starting at the interrupted instruction.
  uint64_t frames[64];
  size_t n = 0;
  unw_cursor_t cursor;
  if (uc != nullptr &&
      unw_init_local2(&cursor, static_cast<unw_context_t*>(uc), UNW_INIT_SIGNAL_FRAME) == 0) {
    do {
      unw_word_t ip = 0;
      if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0 || ip == 0) break;
      frames[n++] = ip;
    } while (n < 64 && unw_step(&cursor) > 0);
  }
  format::FileHeader* h = g_trace.header();
  if (n > 0 && h != nullptr) {
    format::Stack st;
    st.ts = rec.ts;
    st.id = __atomic_fetch_add(&h->next_stack_id, 1, __ATOMIC_RELAXED);
    st.frames = format::Bytes{reinterpret_cast<const uint8_t*>(frames),
                              static_cast<uint32_t>(n * sizeof(uint64_t))};
    EmitFromSignalHandler(w, st);
    rec.stack = st.id;
  }
  if (sig == SIGBUS || sig == SIGSEGV) rec.shm_mapping = FindShmMapping(w, rec.addr);
  char py[2048];  // the Python stack, read with checked copies (shim/python)
  const size_t py_len = python::CapturePythonStackTextSafe(py, sizeof(py));
  if (py_len > 0) rec.py_stack = EmitStringHere(w, py, py_len);
  EmitFromSignalHandler(w, rec);
}

void FatalHandler(int sig, siginfo_t* info, void* uc) {
  const int saved_errno = errno;
  Emulated& e = g_sig[sig];
  const struct sigaction app = e.app;
  const bool dies = !IsFunction(app) && app.sa_handler == SIG_DFL;
  if ((IsCrash(sig) || dies) && __atomic_exchange_n(&g_in_handler, 1, __ATOMIC_ACQ_REL) == 0) {
    RecordSignal(sig, info, uc);
    __atomic_store_n(&g_in_handler, 0, __ATOMIC_RELEASE);
  }
  if (IsFunction(app)) {
    // The program handles it: behave as if its handler were installed directly.
    if (app.sa_flags & SA_RESETHAND) {
      e.app.sa_handler = SIG_DFL;
      e.app.sa_flags &= ~SA_SIGINFO;
    }
    if (app.sa_flags & SA_SIGINFO) {
      app.sa_sigaction(sig, info, uc);
    } else {
      app.sa_handler(sig);
    }
    errno = saved_errno;
    return;
  }
  const bool sent = info == nullptr || info->si_code <= 0;  // kill(), raise(), abort()
  if (app.sa_handler == SIG_IGN && sent) {
    errno = saved_errno;
    return;
  }
  // Default action: hand the signal back to the kernel with the default disposition.
  // The trace stays as it is: the Signal record is the process's end record.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  real::sigaction.get()(sig, &dfl, nullptr);
  e.ours = false;
  if (sent) raw::Tgkill(g_pid, raw::Gettid(), sig);
  // A fault returns to the faulting instruction, which faults again: default action.
  errno = saved_errno;
}

// Installs our handler with the program's flags and mask, so delivery behaves as the
// program asked (alternate stack, blocked signals, restart).
int InstallOurs(int sig, const struct sigaction& app) {
  struct sigaction ours = {};
  ours.sa_sigaction = FatalHandler;
  ours.sa_mask = app.sa_mask;
  ours.sa_flags = (app.sa_flags & (SA_ONSTACK | SA_RESTART | SA_NODEFER)) | SA_SIGINFO;
  return real::sigaction.get()(sig, &ours, nullptr);
}

}  // namespace

void InstallFatalSignalHandlers() {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (!IsFatal(sig)) continue;
    Emulated& e = g_sig[sig];
    if (real::sigaction.get()(sig, nullptr, &e.app) != 0) continue;
    if (e.app.sa_handler == SIG_IGN && !(e.app.sa_flags & SA_SIGINFO)) continue;
    e.ours = InstallOurs(sig, e.app) == 0;
  }
}

size_t CaptureStack(uint64_t* out, size_t max, size_t skip) {
  void* buf[kMaxStackDepth + 8];
  const size_t want = max + skip > kMaxStackDepth + 8 ? kMaxStackDepth + 8 : max + skip;
  const int n = unw_backtrace(buf, static_cast<int>(want));
  size_t k = 0;
  for (int i = static_cast<int>(skip); i < n && k < max; ++i) {
    out[k++] = reinterpret_cast<uint64_t>(buf[i]);
  }
  return k;
}

}  // namespace colabtrace::shim

using namespace colabtrace::shim;  // NOLINT

// Hook entry points: default visibility; the version script limits exports to hooks.def.
#pragma GCC visibility push(default)
extern "C" {

int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (sig <= 0 || sig >= NSIG || !IsFatal(sig) || !g_sig[sig].ours) {
    return real::sigaction.get()(sig, act, old);
  }
  Emulated& e = g_sig[sig];
  const struct sigaction previous = e.app;
  if (act != nullptr) {
    if (!IsFunction(*act) && act->sa_handler == SIG_DFL) {
      // Keep recording; the default action still happens after we record.
      e.app = *act;
      InstallOurs(sig, *act);
    } else if (!IsFunction(*act) && act->sa_handler == SIG_IGN) {
      // Ignoring is the program's call; step out of the way.
      e.app = *act;
      e.ours = false;
      const int r = real::sigaction.get()(sig, act, nullptr);
      if (r != 0) return r;
    } else {
      e.app = *act;
      InstallOurs(sig, *act);
    }
  }
  if (old != nullptr) *old = previous;
  return 0;
}

sighandler_t signal(int sig, sighandler_t handler) {
  if (sig <= 0 || sig >= NSIG || !IsFatal(sig) || !g_sig[sig].ours) {
    return real::signal.get()(sig, handler);
  }
  struct sigaction act = {}, old = {};
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;  // glibc's signal() has BSD semantics
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return (old.sa_flags & SA_SIGINFO) ? reinterpret_cast<sighandler_t>(reinterpret_cast<void*>(old.sa_sigaction))
                                     : old.sa_handler;
}

}  // extern "C"
#pragma GCC visibility pop
