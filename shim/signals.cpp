// Deaths by signal: every signal whose default action ends the process.
//
// For such a signal the program left at SIG_DFL, the kernel's disposition is the shim's
// handler; sigaction() and signal() read and write an emulated table, so the program sees
// exactly what it set (handler, flags, restorer, mask as the kernel keeps them). On
// delivery the handler records the signal (native stack, fault address, the /dev/shm
// file behind a SIGBUS), restores SIG_DFL and lets the signal take the process down as
// it would have without us. A program handler is installed directly in the kernel
// (the shim steps out), except in two cases, whose handler we wrap:
//   - the five crash signals, so that a crash is recorded whoever handles it;
//   - a one-shot handler (SA_RESETHAND), the "clean up, then die of the signal again"
//     pattern (Node.js's SIGINT/SIGTERM handler resets the terminal and raise()s): the
//     kernel would reset it to SIG_DFL, not to ours, and the death that follows would
//     leave no record. We emulate the reset in our table instead, so the re-raised
//     signal reaches our handler with the default action and is recorded.
// SIG_IGN is always set for real, so it is inherited across fork and exec exactly as
// without the shim.
//
// A vfork child (or any clone child) runs on its parent's memory: it must never write
// the table. Hooks and the handler compare the real pid with g_pid and, in a child,
// act on the kernel only (and re-raise with the child's own pid and tid).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <ucontext.h>

#include <cstring>

#include "config.h"
#include "core_hooks.h"
#include "modules.h"
#include "raw.h"
#include "text.h"
#include "python/python_stack.h"
#include "writer.h"

#if defined(__x86_64__)
// colabtrace_call_on_stack(fn, arg, top): calls fn(arg) with the stack pointer at top
// (16-byte aligned). %rbp keeps the caller's frame and the CFI says so, so libgcc's
// unwinder walks from fn back through this frame, the signal frame and on into the
// interrupted code, although the two stacks are apart. A local symbol: not exported.
extern "C" __attribute__((visibility("hidden"))) void colabtrace_call_on_stack(void (*fn)(void*), void* arg,
                                                                             void* top);
asm(R"(
	.pushsection .text
	.p2align 4
	.type colabtrace_call_on_stack, @function
colabtrace_call_on_stack:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register %rbp
	movq %rdx, %rsp
	movq %rdi, %rax
	movq %rsi, %rdi
	callq *%rax
	movq %rbp, %rsp
	.cfi_def_cfa_register %rsp
	popq %rbp
	.cfi_def_cfa_offset 8
	.cfi_restore %rbp
	ret
	.cfi_endproc
	.size colabtrace_call_on_stack, .-colabtrace_call_on_stack
	.popsection
)");
#endif

namespace colabtrace::shim {

uint64_t EmitStringFromSignalHandler(ThreadState& w, const char* s, size_t n) {
  format::FileHeader* h = g_trace.header();
  if (h == nullptr) return 0;
  format::String r;
  r.ts = Ticks();
  r.id = __atomic_fetch_add(&h->next_string_id, 1, __ATOMIC_RELAXED);
  r.text = format::Bytes{reinterpret_cast<const uint8_t*>(s), static_cast<uint32_t>(n)};
  EmitFromSignalHandler(w, r);
  return r.id;
}

namespace {

// Crashes: always recorded (with the native stack), whoever handles them.
constexpr int kCrashSignals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE};
// Hardware faults: when the kernel raised them (si_code > 0), returning to the faulting
// instruction raises them again, now with the default action.
constexpr int kFaultSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
// Every other signal whose default action terminates (or dumps core). The real-time
// signals the program may use (SIGRTMIN..SIGRTMAX) are added at run time.
constexpr int kTerminatingSignals[] = {SIGHUP,  SIGINT,    SIGQUIT,   SIGTRAP, SIGUSR1,
                                       SIGUSR2, SIGPIPE,   SIGALRM,   SIGTERM, SIGSTKFLT,
                                       SIGXCPU, SIGXFSZ,   SIGVTALRM, SIGPROF, SIGIO,
                                       SIGPWR,  SIGSYS};
// Signals a program handler took (the JVM takes a SIGSEGV for every implicit null check
// and a SIGFPE for every division by zero): only the first ones are recorded. A signal
// left to its default action ends the process and is always recorded: a JVM that had
// used up the budget on NullPointerExceptions and then crashed (SIGABRT after its
// hs_err file) would otherwise end with no record, reported as killed. The analyzer
// reads the same budget (format::kMaxRecordedHandledSignals).
constexpr int kMaxRecordedSignals = static_cast<int>(format::kMaxRecordedHandledSignals);
// The kernel's SA_RESTORER (not in glibc's headers): glibc sets it, with its own
// sa_restorer, on every handler it installs, and reports both back.
constexpr int kSaRestorer = 0x04000000;

struct Emulated {
  bool emulated = false;        // set once at start-up: this signal kills by default
  bool ours = false;            // our handler is the kernel's disposition
  struct sigaction app = {};    // what the program believes is installed, when ours
};
Emulated g_sig[NSIG];
int g_recorded = 0;
int g_in_handler = 0;

template <size_t N> bool In(const int (&set)[N], int sig) {
  for (int s : set) {
    if (s == sig) return true;
  }
  return false;
}

bool IsCrash(int sig) { return In(kCrashSignals, sig); }

void* HandlerOf(const struct sigaction& a) { return reinterpret_cast<void*>(a.sa_handler); }
bool IsDefault(const struct sigaction& a) { return HandlerOf(a) == reinterpret_cast<void*>(SIG_DFL); }
bool IsIgnore(const struct sigaction& a) { return HandlerOf(a) == reinterpret_cast<void*>(SIG_IGN); }
bool IsFunction(const struct sigaction& a) { return !IsDefault(a) && !IsIgnore(a); }
// A program handler the shim wraps rather than installing it in the kernel.
bool Wrapped(int sig, const struct sigaction& a) {
  return IsFunction(a) && (IsCrash(sig) || (a.sa_flags & SA_RESETHAND));
}

// True in a process that runs on memory it does not own: a vfork child before exec, or
// a clone() child the fork hooks never saw.
bool ForeignProcess() { return raw::Getpid() != g_pid; }

// Writes v into *out the way glibc's sigaction does: the kernel's sigset only (the rest
// of the caller's sa_mask is left as it was).
void CopyOut(const struct sigaction& v, struct sigaction* out) {
  out->sa_sigaction = v.sa_sigaction;
  out->sa_flags = v.sa_flags;
  out->sa_restorer = v.sa_restorer;
  std::memcpy(&out->sa_mask, &v.sa_mask, _NSIG / 8);
}


uint64_t ParseHex(const char*& p) {
  uint64_t v = 0;
  for (; (*p >= '0' && *p <= '9') || ((*p | 32) >= 'a' && (*p | 32) <= 'f'); ++p) {
    v = v * 16 + static_cast<uint64_t>(*p <= '9' ? *p - '0' : (*p | 32) - 'a' + 10);
  }
  return v;
}

// Past the blank-separated field at p and the blanks after it.
const char* SkipField(const char* p) {
  while (*p != '\0' && *p != ' ') ++p;
  while (*p == ' ') ++p;
  return p;
}

// The facts that tell the two causes of a SIGBUS in a /dev/shm mapping apart, into rec:
// a store past the file's end (the file was truncated, or never sized to the mapping), or
// tmpfs with no page left to give (/dev/shm full). line is the mapping's line of
// /proc/self/maps ("lo-hi perms offset dev inode path"); the size comes from the path
// only when it still names the mapped inode (a file unlinked or replaced since tells
// nothing).
void ReadShmFacts(const char* line, const char* path, uintptr_t lo, uintptr_t addr, format::Signal* rec) {
  const char* p = SkipField(SkipField(line));  // the address range, perms
  const uint64_t pgoff = ParseHex(p);
  const uint64_t inode = ParseU64(SkipField(SkipField(p)));  // past the offset and dev
  rec->shm_offset = pgoff + (addr - lo);
  struct stat st;
  const size_t len = std::strlen(path);
  static constexpr char kDeleted[] = " (deleted)";
  const bool deleted = len >= sizeof(kDeleted) - 1 &&
                       std::strcmp(path + len - (sizeof(kDeleted) - 1), kDeleted) == 0;
  if (!deleted && raw::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path),
                                reinterpret_cast<long>(&st), 0) == 0 &&
      static_cast<uint64_t>(st.st_ino) == inode) {
    rec->shm_file_size = static_cast<uint64_t>(st.st_size);
    rec->shm_known |= format::kShmOffsetAndSize;
  }
  struct statfs sf;
  if (raw::Syscall6(SYS_statfs, reinterpret_cast<long>("/dev/shm"), reinterpret_cast<long>(&sf)) == 0) {
    rec->shm_free = static_cast<uint64_t>(sf.f_bavail) * static_cast<uint64_t>(sf.f_bsize);
    rec->shm_known |= format::kShmFree;
  }
}

// Finds the /dev/shm file mapped at addr by streaming /proc/self/maps, and fills rec's
// shm_* fields when there is one.
void FindShmMapping(ThreadState& w, uintptr_t addr, format::Signal* rec) {
  const int fd = raw::Open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  char buf[4096];
  char line[1024];
  size_t len = 0;
  bool found = false;
  for (;;) {
    const long n = raw::Read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    for (long i = 0; i < n && !found; ++i) {
      if (buf[i] != '\n') {
        if (len + 1 < sizeof(line)) line[len++] = buf[i];
        continue;
      }
      line[len] = '\0';
      len = 0;
      const char* p = line;
      const uintptr_t lo = ParseHex(p);
      if (*p == '-') ++p;
      const uintptr_t hi = ParseHex(p);
      if (addr < lo || addr >= hi) continue;
      found = true;  // the one mapping that holds addr, a /dev/shm file or not
      const char* path = std::strstr(line, " /dev/shm/");
      if (path == nullptr) break;
      rec->shm_mapping = EmitStringFromSignalHandler(w, path + 1, std::strlen(path + 1));
      ReadShmFacts(line, path + 1, lo, addr, rec);
    }
    if (found) break;
  }
  raw::Close(fd);
}

// terminal: the signal's default action follows (the end of the process).
void RecordSignal(int sig, siginfo_t* info, void* uc, bool terminal) {
  if (!g_recording) return;
  if (!terminal && __atomic_add_fetch(&g_recorded, 1, __ATOMIC_ACQ_REL) > kMaxRecordedSignals) return;
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
  const size_t n = CaptureSignalStack(uc, frames, 64);
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
  if (sig == SIGBUS || sig == SIGSEGV) FindShmMapping(w, rec.addr, &rec);
  if (GpuModuleFatalSignal != nullptr) GpuModuleFatalSignal(w);
  char py[2048];  // the Python stack, read with checked copies (shim/python)
  const size_t py_len = python::CapturePythonStackTextSafe(py, sizeof(py));
  if (py_len > 0) rec.py_stack = EmitStringFromSignalHandler(w, py, py_len);
  EmitFromSignalHandler(w, rec);
}

// The recorder runs on a stack of its own. A program's crash handler often runs on a
// small alternate signal stack (Rust's runtime catches a stack overflow on 8 KiB;
// MINSIGSTKSZ is 2 KiB), and the unwinder, the /proc/self/maps scan and the Python
// stack need several KiB more: recording there overflowed that stack, and the process
// died of SIGSEGV where bare the program's handler ran. Only the thread that holds
// g_in_handler uses this stack, with every signal blocked: a handler with SA_ONSTACK
// delivered meanwhile would otherwise start again at the top of the alternate stack
// that the interrupted handler is still using.
constexpr size_t kRecordStackSize = 64 * 1024;
alignas(64) char g_record_stack[kRecordStackSize];

struct RecordArgs {
  int sig;
  siginfo_t* info;
  void* uc;
  bool terminal;
};

void RecordFromArgs(void* p) {
  const RecordArgs* a = static_cast<const RecordArgs*>(p);
  RecordSignal(a->sig, a->info, a->uc, a->terminal);
}

// fn(arg) on g_record_stack; the caller holds g_in_handler.
bool CallOnRecordStack(void (*fn)(void*), void* arg) {
#if defined(__x86_64__)
  sigset_t all, saved;
  sigfillset(&all);
  raw::Syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&all),
                reinterpret_cast<long>(&saved), _NSIG / 8);
  colabtrace_call_on_stack(fn, arg, g_record_stack + kRecordStackSize);
  raw::Syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&saved), 0, _NSIG / 8);
  return true;
#else
  (void)fn, (void)arg;
  return false;  // no stack switch on this architecture yet
#endif
}

void RecordSignalOnOwnStack(int sig, siginfo_t* info, void* uc, bool terminal) {
  RecordArgs args{sig, info, uc, terminal};
  if (!CallOnRecordStack(RecordFromArgs, &args)) RecordSignal(sig, info, uc, terminal);
}

void FatalHandler(int sig, siginfo_t* info, void* uc) {
  const int saved_errno = errno;
  const bool foreign = ForeignProcess();
  Emulated& e = g_sig[sig];
  const struct sigaction app = e.app;
  const bool terminal = IsDefault(app);
  // Once the budget of handled signals is spent, a handled one costs nothing more: no
  // stack switch, no sigprocmask (the JVM takes a SIGSEGV per NullPointerException).
  const bool budget_left = __atomic_load_n(&g_recorded, __ATOMIC_RELAXED) < kMaxRecordedSignals;
  if (!foreign && (IsCrash(sig) || terminal) && (terminal || budget_left) &&
      __atomic_exchange_n(&g_in_handler, 1, __ATOMIC_ACQ_REL) == 0) {
    RecordSignalOnOwnStack(sig, info, uc, terminal);
    __atomic_store_n(&g_in_handler, 0, __ATOMIC_RELEASE);
  }
  if (IsFunction(app)) {
    // The program handles it: behave as if its handler were installed directly.
    if (app.sa_flags & SA_RESETHAND) {
      // What the kernel does on entry: the handler becomes SIG_DFL, the flags stay. Ours
      // stays installed, so a signal delivered again meets the default action there. A
      // vfork child has signal dispositions of its own but not the table: the kernel's.
      if (!foreign) {
        e.app.sa_handler = SIG_DFL;
      } else {
        struct sigaction dfl = {};
        dfl.sa_handler = SIG_DFL;
        real::sigaction.get()(sig, &dfl, nullptr);
      }
    }
    // A tail call (a sibling call at -O2: nothing of ours is live after it), so the
    // program's handler returns straight to the kernel's signal trampoline and this frame
    // is gone from the stack it walks: a runtime that prints its own backtrace from a
    // crash handler (gfortran, the JVM's hs_err) shows the frames it shows bare.
    // tests/parity (runtimes) compares gfortran's crash backtrace with the bare one.
    errno = saved_errno;
    if (app.sa_flags & SA_SIGINFO) return app.sa_sigaction(sig, info, uc);
    return app.sa_handler(sig);
  }
  if (IsIgnore(app)) {
    errno = saved_errno;
    return;
  }
  // Default action: hand the signal back to the kernel with the default disposition.
  // The trace stays as it is: the Signal record is the process's end record.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  real::sigaction.get()(sig, &dfl, nullptr);
  if (!foreign) e.ours = false;
  // A hardware fault returns to the faulting instruction, which faults again. Anything
  // else is sent again to this very thread (the signal stays blocked until the handler
  // returns, then the default action ends the process). The child's own ids: a vfork
  // child must never signal its parent.
  const bool refaults = In(kFaultSignals, sig) && info != nullptr && info->si_code > 0;
  if (!refaults) raw::Tgkill(raw::Getpid(), raw::Gettid(), sig);
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

bool KernelHasOurs(const struct sigaction& k) {
  return (k.sa_flags & SA_SIGINFO) && k.sa_sigaction == FatalHandler;
}

// sigaction() for an emulated signal in the process that owns the table.
int EmulatedSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  Emulated& e = g_sig[sig];
  struct sigaction previous;
  if (e.ours) {
    previous = e.app;
  } else if (real::sigaction.get()(sig, nullptr, &previous) != 0) {
    return -1;
  }
  if (act != nullptr) {
    // Validate the way the kernel would before touching the table: a bad set of flags
    // fails here and leaves everything as it was.
    if (IsDefault(*act) || Wrapped(sig, *act)) {
      struct sigaction next = *act;
      e.app = next;  // a signal arriving during the switch already sees the new view
      if (InstallOurs(sig, *act) != 0) {
        const int err = errno;
        if (e.ours) e.app = previous;
        errno = err;
        return -1;
      }
      // What glibc and the kernel would report back: the kernel's mask and restorer.
      struct sigaction k;
      if (real::sigaction.get()(sig, nullptr, &k) == 0) {
        next.sa_mask = k.sa_mask;
        next.sa_flags = (act->sa_flags & ~kSaRestorer) | (k.sa_flags & kSaRestorer);
        next.sa_restorer = k.sa_restorer;
      }
      e.app = next;
      e.ours = true;
    } else {
      e.app = *act;  // if ours is still installed, it now acts as the program asked
      if (real::sigaction.get()(sig, act, nullptr) != 0) {
        const int err = errno;
        if (e.ours) e.app = previous;
        errno = err;
        return -1;
      }
      e.ours = false;
    }
  }
  if (old != nullptr) CopyOut(previous, old);
  return 0;
}

// sigaction() in a vfork or clone child: the kernel only; reads still show the
// program's view where our handler is what the kernel holds.
int ForeignSigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  struct sigaction k;
  if (real::sigaction.get()(sig, act, &k) != 0) return -1;
  if (old != nullptr) CopyOut(KernelHasOurs(k) ? g_sig[sig].app : k, old);
  return 0;
}

}  // namespace

bool RunOnShimStack(void (*fn)(void*), void* arg) {
  if (__atomic_exchange_n(&g_in_handler, 1, __ATOMIC_ACQ_REL) != 0) return false;
  const bool ran = CallOnRecordStack(fn, arg);
  __atomic_store_n(&g_in_handler, 0, __ATOMIC_RELEASE);
  return ran;
}

void InstallFatalSignalHandlers() {
  // One sigaction per signal, not a query and then an install: ours goes in and the old
  // disposition comes back in the same call. Almost every one was a pristine SIG_DFL
  // (exec resets handlers to SIG_DFL, no flags, empty mask), which ours covers as is;
  // anything else gets a second call (ours with the program's flags and mask, or the old
  // disposition back). Signals stay blocked meanwhile, so none is delivered to our
  // handler before its emulated entry says what the program had.
  sigset_t all, saved;
  sigfillset(&all);
  raw::Syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&all),
                reinterpret_cast<long>(&saved), _NSIG / 8);
  struct sigaction ours = {};
  ours.sa_sigaction = FatalHandler;
  ours.sa_flags = SA_SIGINFO;
  sigemptyset(&ours.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    const bool rt = sig >= SIGRTMIN && sig <= SIGRTMAX;
    if (!rt && !IsCrash(sig) && !In(kTerminatingSignals, sig)) continue;
    Emulated& e = g_sig[sig];
    struct sigaction old;
    if (real::sigaction.get()(sig, &ours, &old) != 0) continue;
    e.app = old;
    e.emulated = true;
    constexpr int kCopiedFlags = SA_ONSTACK | SA_RESTART | SA_NODEFER;
    sigset_t empty;
    sigemptyset(&empty);
    if (IsDefault(old) && (old.sa_flags & kCopiedFlags) == 0 &&
        std::memcmp(&old.sa_mask, &empty, _NSIG / 8) == 0) {
      e.ours = true;  // what InstallOurs would have installed
    } else if (IsDefault(old) || Wrapped(sig, old)) {
      e.ours = InstallOurs(sig, old) == 0;
      if (!e.ours) real::sigaction.get()(sig, &old, nullptr);
    } else {
      real::sigaction.get()(sig, &old, nullptr);  // SIG_IGN, or the program's handler
    }
  }
  raw::Syscall6(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&saved), 0, _NSIG / 8);
}

}  // namespace colabtrace::shim

using namespace colabtrace::shim;  // NOLINT

// Hook entry points: default visibility; the version script limits exports to hooks.def.
#pragma GCC visibility push(default)
extern "C" {

int sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  if (sig <= 0 || sig >= NSIG || !g_sig[sig].emulated) {
    return real::sigaction.get()(sig, act, old);
  }
  if (ForeignProcess()) return ForeignSigaction(sig, act, old);
  return EmulatedSigaction(sig, act, old);
}

sighandler_t signal(int sig, sighandler_t handler) {
  if (sig <= 0 || sig >= NSIG || !g_sig[sig].emulated) return real::signal.get()(sig, handler);
  struct sigaction act = {}, old = {};
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;  // glibc's signal() has BSD semantics
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;  // the union: also right for an SA_SIGINFO handler
}

}  // extern "C"
#pragma GCC visibility pop
