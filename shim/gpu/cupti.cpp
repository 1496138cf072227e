// The CUPTI subscriber: off unless COLABTRACE_CUPTI=1 (it has not been validated on a
// GPU yet; docs/gpu-validation.md).
//
// How it comes in:
//   - at process start (CuptiModuleStart) the shim sets CUDA_INJECTION64_PATH to its own
//     file, but only when the variable is unset: Nsight Systems, ncu, cuda-gdb or any other
//     tool that set it keeps it;
//   - CUDA calls the exported InitializeInjection while cuInit runs; a successful cuInit
//     through the shim's hook starts it too (the variable may name another tool, or the
//     driver may have been initialised before the shim could set it);
//   - only then is libcupti dlopen()ed (the shim has no DT_NEEDED on it): the first of
//     $COLABTRACE_CUPTI_LIB, libcupti.so, libcupti.so.13, libcupti.so.12 that loads.
// What it subscribes to: the driver API memory callbacks (cuMemAlloc_v2, ...AllocPitch_v2,
// ...AllocManaged, ...AllocAsync, cuMemFree_v2, cuMemFreeAsync), the RESOURCE domain
// (context created, module loaded / unloading with its cubin: the cubin's SM arches are
// recorded), and the activity kinds MEMORY2 and MEMORY_POOL. If CUPTI already has a
// subscriber (torch.profiler/Kineto, Nsight) cuptiSubscribe fails with
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: the shim records that (CuptiState
// kBackedOff) and enables nothing.
// Activity buffers are flushed from the shim's own slow paths (CuptiMaybeFlush, called
// when an allocation is recorded, at most once a second) and at exit; the shim runs no
// thread of its own (CUPTI's buffer-completed callback may run on CUPTI's thread). Records
// CUPTI dropped are counted and written with each flush (CuptiState kFlushed).
#include <dlfcn.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "clock.h"
#include "cupti_api.h"
#include "gpu_module.h"
#include "modules.h"
#include "real.h"
#include "writer.h"

namespace colabtrace::shim {
namespace gpu {
namespace {

using format::CuptiStateCode;

constexpr size_t kBufferBytes = 1 << 20;        // one activity buffer
constexpr uint64_t kFlushEveryNs = 1000000000;  // CuptiMaybeFlush: at most once a second

struct CuptiFns {
  decltype(&::cuptiSubscribe) subscribe;
  decltype(&::cuptiEnableDomain) enable_domain;
  decltype(&::cuptiEnableCallback) enable_callback;
  decltype(&::cuptiActivityRegisterCallbacks) register_callbacks;
  decltype(&::cuptiActivityEnable) activity_enable;
  decltype(&::cuptiActivityFlushAll) flush_all;
  decltype(&::cuptiActivityGetNextRecord) next_record;
  decltype(&::cuptiActivityGetNumDroppedRecords) dropped_records;
};

bool g_enabled = false;     // COLABTRACE_CUPTI=1
int g_started = 0;          // StartCupti ran (once per process)
int g_running = 0;          // subscribed and activity enabled
CuptiFns g_fn;
CUpti_SubscriberHandle g_subscriber = nullptr;
uint64_t g_records = 0;     // activity records decoded since the last CuptiState
uint64_t g_dropped = 0;     // records CUPTI dropped since the last CuptiState
uint64_t g_next_flush = 0;  // MonotonicNs

// Runs emit() when this thread may write: from a program's call (a scope of our own), or
// from inside a shim hook or exit path that already holds the scope (CUPTI calls back
// synchronously from the driver call the hook made, and from cuptiActivityFlushAll).
template <class F> void EmitFromCallback(F&& emit) {
  if (Recording()) {
    ShimScope scope;
    if (scope.entered()) emit();
  } else if (g_recording && t_thread.busy && !t_thread.vfork_pending) {
    emit();
  }
}

void EmitState(CuptiStateCode code, int64_t rc) {
  EmitFromCallback([&] {
    format::CuptiState s;
    s.ts = Ticks();
    s.state = static_cast<uint64_t>(code);
    s.rc = rc;
    s.records = __atomic_exchange_n(&g_records, 0, __ATOMIC_ACQ_REL);
    s.dropped = __atomic_exchange_n(&g_dropped, 0, __ATOMIC_ACQ_REL);
    Emit(s);
  });
}

const char* ShimPath() {
  Dl_info info;
  if (dladdr(reinterpret_cast<const void*>(&ShimPath), &info) == 0) return nullptr;
  return info.dli_fname;
}

// ---- decoding --------------------------------------------------------------------------------

uint32_t Rd32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0] | p[1] << 8 | p[2] << 16) | static_cast<uint32_t>(p[3]) << 24;
}
uint64_t Rd64(const unsigned char* p) { return Rd32(p) | static_cast<uint64_t>(Rd32(p + 4)) << 32; }

// The SM of a CUDA ELF image (ABI version 8+, CUDA 13, moved it to bits 8..15).
int CubinArch(const unsigned char* e, size_t n) {
  if (n < 0x34 || std::memcmp(e, "\177ELF", 4) != 0) return 0;
  const uint32_t flags = Rd32(e + 0x30);
  return static_cast<int>(e[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
}

// "80,90": the arches of a cubin, or of each ELF entry of a fatbin.
void CubinArches(const char* image, size_t size, char* out, size_t cap) {
  out[0] = '\0';
  if (image == nullptr || size < 8) return;
  const auto* p = reinterpret_cast<const unsigned char*>(image);
  int arches[16];
  int n = 0;
  if (const int a = CubinArch(p, size); a != 0) {
    arches[n++] = a;
  } else if (Rd32(p) == 0xBA55ED50u && size >= 16) {
    const uint64_t header = p[6] | p[7] << 8, total = Rd64(p + 8);
    uint64_t off = header;
    while (off + 0x20 <= header + total && off + 0x20 <= size && n < 16) {
      const unsigned char* e = p + off;
      if ((e[0] | e[1] << 8) == 2) arches[n++] = static_cast<int>(Rd32(e + 0x1c));
      const uint64_t step = Rd32(e + 4) + Rd64(e + 8);
      if (Rd32(e + 4) == 0 || step == 0) break;
      off += step;
    }
  }
  size_t len = 0;
  for (int i = 0; i < n && len + 12 < cap; ++i) {
    if (i > 0) out[len++] = ',';
    char digits[12];
    int d = 0;
    for (int v = arches[i]; v > 0 && d < 11; v /= 10) digits[d++] = static_cast<char>('0' + v % 10);
    while (d > 0) out[len++] = digits[--d];
  }
  out[len] = '\0';
}

void EmitMemory(uint64_t op, uint64_t pool_record, uint64_t addr, uint64_t bytes, int64_t device,
                uint64_t kind, uint64_t start_ns, uint64_t pc, uint64_t correlation, uint64_t pool,
                uint64_t source) {
  format::CuptiMemory m;
  m.ts = Ticks();
  m.op = op;
  m.pool_record = pool_record;
  m.addr = addr;
  m.bytes = bytes;
  m.device = device;
  m.memory_kind = kind;
  m.start_ns = start_ns;
  m.pc = pc;
  m.correlation = correlation;
  m.pool = pool;
  m.source = source;
  Emit(m);
}

// ---- CUPTI's callbacks ------------------------------------------------------------------------

void BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  void* p = mmap(nullptr, kBufferBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  *buffer = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
  *size = p == MAP_FAILED ? 0 : kBufferBytes;
  *max_records = 0;  // as many as fit
}

void BufferCompleted(CUctx_st* ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  if (buffer == nullptr) return;
  EmitFromCallback([&] {
    CUpti_Activity* rec = nullptr;
    uint64_t n = 0;
    while (g_fn.next_record(buffer, valid, &rec) == CUPTI_SUCCESS && rec != nullptr) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(rec);
        EmitMemory(m->memoryOperationType, 0, m->address, m->bytes, m->deviceId, m->memoryKind,
                   m->timestamp, m->PC, m->correlationId, m->memoryPoolConfig.address, 1);
        ++n;
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemoryPool3*>(rec);
        EmitMemory(m->memoryPoolOperationType, 1, m->address, m->size, m->deviceId, 0,
                   m->timestamp, 0, m->correlationId, m->address, 1);
        ++n;
      }
    }
    __atomic_add_fetch(&g_records, n, __ATOMIC_ACQ_REL);
  });
  size_t dropped = 0;
  if (g_fn.dropped_records(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
    __atomic_add_fetch(&g_dropped, static_cast<uint64_t>(dropped), __ATOMIC_ACQ_REL);
  }
  munmap(buffer, size);
}

void OnDriverCall(CUpti_CallbackId cbid, const CUpti_CallbackData* d) {
  if (d->callbackSite != CUPTI_API_EXIT || d->functionParams == nullptr ||
      d->functionReturnValue == nullptr || *static_cast<const int*>(d->functionReturnValue) != 0) {
    return;
  }
  uint64_t op = 0, addr = 0, bytes = 0;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync: {  // all start {CUdeviceptr*, size_t}
      const auto* p = static_cast<const cuMemAlloc_v2_params*>(d->functionParams);
      if (p->dptr == nullptr) return;
      op = 1, addr = *p->dptr, bytes = p->bytesize;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      struct Pitch {
        unsigned long long* dptr;
        size_t* pitch;
        size_t width, height;
        unsigned int elem;
      };
      const auto* p = static_cast<const Pitch*>(d->functionParams);
      if (p->dptr == nullptr || p->pitch == nullptr) return;
      op = 1, addr = *p->dptr, bytes = *p->pitch * p->height;
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync: {  // both start {CUdeviceptr}
      op = 2, addr = static_cast<const cuMemFree_v2_params*>(d->functionParams)->dptr;
      break;
    }
    default:
      return;
  }
  EmitFromCallback([&] { EmitMemory(op, 0, addr, bytes, -1, 0, 0, 0, d->correlationId, 0, 2); });
}

void OnResource(CUpti_CallbackId cbid, const CUpti_ResourceData* r) {
  format::CuptiModule m;
  m.ts = Ticks();
  m.device = -1;
  m.context_id = reinterpret_cast<uint64_t>(r->context);
  char archs[128] = "";
  if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
    m.event = static_cast<uint64_t>(format::CuptiModuleEvent::kContextCreated);
  } else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED ||
             cbid == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) {
    m.event = static_cast<uint64_t>(cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED
                                        ? format::CuptiModuleEvent::kModuleLoaded
                                        : format::CuptiModuleEvent::kModuleUnloading);
    const auto* mod = static_cast<const CUpti_ModuleResourceData*>(r->resourceDescriptor);
    if (mod != nullptr) {
      m.module_id = mod->moduleId;
      m.cubin_size = mod->cubinSize;
      CubinArches(mod->pCubin, mod->cubinSize, archs, sizeof(archs));
    }
  } else {
    return;
  }
  EmitFromCallback([&] {
    m.archs = InternCString(archs);
    Emit(m);
  });
}

void Callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (data == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) {
    OnDriverCall(cbid, static_cast<const CUpti_CallbackData*>(data));
  } else if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    OnResource(cbid, static_cast<const CUpti_ResourceData*>(data));
  }
}

// ---- start ------------------------------------------------------------------------------------

void* LoadCupti() {
  using DlopenFn = void* (*)(const char*, int);
  auto real_dlopen = reinterpret_cast<DlopenFn>(ResolveNext("dlopen"));
  if (real_dlopen == nullptr) return nullptr;
  const char* chosen = getenv("COLABTRACE_CUPTI_LIB");
  if (chosen != nullptr && *chosen != '\0') return real_dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
  for (const char* name : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"}) {
    if (void* h = real_dlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

template <class F> bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(RealDlsym()(lib, name));
  return *out != nullptr;
}

void StartCupti(bool injected) {
  if (!g_enabled || __atomic_exchange_n(&g_started, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (injected) EmitState(CuptiStateCode::kInjected, 0);
  void* lib = LoadCupti();
  CuptiFns f{};
  if (lib == nullptr || !Bind(lib, "cuptiSubscribe", &f.subscribe) ||
      !Bind(lib, "cuptiEnableDomain", &f.enable_domain) ||
      !Bind(lib, "cuptiEnableCallback", &f.enable_callback) ||
      !Bind(lib, "cuptiActivityRegisterCallbacks", &f.register_callbacks) ||
      !Bind(lib, "cuptiActivityEnable", &f.activity_enable) ||
      !Bind(lib, "cuptiActivityFlushAll", &f.flush_all) ||
      !Bind(lib, "cuptiActivityGetNextRecord", &f.next_record) ||
      !Bind(lib, "cuptiActivityGetNumDroppedRecords", &f.dropped_records)) {
    EmitState(CuptiStateCode::kLoadFailed, 0);
    return;
  }
  g_fn = f;
  CUptiResult r = f.subscribe(&g_subscriber, Callback, nullptr);
  if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
    EmitState(CuptiStateCode::kBackedOff, r);  // a profiler holds CUPTI: leave it alone
    return;
  }
  if (r != CUPTI_SUCCESS) {
    EmitState(CuptiStateCode::kFailed, r);
    return;
  }
  for (CUpti_CallbackId cbid :
       {CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
        CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
        CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync}) {
    if (r == CUPTI_SUCCESS) r = f.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  }
  if (r == CUPTI_SUCCESS) r = f.enable_domain(1, g_subscriber, CUPTI_CB_DOMAIN_RESOURCE);
  if (r == CUPTI_SUCCESS) r = f.register_callbacks(BufferRequested, BufferCompleted);
  if (r == CUPTI_SUCCESS) r = f.activity_enable(CUPTI_ACTIVITY_KIND_MEMORY2);
  if (r == CUPTI_SUCCESS) r = f.activity_enable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
  if (r != CUPTI_SUCCESS) {
    EmitState(CuptiStateCode::kFailed, r);
    return;
  }
  __atomic_store_n(&g_next_flush, MonotonicNs() + kFlushEveryNs, __ATOMIC_RELEASE);
  __atomic_store_n(&g_running, 1, __ATOMIC_RELEASE);
  EmitState(CuptiStateCode::kSubscribed, 0);
}

void Flush(uint32_t flag) {
  if (g_fn.flush_all(flag) != CUPTI_SUCCESS) return;
  EmitState(CuptiStateCode::kFlushed, 0);
}

}  // namespace

void CuptiAfterInit() { StartCupti(false); }

void CuptiMaybeFlush() {
  if (__builtin_expect(__atomic_load_n(&g_running, __ATOMIC_ACQUIRE) == 0, 1)) return;
  const uint64_t now = MonotonicNs();
  uint64_t due = __atomic_load_n(&g_next_flush, __ATOMIC_ACQUIRE);
  if (now < due) return;
  if (!__atomic_compare_exchange_n(&g_next_flush, &due, now + kFlushEveryNs, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return;  // another thread flushes
  }
  Flush(0);
}

}  // namespace gpu

void CuptiModuleStart(StartKind kind) {
  if (kind == StartKind::kForkChild) {
    // CUPTI does not follow fork: a child starts without a subscriber of its own.
    gpu::g_started = gpu::g_running = 0;
    gpu::g_records = gpu::g_dropped = 0;
    return;
  }
  const char* v = getenv("COLABTRACE_CUPTI");
  gpu::g_enabled = v != nullptr && std::strcmp(v, "1") == 0;
  if (!gpu::g_enabled || getenv("CUDA_INJECTION64_PATH") != nullptr) return;  // never override
  const char* self = gpu::ShimPath();
  using SetenvFn = int (*)(const char*, const char*, int);
  auto real_setenv = reinterpret_cast<SetenvFn>(ResolveNext("setenv"));
  if (self != nullptr && real_setenv != nullptr) real_setenv("CUDA_INJECTION64_PATH", self, 0);
}

void CuptiModuleFinish() {
  if (__atomic_load_n(&gpu::g_running, __ATOMIC_ACQUIRE) == 0) return;
  gpu::Flush(1);  // CUPTI_ACTIVITY_FLAG_FLUSH_FORCED: incomplete buffers too
}

}  // namespace colabtrace::shim

// ---- exported -----------------------------------------------------------------------------------
#pragma GCC visibility push(default)
// Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names this file.
extern "C" int InitializeInjection(void) {
  colabtrace::shim::gpu::StartCupti(true);
  return 1;
}
#pragma GCC visibility pop
