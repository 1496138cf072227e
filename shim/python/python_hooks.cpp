// The Python module's start-up and the entry points the Python start-up hook calls.
//
// Start-up (after the core opened the trace): find the interpreter for Python stacks,
// and, with COLABTRACE_PYTHON=1 in a Python process (or with it unset in a process that
// carries a launcher's rank variables), put the start-up hook's directory
// in front of PYTHONPATH so that Python imports its sitecustomize. That is the only
// change the shim makes to a program's environment, and the hook undoes it as soon as
// it runs (os.environ and sys.path are restored to what they would have been), so the
// program and its children see the environment they were given. Under `python -E` or
// `-I` Python ignores PYTHONPATH, and under `-S` it imports no sitecustomize: the hook
// does not run, and the variable keeps the extra entry for children (with `-S`, sys.path
// too).
//
// Entry points (python_hooks.def), called through ctypes:
//   int colabtrace_trace_path(char* buf, size_t n)   the trace file's path; its length
//                                                   or -1 (no trace).
//   int colabtrace_python_package(name, version, modules)   a PyPackage record; 0 or -1.
//   int colabtrace_python_exception(how, type, message, message_bytes, py_stack, frames)
//                                         a PyException record (how: PyExceptionHow;
//                                         message: message_bytes bytes, any bytes, cut
//                                         here to kPyExceptionMessageMax at a UTF-8
//                                         character boundary); 0 or -1.
//   int colabtrace_python_quiet(int on)   on=1: the calling thread's calls are not
//                                         recorded (the hook's own work: scanning the
//                                         installed distributions at exit); on=0: again.
// and torch.distributed's collectives (shim/python/collectives.cpp).
#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "config.h"
#include "lifecycle.h"
#include "modules.h"
#include "python_stack.h"
#include "raw.h"
#include "real.h"
#include "writer.h"

namespace colabtrace::shim::python {
namespace {

// The start-up hook's folder, relative to this library: the installed package keeps the
// shim in colabtrace/_lib/ next to colabtrace/_startup/; a build tree has lib/ next to
// python/colabtrace/_startup/.
bool FindHookDir(char* out, size_t cap) {
  Dl_info self;
  if (dladdr(reinterpret_cast<void*>(&FindHookDir), &self) == 0 || self.dli_fname == nullptr) return false;
  const char* slash = std::strrchr(self.dli_fname, '/');
  if (slash == nullptr) return false;
  const int dir_len = static_cast<int>(slash - self.dli_fname);
  static constexpr const char* kCandidates[] = {"/../_startup", "/../python/colabtrace/_startup"};
  for (const char* rel : kCandidates) {
    char path[1024];
    const int n = std::snprintf(path, sizeof(path), "%.*s%s/sitecustomize.py", dir_len, self.dli_fname, rel);
    if (n <= 0 || static_cast<size_t>(n) >= sizeof(path)) continue;
    struct stat st;
    if (raw::Syscall6(SYS_newfstatat, AT_FDCWD, reinterpret_cast<long>(path), reinterpret_cast<long>(&st), 0) != 0) {
      continue;
    }
    char real[PATH_MAX];
    if (realpath(path, real) == nullptr) continue;
    const size_t len = std::strlen(real) - std::strlen("/sitecustomize.py");
    if (len >= cap) continue;
    std::memcpy(out, real, len);
    out[len] = '\0';
    return true;
  }
  return false;
}

// Whether the interpreter's command line turns off what loads the hook: -E and -I
// ignore PYTHONPATH, -S skips the site module (which imports sitecustomize). Then the hook
// would never run to take its folder out of PYTHONPATH again, and the program and its
// children would see it: leave PYTHONPATH alone. Reads CPython's short options up to
// the command (-c, -m, a script, "-" or "--"); -W and -X take an argument, attached or
// the next word; long options are skipped (--check-hash-based-pycs takes the next).
bool CommandLineSkipsTheHook() {
  for (int i = 1; g_argv != nullptr && i < g_argc && g_argv[i] != nullptr; ++i) {
    const char* a = g_argv[i];
    if (a[0] != '-' || a[1] == '\0' || std::strcmp(a, "--") == 0) return false;
    if (a[1] == '-') {
      if (std::strcmp(a, "--check-hash-based-pycs") == 0) ++i;
      continue;
    }
    for (const char* c = a + 1; *c != '\0'; ++c) {
      if (*c == 'E' || *c == 'I' || *c == 'S') return true;
      if (*c == 'c' || *c == 'm') return false;  // the rest is the command
      if (*c == 'W' || *c == 'X') {
        if (c[1] == '\0') ++i;  // the argument is the next word
        break;
      }
    }
  }
  return false;
}

// Whether this process carries a launcher's rank variables (torchrun's RANK, Slurm's,
// Open MPI's, PMI's): a rank of a multi-rank job, where the hook is on by default.
bool CarriesRankVariables() {
  static constexpr const char* kRankVariables[] = {"RANK", "TORCHELASTIC_RUN_ID", "SLURM_PROCID",
                                                   "OMPI_COMM_WORLD_RANK", "PMI_RANK"};
  for (const char* name : kRankVariables) {
    if (getenv(name) != nullptr) return true;
  }
  return false;
}

void InstallStartupHook() {
  // COLABTRACE_PYTHON=1 turns the hook on, =0 off; unset, it is on in a rank (so that a
  // multi-rank job's collectives are seen with no change to how it is launched).
  const char* flag = getenv("COLABTRACE_PYTHON");
  const bool on = flag != nullptr ? std::strcmp(flag, "1") == 0 : CarriesRankVariables();
  if (!on) return;
  if (CommandLineSkipsTheHook()) return;
  if (RealDlsym()(RTLD_DEFAULT, "Py_Initialize") == nullptr) {  // not a Python process
    dlerror();
    return;
  }
  char dir[1024];
  if (!FindHookDir(dir, sizeof(dir))) {
    if (flag != nullptr) Say("COLABTRACE_PYTHON=1 but the Python start-up hook was not found next to the shim");
    return;
  }
  // The hook removes exactly this prefix again: "DIR" alone means PYTHONPATH was unset,
  // "DIR:DIR" that it was empty ("DIR:" would put the working directory on sys.path:
  // CPython reads an empty entry as '').
  const char* old = getenv("PYTHONPATH");
  char value[8192];
  const int n = old == nullptr  ? std::snprintf(value, sizeof(value), "%s", dir)
                : old[0] == '\0' ? std::snprintf(value, sizeof(value), "%s:%s", dir, dir)
                                 : std::snprintf(value, sizeof(value), "%s:%s", dir, old);
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(value)) return;
  setenv("PYTHONPATH", value, 1);  // inside our ShimScope: the env hook does not record it
}

__attribute__((constructor(102))) void PythonModuleInit() {
  if (!g_recording) return;
  ShimScope scope;
  InitPythonStacks();
  NotePythonStacksUnavailable();
  InstallStartupHook();
}

}  // namespace
}  // namespace colabtrace::shim::python

namespace colabtrace::shim {

// A fork child's trace is its own: it says again that this interpreter's stacks are
// unavailable. (At process start and after an exec the constructor above says it, once
// the interpreter is looked up.)
void PythonModuleStart(StartKind kind) {
  if (kind == StartKind::kForkChild) python::NotePythonStacksUnavailable();
}

}  // namespace colabtrace::shim

using namespace colabtrace::shim;  // NOLINT

#pragma GCC visibility push(default)
extern "C" {

int colabtrace_trace_path(char* buf, size_t n) {
  if (buf == nullptr || n == 0 || !g_trace.is_open()) return -1;
  const size_t len = std::strlen(g_trace.path());  // the shim holds no descriptor for it
  if (len == 0 || len >= n) return -1;
  std::memcpy(buf, g_trace.path(), len + 1);
  return static_cast<int>(len);
}

int colabtrace_python_quiet(int on) {
  // The re-entry flag ShimScope sets: every hook on this thread passes straight through.
  ThreadState& t = t_thread;
  if (on != 0) {
    if (t.busy != 0) return -1;
    t.busy = 1;
  } else {
    t.busy = 0;
  }
  return 0;
}

int colabtrace_python_package(const char* name, const char* version, const char* modules) {
  if (name == nullptr || !Recording()) return -1;
  ShimScope scope;
  if (!scope.entered()) return -1;
  colabtrace::format::PyPackage r;
  r.ts = Ticks();
  r.name = InternCString(name);
  r.version = InternCString(version);
  r.modules = InternCString(modules);
  Emit(r);
  return 0;
}

int colabtrace_python_exception(int how, const char* type, const char* message, int message_bytes,
                                 const char* py_stack, int frames) {
  if (type == nullptr || !Recording()) return -1;
  ShimScope scope;
  if (!scope.entered()) return -1;
  const size_t whole = message != nullptr && message_bytes > 0 ? static_cast<size_t>(message_bytes) : 0;
  size_t kept = whole;
  if (kept > colabtrace::format::kPyExceptionMessageMax) {
    kept = colabtrace::format::kPyExceptionMessageMax;
    // Never half a character: back off over UTF-8 continuation bytes (10xxxxxx) to the
    // start of the character the cap fell into.
    while (kept > 0 && (static_cast<uint8_t>(message[kept]) & 0xC0) == 0x80) --kept;
  }
  colabtrace::format::PyException r;
  r.ts = Ticks();
  r.how = how > 0 ? static_cast<uint64_t>(how) : 0;
  r.type = InternCString(type);
  r.message = InternString(std::string_view(message != nullptr ? message : "", kept));
  r.message_bytes = whole;
  r.py_stack = InternCString(py_stack);
  r.frames = frames > 0 ? static_cast<uint64_t>(frames) : 0;
  Emit(r);
  return 0;
}

}  // extern "C"
#pragma GCC visibility pop
