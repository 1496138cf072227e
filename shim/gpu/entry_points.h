// How the GPU module's entry points are put together.
//
// Every name in gpu_hooks.def has one piece of logic, L_<name>(real, caller, args...),
// written once in runtime_hooks.cpp or driver_hooks.cpp, and two ways in:
//   - the exported extern "C" <name>, found by the dynamic linker; it resolves the real
//     function the caller would have bound to (RealForSite) and calls L_<name>;
//   - kSlots wrapper functions Wrapper<name, S>, handed out in place of a real pointer
//     the program obtained with dlsym or cuGetProcAddress (interpose.cpp); wrapper S
//     calls L_<name> with the real pointer stored in slot S. Slots are keyed by the real
//     pointer's identity, so two libcuda copies (or two cudart majors looked up with
//     dlsym) get separate wrappers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "call_site_cache.h"
#include "gpu_module.h"

#include "gpu_hooks.def"

namespace colabtrace::shim::gpu {

inline constexpr int kSlots = 4;
using CallSiteCacheType = CallSiteCache<4096>;

// The GpuApi code of an exact entry-point name ("cuMemAlloc_v2"); 0 if unknown.
constexpr uint16_t ApiOf(const char* name) {
  struct Entry {
    uint16_t code;
    const char* name;
  };
  constexpr Entry kAll[] = {
#define CT_API_ENTRY(code, id, text) {code, text},
      COLABTRACE_GPU_APIS(CT_API_ENTRY)
#undef CT_API_ENTRY
  };
  for (const Entry& e : kAll) {
    const char* a = e.name;
    const char* b = name;
    while (*a != '\0' && *a == *b) ++a, ++b;
    if (*a == '\0' && *b == '\0') return e.code;
  }
  return 0;
}

template <class F> struct LogicOf;
template <class R, class... P> struct LogicOf<R (*)(P...)> {
  using Fn = R (*)(P...);
  using type = R(Fn real, const void* caller, P... args);
};

// Declares L_<name> with the signature derived from the real declaration.
#define CT_DECLARE_LOGIC(name)                                        \
  static_assert(ApiOf(#name) != 0, #name " needs a GpuApi code");     \
  LogicOf<decltype(&::name)>::type L_##name;
COLABTRACE_GPU_HOOKS(CT_DECLARE_LOGIC)
#undef CT_DECLARE_LOGIC

// ---- real functions --------------------------------------------------------------------

// The real function stored in wrapper slot (api, slot).
void* SlotReal(uint16_t api, int slot);

// The real `name` as the code at `site` would bind to it (FindLikeCaller): cached per
// call site; the first call from a site walks the loaded objects. nullptr if nothing
// but the shim defines it.
void* RealForSiteSlow(uint16_t api, const char* name, const void* site);
extern CallSiteCacheType g_site_cache;

template <class F> inline F RealForSite(uint16_t api, const char* name, const void* site) {
  void* f = g_site_cache.Lookup(CallSiteCacheType::Key(site, api));
  if (__builtin_expect(f == nullptr, 0)) f = RealForSiteSlow(api, name, site);
  return reinterpret_cast<F>(f);
}

// The body of an exported entry point: resolve like the caller, run the logic.
#define CT_GPU_EXPORT(name, ...)                                                        \
  const void* ra_ = __builtin_return_address(0);                                        \
  constexpr uint16_t kApi_ = ::colabtrace::shim::gpu::ApiOf(#name);                      \
  return ::colabtrace::shim::gpu::L_##name(                                             \
      ::colabtrace::shim::gpu::RealForSite<decltype(&::name)>(kApi_, #name, ra_),      \
      ra_ __VA_OPT__(, ) __VA_ARGS__)

// Wrapper<name, S>: calls L_<name> with the real function of slot S.
template <class F> struct WrapperOf;
template <class R, class... P> struct WrapperOf<R (*)(P...)> {
  template <R (*Logic)(R (*)(P...), const void*, P...), uint16_t kApi, int S>
  static R Call(P... args) {
    return Logic(reinterpret_cast<R (*)(P...)>(SlotReal(kApi, S)), __builtin_return_address(0),
                 args...);
  }
};

// ---- interposition (interpose.cpp) -------------------------------------------------------

// What cuGetProcAddress(_v2) handed out for `symbol`: the wrapper when p is a real
// entry point the module traces, else p itself.
void* MapProcAddress(const char* symbol, void* p, int version, uint64_t flags,
                     format::GpuInterposeVia via);

}  // namespace colabtrace::shim::gpu

