// Handing out wrappers for driver and runtime entry points that programs look up at run
// time (dlsym, dlvsym, cuGetProcAddress, cuGetProcAddress_v2), and finding the real
// function behind each exported hook.
//
// The wrapping is keyed on the real pointer's identity. A pointer from dlsym is exactly
// the symbol it was asked for. A pointer from cuGetProcAddress is named by the driver
// from a base name plus an ABI version ("cuMemAlloc" at 3020 is cuMemAlloc_v2, at 2000
// the legacy 32-bit cuMemAlloc), so the shim asks dladdr which exported symbol sits at
// exactly that address and wraps only the variants it knows the ABI of. If the pointer
// is not an exported symbol, the driver's own rule (the newest variant introduced at or
// before the requested version; _ptsz only with the per-thread flag) names it, but only
// for versions no newer than the headers the shim was built with.
//
// Each traced entry point has kSlots wrapper functions; slot S holds one real pointer,
// claimed with a compare-and-swap the first time that pointer is handed out. Nothing
// here loads a library or allocates.
#include <dlfcn.h>

#include <cstring>

#include "entry_points.h"
#include "modules.h"
#include "elf_symbols.h"

namespace colabtrace::shim::gpu {

CallSiteCacheType g_site_cache;

namespace {

constexpr int kMaxApi = 256;
void* g_slot_real[kMaxApi][kSlots];

// ---- the traced entry points, by name ----------------------------------------------------------

struct Entry {
  const char* name;
  uint16_t api;
};
constexpr Entry kEntries[] = {
#define CT_ENTRY(name) {#name, ApiOf(#name)},
    COLABTRACE_GPU_HOOKS(CT_ENTRY)
#undef CT_ENTRY
};

// The api of an exact exported name in gpu_hooks.def, or 0. Names reaching here start
// with "cu" or "__cuda"; a linear scan of the table is cheaper than the dlsym that
// produced them.
uint16_t TracedApi(const char* name) {
  for (const Entry& e : kEntries) {
    if (std::strcmp(e.name, name) == 0) return e.api;
  }
  return 0;
}

// cuGetProcAddress's view of the driver entry points: base name, the CUDA version that
// introduced the variant (the PFN_<name>_v<version> typedefs of cudaTypedefs.h), and
// whether it is the per-thread-default-stream variant.
struct Variant {
  uint16_t api;
  const char* base;
  int version;
  bool per_thread;
};
constexpr Variant kVariants[] = {
    {ApiOf("cuMemAlloc_v2"), "cuMemAlloc", 3020, false},
    {ApiOf("cuMemFree_v2"), "cuMemFree", 3020, false},
    {ApiOf("cuMemAllocManaged"), "cuMemAllocManaged", 6000, false},
    {ApiOf("cuMemAllocPitch_v2"), "cuMemAllocPitch", 3020, false},
    {ApiOf("cuMemAllocAsync"), "cuMemAllocAsync", 11020, false},
    {ApiOf("cuMemAllocAsync_ptsz"), "cuMemAllocAsync", 11020, true},
    {ApiOf("cuMemFreeAsync"), "cuMemFreeAsync", 11020, false},
    {ApiOf("cuMemFreeAsync_ptsz"), "cuMemFreeAsync", 11020, true},
    {ApiOf("cuMemAllocFromPoolAsync"), "cuMemAllocFromPoolAsync", 11020, false},
    {ApiOf("cuMemAllocFromPoolAsync_ptsz"), "cuMemAllocFromPoolAsync", 11020, true},
    {ApiOf("cuMemPoolCreate"), "cuMemPoolCreate", 11020, false},
    {ApiOf("cuMemPoolDestroy"), "cuMemPoolDestroy", 11020, false},
    {ApiOf("cuMemPoolTrimTo"), "cuMemPoolTrimTo", 11020, false},
    {ApiOf("cuMemCreate"), "cuMemCreate", 10020, false},
    {ApiOf("cuMemRelease"), "cuMemRelease", 10020, false},
    {ApiOf("cuMemMap"), "cuMemMap", 10020, false},
    {ApiOf("cuMemUnmap"), "cuMemUnmap", 10020, false},
    {ApiOf("cuMemAddressReserve"), "cuMemAddressReserve", 10020, false},
    {ApiOf("cuMemAddressFree"), "cuMemAddressFree", 10020, false},
    {ApiOf("cuMemGetInfo_v2"), "cuMemGetInfo", 3020, false},
    {ApiOf("cuMemAllocHost_v2"), "cuMemAllocHost", 3020, false},
    {ApiOf("cuMemHostAlloc"), "cuMemHostAlloc", 2020, false},
    {ApiOf("cuMemFreeHost"), "cuMemFreeHost", 2000, false},
    {ApiOf("cuModuleLoad"), "cuModuleLoad", 2000, false},
    {ApiOf("cuModuleLoadData"), "cuModuleLoadData", 2000, false},
    {ApiOf("cuModuleLoadDataEx"), "cuModuleLoadDataEx", 2010, false},
    {ApiOf("cuModuleLoadFatBinary"), "cuModuleLoadFatBinary", 2000, false},
    {ApiOf("cuLibraryLoadData"), "cuLibraryLoadData", 12000, false},
    {ApiOf("cuLibraryLoadFromFile"), "cuLibraryLoadFromFile", 12000, false},
    {ApiOf("cuInit"), "cuInit", 2000, false},
    {ApiOf("cuGetProcAddress"), "cuGetProcAddress", 11030, false},
    {ApiOf("cuGetProcAddress_v2"), "cuGetProcAddress", 12000, false},
    {ApiOf("cuLaunchKernel"), "cuLaunchKernel", 4000, false},
    {ApiOf("cuLaunchKernel_ptsz"), "cuLaunchKernel", 7000, true},
    {ApiOf("cuLaunchKernelEx"), "cuLaunchKernelEx", 11060, false},
    {ApiOf("cuLaunchKernelEx_ptsz"), "cuLaunchKernelEx", 11060, true},
    {ApiOf("cuLaunchCooperativeKernel"), "cuLaunchCooperativeKernel", 9000, false},
    {ApiOf("cuLaunchCooperativeKernel_ptsz"), "cuLaunchCooperativeKernel", 9000, true},
    {ApiOf("cuModuleGetFunction"), "cuModuleGetFunction", 2000, false},
    {ApiOf("cuLibraryGetKernel"), "cuLibraryGetKernel", 12000, false},
    {ApiOf("cuFuncGetName"), "cuFuncGetName", 12030, false},
    {ApiOf("cuKernelGetFunction"), "cuKernelGetFunction", 12000, false},
    {ApiOf("cuCtxSynchronize"), "cuCtxSynchronize", 2000, false},
    {ApiOf("cuCtxSynchronize_v2"), "cuCtxSynchronize", 13000, false},
    {ApiOf("cuStreamSynchronize"), "cuStreamSynchronize", 2000, false},
    {ApiOf("cuStreamSynchronize_ptsz"), "cuStreamSynchronize", 7000, true},
    {ApiOf("cuStreamQuery"), "cuStreamQuery", 2000, false},
    {ApiOf("cuStreamQuery_ptsz"), "cuStreamQuery", 7000, true},
    {ApiOf("cuEventSynchronize"), "cuEventSynchronize", 2000, false},
    {ApiOf("cuEventQuery"), "cuEventQuery", 2000, false},
    {ApiOf("cuMemcpy"), "cuMemcpy", 4000, false},
    {ApiOf("cuMemcpy_ptds"), "cuMemcpy", 7000, true},
    {ApiOf("cuMemcpyAsync"), "cuMemcpyAsync", 4000, false},
    {ApiOf("cuMemcpyAsync_ptsz"), "cuMemcpyAsync", 7000, true},
    {ApiOf("cuMemcpyHtoD_v2"), "cuMemcpyHtoD", 3020, false},
    {ApiOf("cuMemcpyHtoD_v2_ptds"), "cuMemcpyHtoD", 7000, true},
    {ApiOf("cuMemcpyDtoH_v2"), "cuMemcpyDtoH", 3020, false},
    {ApiOf("cuMemcpyDtoH_v2_ptds"), "cuMemcpyDtoH", 7000, true},
    {ApiOf("cuMemcpyDtoD_v2"), "cuMemcpyDtoD", 3020, false},
    {ApiOf("cuMemcpyDtoD_v2_ptds"), "cuMemcpyDtoD", 7000, true},
    {ApiOf("cuMemcpyHtoDAsync_v2"), "cuMemcpyHtoDAsync", 3020, false},
    {ApiOf("cuMemcpyHtoDAsync_v2_ptsz"), "cuMemcpyHtoDAsync", 7000, true},
    {ApiOf("cuMemcpyDtoHAsync_v2"), "cuMemcpyDtoHAsync", 3020, false},
    {ApiOf("cuMemcpyDtoHAsync_v2_ptsz"), "cuMemcpyDtoHAsync", 7000, true},
};

// Every driver hook has a variant entry, and every variant is a hook.
constexpr bool VariantsCoverDriverHooks() {
  for (const Entry& e : kEntries) {
    if (e.api < 64) continue;
    bool found = false;
    for (const Variant& v : kVariants) found = found || v.api == e.api;
    if (!found) return false;
  }
  for (const Variant& v : kVariants) {
    if (v.api == 0) return false;
  }
  return true;
}
static_assert(VariantsCoverDriverHooks(), "kVariants and gpu_hooks.def disagree");

bool SameBase(const char* base, const char* symbol) { return std::strcmp(base, symbol) == 0; }

// ---- wrappers ------------------------------------------------------------------------------------

template <class F, auto Logic, uint16_t kApi> void* PickWrapper(int slot) {
  using W = WrapperOf<F>;
  switch (slot) {
    case 0: return reinterpret_cast<void*>(&W::template Call<Logic, kApi, 0>);
    case 1: return reinterpret_cast<void*>(&W::template Call<Logic, kApi, 1>);
    case 2: return reinterpret_cast<void*>(&W::template Call<Logic, kApi, 2>);
    case 3: return reinterpret_cast<void*>(&W::template Call<Logic, kApi, 3>);
    default: return nullptr;
  }
}
static_assert(kSlots == 4, "PickWrapper lists four slots");

void* WrapperFor(uint16_t api, int slot) {
  switch (api) {
#define CT_WRAPPER_CASE(name) \
  case ApiOf(#name):          \
    return PickWrapper<decltype(&::name), &L_##name, ApiOf(#name)>(slot);
    COLABTRACE_GPU_HOOKS(CT_WRAPPER_CASE)
#undef CT_WRAPPER_CASE
    default:
      return nullptr;
  }
}

// Emits a GpuInterpose record when this thread may write (directly from a program's
// call, or from inside a shim hook that already holds the scope).
void NoteInterpose(uint16_t api, const void* real, format::GpuInterposeVia via, const char* name,
                   int version, uint64_t flags, uint64_t wrapped) {
  auto emit = [&] {
    format::GpuInterpose r;
    r.ts = Ticks();
    r.api = api;
    r.real = reinterpret_cast<uint64_t>(real);
    r.via = static_cast<uint64_t>(via);
    r.name = InternCString(name);
    r.version = version;
    r.flags = flags;
    r.wrapped = wrapped;
    Emit(r);
  };
  if (Recording()) {
    ShimScope scope;
    if (scope.entered()) emit();
  } else if (g_recording && t_thread.busy && !t_thread.vfork_pending) {
    emit();
  }
}

// The wrapper for real (an entry point of `api`), claiming a slot the first time; real
// itself when every slot holds another pointer.
void* Wrap(uint16_t api, void* real, format::GpuInterposeVia via, const char* name, int version,
           uint64_t flags, uint64_t how) {
  for (int s = 0; s < kSlots; ++s) {
    void* cur = __atomic_load_n(&g_slot_real[api][s], __ATOMIC_ACQUIRE);
    if (cur == nullptr) {
      void* expected = nullptr;
      if (__atomic_compare_exchange_n(&g_slot_real[api][s], &expected, real, false,
                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        NoteInterpose(api, real, via, name, version, flags, how);
        return WrapperFor(api, s);
      }
      cur = expected;
    }
    if (cur == real) return WrapperFor(api, s);
  }
  NoteInterpose(api, real, via, name, version, flags, 0);
  return real;
}

// The traced variant `p` is, judged by the exported symbol at exactly that address: its
// api, 0 if it is some other (untraced) variant, -1 if p is no exported symbol.
int IdentifyBySymbol(const char* symbol, const void* p) {
  Dl_info info;
  if (dladdr(p, &info) == 0 || info.dli_saddr != p || info.dli_sname == nullptr) return -1;
  const uint16_t api = TracedApi(info.dli_sname);
  for (const Variant& v : kVariants) {
    if (v.api == api && SameBase(v.base, symbol)) return api;
  }
  return 0;
}

// The driver's own selection rule, for builds of the driver whose entry points are not
// exported symbols. Only for versions these headers describe.
uint16_t IdentifyByRule(const char* symbol, int version, uint64_t flags) {
  if (version > kCtCudaApiVersion) return 0;
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const Variant* best = nullptr;
  for (const Variant& v : kVariants) {
    if (!SameBase(v.base, symbol) || v.version > version || (v.per_thread && !per_thread)) continue;
    if (best == nullptr || v.version > best->version ||
        (v.version == best->version && v.per_thread)) {
      best = &v;
    }
  }
  return best != nullptr ? best->api : 0;
}

bool IsTracedBase(const char* symbol) {
  if (symbol[0] != 'c' || symbol[1] != 'u') return false;
  for (const Variant& v : kVariants) {
    if (SameBase(v.base, symbol)) return true;
  }
  return false;
}

}  // namespace

void* SlotReal(uint16_t api, int slot) {
  return __atomic_load_n(&g_slot_real[api][slot], __ATOMIC_ACQUIRE);
}

namespace {

// What a whole object's call sites bind to, per API: the fallback when the call-site
// cache is full (a framework with thousands of kernel stubs, each a call site of
// cudaLaunchKernel). Every site in one object binds to the same definition (its versioned
// reference is per object), so a lookup here is a range check instead of a walk of the
// loaded objects. kObjectMemos entries per API, replaced round-robin; each is a seqlock
// (odd while written) so a reader never uses a half-written entry.
constexpr int kObjectMemos = 8;
struct ObjectMemo {
  uint32_t seq;
  uintptr_t lo, hi;
  void* real;
};
ObjectMemo g_object_memo[kMaxApi][kObjectMemos];
uint32_t g_object_memo_next[kMaxApi];

void* MemoLookup(uint16_t api, uintptr_t site) {
  for (ObjectMemo& m : g_object_memo[api]) {
    const uint32_t s1 = __atomic_load_n(&m.seq, __ATOMIC_ACQUIRE);
    if (s1 == 0 || (s1 & 1) != 0) continue;
    const uintptr_t lo = __atomic_load_n(&m.lo, __ATOMIC_RELAXED);
    const uintptr_t hi = __atomic_load_n(&m.hi, __ATOMIC_RELAXED);
    void* real = __atomic_load_n(&m.real, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&m.seq, __ATOMIC_RELAXED) != s1) continue;
    if (site >= lo && site < hi) return real;
  }
  return nullptr;
}

void MemoInsert(uint16_t api, const void* site, void* real) {
  ObjectRange range;
  if (!FindObjectOf(site, &range)) return;
  const uint32_t i = __atomic_fetch_add(&g_object_memo_next[api], 1, __ATOMIC_RELAXED) % kObjectMemos;
  ObjectMemo& m = g_object_memo[api][i];
  uint32_t s = __atomic_load_n(&m.seq, __ATOMIC_ACQUIRE);
  if ((s & 1) != 0 ||
      !__atomic_compare_exchange_n(&m.seq, &s, s + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return;  // another thread is writing this entry
  }
  __atomic_store_n(&m.lo, range.lo, __ATOMIC_RELAXED);
  __atomic_store_n(&m.hi, range.hi, __ATOMIC_RELAXED);
  __atomic_store_n(&m.real, real, __ATOMIC_RELAXED);
  __atomic_store_n(&m.seq, s + 2, __ATOMIC_RELEASE);
}

}  // namespace

void* RealForSiteSlow(uint16_t api, const char* name, const void* site) {
  if (void* real = MemoLookup(api, reinterpret_cast<uintptr_t>(site))) return real;
  ShimScope scope;  // keeps errno
  void* real = FindLikeCaller(name, site, reinterpret_cast<const void*>(&RealForSiteSlow));
  if (real == nullptr) return nullptr;
  if (!g_site_cache.Insert(CallSiteCacheType::Key(site, api), real)) MemoInsert(api, site, real);
  return real;
}

void* MapProcAddress(const char* symbol, void* p, int version, uint64_t flags,
                     format::GpuInterposeVia via) {
  if (!g_recording || !IsTracedBase(symbol) || IsShimText(p)) return p;
  // Already handed out?
  for (const Variant& v : kVariants) {
    if (!SameBase(v.base, symbol)) continue;
    for (int s = 0; s < kSlots; ++s) {
      if (__atomic_load_n(&g_slot_real[v.api][s], __ATOMIC_ACQUIRE) == p) {
        return WrapperFor(v.api, s);
      }
    }
  }
  int api;
  uint64_t how = 1;
  {
    ShimScope scope;  // dladdr keeps no error state, but keep errno exactly as it was
    api = IdentifyBySymbol(symbol, p);
  }
  if (api < 0) {
    api = IdentifyByRule(symbol, version, flags);
    how = 2;
  }
  if (api <= 0) return p;
  return Wrap(static_cast<uint16_t>(api), p, via, symbol, version, flags, how);
}

}  // namespace colabtrace::shim::gpu

namespace colabtrace::shim {

void* GpuInterposeSymbol(const char* name, void* real) {
  if (real == nullptr || name == nullptr) return real;
  if (name[0] == 'n' && name[1] == 'c' && name[2] == 'c' && name[3] == 'l' && NcclInterposeSymbol != nullptr) {
    return NcclInterposeSymbol(name, real);
  }
  const bool cuda_name = (name[0] == 'c' && name[1] == 'u') ||
                         std::strncmp(name, "__cuda", 6) == 0;
  if (!cuda_name) return real;
  if (name[0] == 'c' && name[2] == 'p' && name[3] == 't' && name[4] == 'i') return gpu::CuptiInterposeSymbol(name, real);
  const uint16_t api = gpu::TracedApi(name);
  if (api == 0) return real;
  if (gpu::IsShimText(real)) {
    // The lookup found the shim's own hook (dlsym(RTLD_DEFAULT, "cudaMalloc")). Calls
    // through it are traced; but when nothing else defines the name, the program must
    // see the lookup fail exactly as it would without the shim.
    const void* self = reinterpret_cast<const void*>(&GpuInterposeSymbol);
    return gpu::FindLikeCaller(name, nullptr, self) != nullptr ? real : nullptr;
  }
  if (!g_recording) return real;
  return gpu::Wrap(api, real, format::GpuInterposeVia::kDlsym, name, 0, 0, 1);
}

}  // namespace colabtrace::shim

