// Calling glibc's dl* functions as if from the hook's caller.
//
// glibc decides several things from the return address of dlopen, dlmopen, dlsym and
// dlvsym (RETURN_ADDRESS(0) -> _dl_find_dso_for_object): which RUNPATH/RPATH a bare
// name is searched along, what $ORIGIN means, which namespace dlopen loads into, where
// RTLD_NEXT starts, and which local scope RTLD_DEFAULT searches. A hook that simply
// calls the real function makes libcolabtrace.so the caller and changes all of these.
//
// CallAsCaller() calls the real function with a return address that lies inside the
// caller's own object: a `ret` instruction (0xC3, the "gadget") taken from one of that
// object's executable segments. The real function returns to the gadget, whose `ret`
// pops the address of a continuation in colabtrace_call_as_caller, which returns the
// value normally:
//
//   hook --call--> colabtrace_call_as_caller --jmp--> real dlopen --ret--> gadget (in
//   the caller's object) --ret--> continuation --ret--> hook
//
// The gadget is chosen so that unwinders still walk through it: its preceding byte must
// have the DWARF CFI row "CFA = rsp + 8, return address at CFA - 8, nothing else saved"
// (checked against the object's .eh_frame_hdr/.eh_frame by cfi_reader.h), which is
// exactly the state in which it runs. Backtraces taken inside the loader (constructors,
// gdb) therefore show the caller object's function, then colabtrace_call_as_caller, the
// hook and the caller.
// Gadgets are cached per object (lock-free), keyed by the object's link_map and the
// shape of its mapping, so a freed and reused link_map never finds a stale gadget.
//
// This needs no shadow stack (CET SHSTK): the shim is built with -fcf-protection=none,
// so a process that preloads it never runs with one. On architectures other than
// x86-64 CallAsCaller() calls the function directly (the shim becomes the caller); see
// docs/ARCHITECTURE.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace colabtrace::shim::libs {

struct CallerObject {
  // Where the real function should return to; nullptr: call it directly.
  const void* gadget = nullptr;
  // The caller object's name as the loader knows it ("" for the main program); valid
  // while the caller runs. nullptr when the caller is in no loaded object.
  const char* name = nullptr;
  uint64_t base = 0;  // the object's load bias (dlpi_addr)
};

// Finds the object holding `return_address` and a gadget inside it. Lock-free and
// allocation-free once an object's gadget is cached; the first lookup for an object
// walks dl_iterate_phdr. Never touches dlerror state.
CallerObject FindCaller(const void* return_address);

// True when `addr` lies inside libcolabtrace.so's own code.
bool IsShimCode(const void* addr);

// Call after anything that may unmap objects (dlclose, a failed dlopen). Needed only
// without _dl_find_object (glibc < 2.35), where the cache is keyed by link_map alone.
void InvalidateCallerCache();


}  // namespace colabtrace::shim::libs

// The assembly helper: calls fn(a0, a1, a2, a3) with `gadget` as its return address.
// Integer/pointer arguments and an integer/pointer result only.
extern "C" uintptr_t colabtrace_call_as_caller(const void* fn, uintptr_t a0, uintptr_t a1,
                                               uintptr_t a2, uintptr_t a3, const void* gadget)
    __attribute__((visibility("hidden")));

namespace colabtrace::shim::libs {

template <class T> inline uintptr_t ToWord(T v) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<uintptr_t>(v);
  } else {
    return static_cast<uintptr_t>(v);  // sign-extends: the callee reads the low bits
  }
}

template <class R> inline R FromWord(uintptr_t v) {
  if constexpr (std::is_pointer_v<R>) {
    return reinterpret_cast<R>(v);
  } else {
    return static_cast<R>(v);
  }
}

// Calls fn(args...) as if from the object described by `caller`.
template <class R, class... P, class... A>
inline R CallAsCaller(const CallerObject& caller, R (*fn)(P...), A... args) {
  static_assert(sizeof...(P) <= 4 && sizeof...(P) == sizeof...(A));
  static_assert(!std::is_void_v<R>);
#if defined(__x86_64__)
  if (caller.gadget != nullptr) {
    uintptr_t w[4] = {};
    size_t i = 0;
    ((w[i++] = ToWord(static_cast<P>(args))), ...);
    (void)i;
    return FromWord<R>(colabtrace_call_as_caller(reinterpret_cast<const void*>(fn), w[0], w[1],
                                                 w[2], w[3], caller.gadget));
  }
#endif
  return fn(static_cast<P>(args)...);
}

}  // namespace colabtrace::shim::libs
