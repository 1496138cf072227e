// Process start-up and end: the shim's constructor, opening (or adopting) the trace,
// starting the capability modules, the fork child's fresh trace, and every way a process
// exits (return from main, exit, _exit, _Exit, quick_exit, the destructor).
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/stat.h>

#include <cstring>

#include "config.h"
#include "core_hooks.h"
#include "lifecycle.h"
#include "modules.h"
#include "raw.h"
#include "sampling.h"
#include "state.h"
#include "step_agg.h"
#include "text.h"
#include "writer.h"

extern char** environ;

// The real vfork and syscall, for the assembly stubs (vfork_x86_64.S,
// io/syscall_x86_64.S).
extern "C" __attribute__((visibility("hidden"))) void* colabtrace_real_vfork;
void* colabtrace_real_vfork = nullptr;
extern "C" __attribute__((visibility("hidden"))) void* colabtrace_real_syscall;
void* colabtrace_real_syscall = nullptr;

namespace colabtrace::shim {

int g_argc = 0;
char** g_argv = nullptr;
char g_shim_path[512];

namespace {

using format::ExitHow;

int g_exit_recorded = 0;
int g_finished = 0;
bool g_modules_started = false;  // false after _Fork or clone: see BeginTrace

// ---- opening the trace -----------------------------------------------------------------

void ProgramName(char* out, size_t cap) {
  const char* src = (g_argv && g_argc > 0 && g_argv[0]) ? g_argv[0] : "unknown";
  if (const char* slash = std::strrchr(src, '/')) src = slash + 1;
  size_t n = 0;
  for (; *src && n + 1 < cap && n < 48; ++src) {
    const char c = *src;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out[n++] = ok ? c : '_';
  }
  if (n == 0) out[n++] = '_';
  out[n] = '\0';
}

bool IsDirectory(const char* path) {
  struct stat st;
  return raw::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path),
                       reinterpret_cast<long>(&st), 0) == 0 &&
         S_ISDIR(st.st_mode);
}

bool CreateTraceFile() {
  char prog[64];
  ProgramName(prog, sizeof(prog));
  PathBuf base;
  const char* out = g_config.out;
  const size_t out_len = std::strlen(out);
  if (out_len == 0) {
    base.Add("colabtrace.");
  } else if (out[out_len - 1] == '/' || IsDirectory(out)) {
    if (out[out_len - 1] == '/') raw::Syscall6(SYS_mkdirat, AT_FDCWD, reinterpret_cast<long>(out), 0700);
    base.Add(out).Add(out[out_len - 1] == '/' ? "" : "/").Add("colabtrace.");
  } else {
    base.Add(out).Add(".");  // a file prefix
  }
  base.Add(prog).Add(".").AddNum(static_cast<uint64_t>(g_pid));
  const uint64_t tps = InitTicks();
  const uint64_t features = g_ticks_are_tsc ? uint64_t{format::kFeatureTicksAreTsc} : 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    PathBuf path = base;
    if (attempt > 0) path.Add(".").AddNum(static_cast<uint64_t>(attempt));
    path.Add(".ctrace");
    if (g_trace.Create(path.s, static_cast<uint32_t>(g_pid), features, tps, Ticks(),
                       MonotonicNs(), RealtimeNs())) {
      return true;
    }
    // A taken name: try the next suffix. Anything else: the directory is unusable.
    if (g_trace.create_error() != EEXIST) {
      PathBuf msg;
      msg.Add("cannot create trace file ").Add(path.s).Add(": errno ")
          .AddNum(static_cast<uint64_t>(g_trace.create_error()))
          .Add("; not tracing this process");
      Say(msg.s, false);
      return false;
    }
  }
  return false;
}

void StartModules(StartKind kind) {
  g_modules_started = true;
  SyncModuleMap();
  WatchThreadExits(ReleaseNotes);
  if (IoModuleStart) IoModuleStart(kind);
  if (LibsModuleStart) LibsModuleStart(kind);
  if (GpuModuleStart) GpuModuleStart(kind);
  if (CuptiModuleStart) CuptiModuleStart(kind);
  if (PythonModuleStart) PythonModuleStart(kind);
}

void AfterForkAtfork() { AfterForkInChild(LibcState::kUsable); }

}  // namespace

void BeginTrace(format::ProcessOrigin origin, uint32_t parent_tid, char** envp, LibcState libc) {
  g_recording = false;
  DisarmPeriodicSamples();
  g_trace.SetLimits(uint64_t{g_config.window_mb} << 20, g_config.window_s, uint64_t{g_config.max_mb} << 20);
  if (origin == format::ProcessOrigin::kInitial &&
      g_trace.AdoptInherited(static_cast<uint32_t>(g_pid))) {
    origin = format::ProcessOrigin::kExec;
    InitTicksFromTrace((g_trace.header()->features & format::kFeatureTicksAreTsc) != 0);
  } else if (!CreateTraceFile()) {
    return;
  }
  g_recording = true;
  ShimScope scope;
  EmitClock();
  FingerprintProcess(origin, parent_tid, envp);
  // The host fingerprint reads through libc (uname, sysconf): never where libc's locks
  // may be held by a thread that no longer exists.
  if (origin != format::ProcessOrigin::kExec && libc == LibcState::kUsable) {
    FingerprintEnvironment();
  }
  NoteConfigErrors();
  TakeSample();
  RefineTickRate();
  ArmPeriodicSamples();
  // The modules' start walks the loader's list (dl_iterate_phdr) and may allocate: after
  // _Fork or a raw clone it is skipped, and the child's trace has no module map until
  // the libraries module next syncs it (its dlopen/dlsym hooks).
  g_modules_started = false;
  if (libc == LibcState::kLocksUnreset) return;
  StartModules(origin == format::ProcessOrigin::kForkChild ? StartKind::kForkChild
               : origin == format::ProcessOrigin::kExec    ? StartKind::kExecAdopted
                                                           : StartKind::kProcessStart);
}

void AfterForkInChild(LibcState libc) {
  const int parent_tid = static_cast<int>(t_thread.tid);
  ResetStateLockInChild();
  g_pid = raw::Getpid();
  t_thread.vfork_pending = 0;
  t_thread.batch_wait_since = 0;  // the parent's wait is not the child's
  t_thread.collective.since = 0;  // nor its collective
  ResetStepAgg();                 // nor its steps
  ForgetVforkNote();
  if (!g_trace.is_open()) return;
  g_recording = false;
  g_trace.AbandonInChild();
  ResetInterning();
  __atomic_add_fetch(&g_generation, 1, __ATOMIC_ACQ_REL);
  if (t_thread.chunk != nullptr && t_thread.own_map) g_trace.ReleaseChunk(t_thread.chunk, /*own_map=*/true);
  t_thread.chunk = t_thread.pos = t_thread.end = nullptr;
  t_thread.own_map = false;
  g_exit_recorded = 0;
  g_finished = 0;
  BeginTrace(format::ProcessOrigin::kForkChild, static_cast<uint32_t>(parent_tid), environ, libc);
}

namespace {

void RecordExitHere(int64_t code, ExitHow how, bool finish);

}  // namespace

void RecordExit(int64_t code, ExitHow how, bool finish) {
  // A vfork child (e.g. _exit(127) after a failed exec) shares its parent's memory, and
  // a raw clone() child its parent's trace mapping: neither may write the parent's exit
  // record or close the parent's trace.
  if (raw::Getpid() != g_pid) return;
  // The exit's work (the modules' last records, a sample) needs several KiB of stack:
  // on an alternate signal stack it runs on the shim's own.
  if (raw::OnAlternateSignalStack()) {
    struct Args {
      int64_t code;
      ExitHow how;
      bool finish;
    } args{code, how, finish};
    auto run = [](void* p) {
      const auto* a = static_cast<const Args*>(p);
      RecordExitHere(a->code, a->how, a->finish);
    };
    if (RunOnShimStack(run, &args)) return;
  }
  RecordExitHere(code, how, finish);
}

namespace {

void RecordExitHere(int64_t code, ExitHow how, bool finish) {
  if (g_recording && __atomic_exchange_n(&g_exit_recorded, 1, __ATOMIC_ACQ_REL) == 0) {
    ShimScope scope;
    if (g_modules_started) {  // a module that never started has nothing to finish
      if (GpuModuleFinish) GpuModuleFinish();
      if (LibsModuleFinish) LibsModuleFinish();
      if (CuptiModuleFinish) CuptiModuleFinish();
    }
    TakeSample();
    format::Exit e;
    e.ts = Ticks();
    e.code = code;
    e.how = static_cast<uint64_t>(how);
    Emit(e);
    EmitClock();
    RefineTickRate();  // the longest baseline this process will have
  }
  if (finish && __atomic_exchange_n(&g_finished, 1, __ATOMIC_ACQ_REL) == 0) g_trace.Close();
}

}  // namespace

// ---- start and end ------------------------------------------------------------------

namespace {

__attribute__((constructor(101))) void ShimInit(int argc, char** argv, char** envp) {
  g_pid = raw::Getpid();
  g_argc = argc;
  g_argv = argv;
  // Always, even when not tracing: the stubs must reach the real vfork and syscall.
  colabtrace_real_vfork = ResolveNext("vfork");
  __atomic_store_n(&colabtrace_real_syscall, ResolveNext("syscall"), __ATOMIC_RELEASE);
  LoadConfig();
  if (g_config.disable) {
    TraceFile::CloseInherited(static_cast<uint32_t>(g_pid));  // never leak a hand-over
    return;
  }
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&ShimInit), &self) != 0 && self.dli_fname != nullptr) {
    std::strncpy(g_shim_path, self.dli_fname, sizeof(g_shim_path) - 1);
  }
  FindCgroup();
  // environ, not the constructor's envp: a library whose constructor ran before ours
  // may have called setenv, and the job sees the environment as it is now.
  BeginTrace(format::ProcessOrigin::kInitial, 0, environ != nullptr ? environ : envp,
             LibcState::kUsable);
  if (!g_recording) return;
  COLABTRACE_RESOLVE_REAL_FNS(COLABTRACE_CORE_HOOKS)
  pthread_atfork(nullptr, nullptr, AfterForkAtfork);
  InstallFatalSignalHandlers();
}

__attribute__((destructor(101))) void ShimFini() {
  // exit() and a return from main recorded the code already; this only closes.
  RecordExit(-1, ExitHow::kDestructor, /*finish=*/true);
}

int (*g_real_main)(int, char**, char**) = nullptr;

int MainWrapper(int argc, char** argv, char** envp) {
  const int r = g_real_main(argc, argv, envp);
  RecordExit(r, ExitHow::kReturnFromMain, /*finish=*/false);
  return r;
}

}  // namespace
}  // namespace colabtrace::shim

// ---- hooks -------------------------------------------------------------------------------
using namespace colabtrace::shim;  // NOLINT: the hooks below are thin entry points
using colabtrace::format::ExitHow;

// Hook entry points: default visibility; the version script limits exports to hooks.def.
#pragma GCC visibility push(default)
extern "C" {

int __libc_start_main(int (*main)(int, char**, char**), int argc, char** argv, void (*init)(void),
                      void (*fini)(void), void (*rtld_fini)(void), void* stack_end) {
  g_real_main = main;
  return real::__libc_start_main.get()(MainWrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

void exit(int code) {
  RecordExit(code, ExitHow::kExit, /*finish=*/false);
  real::exit.get()(code);
  __builtin_unreachable();
}

void _exit(int code) {
  RecordExit(code, ExitHow::kUnderscoreExit, /*finish=*/true);
  real::_exit.get()(code);
  __builtin_unreachable();
}

void _Exit(int code) {
  RecordExit(code, ExitHow::kUnderscoreExit, /*finish=*/true);
  real::_Exit.get()(code);
  __builtin_unreachable();
}

void quick_exit(int code) {
  RecordExit(code, ExitHow::kQuickExit, /*finish=*/true);
  real::quick_exit.get()(code);
  __builtin_unreachable();
}

}  // extern "C"
#pragma GCC visibility pop
