// The dynamic-loading hooks: dlopen, dlmopen, dlclose, dlsym, dlvsym, dlerror, dlinfo.
//
// Behaviour is glibc's, exactly:
//   - dlopen/dlmopen/dlsym/dlvsym run as if called from the hook's caller
//     (caller_trampoline.h), so RUNPATH, $ORIGIN, namespaces, RTLD_NEXT and RTLD_DEFAULT
//     resolve as without the shim;
//   - calls made from inside libcolabtrace.so pass straight through (the shim is their
//     caller), as do all calls while the shim is not recording;
//   - dlerror(): recording a failed load needs its text, and reading it with dlerror()
//     consumes it. The hook copies the text into a per-thread buffer and hands that copy
//     to the program's next dlerror() call; glibc's own state is left "already
//     returned", so the call after that returns NULL, as it would have. Every other dl*
//     hook forgets the copy first, because glibc clears its error at the start of each
//     of those functions.
//   - dlsym/dlvsym pass each successful lookup through GpuInterposeSymbol (shim/gpu) when
//     it is linked in, and do nothing else: they record nothing. When the GPU module
//     withdraws a result (the name resolved only to the shim's own hook), dlerror() gives
//     glibc's "undefined symbol" text for it.
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "caller_trampoline.h"
#include "elf_dynamic.h"
#include "inventory.h"
#include "modules.h"
#include "raw.h"
#include "real.h"
#include "state.h"
#include "writer.h"

#include "libs/libs_hooks.def"

namespace colabtrace::shim {
COLABTRACE_DEFINE_REAL_FNS(COLABTRACE_LIBS_HOOKS)
}  // namespace colabtrace::shim

namespace colabtrace::shim::libs {
namespace {

using format::LibApi;

// ---- per-thread dlerror copy ----------------------------------------------------------

struct DlThread {
  const char* pending;  // the copy the next dlerror() returns, or nullptr
  char* buf;            // mmap'ed, cap bytes
  size_t cap;
};
constinit thread_local DlThread t_dl CT_TLS = {nullptr, nullptr, 0};

pthread_key_t g_buf_key;
int g_buf_key_ready = 0;

void FreeThreadBuffer(void*) {
  if (t_dl.buf != nullptr) raw::Munmap(t_dl.buf, t_dl.cap);
  t_dl.buf = nullptr;
  t_dl.cap = 0;
  t_dl.pending = nullptr;
}

using DlerrorFn = char* (*)();

// glibc's dlerror, resolved before any call whose error we may read: resolving goes
// through dlsym, which clears the calling thread's dlerror state.
DlerrorFn RealDlerror() { return real::dlerror.get(); }

// Reads the pending error with the real dlerror (which marks it returned) and keeps a
// copy for the program's next dlerror(). Returns the text, or nullptr if none.
// Makes sure this thread's copy buffer holds n bytes; false when it cannot.
bool ReserveCopy(size_t n) {
  if (t_dl.cap >= n) return true;
  const size_t cap = (n + 4095) & ~size_t{4095};
  void* m = raw::Mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw::MmapFailed(m)) return false;
  if (t_dl.buf != nullptr) raw::Munmap(t_dl.buf, t_dl.cap);
  t_dl.buf = static_cast<char*>(m);
  t_dl.cap = cap;
  if (__atomic_load_n(&g_buf_key_ready, __ATOMIC_ACQUIRE)) pthread_setspecific(g_buf_key, m);
  return true;
}

const char* CaptureDlerror(DlerrorFn real_dlerror) {
  char* e = real_dlerror();
  if (e == nullptr) return nullptr;
  const size_t n = std::strlen(e) + 1;
  if (!ReserveCopy(n)) {
    // No copy: hand out glibc's own buffer, valid until this thread's next dl* call.
    t_dl.pending = e;
    return e;
  }
  std::memcpy(t_dl.buf, e, n);
  t_dl.pending = t_dl.buf;
  return t_dl.buf;
}

// A lookup glibc answered but the GPU module withdrew (it found only the shim's own hook):
// the program must see what glibc says when nothing defines the name,
// "<object>: undefined symbol: <name>[, version <v>]", where <object> is the object whose
// scope was searched (the caller's for RTLD_DEFAULT/RTLD_NEXT, else the handle's) and the
// program name for the main program.
void SetUndefinedSymbolError(void* handle, const CallerObject& caller, const char* name,
                             const char* version) {
  const char* object = nullptr;
  if (handle == RTLD_DEFAULT || handle == RTLD_NEXT) {
    object = caller.name;
  } else {
    object = static_cast<const struct link_map*>(handle)->l_name;
  }
  if (object == nullptr || object[0] == '\0') object = program_invocation_name;
  const char* parts[] = {object, ": undefined symbol: ", name, version ? ", version " : "",
                         version ? version : ""};
  size_t n = 1;
  for (const char* p : parts) n += std::strlen(p);
  if (!ReserveCopy(n)) return;
  char* out = t_dl.buf;
  for (const char* p : parts) {
    const size_t k = std::strlen(p);
    std::memcpy(out, p, k);
    out += k;
  }
  *out = '\0';
  t_dl.pending = t_dl.buf;
}

// Passes a successful lookup through the GPU module (which may hand back its wrapper).
void* Interpose(void* r, void* handle, const CallerObject& caller, const char* name,
                const char* version) {
  if (r == nullptr || GpuInterposeSymbol == nullptr) return r;
  void* w = GpuInterposeSymbol(name, r);
  if (w == nullptr) SetUndefinedSymbolError(handle, caller, name, version);
  return w;
}

// Whether glibc may consult LD_AUDIT modules on dlsym (la_symbind gets the caller's
// link_map, so even a lookup in an explicit handle depends on the caller then).
// 0: not known yet (before LibsModuleStart), 1: no auditing, 2: auditing.
int g_audit_state = 0;

void DetectAuditing() {
  const char* env = getenv("LD_AUDIT");
  bool audit = env != nullptr && env[0] != '\0';
  if (const struct link_map* main_map = _r_debug.r_map; main_map != nullptr) {
    if (ReadElfDynamic(main_map->l_ld, main_map->l_addr).audit) audit = true;
  }
  __atomic_store_n(&g_audit_state, audit ? 2 : 1, __ATOMIC_RELEASE);
}

// Only RTLD_DEFAULT and RTLD_NEXT lookups (and any lookup under auditing) depend on the
// caller; a lookup in an explicit handle searches that object's scope alone.
bool LookupNeedsCaller(void* handle) {
  return handle == RTLD_DEFAULT || handle == RTLD_NEXT ||
         __atomic_load_n(&g_audit_state, __ATOMIC_ACQUIRE) != 1;
}

using DlopenFn = void* (*)(const char*, int);
using DlmopenFn = void* (*)(Lmid_t, const char*, int);

void* DoLoad(const void* ra, LibApi api, Lmid_t lmid, const char* file, int mode) {
  const DlopenFn open_fn = real::dlopen.get();
  const DlmopenFn mopen_fn = real::dlmopen.get();
  const DlerrorFn err_fn = RealDlerror();
  t_dl.pending = nullptr;
  const bool is_m = api == LibApi::kDlmopen;
  if (IsShimCode(ra)) return is_m ? mopen_fn(lmid, file, mode) : open_fn(file, mode);
  const CallerObject caller = FindCaller(ra);
  const bool rec = Recording();
  const uint64_t t0 = rec ? Ticks() : 0;
  // A load may block (a library on a dead mount, a constructor that waits): noted in
  // flight with the name asked for (state.h).
  format::CallNote* note = nullptr;
  if (rec && file != nullptr) {
    uint64_t id = 0;
    {
      ShimScope scope;
      if (scope.entered()) id = InternCString(file);
    }
    note = BeginNote(&format::ThreadNotes::call, format::InFlightCall::kDlopen, static_cast<uint32_t>(api), t0, id);
  }
  void* h = is_m ? CallAsCaller(caller, mopen_fn, lmid, file, mode)
                 : CallAsCaller(caller, open_fn, file, mode);
  EndNote(note);
  if (h == nullptr) InvalidateCallerCache();  // a failed load unmaps what it mapped
  if (!rec) return h;
  const uint64_t t1 = Ticks();
  const int saved_errno = errno;
  const char* err = h == nullptr ? CaptureDlerror(err_fn) : nullptr;
  errno = saved_errno;
  {
    ShimScope scope;
    if (scope.entered()) {
      LoadCall c;
      c.api = api;
      c.requested = file;
      c.mode = mode;
      c.lmid = lmid;
      c.handle = h;
      c.error = err;
      c.caller = caller;
      c.return_address = ra;
      c.t0 = t0;
      c.t1 = t1;
      RecordLoadCall(c);
    }
  }
  errno = saved_errno;
  return h;
}

// Resolves every real function the hooks use, so that none is resolved (through dlsym,
// which clears dlerror state) between a failed call and the reading of its error.
void ResolveLibsRealFunctions() {
  real::dlopen.get();
  real::dlmopen.get();
  real::dlclose.get();
  real::dlerror.get();
  real::dlinfo.get();
  RealDlsym();
  RealDlvsym();
  IsShimCode(nullptr);
}

}  // namespace
}  // namespace colabtrace::shim::libs

namespace colabtrace::shim {

void LibsModuleStart(StartKind kind) {
  libs::ResolveLibsRealFunctions();
  libs::DetectAuditing();
  if (!__atomic_load_n(&libs::g_buf_key_ready, __ATOMIC_ACQUIRE) &&
      pthread_key_create(&libs::g_buf_key, libs::FreeThreadBuffer) == 0) {
    __atomic_store_n(&libs::g_buf_key_ready, 1, __ATOMIC_RELEASE);
  }
  libs::InventoryStart(kind);
}

void* LibsOwnDlopen(const char* file, int mode) {
  const uint64_t t0 = Ticks();
  void* h = real::dlopen.get()(file, mode);
  const uint64_t t1 = Ticks();
  if (h == nullptr) {
    libs::InvalidateCallerCache();  // a failed load unmaps what it mapped
    libs::RealDlerror()();          // the shim's failure is not the program's dlerror()
  }
  if (h == nullptr || !g_recording || t_thread.vfork_pending) return h;
  ShimScope scope;  // enters unless this thread already runs inside the shim: write either way
  libs::LoadCall c;
  c.api = format::LibApi::kColabtrace;
  c.requested = file;
  c.mode = mode;
  c.handle = h;
  c.caller = libs::FindCaller(reinterpret_cast<const void*>(&LibsOwnDlopen));
  c.return_address = __builtin_return_address(0);
  c.t0 = t0;
  c.t1 = t1;
  libs::RecordLoadCall(c);
  return h;
}

// At the end of the process (exit, _exit, return from main), inside RecordExit's
// ShimScope and before the exit record: re-check loaded files once more.
void LibsModuleFinish() { libs::InventoryFinish(); }

}  // namespace colabtrace::shim

// ---- hooks -------------------------------------------------------------------------------
using namespace colabtrace::shim;        // NOLINT: thin entry points
using namespace colabtrace::shim::libs;  // NOLINT

#pragma GCC visibility push(default)
extern "C" {

void* dlopen(const char* file, int mode) {
  return DoLoad(__builtin_return_address(0), LibApi::kDlopen, LM_ID_BASE, file, mode);
}

void* dlmopen(Lmid_t lmid, const char* file, int mode) {
  return DoLoad(__builtin_return_address(0), LibApi::kDlmopen, lmid, file, mode);
}

int dlclose(void* handle) {
  const auto close_fn = real::dlclose.get();
  const DlerrorFn err_fn = RealDlerror();
  t_dl.pending = nullptr;
  // An unload may free the link_map a cached gadget is keyed on; forget them before and
  // after (see caller_trampoline.h).
  InvalidateCallerCache();
  if (!Recording() || IsShimCode(__builtin_return_address(0))) {
    const int r = close_fn(handle);
    InvalidateCallerCache();
    return r;
  }
  const uint64_t t0 = Ticks();
  const int r = close_fn(handle);
  const uint64_t t1 = Ticks();
  InvalidateCallerCache();
  const int saved_errno = errno;
  const char* err = r != 0 ? CaptureDlerror(err_fn) : nullptr;
  errno = saved_errno;
  {
    ShimScope scope;
    if (scope.entered()) RecordCloseCall(handle, r, err, t0, t1);
  }
  errno = saved_errno;
  return r;
}

void* dlsym(void* __restrict handle, const char* __restrict name) {
  const void* ra = __builtin_return_address(0);
  const DlsymFn fn = RealDlsym();
  t_dl.pending = nullptr;
  if (fn == nullptr) return nullptr;
  if (IsShimCode(ra)) return fn(handle, name);
  const bool by_caller = LookupNeedsCaller(handle);
  const CallerObject caller = by_caller ? FindCaller(ra) : CallerObject{};
  void* r = by_caller ? CallAsCaller(caller, fn, handle, name) : fn(handle, name);
  // name is non-null here: glibc's dlsym would not have returned otherwise.
  return Interpose(r, handle, caller, name, nullptr);
}

void* dlvsym(void* __restrict handle, const char* __restrict name,
             const char* __restrict version) {
  const void* ra = __builtin_return_address(0);
  const DlvsymFn fn = RealDlvsym();
  t_dl.pending = nullptr;
  if (fn == nullptr) return nullptr;
  if (IsShimCode(ra)) return fn(handle, name, version);
  const bool by_caller = LookupNeedsCaller(handle);
  const CallerObject caller = by_caller ? FindCaller(ra) : CallerObject{};
  void* r = by_caller ? CallAsCaller(caller, fn, handle, name, version) : fn(handle, name, version);
  return Interpose(r, handle, caller, name, version);
}

char* dlerror(void) {
  const DlerrorFn fn = RealDlerror();
  if (t_dl.pending != nullptr) {
    // glibc's state says "returned" unless an error arrived behind our back (a dl*
    // function reached without this shim's hooks): then that one is the current error.
    char* fresh = fn();
    const char* copy = t_dl.pending;
    t_dl.pending = nullptr;
    return fresh != nullptr ? fresh : const_cast<char*>(copy);
  }
  return fn();
}

int dlinfo(void* __restrict handle, int request, void* __restrict arg) {
  t_dl.pending = nullptr;
  return real::dlinfo.get()(handle, request, arg);
}

}  // extern "C"
#pragma GCC visibility pop
