// fork, _Fork, clone, the exec family and posix_spawn: the records that tie a process
// tree together, each child's fresh trace, and the exec hand-over.
//
// Exec hand-over: the trace crosses exec only when the next image will really load this
// shim: envp's LD_PRELOAD names it, and the file is neither a secure exec (a set-user/
// group-ID file that changes who the caller is, or file capabilities: ld.so then ignores
// such preloads) nor a static executable (no loader at all). Then a
// descriptor without FD_CLOEXEC is made at a fixed high number (TraceFile::HandoverFloor)
// and the next image's shim adopts and closes it before the program runs. Otherwise the
// trace stays close-on-exec and the next image sees exactly the descriptors it would
// without us.
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <cstdarg>
#include <cstring>

#include "core_hooks.h"
#include "lifecycle.h"
#include "modules.h"
#include "raw.h"
#include "sampling.h"
#include "text.h"
#include "writer.h"

extern char** environ;

namespace colabtrace::shim {
namespace {

// ts0: when fork was called. The record carries the call's start, like every record,
// so the child's trace (which starts inside fork) never begins before its fork record.
void RecordFork(pid_t r, format::ForkHow how, uint64_t ts0) {
  if (r == 0 || !Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::Fork f;
  f.ts = ts0;
  f.child_pid = r > 0 ? r : -static_cast<int64_t>(errno);
  f.how = static_cast<uint64_t>(how);
  Emit(f);
  TakeSample();
}

// ---- exec ---------------------------------------------------------------------------

// True if envp's LD_PRELOAD names this library (by path, or by file name, which the
// loader looks up in its search path).
bool EnvPreloadsShim(char* const* envp) {
  const char* self = std::strrchr(g_shim_path, '/');
  self = self ? self + 1 : g_shim_path;
  const size_t self_len = std::strlen(self);
  if (self_len == 0) return false;
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, "LD_PRELOAD=", 11) != 0) continue;
    // Entries are separated by spaces or colons.
    for (const char* p = *e + 11; *p != '\0';) {
      while (*p == ' ' || *p == ':') ++p;
      const char* end = p;
      while (*end != '\0' && *end != ' ' && *end != ':') ++end;
      const size_t len = static_cast<size_t>(end - p);
      if (len > 0) {
        const char* base = p;
        for (const char* c = p; c < end; ++c) {
          if (*c == '/') base = c + 1;
        }
        const bool same_path = len == std::strlen(g_shim_path) && std::strncmp(p, g_shim_path, len) == 0;
        const bool same_name = static_cast<size_t>(end - base) == self_len &&
                               std::strncmp(base, self, self_len) == 0;
        if (same_path || same_name) return true;
      }
      p = end;
    }
    return false;  // the loader reads the first LD_PRELOAD only
  }
  return false;
}

// Whether exec'ing the file open on fd (stat st) will be a secure exec (AT_SECURE), in
// which ld.so ignores LD_PRELOAD: as the kernel decides it (commoncap's
// cap_bprm_creds_from_file), when the new effective uid or gid differs from the real
// ones, or file capabilities raise a non-root caller's privileges. A set-user-ID file
// that does not change the caller's identity is not secure: root running root's
// setuid `mount` or `su` (as on Colab) loads the preload, and its trace must cross the exec.
bool SecureExec(int fd, const struct stat& st) {
  const long ruid = raw::Syscall6(SYS_getuid), rgid = raw::Syscall6(SYS_getgid);
  long euid = raw::Syscall6(SYS_geteuid), egid = raw::Syscall6(SYS_getegid);
  if (st.st_mode & (S_ISUID | S_ISGID)) {
    struct statfs fs;
    const bool nosuid = raw::Syscall6(SYS_fstatfs, fd, reinterpret_cast<long>(&fs)) == 0 && (fs.f_flags & ST_NOSUID);
    if (!nosuid && (st.st_mode & S_ISUID)) euid = st.st_uid;
    if (!nosuid && (st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP)) egid = st.st_gid;
  }
  if (euid != ruid || egid != rgid) return true;
  if (ruid == 0) return false;  // root gains no capability it lacks
  char caps[4];
  return raw::Syscall6(SYS_fgetxattr, fd, reinterpret_cast<long>("security.capability"),
                       reinterpret_cast<long>(caps), sizeof(caps)) > 0;
}

// What exec'ing a file will do with the preload, and the file, for the record of an
// image the shim cannot follow.
struct ExecTarget {
  format::ExecUntracedWhy why{};  // 0: the next image loads the shim
  char exe[1024] = "";            // the opened file's canonical path ("" if not opened)
  bool follows() const { return why == format::ExecUntracedWhy{}; }
  // The executable to name: the opened file's path, else the path the caller gave.
  const char* ExeOr(const char* path) const { return exe[0] != '\0' ? exe : path; }
};

// Fills t (fresh: follows) from the file open on fd: a secure exec (SecureExec) or a
// static ELF executable will not load a preload. Unreadable or unknown files count as
// loading it (a script's interpreter is dynamic in practice; a bad file makes exec fail
// anyway).
void InspectFile(int fd, ExecTarget* t) {
  PathBuf link;  // named even for an image that follows: envp may still drop the preload
  link.Add("/proc/self/fd/").AddNum(static_cast<uint64_t>(fd));
  const long n = raw::Readlink(link.s, t->exe, sizeof(t->exe) - 1);
  t->exe[n > 0 ? n : 0] = '\0';
  struct stat st;
  if (raw::Syscall6(SYS_fstat, fd, reinterpret_cast<long>(&st)) != 0) return;
  if (SecureExec(fd, st)) {
    t->why = format::ExecUntracedWhy::kSecure;
    return;
  }
  ElfW(Ehdr) eh;
  if (raw::Pread(fd, &eh, sizeof(eh), 0) != sizeof(eh)) return;
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != (sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32)) {
    return;
  }
  if (eh.e_phentsize != sizeof(ElfW(Phdr))) return;
  for (unsigned i = 0; i < eh.e_phnum && i < 256; ++i) {
    ElfW(Phdr) ph;
    if (raw::Pread(fd, &ph, sizeof(ph), static_cast<off_t>(eh.e_phoff + i * sizeof(ph))) != sizeof(ph)) {
      return;
    }
    if (ph.p_type == PT_INTERP) return;
  }
  t->why = format::ExecUntracedWhy::kStatic;  // no program interpreter: no preloads
}

void InspectPath(int dirfd, const char* path, ExecTarget* t) {
  const int fd = raw::OpenAt(dirfd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  InspectFile(fd, t);
  raw::Close(fd);
}

// execvp's search: the first PATH entry holding an executable `file`.
void InspectSearched(const char* file, ExecTarget* t) {
  if (file == nullptr || *file == '\0') return;
  if (std::strchr(file, '/') != nullptr) return InspectPath(AT_FDCWD, file, t);
  const char* path = getenv("PATH");
  if (path == nullptr) path = "/bin:/usr/bin";
  for (const char* p = path;;) {
    const char* end = std::strchr(p, ':');
    const size_t len = end ? static_cast<size_t>(end - p) : std::strlen(p);
    PathBuf full;
    if (len == 0) {
      full.Add(file);  // an empty entry is the working directory
    } else {
      char dir[1024];
      const size_t n = len < sizeof(dir) - 1 ? len : sizeof(dir) - 1;
      std::memcpy(dir, p, n);
      dir[n] = '\0';
      full.Add(dir).Add("/").Add(file);
    }
    if (raw::Syscall6(SYS_faccessat, AT_FDCWD, reinterpret_cast<long>(full.s), X_OK) == 0) {
      return InspectPath(AT_FDCWD, full.s, t);
    }
    if (end == nullptr) return;
    p = end + 1;
  }
}

enum class ExecApi : uint8_t { kExecve, kExecv, kExecvp, kExecvpe, kExecl, kExeclp, kExecle,
                               kFexecve, kExecveat };

// What the program to be run with envp will do with the preload (inspect: one of the
// Inspect* above, on a fresh ExecTarget).
template <class Inspect> ExecTarget InspectExec(char* const* envp, Inspect&& inspect) {
  ExecTarget t;
  inspect(&t);
  if (t.follows() && !EnvPreloadsShim(envp)) t.why = format::ExecUntracedWhy::kNoPreload;
  return t;
}

// A program the shim will not follow, run by this process's exec (child_pid 0) or by a
// child's: its executable and argv (next_arg() gives each argument, then nullptr), so
// the report names the program that really ran.
template <class NextArg>
void EmitExecUntraced(uint64_t ts, format::ExecUntracedWhy why, const char* exe, uint64_t child_pid,
                      NextArg&& next_arg, int err = 0) {
  format::ExecUntraced u;
  u.ts = ts;
  u.exe = InternCString(exe);
  u.why = static_cast<uint64_t>(why);
  u.child_pid = child_pid;
  u.err = static_cast<uint64_t>(err);
  Emit(u);
  uint64_t i = 0;
  for (const char* arg = next_arg(); arg != nullptr; arg = next_arg()) {
    format::ExecArgv a;
    a.ts = ts;
    a.index = i++;
    a.value = InternCString(arg);
    Emit(a);
  }
}

void EmitExecUntraced(uint64_t ts, const ExecTarget& t, const char* path, char* const* argv,
                      uint64_t child_pid) {
  size_t i = 0;
  EmitExecUntraced(ts, t.why, t.ExeOr(path), child_pid,
                   [&]() -> const char* { return argv != nullptr ? argv[i] != nullptr ? argv[i++] : nullptr : nullptr; });
}

// A vfork child may not write into its parent's trace (it runs on the parent's memory
// and thread state), so before each exec it leaves this note of what it execs, and the
// parent writes the records at its first hook after the vfork (FlushVforkNote), when
// the child has exec'd or exited: a program that will not load the shim (the exec
// succeeded), or, when the last exec failed (why kExecFailed: the child exited without
// running another program), that attempt. A program that loads the shim (why 0) writes
// its own trace: nothing to write. Each vfork child takes a note of its
// own from a small pool, so threads that vfork at once each keep theirs (with more
// children in flight than notes, the later ones leave none). The parent's vforking thread
// is suspended until its child exec'd or exited, so the child's plain stores are
// complete when that thread reads them.
struct VforkNote {
  int state = 0;  // kNoteFree, kNoteWriting, kNoteReady (atomic)
  const ThreadState* owner = nullptr;  // the vforking thread (the child runs on its TLS)
  uint32_t pid = 0;
  format::ExecUntracedWhy why{};  // ExecTarget::why, then kExecFailed if the exec returned
  int err = 0;                    // the failed exec's errno
  char exe[1024] = "";         // a char array, not a PathBuf: no static initializer
  uint32_t argc = 0;           // arguments in args, each NUL-terminated
  char args[3072] = "";        // as many whole arguments as fit
};
constexpr int kNoteFree = 0, kNoteWriting = 1, kNoteReady = 2;
constexpr int kVforkNotes = 8;  // children in flight at once (33 KiB of .bss, touched on use)
VforkNote g_vfork_notes[kVforkNotes];

void FlushVforkNote();

bool ClaimNote(VforkNote& n, int from) {
  return __atomic_compare_exchange_n(&n.state, &from, kNoteWriting, false, __ATOMIC_ACQUIRE,
                                     __ATOMIC_RELAXED);
}

// The note for vfork child pid: the one it left at an earlier exec that failed (a PATH
// search tries each directory), else a free one; nullptr when every note is taken.
VforkNote* TakeVforkNote(uint32_t pid) {
  for (VforkNote& n : g_vfork_notes) {
    if (n.owner == &t_thread && n.pid == pid && ClaimNote(n, kNoteReady)) return &n;
  }
  for (VforkNote& n : g_vfork_notes) {
    if (ClaimNote(n, kNoteFree)) return &n;
  }
  return nullptr;
}

template <class F>
int VforkChildExec(const ExecTarget& t, const char* path, char* const* argv, F&& do_exec) {
  const auto pid = static_cast<uint32_t>(raw::Getpid());
  VforkNote* note = TakeVforkNote(pid);
  if (note == nullptr) return do_exec();
  VforkNote& n = *note;
  g_vfork_parent_hook = FlushVforkNote;
  n.owner = &t_thread;
  n.pid = pid;
  n.why = t.why;
  n.err = 0;
  const char* exe = t.ExeOr(path);
  size_t len = exe != nullptr ? std::strlen(exe) : 0;
  if (len >= sizeof(n.exe)) len = sizeof(n.exe) - 1;
  std::memcpy(n.exe, exe, len);
  n.exe[len] = '\0';
  n.argc = 0;
  size_t used = 0;
  for (int i = 0; argv != nullptr && argv[i] != nullptr; ++i) {
    const size_t a = std::strlen(argv[i]) + 1;
    if (used + a > sizeof(n.args)) break;
    std::memcpy(n.args + used, argv[i], a);
    used += a;
    ++n.argc;
  }
  __atomic_store_n(&n.state, kNoteReady, __ATOMIC_RELEASE);
  const int r = do_exec();
  const int err = errno;
  n.why = format::ExecUntracedWhy::kExecFailed;  // the child goes on: another exec, or its exit
  n.err = err;
  errno = err;
  return r;
}

// In a parent whose vfork child exec'd a program that does not load the shim, or
// exited after its last exec failed: writes the note's exec_untraced records
// (g_vfork_parent_hook, at the parent's first hook after the vfork). A program that
// loads the shim writes its own trace: nothing. Only the thread whose child wrote a
// note takes it: another thread could see it while that child still runs.
void FlushNote(VforkNote& n) {
  if (Recording() && n.why != format::ExecUntracedWhy{}) {
    ShimScope scope;
    uint32_t k = 0;
    const char* a = n.args;
    EmitExecUntraced(
        Ticks(), n.why, n.exe, n.pid,
        [&]() -> const char* {
          if (k == n.argc) return nullptr;
          const char* arg = a;
          a += std::strlen(a) + 1;
          ++k;
          return arg;
        },
        n.err);
  }
  __atomic_store_n(&n.state, kNoteFree, __ATOMIC_RELEASE);
}

void FlushVforkNote() {
  for (VforkNote& n : g_vfork_notes) {
    if (__atomic_load_n(&n.state, __ATOMIC_ACQUIRE) == kNoteReady && n.owner == &t_thread) FlushNote(n);
  }
}

}  // namespace

// A fork child's copies of the notes its parent had not written out yet are the parent's.
void ForgetVforkNote() {
  for (VforkNote& n : g_vfork_notes) __atomic_store_n(&n.state, kNoteFree, __ATOMIC_RELEASE);
}

namespace {

// Runs do_exec() with the trace handed over to the next image when inspect() (filling
// an ExecTarget) and envp say it adopts it, else records the image it will not follow;
// records the failure if the exec returns.
template <class Inspect, class F>
int TracedExec(const char* path, ExecApi api, char* const* envp, char* const* argv, Inspect&& inspect,
               F&& do_exec) {
  // A vfork child (the stub marked it): no records of its own, but a note for its parent
  // (a program that will not load the shim, or a last exec that failed).
  if (g_recording && InVforkChild()) {
    return VforkChildExec(InspectExec(envp, inspect), path, argv, do_exec);
  }
  // A child on our memory (a vfork child where no vfork stub marked it, as on aarch64)
  // must not touch its parent's trace: no records, no hand-over.
  if (!Recording() || raw::Getpid() != g_pid) return do_exec();
  bool handoff = false;
  {
    ShimScope scope;
    format::ExecStart r;
    r.ts = Ticks();
    r.path = InternCString(path);
    r.api = static_cast<uint64_t>(api);
    Emit(r);
    TakeSample();
    EmitClock();
    const ExecTarget target = InspectExec(envp, inspect);
    handoff = target.follows();
    if (!handoff) EmitExecUntraced(r.ts, target, path, argv, 0);
  }
  if (handoff) g_trace.PrepareExecHandoff();
  const int ret = do_exec();
  const int err = errno;
  if (handoff) g_trace.UndoExecHandoff();
  {
    ShimScope scope;
    format::ExecFailed r;
    r.ts = Ticks();
    r.path = InternCString(path);
    r.err = static_cast<uint64_t>(err);
    Emit(r);
  }
  errno = err;
  return ret;
}

// execl-style arguments: counted first, then gathered into an argv sized exactly (on
// the stack, as glibc's own execl does), so no count is too large.
size_t CountExeclArgs(const char* first, va_list ap) {
  size_t n = 1;  // first
  if (first == nullptr) return 0;
  while (va_arg(ap, char*) != nullptr) ++n;
  return n;
}

// Fills argv[0..n] (argv[n] = NULL) and returns what follows the NULL when want_envp.
char** GatherExeclArgs(const char* first, va_list ap, char** argv, size_t n, bool want_envp) {
  if (n > 0) argv[0] = const_cast<char*>(first);
  for (size_t i = 1; i < n; ++i) argv[i] = va_arg(ap, char*);
  argv[n] = nullptr;
  if (n > 0) (void)va_arg(ap, char*);  // the terminating NULL
  return want_envp ? va_arg(ap, char**) : nullptr;
}

// In an execl-style hook: declares `argv`, the variadic arguments after `first` gathered
// into an exact-size array, and `envp`, what follows their NULL when want_envp (else
// nullptr). A macro because va_start and the alloca must run in the hook's own frame,
// which stays alive until the exec.
#define COLABTRACE_GATHER_EXECL(first, want_envp)                                      \
  va_list execl_ap;                                                                    \
  va_start(execl_ap, first);                                                           \
  const size_t execl_n = CountExeclArgs(first, execl_ap);                              \
  va_end(execl_ap);                                                                    \
  auto** argv = static_cast<char**>(__builtin_alloca((execl_n + 1) * sizeof(char*))); \
  va_start(execl_ap, first);                                                           \
  [[maybe_unused]] char** envp = GatherExeclArgs(first, execl_ap, argv, execl_n, want_envp); \
  va_end(execl_ap)

enum class SpawnApi : uint8_t { kPosixSpawn = 0, kPosixSpawnp = 1 };

// r: posix_spawn's result (0 or an error number).
// The Spawn record; and, when the child runs a program that will not load the shim (so
// it writes no trace), that program's exec_untraced records.
void RecordSpawn(int r, const pid_t* pid, const char* path, SpawnApi api, char* const* argv,
                 char* const* envp) {
  if (!Recording()) return;
  ShimScope scope;
  format::Spawn s;
  s.ts = Ticks();
  s.child_pid = r == 0 && pid != nullptr ? *pid : -static_cast<int64_t>(r);
  s.path = InternCString(path);
  s.api = static_cast<uint64_t>(api);
  Emit(s);
  if (s.child_pid <= 0) return;
  const ExecTarget target = InspectExec(envp, [&](ExecTarget* t) {
    if (api == SpawnApi::kPosixSpawnp) {
      InspectSearched(path, t);
    } else {
      InspectPath(AT_FDCWD, path, t);
    }
  });
  if (!target.follows()) EmitExecUntraced(s.ts, target, path, argv, static_cast<uint64_t>(s.child_pid));
}

// clone() without CLONE_VM: the child starts here, on its own copy of our memory.
struct CloneStart {
  int (*fn)(void*);
  void* arg;
};

int CloneChildMain(void* p) {
  const CloneStart start = *static_cast<CloneStart*>(p);
  AfterForkInChild(LibcState::kLocksUnreset);
  const int r = start.fn(start.arg);
  // glibc's clone ends the child with the exit system call and fn's result.
  RecordExit(r, format::ExitHow::kUnderscoreExit, /*finish=*/true);
  return r;
}

}  // namespace
}  // namespace colabtrace::shim

// ---- hooks -------------------------------------------------------------------------------
using namespace colabtrace::shim;  // NOLINT: the hooks below are thin entry points

// Hook entry points: default visibility; the version script limits exports to hooks.def.
#pragma GCC visibility push(default)
extern "C" {

// The vfork stub (vfork_x86_64.S) calls this when it runs before the constructor.
__attribute__((visibility("hidden"))) void* colabtrace_resolve_vfork() {
  extern void* colabtrace_real_vfork;
  void* f = __atomic_load_n(&colabtrace_real_vfork, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    f = ResolveNext("vfork");
    __atomic_store_n(&colabtrace_real_vfork, f, __ATOMIC_RELEASE);
  }
  return f;
}

pid_t fork(void) {
  const uint64_t t0 = Ticks();
  const pid_t r = real::fork.get()();  // the child re-opens its trace in the atfork handler
  RecordFork(r, colabtrace::format::ForkHow::kFork, t0);
  return r;
}

pid_t _Fork(void) {
  const uint64_t t0 = Ticks();
  const pid_t r = real::_Fork.get()();  // _Fork runs no atfork handlers and resets no lock
  if (r == 0) {
    AfterForkInChild(LibcState::kLocksUnreset);
  } else {
    RecordFork(r, colabtrace::format::ForkHow::kFork, t0);
  }
  return r;
}

int clone(int (*fn)(void*), void* stack, int flags, void* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  pid_t* parent_tid = va_arg(ap, pid_t*);
  void* tls = va_arg(ap, void*);
  pid_t* child_tid = va_arg(ap, pid_t*);
  va_end(ap);
  if (flags & CLONE_VM) {
    // The child runs on our memory (and, without CLONE_SETTLS, on this thread's TLS):
    // like a vfork child, its hooks pass through until it execs.
    if (!(flags & CLONE_THREAD)) t_thread.vfork_pending = 1;
    return real::clone.get()(fn, stack, flags, arg, parent_tid, tls, child_tid);
  }
  const uint64_t t0 = Ticks();
  CloneStart start{fn, arg};  // the child reads its own copy of this frame
  const int r = real::clone.get()(CloneChildMain, stack, flags, &start, parent_tid, tls,
                                  child_tid);
  RecordFork(r, colabtrace::format::ForkHow::kFork, t0);
  return r;
}

int execve(const char* path, char* const argv[], char* const envp[]) {
  return TracedExec(path, ExecApi::kExecve, envp, argv, [&](ExecTarget* t) { InspectPath(AT_FDCWD, path, t); },
                    [&] { return real::execve.get()(path, argv, envp); });
}

int execv(const char* path, char* const argv[]) {
  return TracedExec(path, ExecApi::kExecv, environ, argv,
                    [&](ExecTarget* t) { InspectPath(AT_FDCWD, path, t); },
                    [&] { return real::execv.get()(path, argv); });
}

int execvp(const char* file, char* const argv[]) {
  return TracedExec(file, ExecApi::kExecvp, environ, argv, [&](ExecTarget* t) { InspectSearched(file, t); },
                    [&] { return real::execvp.get()(file, argv); });
}

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  return TracedExec(file, ExecApi::kExecvpe, envp, argv, [&](ExecTarget* t) { InspectSearched(file, t); },
                    [&] { return real::execvpe.get()(file, argv, envp); });
}

int fexecve(int fd, char* const argv[], char* const envp[]) {
  return TracedExec("(fexecve)", ExecApi::kFexecve, envp, argv, [&](ExecTarget* t) { InspectFile(fd, t); },
                    [&] { return real::fexecve.get()(fd, argv, envp); });
}

int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  return TracedExec(
      path, ExecApi::kExecveat, envp, argv,
      [&](ExecTarget* t) {
        if ((flags & AT_EMPTY_PATH) && path != nullptr && *path == '\0') {
          InspectFile(dirfd, t);
        } else {
          InspectPath(dirfd, path, t);
        }
      },
      [&] { return real::execveat.get()(dirfd, path, argv, envp, flags); });
}

int execl(const char* path, const char* arg, ...) {
  COLABTRACE_GATHER_EXECL(arg, false);
  return TracedExec(path, ExecApi::kExecl, environ, argv,
                    [&](ExecTarget* t) { InspectPath(AT_FDCWD, path, t); },
                    [&] { return real::execv.get()(path, argv); });
}

int execlp(const char* file, const char* arg, ...) {
  COLABTRACE_GATHER_EXECL(arg, false);
  return TracedExec(file, ExecApi::kExeclp, environ, argv, [&](ExecTarget* t) { InspectSearched(file, t); },
                    [&] { return real::execvp.get()(file, argv); });
}

int execle(const char* path, const char* arg, ...) {
  COLABTRACE_GATHER_EXECL(arg, true);
  return TracedExec(path, ExecApi::kExecle, envp, argv, [&](ExecTarget* t) { InspectPath(AT_FDCWD, path, t); },
                    [&] { return real::execve.get()(path, argv, envp); });
}
#undef COLABTRACE_GATHER_EXECL

int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  const int r = real::posix_spawn.get()(pid, path, actions, attr, argv, envp);
  RecordSpawn(r, pid, path, SpawnApi::kPosixSpawn, argv, envp);
  return r;
}

int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                 const posix_spawnattr_t* attr, char* const argv[], char* const envp[]) {
  const int r = real::posix_spawnp.get()(pid, file, actions, attr, argv, envp);
  RecordSpawn(r, pid, file, SpawnApi::kPosixSpawnp, argv, envp);
  return r;
}

}  // extern "C"
#pragma GCC visibility pop
