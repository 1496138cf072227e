// The GPU module's recording logic and its knowledge of the process's CUDA libraries.
// See gpu_module.h.
#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>

#include "config.h"
#include "elf_symbols.h"
#include "gpu_module.h"
#include "launch_ring.h"
#include "live_set.h"
#include "modules.h"
#include "python/python_stack.h"

namespace colabtrace::shim::gpu {

constinit thread_local GpuThread t_gpu CT_TLS;

namespace {

// ---- the shim's own code range ------------------------------------------------------------

uintptr_t g_shim_lo = 0, g_shim_hi = 0;

int FindShimRange(struct dl_phdr_info* info, size_t, void* data) {
  const auto self = reinterpret_cast<uintptr_t>(data);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t a = info->dlpi_addr + ph.p_vaddr;
    if (a < lo) lo = a;
    if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
  }
  if (self < lo || self >= hi) return 0;
  __atomic_store_n(&g_shim_lo, lo, __ATOMIC_RELAXED);
  __atomic_store_n(&g_shim_hi, hi, __ATOMIC_RELEASE);
  return 1;
}

void InitShimRange() {
  if (__atomic_load_n(&g_shim_hi, __ATOMIC_ACQUIRE) != 0) return;
  dl_iterate_phdr(FindShimRange, reinterpret_cast<void*>(&InitShimRange));
}

}  // namespace

bool IsShimText(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  const uintptr_t hi = __atomic_load_n(&g_shim_hi, __ATOMIC_ACQUIRE);
  if (hi == 0) {
    InitShimRange();
    return a >= g_shim_lo && a < __atomic_load_n(&g_shim_hi, __ATOMIC_ACQUIRE);
  }
  return a >= g_shim_lo && a < hi;
}

uint64_t CaptureGpuStack() {
  const int depth = g_config.stack_depth;
  if (depth <= 0) return 0;
  constexpr size_t kExtra = 8;  // the shim's own frames, dropped below
  uint64_t frames[kMaxStackDepth + kExtra];
  const size_t n = CaptureStack(frames, static_cast<size_t>(depth) + kExtra, 0);
  size_t skip = 0;
  while (skip < n && IsShimText(reinterpret_cast<const void*>(frames[skip]))) ++skip;
  size_t keep = n - skip;
  if (keep > static_cast<size_t>(depth)) keep = static_cast<size_t>(depth);
  return InternStack(frames + skip, keep);
}

// ---- per-process facts ----------------------------------------------------------------------

namespace {
uint64_t g_devices_recorded = 0;   // bit d: GpuDevice written for device d
uint64_t g_versions_recorded = 0;  // bit i: GpuVersion written for library slot i
}  // namespace

void ResetGpuFacts() {
  __atomic_store_n(&g_devices_recorded, 0, __ATOMIC_RELEASE);
  __atomic_store_n(&g_versions_recorded, 0, __ATOMIC_RELEASE);
  ResetLaunchRings();
  ResetNamedStubs();
  ResetLiveSet();
}

}  // namespace colabtrace::shim::gpu

namespace colabtrace::shim::gpu {
namespace {

// Sets `bit` in *mask; true if this call set it.
bool TakeOnce(uint64_t* mask, unsigned bit) {
  if (bit >= 64) return false;
  const uint64_t b = 1ull << bit;
  if (__atomic_load_n(mask, __ATOMIC_ACQUIRE) & b) return false;
  return (__atomic_fetch_or(mask, b, __ATOMIC_ACQ_REL) & b) == 0;
}

// ---- the CUDA libraries of the process ---------------------------------------------------

constexpr int kMaxLibs = 8;
struct LibSlot {
  int state;  // 0 free, 1 being filled, 2 ready
  CudaLib lib;
};
LibSlot g_libs[kMaxLibs];

const CudaLib* FindReady(uintptr_t a, LibKind kind) {
  for (auto& s : g_libs) {
    if (__atomic_load_n(&s.state, __ATOMIC_ACQUIRE) == 2 && s.lib.kind == kind && a >= s.lib.lo &&
        a < s.lib.hi) {
      return &s.lib;
    }
  }
  return nullptr;
}

template <class F> void Bind(const void* object, const char* name, F* out) {
  *out = reinterpret_cast<F>(FindSymbolIn(object, name));
}

// Binds the query functions of the object holding `handle` (any address inside it).
void FillLib(CudaLib& lib, const void* handle) {
  if (lib.kind == LibKind::kRuntime) {
    Bind(handle, "cudaGetDevice", &lib.rt_get_device);
    Bind(handle, "cudaRuntimeGetVersion", &lib.rt_runtime_version);
    Bind(handle, "cudaDriverGetVersion", &lib.rt_driver_version);
    Bind(handle, "cudaMemGetInfo", &lib.rt_mem_get_info);
    Bind(handle, "cudaDeviceGetAttribute", &lib.rt_device_attribute);
    Bind(handle, "cudaGetDeviceProperties", &lib.rt_device_properties);
    Bind(handle, "cudaFuncGetName", &lib.rt_func_get_name);
  } else {
    Bind(handle, "cuCtxGetDevice", &lib.cu_ctx_get_device);
    Bind(handle, "cuMemGetInfo_v2", &lib.cu_mem_get_info);
    Bind(handle, "cuDriverGetVersion", &lib.cu_driver_version);
    Bind(handle, "cuDeviceGetName", &lib.cu_device_name);
    Bind(handle, "cuDeviceGetAttribute", &lib.cu_device_attribute);
    Bind(handle, "cuDeviceTotalMem_v2", &lib.cu_device_total_mem);
    Bind(handle, "cuDeviceGetMemPool", &lib.cu_device_mem_pool);
    Bind(handle, "cuMemPoolGetAttribute", &lib.cu_pool_attribute);
    Bind(handle, "cuFuncGetName", &lib.cu_func_get_name);
  }
}

}  // namespace

const CudaLib* LibOf(const void* addr, LibKind kind) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (a == 0 || IsShimText(addr)) return nullptr;
  if (const CudaLib* l = FindReady(a, kind)) return l;
  ObjectRange range;
  if (!FindObjectOf(addr, &range)) return nullptr;
  for (auto& s : g_libs) {
    int expected = 0;
    if (!__atomic_compare_exchange_n(&s.state, &expected, 1, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
      continue;
    }
    s.lib = CudaLib{};
    s.lib.kind = kind;
    s.lib.lo = range.lo;
    s.lib.hi = range.hi;
    s.lib.path = range.name;
    FillLib(s.lib, addr);
    __atomic_store_n(&s.state, 2, __ATOMIC_RELEASE);
    return &s.lib;
  }
  return nullptr;
}

// ---- facts ----------------------------------------------------------------------------------

namespace {

// The libraries a call went through: the runtime it called, and the driver that ran
// under it (the runtime's inner driver call, or the driver function itself). Only these
// are asked anything: a driver that ran a moment ago is certainly still loaded.
struct Libs {
  const CudaLib* rt = nullptr;
  const CudaLib* drv = nullptr;
};

Libs LibsOf(const Call& c) {
  Libs l;
  if (c.layer == GpuLayer::kRuntime) {
    l.rt = LibOf(c.real, LibKind::kRuntime);
    if (t_gpu.inner_real != nullptr) l.drv = LibOf(t_gpu.inner_real, LibKind::kDriver);
  } else {
    l.drv = LibOf(c.real, LibKind::kDriver);
  }
  return l;
}

// The current device: the driver's answer, or the runtime's when the driver is unknown and
// asking cannot fail (a failing runtime query would overwrite its sticky last error).
int CurrentDevice(const Libs& libs, bool allow_runtime) {
  const CudaLib* rt = libs.rt;
  if (const CudaLib* d = libs.drv; d != nullptr && d->cu_ctx_get_device != nullptr) {
    CUdevice dev = -1;
    if (d->cu_ctx_get_device(&dev) == CUDA_SUCCESS) return dev;
    return -1;
  }
  if (allow_runtime && rt != nullptr && rt->rt_get_device != nullptr) {
    int dev = -1;
    if (rt->rt_get_device(&dev) == cudaSuccess) return dev;
  }
  return -1;
}

unsigned SlotIndex(const CudaLib* lib) {
  return static_cast<unsigned>(reinterpret_cast<const LibSlot*>(
                                   reinterpret_cast<const char*>(lib) - offsetof(LibSlot, lib)) -
                               g_libs);
}

// One GpuVersion per runtime library (and one for driver-only use) per process, and
// once more for a runtime first seen before its driver was: the last one is complete.
void EnsureVersion(uint64_t ts, const Libs& libs) {
  const CudaLib* rt = libs.rt;
  const unsigned bit = rt != nullptr ? SlotIndex(rt) : 31;
  if (__atomic_load_n(&g_versions_recorded, __ATOMIC_ACQUIRE) & (1ull << (bit + 32))) return;
  if (libs.drv != nullptr) {
    if (!TakeOnce(&g_versions_recorded, bit + 32)) return;
    TakeOnce(&g_versions_recorded, bit);
  } else if (!TakeOnce(&g_versions_recorded, bit)) {
    return;
  }
  format::GpuVersion v;
  v.ts = ts;
  v.runtime = -1;
  v.driver = -1;
  int x = 0;
  const CudaLib* d = libs.drv;
  {
    // The runtime may initialise itself on this first query: it dlopen()s libcuda.so.1
    // (or fails to: no driver installed) and opens the driver's files. That is work the
    // program's own next call would have done, so it is recorded as the program's: the
    // shim's scope is lifted around the queries (the library-load and file hooks record
    // again), and runtime_depth is raised as in a runtime hook, so driver calls the
    // runtime makes underneath are not recorded as the program's own.
    ThreadState& t = t_thread;
    const int saved_busy = t.busy;
    t.busy = 0;
    ++t.runtime_depth;
    if (rt != nullptr && rt->rt_runtime_version != nullptr && rt->rt_runtime_version(&x) == cudaSuccess) {
      v.runtime = x;
    }
    if (rt != nullptr && rt->rt_driver_version != nullptr && rt->rt_driver_version(&x) == cudaSuccess) {
      v.driver = x;
    }
    if (d != nullptr && d->cu_driver_version != nullptr && d->cu_driver_version(&x) == CUDA_SUCCESS) {
      v.driver = x;
    }
    --t.runtime_depth;
    t.busy = saved_busy;
  }
  v.runtime_lib = rt != nullptr ? InternCString(rt->path) : 0;
  v.driver_lib = d != nullptr ? InternCString(d->path) : 0;
  Emit(v);
}

// Writes GpuDevice for dev the first time; true if it did. The runtime is asked only
// when allow_runtime is set (after a success or an out-of-memory failure, when its
// queries cannot fail and so cannot change its sticky last-error state).
bool EnsureDevice(uint64_t ts, int dev, const Libs& libs, bool allow_runtime) {
  if (dev < 0 || dev >= 64) return false;
  const CudaLib* d = libs.drv;
  const CudaLib* rt = libs.rt;
  const bool via_driver = d != nullptr && d->cu_device_name != nullptr &&
                          d->cu_device_attribute != nullptr && d->cu_device_total_mem != nullptr;
  const bool via_runtime = !via_driver && allow_runtime && rt != nullptr &&
                           rt->rt_device_attribute != nullptr && rt->rt_mem_get_info != nullptr;
  if (!via_driver && !via_runtime) return false;
  if (!TakeOnce(&g_devices_recorded, static_cast<unsigned>(dev))) return false;
  format::GpuDevice g;
  g.ts = ts;
  g.index = static_cast<uint64_t>(dev);
  char name[256] = {};
  int cc_major = 0, cc_minor = 0, bus = 0, pci_dev = 0, domain = 0;
  size_t total = 0;
  if (via_driver) {
    d->cu_device_name(name, sizeof(name), dev);
    d->cu_device_attribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    d->cu_device_attribute(&cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    d->cu_device_attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev);
    d->cu_device_attribute(&pci_dev, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, dev);
    d->cu_device_attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, dev);
    d->cu_device_total_mem(&total, dev);
  } else {
    if (rt->rt_device_properties != nullptr) {
      // cudaDeviceProp starts with char name[256] in every CUDA version; its size does
      // not, so give it room.
      alignas(16) char props[4096];
      if (rt->rt_device_properties(props, dev) == cudaSuccess) std::memcpy(name, props, 255);
    }
    rt->rt_device_attribute(&cc_major, cudaDevAttrComputeCapabilityMajor, dev);
    rt->rt_device_attribute(&cc_minor, cudaDevAttrComputeCapabilityMinor, dev);
    rt->rt_device_attribute(&bus, cudaDevAttrPciBusId, dev);
    rt->rt_device_attribute(&pci_dev, cudaDevAttrPciDeviceId, dev);
    rt->rt_device_attribute(&domain, cudaDevAttrPciDomainId, dev);
    size_t free_bytes = 0;
    rt->rt_mem_get_info(&free_bytes, &total);
  }
  name[sizeof(name) - 1] = '\0';
  g.name = InternCString(name);
  g.cc_major = static_cast<uint64_t>(cc_major);
  g.cc_minor = static_cast<uint64_t>(cc_minor);
  g.total = total;
  g.pci_domain = static_cast<uint64_t>(domain);
  g.pci_bus = static_cast<uint64_t>(bus);
  g.pci_device = static_cast<uint64_t>(pci_dev);
  Emit(g);
  return true;
}

// Free and total memory of the current device, through the driver when it is known
// (it keeps no error state), else through the runtime when that cannot fail.
void EmitMemInfo(uint64_t ts, int dev, const Libs& libs, format::GpuMemInfoWhy why,
                 bool allow_runtime) {
  size_t free_bytes = 0, total = 0;
  format::GpuMemInfo m;
  const CudaLib* rt = libs.rt;
  if (const CudaLib* d = libs.drv; d != nullptr && d->cu_mem_get_info != nullptr) {
    m.rc = d->cu_mem_get_info(&free_bytes, &total);
    m.layer = static_cast<uint64_t>(GpuLayer::kDriver);
  } else if (allow_runtime && rt != nullptr && rt->rt_mem_get_info != nullptr) {
    m.rc = rt->rt_mem_get_info(&free_bytes, &total);
    m.layer = static_cast<uint64_t>(GpuLayer::kRuntime);
  } else {
    return;
  }
  m.ts = ts;
  m.device = dev;
  m.free = free_bytes;
  m.total = total;
  m.why = static_cast<uint64_t>(why);
  Emit(m);
}

bool IsStreamOrdered(GpuApi api) { return format::IsStreamOrderedAlloc(static_cast<uint64_t>(api)); }

// After a failed stream-ordered allocation: how much the pool holds and uses.
void EmitPoolState(uint64_t ts, int dev, uint64_t pool, const Libs& libs) {
  const CudaLib* d = libs.drv;
  if (d == nullptr || d->cu_pool_attribute == nullptr) return;
  CUmemoryPool p = reinterpret_cast<CUmemoryPool>(pool);
  if (p == nullptr) {
    if (dev < 0 || d->cu_device_mem_pool == nullptr || d->cu_device_mem_pool(&p, dev) != CUDA_SUCCESS) {
      return;
    }
  }
  cuuint64_t reserved = 0, used = 0;
  format::GpuPool r;
  r.ts = ts;
  r.api = static_cast<uint64_t>(GpuApi::kPoolState);
  r.pool = reinterpret_cast<uint64_t>(p);
  r.device = dev;
  r.rc = d->cu_pool_attribute(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  if (r.rc == CUDA_SUCCESS) d->cu_pool_attribute(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  r.value = reserved;
  r.used = used;
  Emit(r);
}

uint64_t ImageSize(const void* image) {
  if (image == nullptr) return 0;
  const auto* p = static_cast<const uint8_t*>(image);
  uint32_t magic;
  std::memcpy(&magic, p, 4);
  if (magic == 0x466243b1u) {  // __fatBinC_Wrapper_t: {magic, version, data, filename}
    const void* data;
    std::memcpy(&data, p + 8, sizeof(data));
    return data != image ? ImageSize(data) : 0;
  }
  if (magic == 0xBA55ED50u) {  // fatbin: {magic, u16 version, u16 header size, u64 size}
    uint16_t header;
    uint64_t size;
    std::memcpy(&header, p + 6, 2);
    std::memcpy(&size, p + 8, 8);
    return header + size;
  }
  if (std::memcmp(p, "\x7f" "ELF", 4) == 0 && p[4] == 2) {  // ELF64: end of its header tables
    uint64_t shoff, phoff;
    uint16_t shentsize, shnum, phentsize, phnum;
    std::memcpy(&phoff, p + 0x20, 8);
    std::memcpy(&shoff, p + 0x28, 8);
    std::memcpy(&phentsize, p + 0x36, 2);
    std::memcpy(&phnum, p + 0x38, 2);
    std::memcpy(&shentsize, p + 0x3a, 2);
    std::memcpy(&shnum, p + 0x3c, 2);
    const uint64_t sh = shoff + static_cast<uint64_t>(shentsize) * shnum;
    const uint64_t ph = phoff + static_cast<uint64_t>(phentsize) * phnum;
    return sh > ph ? sh : ph;
  }
  // Text (PTX): the driver has just read it as a NUL-terminated string.
  if ((p[0] >= 0x20 && p[0] < 0x7f) || p[0] == '\n' || p[0] == '\t') {
    return std::strlen(static_cast<const char*>(image)) + 1;
  }
  return 0;
}

// The String id of the loaded object whose mapping holds addr (0: none, e.g. the heap).
uint64_t ObjectNameAt(const void* addr) {
  Dl_info info;
  if (addr == nullptr || dladdr(addr, &info) == 0 || info.dli_fname == nullptr) return 0;
  return InternCString(info.dli_fname);
}

}  // namespace

// ---- records ----------------------------------------------------------------------------------

// The per-call records are encoded through EmitHot (writer.h), the codec inlined.
void RecordAlloc(const Call& c, const AllocFacts& a) {
  const Libs libs = LibsOf(c);
  const bool ok = c.rc == 0;
  const int dev = a.device != -2 ? a.device : CurrentDevice(libs, ok || IsOutOfMemory(c.rc));
  EnsureVersion(c.t0, libs);
  const bool first = EnsureDevice(c.t0, dev, libs, ok || IsOutOfMemory(c.rc));
  format::GpuAlloc r;
  r.ts = c.t0;
  r.api = static_cast<uint64_t>(c.api);
  r.layer = static_cast<uint64_t>(c.layer);
  r.device = dev;
  r.stream = a.stream;
  r.addr = ok ? a.addr : 0;
  r.size = a.size;
  r.rc = c.rc;
  r.dur = c.t1 - c.t0;
  r.stack = CaptureGpuStack();
  r.py_stack = python::CapturePythonStackId();
  r.flags = a.flags;
  r.pool = a.pool;
  r.caller = r.stack == 0 ? reinterpret_cast<uint64_t>(c.caller) : 0;  // else the stack's frame 0
  r.pitch = a.pitch;
  if (c.layer == GpuLayer::kRuntime) {
    r.driver_api = t_gpu.inner_api;
    r.driver_rc = t_gpu.inner_rc;
  }
  const bool host = format::IsHostPinnedAlloc(r.api);
  if (!host) LiveNoteFirst(r.ts, r.size, dev);
  // A successful allocation held by the live set may give way to the window; any other
  // (a failure, a zero-size one, one the set had no slot for) is never dropped.
  if (ok && r.addr != 0 &&
      LiveInsert(format::GpuLiveSlot{r.addr, r.size, r.ts, r.stack, r.caller, r.py_stack, t_thread.tid,
                                     static_cast<int32_t>(dev), static_cast<uint16_t>(r.api),
                                     static_cast<uint8_t>(r.layer), 0, static_cast<uint32_t>(r.flags)})) {
    r.windowed = 1;
    EmitHotIntoWindow(r);
  } else {
    EmitHot(r);
  }
  if (__builtin_expect(IsStickyGpuError(c.rc), 0)) {
    NoteStickyError(c, FaultScope{});
    return;  // the device is gone: nothing more to ask it
  }
  if (!ok) {
    EmitMemInfo(c.t0, dev, libs, format::GpuMemInfoWhy::kAfterFailure, IsOutOfMemory(c.rc));
    if (IsStreamOrdered(c.api)) EmitPoolState(c.t0, dev, a.pool, libs);
  } else if (first) {
    EmitMemInfo(c.t1, dev, libs, format::GpuMemInfoWhy::kFirstUse, true);
  }
  CuptiMaybeFlush();
}

void RecordFree(const Call& c, uint64_t addr, uint64_t stream, const format::GpuLiveSlot* taken) {
  EnsureVersion(c.t0, LibsOf(c));
  format::GpuFree r;
  r.ts = c.t0;
  r.api = static_cast<uint64_t>(c.api);
  r.layer = static_cast<uint64_t>(c.layer);
  r.device = -1;  // the analyzer takes it from the allocation
  r.stream = stream;
  r.addr = addr;
  r.rc = c.rc;
  r.dur = c.t1 - c.t0;
  r.stack = CaptureGpuStack();
  r.py_stack = python::CapturePythonStackId();
  r.caller = r.stack == 0 ? reinterpret_cast<uint64_t>(c.caller) : 0;
  if (c.layer == GpuLayer::kRuntime) {
    r.driver_api = t_gpu.inner_api;
    r.driver_rc = t_gpu.inner_rc;
  }
  if (taken != nullptr) {
    // The allocation it took out of the live set, named so that a window that gave up
    // the GpuAlloc still knows it was live until now.
    r.size = taken->size;
    r.alloc_ts = taken->ticks;
    r.alloc_api = taken->api;
    r.alloc_layer = taken->layer;
    r.alloc_tid = taken->tid;
    r.alloc_device = taken->device;
    r.alloc_stack = taken->stack;
    r.alloc_caller = taken->caller;
    r.alloc_py_stack = taken->py_stack;
    LiveFreed(*taken, c.rc == 0, c.t0);
  }
  if (taken != nullptr && c.rc == 0) {
    r.windowed = 1;
    EmitHotIntoWindow(r);
  } else {
    EmitHot(r);
  }
  if (__builtin_expect(IsStickyGpuError(c.rc), 0)) NoteStickyError(c, FaultScope{});
}

void RecordMemInfo(const Call& c, const size_t* free_bytes, const size_t* total) {
  const Libs libs = LibsOf(c);
  EnsureVersion(c.t0, libs);
  format::GpuMemInfo m;
  m.ts = c.t0;
  m.device = c.rc == 0 ? CurrentDevice(libs, true) : -1;
  m.free = c.rc == 0 && free_bytes != nullptr ? *free_bytes : 0;
  m.total = c.rc == 0 && total != nullptr ? *total : 0;
  m.rc = c.rc;
  m.why = static_cast<uint64_t>(format::GpuMemInfoWhy::kProgramAsked);
  m.layer = static_cast<uint64_t>(c.layer);
  Emit(m);
}

void RecordVersionQuery(const Call& c) { EnsureVersion(c.t0, LibsOf(c)); }

void RecordPool(const Call& c, uint64_t pool, int device, uint64_t value) {
  format::GpuPool r;
  r.ts = c.t0;
  r.api = static_cast<uint64_t>(c.api);
  r.pool = pool;
  r.device = device;
  r.value = value;
  r.rc = c.rc;
  r.dur = c.t1 - c.t0;
  r.caller = reinterpret_cast<uint64_t>(c.caller);
  Emit(r);
}

void RecordVmm(const Call& c, const VmmFacts& v) {
  const bool creates = c.api == GpuApi::kCuMemCreate || c.api == GpuApi::kCuMemMap ||
                       c.api == GpuApi::kCuMemAddressReserve;
  const Libs libs = LibsOf(c);
  if (c.api == GpuApi::kCuMemCreate) EnsureDevice(c.t0, v.device, libs, false);
  format::GpuVmm r;
  r.ts = c.t0;
  r.api = static_cast<uint64_t>(c.api);
  r.handle = v.handle;
  r.addr = v.addr;
  r.size = v.size;
  r.offset = v.offset;
  r.rc = c.rc;
  r.dur = c.t1 - c.t0;
  r.stack = creates ? CaptureGpuStack() : 0;
  r.device = v.device;
  r.caller = reinterpret_cast<uint64_t>(c.caller);
  Emit(r);
  if (c.api == GpuApi::kCuMemCreate && c.rc != 0) {
    EmitMemInfo(c.t0, v.device, libs, format::GpuMemInfoWhy::kAfterFailure, false);
  }
}

void RecordModule(const Call& c, uint64_t handle, const void* image, const char* path) {
  format::GpuModule m;
  m.ts = c.t0;
  m.api = static_cast<uint64_t>(c.api);
  m.rc = c.rc;
  m.handle = c.rc == 0 ? handle : 0;
  m.image_size = c.rc == 0 ? ImageSize(image) : 0;
  m.path = InternCString(path);
  m.caller = ObjectNameAt(c.caller);
  m.image_object = ObjectNameAt(image);
  Emit(m);
}

void RecordError(const Call& c) {
  format::GpuError e;
  e.ts = c.t0;
  e.api = static_cast<uint64_t>(c.api);
  e.rc = c.rc;
  e.caller = ObjectNameAt(c.caller);
  Emit(e);
}

void RecordLaunchFailure(const Call& c, const void* func, uint64_t stream) {
  // Launch hooks do not reset t_gpu on success (that would cost more than the one
  // comparison they make), so only a driver launch that failed inside this very runtime
  // call (left in inner_func/inner_launch_real, consumed here) names the driver.
  Libs libs;
  const void* inner_func = nullptr;
  if (c.layer == GpuLayer::kRuntime) {
    libs.rt = LibOf(c.real, LibKind::kRuntime);
    inner_func = t_gpu.inner_func;
    if (inner_func != nullptr) libs.drv = LibOf(t_gpu.inner_launch_real, LibKind::kDriver);
    t_gpu.inner_func = nullptr;
    t_gpu.inner_launch_real = nullptr;
  } else {
    libs.drv = LibOf(c.real, LibKind::kDriver);
  }
  format::GpuLaunchFailed r;
  r.ts = c.t0;
  r.api = static_cast<uint64_t>(c.api);
  r.layer = static_cast<uint64_t>(c.layer);
  r.rc = c.rc;
  r.func = reinterpret_cast<uint64_t>(func);
  // The driver names its own handles; a bad handle (CUDA_ERROR_INVALID_HANDLE) is never
  // passed back to it. Runtime stubs are named offline from the module map.
  const CudaLib* d = libs.drv;
  if (c.layer == GpuLayer::kDriver && func != nullptr && c.rc != CUDA_ERROR_INVALID_HANDLE &&
      d != nullptr && d->cu_func_get_name != nullptr) {
    const char* name = nullptr;
    if (d->cu_func_get_name(&name, static_cast<CUfunction>(const_cast<void*>(func))) ==
            CUDA_SUCCESS &&
        name != nullptr) {
      r.name = InternCString(name);
    }
  }
  // Asking the runtime is safe after the image errors (not sticky, the query succeeds);
  // after others (700, ...) a failing query could replace the program's last error.
  const bool image_error = c.rc == cudaErrorNoKernelImageForDevice ||
                           c.rc == cudaErrorInvalidDeviceFunction;
  r.device = CurrentDevice(libs, image_error);
  r.stream = stream;
  r.stack = CaptureGpuStack();
  r.py_stack = python::CapturePythonStackId();
  r.caller = r.stack == 0 ? reinterpret_cast<uint64_t>(c.caller) : 0;
  r.inner_func = reinterpret_cast<uint64_t>(inner_func);
  Emit(r);
}

void LaunchFailed(GpuApi api, GpuLayer layer, const void* caller, const void* real, int64_t rc,
                  const void* func, uint64_t stream) {
  if (layer == GpuLayer::kDriver && t_thread.runtime_depth > 0) {
    t_gpu.inner_func = func;
    t_gpu.inner_launch_real = real;
    t_gpu.inner_real = real;
    return;
  }
  if (!Recording()) return;
  ShimScope scope;  // keeps errno
  if (!scope.entered()) return;
  const uint64_t now = Ticks();
  const Call c{api, layer, caller, real, now, now, rc};
  if (IsStickyGpuError(rc)) {
    // The context is corrupted: the launch belongs to the device fault (with
    // CUDA_LAUNCH_BLOCKING=1 its own kernel faulted; otherwise an earlier one did).
    FaultScope where;
    where.stream = stream;
    where.func = func;
    NoteStickyError(c, where);
    return;
  }
  RecordLaunchFailure(c, func, stream);
}

void LookupFailed(GpuApi api, const void* caller, const void* real, int64_t rc, const void* kernel,
                  uint64_t module, const char* name) {
  if (t_thread.runtime_depth > 0) {
    t_gpu.inner_func = kernel;
    t_gpu.inner_launch_real = real;
    t_gpu.inner_real = real;
    return;
  }
  if (!format::IsNoImageGpuError(rc) && !IsStickyGpuError(rc)) return;
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  const uint64_t now = Ticks();
  const Call c{api, GpuLayer::kDriver, caller, real, now, now, rc};
  if (IsStickyGpuError(rc)) {
    NoteStickyError(c, FaultScope{});
    return;
  }
  format::GpuLaunchFailed r;
  r.ts = now;
  r.api = static_cast<uint64_t>(api);
  r.layer = static_cast<uint64_t>(GpuLayer::kDriver);
  r.rc = rc;
  r.func = reinterpret_cast<uint64_t>(kernel);
  r.name = InternCString(name);
  r.module = module;
  Libs libs;
  libs.drv = LibOf(real, LibKind::kDriver);
  r.device = CurrentDevice(libs, false);
  r.stack = CaptureGpuStack();
  r.py_stack = python::CapturePythonStackId();
  r.caller = r.stack == 0 ? reinterpret_cast<uint64_t>(caller) : 0;
  Emit(r);
}

void SyncFailed(GpuApi api, GpuLayer layer, const void* caller, const void* real, int64_t rc,
                const FaultScope& where) {
  if (!IsStickyGpuError(rc)) return;
  if (layer == GpuLayer::kDriver && t_thread.runtime_depth > 0) {
    t_gpu.inner_real = real;  // the runtime's own hook records it
    return;
  }
  if (!Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  const uint64_t now = Ticks();
  NoteStickyError(Call{api, layer, caller, real, now, now, rc}, where);
}

void NoteBlockingSync(GpuApi api, GpuLayer layer, uint64_t t0, uint64_t ticks, const FaultScope& where,
                      bool device_wide, int64_t rc) {
  // Ticks to nanoseconds: the header's rate (refined with every sample), else the estimate
  // from the start-up anchor; with neither yet (the process's first moments), a TSC tick
  // is taken as a nanosecond, which errs towards recording.
  uint64_t ns = ticks;
  if (g_ticks_are_tsc) {
    const format::FileHeader* h = g_trace.header();
    uint64_t tps = h != nullptr ? h->ticks_per_sec_hint : 0;
    if (tps == 0) tps = TickRateEstimate();
    if (tps != 0) ns = static_cast<uint64_t>(static_cast<unsigned __int128>(ticks) * 1000000000u / tps);
  }
  if (ns < format::kGpuSyncRecordNs || !Recording()) return;
  ShimScope scope;
  if (!scope.entered()) return;
  format::GpuSync r;
  r.ts = t0;
  r.api = static_cast<uint64_t>(api);
  r.layer = static_cast<uint64_t>(layer);
  r.dur = ticks;
  r.stream = device_wide ? 0 : where.stream;
  r.device_wide = device_wide ? 1 : 0;
  r.rc = rc;
  Emit(r);
}

void RecordFault(const Call& c, const FaultScope& where, uint64_t order) {
  format::GpuFault r;
  r.ts = c.t0;
  r.order = order;
  r.api = static_cast<uint64_t>(c.api);
  r.layer = static_cast<uint64_t>(c.layer);
  r.rc = c.rc;
  r.stream = where.stream;
  r.device_wide = where.device_wide ? 1 : 0;
  // cuCtxGetDevice and cudaGetDevice still answer after a sticky error (measured on an
  // H200), and a successful query leaves the runtime's last error alone.
  r.device = CurrentDevice(LibsOf(c), true);
  r.stack = CaptureGpuStack();
  r.caller = r.stack == 0 ? reinterpret_cast<uint64_t>(c.caller) : 0;
  r.py_stack = python::CapturePythonStackId();
  r.func = reinterpret_cast<uint64_t>(where.func);
  const char* blocking = getenv("CUDA_LAUNCH_BLOCKING");
  r.launch_blocking = blocking != nullptr && blocking[0] == '1' ? 1 : 0;
  r.epoch = __atomic_load_n(&g_sync_epoch, __ATOMIC_RELAXED);
  Emit(r);
}

const char* RuntimeKernelName(const void* real, const void* stub) {
  const CudaLib* rt = LibOf(real, LibKind::kRuntime);
  if (rt == nullptr || rt->rt_func_get_name == nullptr || stub == nullptr) return nullptr;
  const char* name = nullptr;
  ThreadState& t = t_thread;
  ++t.runtime_depth;  // what the runtime calls underneath is its own
  const cudaError_t r = rt->rt_func_get_name(&name, stub);
  --t.runtime_depth;
  return r == cudaSuccess ? name : nullptr;
}

namespace {
// The host stubs whose names this process's trace has (open addressing, claimed by CAS;
// full: later stubs are not named, never blocked on).
constexpr size_t kNamedStubSlots = 4096;
uintptr_t g_named_stubs[kNamedStubSlots];

// True when stub was not in the set and is now.
bool ClaimStubName(uintptr_t stub) {
  size_t i = (stub >> 4) * 0x9E3779B97F4A7C15ull >> 52;
  for (size_t probe = 0; probe < 64; ++probe, i = (i + 1) & (kNamedStubSlots - 1)) {
    uintptr_t cur = __atomic_load_n(&g_named_stubs[i], __ATOMIC_ACQUIRE);
    if (cur == stub) return false;
    if (cur == 0) {
      if (__atomic_compare_exchange_n(&g_named_stubs[i], &cur, stub, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        return true;
      }
      if (cur == stub) return false;
    }
  }
  return false;
}
}  // namespace

void NameStubAtFirstLaunch(GpuApi api, const void* caller, const void* real, const void* stub) {
  if (!Recording()) return;
  ShimScope scope;  // keeps errno
  if (!scope.entered() || !ClaimStubName(reinterpret_cast<uintptr_t>(stub))) return;
  const char* name = RuntimeKernelName(real, stub);
  if (name == nullptr) return;
  const uint64_t now = Ticks();
  FunctionFacts f;
  f.handle = reinterpret_cast<uint64_t>(stub);
  f.stub = reinterpret_cast<uint64_t>(stub);
  f.name = name;
  RecordFunction(Call{api, GpuLayer::kRuntime, caller, real, now, now, 0}, f);
}

void ResetNamedStubs() {
  for (uintptr_t& s : g_named_stubs) s = 0;
  for (const void*& s : t_gpu.named) s = nullptr;
}

void RecordFunction(const Call& c, const FunctionFacts& f) {
  format::GpuFunction r;
  r.ts = c.t0;
  r.api = static_cast<uint64_t>(c.api);
  r.handle = f.handle;
  r.module = f.module;
  r.name = InternCString(f.name);
  r.stub = f.stub;
  r.kernel = f.kernel;
  Emit(r);
}

}  // namespace colabtrace::shim::gpu


namespace colabtrace::shim {

void GpuModuleStart(StartKind kind) {
  gpu::IsShimText(nullptr);  // computes the shim's range before any hook needs it
  if (kind == StartKind::kForkChild) gpu::ResetGpuFacts();
}

}  // namespace colabtrace::shim
