// Native stacks: libgcc's unwinder, linked statically and kept local to the shim.
//
// -static-libgcc links libgcc_eh.a into the shim, and the version script makes all of
// its symbols local, so the program keeps whatever unwinder it had (libgcc_s for
// libstdc++'s exceptions): nothing outside the shim can bind to our copy. libgcc 12
// finds unwind tables through _dl_find_object, which takes no lock, so a walk is safe
// in a fatal-signal handler and never allocates.
#include <signal.h>
#include <ucontext.h>
#include <unwind.h>

#include <cstdint>

#include "config.h"
#include "modules.h"

namespace colabtrace::shim {
namespace {

struct Walk {
  uint64_t* out;
  size_t max;
  size_t skip;      // frames still to drop before recording
  size_t n = 0;
  uint64_t start_at = 0;  // when non-zero: drop frames until this exact pc appears
};

_Unwind_Reason_Code OnFrame(struct _Unwind_Context* ctx, void* arg) {
  auto* w = static_cast<Walk*>(arg);
  const uint64_t ip = _Unwind_GetIP(ctx);
  if (ip == 0) return _URC_END_OF_STACK;
  if (w->start_at != 0) {
    if (ip != w->start_at) return _URC_NO_REASON;
    w->start_at = 0;
  }
  if (w->skip > 0) {
    --w->skip;
    return _URC_NO_REASON;
  }
  w->out[w->n++] = ip;
  return w->n < w->max ? _URC_NO_REASON : _URC_END_OF_STACK;
}

// The interrupted instruction of a signal's ucontext.
uint64_t InterruptedPc(const void* uc) {
  const auto* u = static_cast<const ucontext_t*>(uc);
#if defined(__x86_64__)
  return static_cast<uint64_t>(u->uc_mcontext.gregs[REG_RIP]);
#elif defined(__aarch64__)
  return static_cast<uint64_t>(u->uc_mcontext.pc);
#endif
}

}  // namespace

size_t CaptureStack(uint64_t* out, size_t max, size_t skip) {
  if (max == 0) return 0;
  // The first frame the unwinder reports is this function itself, as unw_backtrace did.
  Walk w{out, max, skip};
  _Unwind_Backtrace(OnFrame, &w);
  return w.n;
}

size_t CaptureSignalStack(const void* uc, uint64_t* out, size_t max) {
  if (max == 0 || uc == nullptr) return 0;
  const uint64_t pc = InterruptedPc(uc);
  // Walk from here through the kernel's signal frame (libgcc knows the sigreturn
  // trampoline) and start recording at the interrupted instruction.
  Walk w{out, max, 0};
  w.start_at = pc;
  _Unwind_Backtrace(OnFrame, &w);
  if (w.n == 0 && pc != 0) out[w.n++] = pc;  // no unwind info to get there: the pc alone
  return w.n;
}

}  // namespace colabtrace::shim
