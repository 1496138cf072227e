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
//   - only then is a libcupti taken (the shim has no DT_NEEDED on it), never a second copy
//     beside the program's (LoadCupti): the libcupti the process already has loaded; else
//     $COLABTRACE_CUPTI_LIB; else the one beside the process's libcudart (same directory,
//     the cu12 wheels' nvidia/cuda_cupti/lib, the toolkit's extras/CUPTI/lib64); else the
//     first of libcupti.so, libcupti.so.13, libcupti.so.12 the loader finds. The load is
//     recorded as colabtrace's own (LibsOwnDlopen), so the analyzer never reports it as
//     the program's.
// What it subscribes to: the driver API memory callbacks (cuMemAlloc_v2, ...AllocPitch_v2,
// ...AllocManaged, ...AllocAsync, cuMemFree_v2, cuMemFreeAsync), the RESOURCE domain
// (context created, module loaded / unloading with its cubin: the cubin's SM arches are
// recorded), and the activity kinds MEMORY2 and MEMORY_POOL.
// It never takes CUPTI from the program (CUPTI has one subscriber, and activity buffer
// callbacks are process-wide):
//   - if CUPTI already has a subscriber (torch.profiler/Kineto, Nsight) cuptiSubscribe fails
//     with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: the shim records that (CuptiState
//     kBackedOff, rc 39) and enables nothing; likewise (rc 0) when the program already
//     subscribed or registered its own activity buffers through the shim's hooks;
//   - when the program or its profiler calls cuptiSubscribe(_v2) or
//     cuptiActivityRegisterCallbacks later (exported hooks; the same entry points taken
//     with dlsym get wrappers, CuptiInterposeSymbol), the shim hands CUPTI over first: it
//     disables its activity kinds, flushes its buffers (forced), unsubscribes and records
//     kHandedOver; then the program's call runs as it would bare, and the shim never
//     calls CUPTI again. The hooks' own view of allocations goes on.
// Activity buffers are flushed from the shim's own slow paths (CuptiMaybeFlush, called
// when an allocation is recorded, at most once a second) and at exit; the shim runs no
// thread of its own (CUPTI's buffer-completed callback may run on CUPTI's thread). Records
// CUPTI dropped are counted and written with each flush (CuptiState kFlushed).
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

#include "clock.h"
#include "cupti_api.h"
#include "elf_symbols.h"
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
constexpr uint64_t kStartWaitNs = 2000000000;   // ProgramTakesCupti: the longest wait for StartCupti

struct CuptiFns {
  decltype(&::cuptiSubscribe) subscribe;
  decltype(&::cuptiUnsubscribe) unsubscribe;
  decltype(&::cuptiEnableDomain) enable_domain;
  decltype(&::cuptiEnableCallback) enable_callback;
  decltype(&::cuptiActivityRegisterCallbacks) register_callbacks;
  decltype(&::cuptiActivityEnable) activity_enable;
  decltype(&::cuptiActivityDisable) activity_disable;
  decltype(&::cuptiActivityFlushAll) flush_all;
  decltype(&::cuptiActivityGetNextRecord) next_record;
  decltype(&::cuptiActivityGetNumDroppedRecords) dropped_records;
};

bool g_enabled = false;     // COLABTRACE_CUPTI=1
int g_started = 0;          // StartCupti: 0 not yet, 1 running (on g_starter), 2 done
pthread_t g_starter;        // the thread running StartCupti
int g_running = 0;          // subscribed and activity enabled: CUPTI is the shim's
int g_program_took = 0;     // the program subscribed or registered activity buffers itself
const void* g_own_copy = nullptr;  // inside the libcupti the shim loaded for itself (none loaded
                                   // before it): never what the program's calls bind to
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

// ---- which libcupti ----------------------------------------------------------------------------

// "libcupti.so.13", "libcupti-1a2b3c4d.so.13" (a wheel's hashed copy): the file name of a
// `stem` library ("libcupti", "libcudart"), not of a sibling ("libcupti_sass_metrics").
bool IsLibraryFile(const char* path, const char* stem) {
  const char* base = std::strrchr(path, '/');
  base = base != nullptr ? base + 1 : path;
  const size_t n = std::strlen(stem);
  return std::strncmp(base, stem, n) == 0 && (base[n] == '.' || base[n] == '-') &&
         std::strstr(base + n, ".so") != nullptr;
}

struct LoadedPath {
  const char* stem;
  char path[PATH_MAX];
};

int FindLoadedCallback(struct dl_phdr_info* info, size_t, void* data) {
  auto* want = static_cast<LoadedPath*>(data);
  const char* name = info->dlpi_name;
  if (name == nullptr || name[0] != '/' || !IsLibraryFile(name, want->stem)) return 0;
  const size_t n = std::strlen(name);
  if (n >= sizeof(want->path)) return 0;
  std::memcpy(want->path, name, n + 1);
  return 1;
}

// The path of a loaded `stem` library, as the loader names it; false if none is loaded.
bool FindLoaded(const char* stem, LoadedPath* out) {
  out->stem = stem;
  out->path[0] = '\0';
  RealDlIteratePhdr()(FindLoadedCallback, out);
  return out->path[0] != '\0';
}

// dir + "/" + rel into out; false if it does not fit.
bool JoinPath(char* out, size_t cap, const char* dir, size_t dir_len, const char* rel) {
  const size_t rl = std::strlen(rel);
  if (dir_len + 1 + rl + 1 > cap) return false;
  std::memcpy(out, dir, dir_len);
  out[dir_len] = '/';
  std::memcpy(out + dir_len + 1, rel, rl + 1);
  return true;
}

void* OwnDlopen(const char* file, int mode) {
  if (LibsOwnDlopen != nullptr) return LibsOwnDlopen(file, mode);
  using DlopenFn = void* (*)(const char*, int);
  auto real_dlopen = reinterpret_cast<DlopenFn>(ResolveNext("dlopen"));
  return real_dlopen != nullptr ? real_dlopen(file, mode) : nullptr;
}

// The libcupti beside the process's libcudart: in its directory (CUDA 13 toolkits and the
// cu13 wheels' nvidia/cu13/lib), the cu12 wheels' nvidia/cuda_cupti/lib next to
// nvidia/cuda_runtime/lib, or an older toolkit's extras/CUPTI/lib64.
void* LoadBesideCudart() {
  LoadedPath cudart;
  if (!FindLoaded("libcudart", &cudart)) return nullptr;
  const size_t dir_len = static_cast<size_t>(std::strrchr(cudart.path, '/') - cudart.path);
  constexpr char kWheelRuntime[] = "/nvidia/cuda_runtime/lib";
  constexpr size_t kWheelLen = sizeof(kWheelRuntime) - 1;
  const bool cu12_wheel =
      dir_len >= kWheelLen && std::memcmp(cudart.path + dir_len - kWheelLen, kWheelRuntime, kWheelLen) == 0;
  char path[PATH_MAX];
  for (const char* rel : {"libcupti.so.13", "libcupti.so.12", "libcupti.so",
                          "../../cuda_cupti/lib/libcupti.so.12", "../extras/CUPTI/lib64/libcupti.so"}) {
    if (std::strncmp(rel, "../../cuda_cupti/", 17) == 0 && !cu12_wheel) continue;
    if (JoinPath(path, sizeof(path), cudart.path, dir_len, rel)) {
      if (void* h = OwnDlopen(path, RTLD_NOW | RTLD_LOCAL)) return h;
    }
  }
  return nullptr;
}

// *fresh: the shim mapped it (the process had no libcupti).
void* LoadCupti(bool* fresh) {
  // The copy the process already has: a second one would be a duplicate the program never
  // asked for, and two CUPTIs in one process do not share their one subscriber.
  *fresh = false;
  LoadedPath loaded;
  if (FindLoaded("libcupti", &loaded)) {
    if (void* h = OwnDlopen(loaded.path, RTLD_NOW | RTLD_NOLOAD)) return h;
  }
  *fresh = true;
  const char* chosen = getenv("COLABTRACE_CUPTI_LIB");
  if (chosen != nullptr && *chosen != '\0') return OwnDlopen(chosen, RTLD_NOW | RTLD_LOCAL);
  if (void* h = LoadBesideCudart()) return h;
  for (const char* name : {"libcupti.so", "libcupti.so.13", "libcupti.so.12"}) {
    if (void* h = OwnDlopen(name, RTLD_NOW | RTLD_LOCAL)) return h;
  }
  return nullptr;
}

// ---- start and hand-over -------------------------------------------------------------------------

template <class F> bool Bind(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(RealDlsym()(lib, name));
  return *out != nullptr;
}

// Gives CUPTI back: the shim's kinds off first (nothing more lands in its buffers), then
// every buffer back (forced: incomplete ones too; the program's buffer-completed callback
// must never get one of the shim's buffers), then the one subscriber slot freed. Runs once,
// by whoever cleared g_running.
void HandOver() {
  g_fn.activity_disable(CUPTI_ACTIVITY_KIND_MEMORY2);
  g_fn.activity_disable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
  g_fn.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const CUptiResult r = g_fn.unsubscribe(g_subscriber);
  g_subscriber = nullptr;
  EmitState(CuptiStateCode::kHandedOver, r);
}

void StartCupti(bool injected) {
  if (!g_enabled) return;
  int expected = 0;
  if (!__atomic_compare_exchange_n(&g_started, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    return;
  }
  g_starter = pthread_self();
  struct Done {
    ~Done() { __atomic_store_n(&g_started, 2, __ATOMIC_RELEASE); }
  } done;
  if (injected) EmitState(CuptiStateCode::kInjected, 0);
  if (__atomic_load_n(&g_program_took, __ATOMIC_ACQUIRE) != 0) {
    EmitState(CuptiStateCode::kBackedOff, 0);  // the program uses CUPTI itself
    return;
  }
  bool fresh = false;
  void* lib = LoadCupti(&fresh);
  CuptiFns f{};
  if (lib == nullptr || !Bind(lib, "cuptiSubscribe", &f.subscribe) ||
      !Bind(lib, "cuptiUnsubscribe", &f.unsubscribe) ||
      !Bind(lib, "cuptiEnableDomain", &f.enable_domain) ||
      !Bind(lib, "cuptiEnableCallback", &f.enable_callback) ||
      !Bind(lib, "cuptiActivityRegisterCallbacks", &f.register_callbacks) ||
      !Bind(lib, "cuptiActivityEnable", &f.activity_enable) ||
      !Bind(lib, "cuptiActivityDisable", &f.activity_disable) ||
      !Bind(lib, "cuptiActivityFlushAll", &f.flush_all) ||
      !Bind(lib, "cuptiActivityGetNextRecord", &f.next_record) ||
      !Bind(lib, "cuptiActivityGetNumDroppedRecords", &f.dropped_records)) {
    EmitState(CuptiStateCode::kLoadFailed, 0);
    return;
  }
  g_fn = f;
  if (fresh) __atomic_store_n(&g_own_copy, reinterpret_cast<const void*>(f.subscribe), __ATOMIC_RELEASE);
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
    // Half set up: give the subscriber slot back, or the program's profiler could never
    // have it.
    f.activity_disable(CUPTI_ACTIVITY_KIND_MEMORY2);
    f.activity_disable(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
    f.unsubscribe(g_subscriber);
    g_subscriber = nullptr;
    EmitState(CuptiStateCode::kFailed, r);
    return;
  }
  EmitState(CuptiStateCode::kSubscribed, 0);
  __atomic_store_n(&g_next_flush, MonotonicNs() + kFlushEveryNs, __ATOMIC_RELEASE);
  __atomic_store_n(&g_running, 1, __ATOMIC_RELEASE);
  // The program took CUPTI while this ran (its hook waits for StartCupti, but may have
  // looked before it began): give it back at once.
  if (__atomic_load_n(&g_program_took, __ATOMIC_ACQUIRE) != 0 &&
      __atomic_exchange_n(&g_running, 0, __ATOMIC_ACQ_REL) != 0) {
    HandOver();
  }
}

void Flush(uint32_t flag) {
  if (g_fn.flush_all(flag) != CUPTI_SUCCESS) return;
  EmitState(CuptiStateCode::kFlushed, 0);
}

// The program's cuptiSubscribe(_v2) or cuptiActivityRegisterCallbacks is about to run: CUPTI is
// the program's from now on.
void ProgramTakesCupti() {
  __atomic_store_n(&g_program_took, 1, __ATOMIC_RELEASE);
  // A StartCupti under way on another thread finishes first (it takes milliseconds). The
  // wait is bounded: were this thread holding a lock StartCupti needs (the loader's, from a
  // constructor), StartCupti would see g_program_took when it gets there and hand over.
  const uint64_t give_up = MonotonicNs() + kStartWaitNs;
  while (__atomic_load_n(&g_started, __ATOMIC_ACQUIRE) == 1 && !pthread_equal(g_starter, pthread_self()) &&
         MonotonicNs() < give_up) {
    sched_yield();
  }
  if (__atomic_exchange_n(&g_running, 0, __ATOMIC_ACQ_REL) != 0) HandOver();
}

// The program's definition of a CUPTI entry point: like `caller` binds it without the shim,
// never in the shim nor in a libcupti only the shim loaded. nullptr if there is none.
void* ProgramDefinition(const char* name, const void* caller) {
  return FindLikeCaller(name, caller, reinterpret_cast<const void*>(&ProgramTakesCupti),
                        __atomic_load_n(&g_own_copy, __ATOMIC_ACQUIRE));
}

// The real entry point for a call from `caller`: the program's definition; else (the
// program's reference bound to the one libcupti there is) the shim's copy.
template <class F> F RealCupti(const char* name, const void* caller) {
  ShimScope scope;  // FindLikeCaller keeps no error state; errno stays as it was
  void* f = ProgramDefinition(name, caller);
  if (f == nullptr) f = FindLikeCaller(name, caller, reinterpret_cast<const void*>(&ProgramTakesCupti));
  return reinterpret_cast<F>(f);
}

CUptiResult Subscribe(decltype(&::cuptiSubscribe) real, CUpti_SubscriberHandle* subscriber,
                      CUpti_CallbackFunc callback, void* userdata) {
  if (real == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  ProgramTakesCupti();
  return real(subscriber, callback, userdata);
}

CUptiResult SubscribeV2(decltype(&::cuptiSubscribe_v2) real, CUpti_SubscriberHandle* subscriber,
                        CUpti_CallbackFunc callback, void* userdata, CUpti_SubscriberParams* params) {
  if (real == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  ProgramTakesCupti();
  return real(subscriber, callback, userdata, params);
}

CUptiResult RegisterCallbacks(decltype(&::cuptiActivityRegisterCallbacks) real,
                              CUpti_BuffersCallbackRequestFunc requested,
                              CUpti_BuffersCallbackCompleteFunc completed) {
  if (real == nullptr) return CUPTI_ERROR_NOT_INITIALIZED;
  ProgramTakesCupti();
  return real(requested, completed);
}

// The real entry points a program took with dlsym (CuptiInterposeSymbol): one libcupti's.
decltype(&::cuptiSubscribe) g_dlsym_subscribe = nullptr;
decltype(&::cuptiSubscribe_v2) g_dlsym_subscribe_v2 = nullptr;
decltype(&::cuptiActivityRegisterCallbacks) g_dlsym_register = nullptr;

CUptiResult DlsymSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata) {
  return Subscribe(__atomic_load_n(&g_dlsym_subscribe, __ATOMIC_ACQUIRE), subscriber, callback, userdata);
}

CUptiResult DlsymSubscribeV2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback, void* userdata,
                             CUpti_SubscriberParams* params) {
  return SubscribeV2(__atomic_load_n(&g_dlsym_subscribe_v2, __ATOMIC_ACQUIRE), subscriber, callback, userdata,
                     params);
}

CUptiResult DlsymRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                   CUpti_BuffersCallbackCompleteFunc completed) {
  return RegisterCallbacks(__atomic_load_n(&g_dlsym_register, __ATOMIC_ACQUIRE), requested, completed);
}

// Hands out `wrapper` for `real` when `slot` is empty or already holds it; else (a second
// libcupti) `real` itself.
template <class F> void* WrapOnce(F* slot, F real, F wrapper) {
  F expected = nullptr;
  if (__atomic_compare_exchange_n(slot, &expected, real, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) ||
      expected == real) {
    return reinterpret_cast<void*>(wrapper);
  }
  return reinterpret_cast<void*>(real);
}

}  // namespace

void* CuptiInterposeSymbol(const char* name, void* real) {
  enum { kSubscribe, kSubscribeV2, kRegister, kOther } which = kOther;
  if (std::strcmp(name, "cuptiSubscribe") == 0) which = kSubscribe;
  if (std::strcmp(name, "cuptiSubscribe_v2") == 0) which = kSubscribeV2;
  if (std::strcmp(name, "cuptiActivityRegisterCallbacks") == 0) which = kRegister;
  if (which == kOther) return real;
  if (IsShimText(real)) {
    // dlsym found the shim's own hook (RTLD_DEFAULT): calls through it resolve like their
    // caller; but when no libcupti defines the name, the lookup must fail as it does bare.
    return ProgramDefinition(name, nullptr) != nullptr ? real : nullptr;
  }
  if (!g_enabled) return real;
  switch (which) {
    case kSubscribe:
      return WrapOnce(&g_dlsym_subscribe, reinterpret_cast<decltype(&::cuptiSubscribe)>(real), &DlsymSubscribe);
    case kSubscribeV2:
      return WrapOnce(&g_dlsym_subscribe_v2, reinterpret_cast<decltype(&::cuptiSubscribe_v2)>(real),
                      &DlsymSubscribeV2);
    default:
      return WrapOnce(&g_dlsym_register, reinterpret_cast<decltype(&::cuptiActivityRegisterCallbacks)>(real),
                      &DlsymRegisterCallbacks);
  }
}

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
    // CUPTI does not follow fork: a child starts without a subscriber of its own (what
    // the program did with CUPTI, g_program_took, is the child's too).
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

// The program's (its profiler's) own CUPTI: the shim hands CUPTI over, then the call runs.
extern "C" CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                      void* userdata) {
  namespace g = colabtrace::shim::gpu;
  return g::Subscribe(g::RealCupti<decltype(&::cuptiSubscribe)>("cuptiSubscribe", __builtin_return_address(0)),
                      subscriber, callback, userdata);
}

extern "C" CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                         void* userdata, CUpti_SubscriberParams* params) {
  namespace g = colabtrace::shim::gpu;
  return g::SubscribeV2(
      g::RealCupti<decltype(&::cuptiSubscribe_v2)>("cuptiSubscribe_v2", __builtin_return_address(0)), subscriber,
      callback, userdata, params);
}

extern "C" CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                      CUpti_BuffersCallbackCompleteFunc completed) {
  namespace g = colabtrace::shim::gpu;
  return g::RegisterCallbacks(g::RealCupti<decltype(&::cuptiActivityRegisterCallbacks)>(
                                  "cuptiActivityRegisterCallbacks", __builtin_return_address(0)),
                              requested, completed);
}
#pragma GCC visibility pop
