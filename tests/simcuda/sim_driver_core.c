/* Simulated CUDA driver, part 1: configuration, the entry-point table and cuGetProcAddress,
 * initialization, devices, contexts, streams and error strings. See README.md. */
#include "sim_driver_internal.h" /* first: defines _GNU_SOURCE */

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cuda_errors.h" /* analyzer/gpu/: the generated table of every CUDA error */

typedef struct { const char *base, *sym; int version, ptds; void *fn; } sim_entry;
static const sim_entry k_entries[] = {
#define E(base, version, sym, ptds) {#base, #sym, version, ptds, (void *)&sym},
#include "sim_driver_entries.h"
#undef E
};

sim_state G = {.mu = PTHREAD_MUTEX_INITIALIZER};
_Thread_local struct CUctx_st *sim_tls_ctx;

/* A synchronisation that waits for a slow kernel (sim_sync_wait) sleeps until this time
 * (CLOCK_MONOTONIC ns) once it has released the lock, as a real synchronisation blocks only
 * its caller; kForever: it waits for a hanging kernel, which never completes. */
static _Thread_local uint64_t sim_tls_wait_until;
static const uint64_t kForever = UINT64_MAX;

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* An outside engine's work on streams (simcuda_debug_stream_engine_attach, sim_tool.h): a
 * synchronisation that waits for it polls the engine once it has released the lock. */
static sim_engine_busy_fn g_engine;
static _Thread_local struct { int on, any; void *stream; } sim_tls_engine;

int sim_lock_guard(void) { pthread_mutex_lock(&G.mu); return 0; }
void sim_unlock_guard(int *unused) {
  (void)unused;
  pthread_mutex_unlock(&G.mu);
  if (sim_tls_engine.on) {
    sim_tls_engine.on = 0;
    const sim_engine_busy_fn busy = __atomic_load_n(&g_engine, __ATOMIC_ACQUIRE);
    const struct timespec tick = {0, 200000}; /* 0.2 ms; a signal's handler runs between polls */
    while (busy && busy(sim_tls_engine.stream, sim_tls_engine.any)) nanosleep(&tick, NULL);
  }
  const uint64_t until = sim_tls_wait_until;
  if (!until) return;
  sim_tls_wait_until = 0;
  if (until == kForever) {
    /* Asleep for good, not spinning: a signal's handler runs and the wait goes on; SIGTERM's
     * or SIGKILL's default action ends the process. */
    for (;;) pause();
  }
  struct timespec ts = {(time_t)(until / 1000000000ull), (long)(until % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* ---- configuration ------------------------------------------------------------------------ */
static FILE *g_log;
static pthread_once_t g_config_once = PTHREAD_ONCE_INIT;

/* "4831838208", "4608M", "4.5G" style sizes (binary suffixes K/M/G/T, optional "iB"/"B"). */
static int parse_size(const char *s, uint64_t *out) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || v < 0) return 0;
  uint64_t mul = 1;
  switch (*end) {
    case 'k': case 'K': mul = 1024ull; end++; break;
    case 'm': case 'M': mul = SIM_MiB; end++; break;
    case 'g': case 'G': mul = SIM_GiB; end++; break;
    case 't': case 'T': mul = SIM_TiB; end++; break;
  }
  if (mul > 1 && *end == 'i') end++;
  if (mul > 1 && (*end == 'B' || *end == 'b')) end++;
  if (*end) return 0;
  *out = (uint64_t)(v * (double)mul + 0.5);
  return 1;
}

/* Comma-separated per-device list; the last entry repeats for the remaining devices. */
static void parse_size_list(const char *env, uint64_t dflt, uint64_t *out, int n) {
  const char *s = getenv(env);
  uint64_t last = dflt;
  for (int i = 0; i < n; i++) {
    if (s && *s) {
      char buf[64];
      size_t len = strcspn(s, ",");
      snprintf(buf, sizeof buf, "%.*s", (int)(len < 63 ? len : 63), s);
      if (!parse_size(buf, &last)) {
        fprintf(stderr, "[simcuda] bad %s entry '%s', using default\n", env, buf);
        last = dflt;
      }
      s += len + (s[len] == ',');
    }
    out[i] = last;
  }
}

static void config(void) {
  const char *lf = getenv("SIMCUDA_LOG_FILE"), *l = getenv("SIMCUDA_LOG");
  if (lf && *lf) g_log = fopen(lf, "a");
  else if (l && *l && strcmp(l, "0") != 0) g_log = stderr;
  if (g_log && g_log != stderr) setvbuf(g_log, NULL, _IOLBF, 0);
  G.log = g_log != NULL;

  const char *s = getenv("SIMCUDA_DEVICES");
  G.ndev = s && *s ? atoi(s) : 1;
  if (G.ndev < 0) G.ndev = 0;
  if (G.ndev > SIM_MAX_DEVICES) G.ndev = SIM_MAX_DEVICES;
  s = getenv("SIMCUDA_DRIVER_VERSION");
  G.driver_version = s && *s ? atoi(s) : 13000;
  s = getenv("SIMCUDA_CONTEXT_BYTES");
  if (!s || !parse_size(s, &G.context_bytes)) G.context_bytes = 512 * SIM_MiB;

  uint64_t total[SIM_MAX_DEVICES], other[SIM_MAX_DEVICES];
  parse_size_list("SIMCUDA_MEM_BYTES", 16 * SIM_GiB, total, SIM_MAX_DEVICES);
  parse_size_list("SIMCUDA_OTHER_BYTES", 0, other, SIM_MAX_DEVICES);
  int major = 8, minor = 0;
  s = getenv("SIMCUDA_CC");
  if (s && sscanf(s, "%d.%d", &major, &minor) < 1) major = 8, minor = 0;
  const char *fault = getenv("SIMCUDA_FAULT_KERNEL");
  G.fault_code = CUDA_ERROR_ILLEGAL_ADDRESS;
  if (fault && *fault) {
    snprintf(G.fault_kernel, sizeof G.fault_kernel, "%s", fault);
    char *colon = strrchr(G.fault_kernel, ':');
    if (colon && colon[1] >= '0' && colon[1] <= '9') {
      G.fault_code = (CUresult)atoi(colon + 1);
      *colon = 0;
    }
  }
  const char *slow = getenv("SIMCUDA_SLOW_KERNEL");
  if (slow && *slow) {
    snprintf(G.slow_kernel, sizeof G.slow_kernel, "%s", slow);
    char *colon = strrchr(G.slow_kernel, ':');
    G.slow_ns = 1000000000ull;  /* default: 1 s */
    if (colon && colon[1] >= '0' && colon[1] <= '9') {
      G.slow_ns = (uint64_t)strtoull(colon + 1, NULL, 10) * 1000000ull;
      *colon = 0;
    }
  }
  const char *hang = getenv("SIMCUDA_HANG_KERNEL");
  if (hang && *hang) snprintf(G.hang_kernel, sizeof G.hang_kernel, "%s", hang);
  const char *name = getenv("SIMCUDA_NAME");
  for (int i = 0; i < SIM_MAX_DEVICES; i++) {
    sim_device *d = &G.dev[i];
    snprintf(d->name, sizeof d->name, "%s", name && *name ? name : "Simulated GPU");
    d->cc_major = major, d->cc_minor = minor;
    d->total = total[i] > SIM_TiB ? SIM_TiB : total[i];
    d->other = other[i];
    d->heap.base = SIM_HEAP_BASE + (uint64_t)i * SIM_TiB;
    d->heap.size = d->total;
    d->primary.dev = i, d->primary.primary = 1;
  }
  G.va.base = SIM_VA_BASE, G.va.size = SIM_VA_SIZE;
}

void sim_config_once(void) { pthread_once(&g_config_once, config); }

void sim_log(const char *fmt, ...) {
  if (!g_log) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(g_log, "[simcuda] %s\n", buf);
}

/* ---- sim-only debug exports (not in the entry-point table) --------------------------------- */
SIM_EXPORT unsigned long long simcuda_debug_proc_lookups(void) { SIM_LOCKED; return G.proc_lookups; }
SIM_EXPORT unsigned long long simcuda_debug_export_table_calls(void) {
  SIM_LOCKED;
  return G.export_table_calls;
}
/* Largest 2 MiB-aligned free hole of device `dev` (what the biggest cuMemAlloc could get). */
SIM_EXPORT unsigned long long simcuda_debug_largest_free(int dev) {
  sim_config_once();
  SIM_LOCKED;
  if (dev < 0 || dev >= G.ndev) return 0;
  return sim_range_largest_gap(&G.dev[dev].heap, SIM_GRANULE);
}
/* Number of used blocks in the device heap (carves, allocations, pool chunks, VMM pieces). */
SIM_EXPORT unsigned long long simcuda_debug_heap_blocks(int dev) {
  sim_config_once();
  SIM_LOCKED;
  return dev < 0 || dev >= G.ndev ? 0 : G.dev[dev].heap.n;
}

/* ---- entry points ------------------------------------------------------------------------ */
CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus) {
  sim_config_once();
  SIM_LOCKED;
  G.proc_lookups++;
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult rc = CUDA_ERROR_NOT_FOUND;
  const sim_entry *best = NULL;
  if (!symbol || !pfn || (flags & ~(cuuint64_t)3) || cudaVersion > G.driver_version) {
    rc = CUDA_ERROR_INVALID_VALUE;
  } else {
    int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    for (size_t i = 0; i < sizeof k_entries / sizeof *k_entries; i++) {
      const sim_entry *e = &k_entries[i];
      if (strcmp(e->base, symbol) != 0) continue;
      st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      if (e->version > cudaVersion || (e->ptds && !per_thread)) continue;
      if (!best || e->version > best->version || (e->version == best->version && e->ptds)) best = e;
    }
    if (best) st = CU_GET_PROC_ADDRESS_SUCCESS, rc = CUDA_SUCCESS;
  }
  if (pfn) *pfn = best ? best->fn : NULL;
  if (symbolStatus) *symbolStatus = st;
  sim_log("cuGetProcAddress %s version=%d flags=%llu -> %d status=%d%s%s", symbol ? symbol : "(null)",
          cudaVersion, (unsigned long long)flags, (int)rc, (int)st, best ? " sym=" : "",
          best ? best->sym : "");
  return rc;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* No private export tables are simulated: every UUID gets CUDA_ERROR_NOT_SUPPORTED and a NULL
 * table (SIMCUDA_EXPORT_TABLE_RESULT=N returns N instead, for experiments; the table stays NULL). */
CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *id) {
  sim_config_once();
  SIM_LOCKED;
  G.export_table_calls++;
  if (ppExportTable) *ppExportTable = NULL;
  if (!ppExportTable || !id) return CUDA_ERROR_INVALID_VALUE;
  const char *forced = getenv("SIMCUDA_EXPORT_TABLE_RESULT");
  CUresult rc = forced && *forced ? (CUresult)atoi(forced) : CUDA_ERROR_NOT_SUPPORTED;
  char hex[33];
  for (int i = 0; i < 16; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id->bytes[i]);
  sim_log("cuGetExportTable uuid=%s -> %d", hex, (int)rc);
  return rc;
}

/* ---- the tool interface (sim_tool.h) and CUDA_INJECTION64_PATH ---------------------------- */
static sim_tool_fn g_tool;
SIM_EXPORT void simcuda_debug_tool_attach(sim_tool_fn fn) { __atomic_store_n(&g_tool, fn, __ATOMIC_RELEASE); }
SIM_EXPORT void simcuda_debug_stream_engine_attach(sim_engine_busy_fn fn) {
  __atomic_store_n(&g_engine, fn, __ATOMIC_RELEASE);
}
void sim_tool(const sim_tool_data *d) {
  sim_tool_fn fn = __atomic_load_n(&g_tool, __ATOMIC_ACQUIRE);
  if (fn) fn(d);
}
void sim_tool_api(uint32_t cbid, const void *params, void *ctx) {
  sim_tool_data d = {.event = SIM_TOOL_API_EXIT, .cbid = cbid, .params = params, .ctx = ctx, .device = -1};
  sim_tool(&d);
}
void sim_tool_memory(int op, uint64_t addr, uint64_t bytes, int device, uint64_t pool) {
  sim_tool_data d = {.event = SIM_TOOL_MEMORY, .op = op, .addr = addr, .bytes = bytes, .device = device,
                     .pool = pool};
  sim_tool(&d);
}

/* Like the real driver, the first successful cuInit loads the library CUDA_INJECTION64_PATH
 * names and calls its InitializeInjection (outside the driver's lock: the tool calls back). */
static void load_injection(void) {
  const char *path = getenv("CUDA_INJECTION64_PATH");
  if (!path || !*path) return;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
  int rc = init ? init() : -1;
  sim_log("injection %s -> %s %d", path, h ? (init ? "called" : "no InitializeInjection") : "not loaded", rc);
}

static CUresult init_locked(unsigned int flags, int *first);
CUresult CUDAAPI cuInit(unsigned int flags) {
  int first = 0;
  CUresult r = init_locked(flags, &first);
  if (first) load_injection();
  return r;
}

static CUresult init_locked(unsigned int flags, int *first) {
  sim_config_once();
  SIM_LOCKED;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (G.initialized || G.init_result != CUDA_SUCCESS) return G.init_result;
  const char *forced = getenv("SIMCUDA_INIT_ERROR");
  if (forced && *forced && atoi(forced) != 0) G.init_result = (CUresult)atoi(forced);
  else if (G.ndev == 0) G.init_result = CUDA_ERROR_NO_DEVICE;
  for (int i = 0; i < G.ndev && G.init_result == CUDA_SUCCESS; i++) {
    sim_device *d = &G.dev[i];
    uint64_t at;
    if (d->other && !sim_range_alloc_top(&d->heap, d->other > d->total ? d->total : d->other, K_OTHER,
                                         NULL, &at))
      G.init_result = CUDA_ERROR_OUT_OF_MEMORY;
  }
  G.initialized = G.init_result == CUDA_SUCCESS;
  *first = G.initialized;
  sim_log("cuInit -> %d (devices=%d)", (int)G.init_result, G.ndev);
  return G.init_result;
}

CUresult CUDAAPI cuDriverGetVersion(int *v) {
  sim_config_once();
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = G.driver_version;
  return CUDA_SUCCESS;
}

#define SIM_STR_CASE(code, name, desc) case code: return which ? desc : name;
static const char *cu_error_text(CUresult e, int which) {
  switch ((int)e) { CT_CU_ERRORS(SIM_STR_CASE) }
  return NULL;
}
CUresult CUDAAPI cuGetErrorString(CUresult e, const char **s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = cu_error_text(e, 1);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuGetErrorName(CUresult e, const char **s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  *s = cu_error_text(e, 0);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- devices ------------------------------------------------------------------------------ */
int sim_valid_dev(CUdevice d) { return d >= 0 && d < G.ndev; }

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = G.ndev;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *dev, int ordinal) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!dev) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *dev = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "%s", G.dev[dev].name);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = G.dev[dev].total;
  return CUDA_SUCCESS;
}

/* Legacy 32-bit variant: clamps to 4 GiB - 1 like the real driver's v1 entry point. */
CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes, CUdevice dev) {
  size_t b = 0;
  CUresult r = cuDeviceTotalMem_v2(bytes ? &b : NULL, dev);
  if (r == CUDA_SUCCESS) *bytes = b > 0xffffffffull ? 0xffffffffu : (unsigned int)b;
  return r;
}

static int attr_value(const sim_device *d, int dev, CUdevice_attribute a, int *v) {
  switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = d->cc_major; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = d->cc_minor; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 49152; break;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH: *v = 2147483647; break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = 1410000; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *v = 512; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 108; break;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = dev + 1; break;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = 1215000; break;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = 5120; break;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *v = 40 * 1024 * 1024; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *v = 167936; break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *v = 166912; break;
    default:
      if ((int)a <= 0 || (int)a >= (int)CU_DEVICE_ATTRIBUTE_MAX) return 0;
      *v = 0; /* every other valid attribute reads as 0 ("not supported") */
  }
  return 1;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!pi) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  return attr_value(&G.dev[dev], dev, attrib, pi) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- contexts ----------------------------------------------------------------------------- */
/* A context takes SIMCUDA_CONTEXT_BYTES from the top of its device's heap while it is active. */
static CUresult ctx_activate(struct CUctx_st *c) {
  sim_device *d = &G.dev[c->dev];
  uint64_t at;
  if (G.context_bytes && !sim_range_alloc_top(&d->heap, G.context_bytes, K_CTX, c, &at))
    return CUDA_ERROR_OUT_OF_MEMORY;
  c->active = 1;
  sim_tool_data t = {.event = SIM_TOOL_CONTEXT_CREATED, .ctx = c, .device = c->dev};
  sim_tool(&t);
  return CUDA_SUCCESS;
}

/* Destroying a context frees its carve, its cuMemAlloc/Pitch/Managed memory and its streams.
 * Pools, VMM handles/reservations and pinned host memory are device/process-scoped and stay. */
static void ctx_teardown(struct CUctx_st *c) {
  if (!c->active) return;
  sim_ctx_free_memory(c);
  sim_ctx_unload_modules(c);
  sim_range *h = &G.dev[c->dev].heap;
  for (size_t i = h->n; i-- > 0;)
    if (h->v[i].kind == K_CTX && h->v[i].owner == c) sim_range_remove(h, i);
  for (struct CUstream_st **p = &G.streams; *p;) {
    if ((*p)->ctx == c) {
      struct CUstream_st *dead = *p;
      *p = dead->next;
      free(dead);
    } else {
      p = &(*p)->next;
    }
  }
  c->active = 0;
  c->pending = c->sticky = CUDA_SUCCESS; /* a reset primary context (or a new one) is healthy */
  c->busy_until = 0;
  c->hung = 0;
  if (sim_tls_ctx == c && !c->primary) sim_tls_ctx = NULL;
}

static int known_ctx(struct CUctx_st *c) {
  if (!c) return 0;
  for (int i = 0; i < G.ndev; i++)
    if (c == &G.dev[i].primary) return 1;
  for (struct CUctx_st *p = G.ctxs; p; p = p->next)
    if (p == c) return 1;
  return 0;
}

CUresult sim_current_ctx_any(struct CUctx_st **out) {
  if (!G.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!sim_tls_ctx || !sim_tls_ctx->active) return CUDA_ERROR_INVALID_CONTEXT;
  *out = sim_tls_ctx;
  return CUDA_SUCCESS;
}
CUresult sim_current_ctx(struct CUctx_st **out) {
  CUresult r = sim_current_ctx_any(out);
  return r != CUDA_SUCCESS ? r : (*out)->sticky;
}
CUresult sim_current_sticky(void) {
  return G.initialized && sim_tls_ctx && sim_tls_ctx->active ? sim_tls_ctx->sticky : CUDA_SUCCESS;
}

/* ---- device faults, slow and hanging kernels (SIMCUDA_FAULT_KERNEL, _SLOW_KERNEL, _HANG_KERNEL) */
static CUstream stream_key(CUstream s) {
  return s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD ? NULL : s;
}
void sim_launched(struct CUctx_st *c, CUstream s, const char *name) {
  if (G.slow_kernel[0] && strcmp(name, G.slow_kernel) == 0) {
    /* It runs after the slow work already queued (the model keeps one busy stream per context:
     * the last one a slow kernel was launched on). */
    const uint64_t now = monotonic_ns();
    c->busy_until = (c->busy_until > now ? c->busy_until : now) + G.slow_ns;
    c->busy_stream = stream_key(s);
  }
  if (G.hang_kernel[0] && !c->hung && strcmp(name, G.hang_kernel) == 0) {
    c->hung = 1;
    c->hung_stream = stream_key(s);
  }
  if (!G.fault_kernel[0] || strcmp(name, G.fault_kernel) != 0 || c->pending || c->sticky) return;
  c->pending = G.fault_code;
  c->pending_stream = stream_key(s);
}
void sim_sync_wait(struct CUctx_st *c, CUstream s, int any) {
  if (__atomic_load_n(&g_engine, __ATOMIC_ACQUIRE)) {
    sim_tls_engine.on = 1;
    sim_tls_engine.any = any;
    sim_tls_engine.stream = stream_key(s);
  }
  if (c->hung && (any || c->hung_stream == stream_key(s))) {
    sim_tls_wait_until = kForever;
    return;
  }
  if (!c->busy_until || !(any || c->busy_stream == stream_key(s))) return;
  if (c->busy_until > sim_tls_wait_until) sim_tls_wait_until = c->busy_until;
  c->busy_until = 0; /* done once this synchronisation returns */
}
int sim_stream_busy(struct CUctx_st *c, CUstream s) {
  const sim_engine_busy_fn busy = __atomic_load_n(&g_engine, __ATOMIC_ACQUIRE);
  if (busy && busy(stream_key(s), 0)) return 1;
  if (c->hung && c->hung_stream == stream_key(s)) return 1;
  return c->busy_until > monotonic_ns() && c->busy_stream == stream_key(s);
}
CUresult sim_sync_faults(struct CUctx_st *c, CUstream s, int any) {
  if (c->pending && (any || c->pending_stream == stream_key(s))) {
    c->sticky = c->pending;
    c->pending = CUDA_SUCCESS;
  }
  return c->sticky;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  struct CUctx_st *c = &G.dev[dev].primary;
  if (!c->active) {
    CUresult r = ctx_activate(c);
    if (r != CUDA_SUCCESS) return r;
  }
  c->refcount++;
  *pctx = c;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  struct CUctx_st *c = &G.dev[dev].primary;
  if (c->refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--c->refcount == 0) ctx_teardown(c);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return cuDevicePrimaryCtxRelease_v2(dev); }

CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  ctx_teardown(&G.dev[dev].primary);
  G.dev[dev].primary.refcount = 0;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }

CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *flags = G.dev[dev].primary.flags;
  *active = G.dev[dev].primary.active;
  return CUDA_SUCCESS;
}

/* cuCtxCreate makes the new context current on the calling thread (no context stack). */
static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  struct CUctx_st *c = calloc(1, sizeof *c);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  c->dev = dev, c->flags = flags;
  CUresult r = ctx_activate(c);
  if (r != CUDA_SUCCESS) {
    free(c);
    return r;
  }
  c->next = G.ctxs, G.ctxs = c;
  sim_tls_ctx = c;
  *pctx = c;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxCreate(CUcontext *p, unsigned int f, CUdevice d) { return ctx_create(p, f, d); }
CUresult CUDAAPI cuCtxCreate_v2(CUcontext *p, unsigned int f, CUdevice d) { return ctx_create(p, f, d); }
CUresult CUDAAPI cuCtxCreate_v3(CUcontext *p, CUexecAffinityParam *a, int n, unsigned int f, CUdevice d) {
  (void)a, (void)n;
  return ctx_create(p, f, d);
}
CUresult CUDAAPI cuCtxCreate_v4(CUcontext *p, CUctxCreateParams *params, unsigned int f, CUdevice d) {
  (void)params;
  return ctx_create(p, f, d);
}

CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!known_ctx(ctx) || ctx->primary || !ctx->active) return CUDA_ERROR_INVALID_CONTEXT;
  ctx_teardown(ctx);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxDestroy(CUcontext ctx) { return cuCtxDestroy_v2(ctx); }

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = sim_tls_ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (ctx && (!known_ctx(ctx) || !ctx->active)) return CUDA_ERROR_INVALID_CONTEXT;
  sim_tls_ctx = ctx;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  SIM_LOCKED;
  struct CUctx_st *c = ctx;
  if (!c) {
    CUresult r = sim_current_ctx_any(&c); /* answers after a device fault too, as the real one */
    if (r != CUDA_SUCCESS) return r;
  } else if (!G.initialized) {
    return CUDA_ERROR_NOT_INITIALIZED;
  } else if (!known_ctx(c) || !c->active) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = c->dev;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxGetDevice(CUdevice *device) { return cuCtxGetDevice_v2(device, NULL); }

CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx) {
  SIM_LOCKED;
  struct CUctx_st *c = ctx;
  if (!c) {
    CUresult r = sim_current_ctx_any(&c);
    if (r != CUDA_SUCCESS) return r;
  } else if (!G.initialized) {
    return CUDA_ERROR_NOT_INITIALIZED;
  } else if (!known_ctx(c) || !c->active) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  sim_sync_wait(c, NULL, 1);
  CUresult f = sim_sync_faults(c, NULL, 1);
  if (f != CUDA_SUCCESS) return f;
  sim_pools_on_sync(c->dev);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuCtxSynchronize(void) { return cuCtxSynchronize_v2(NULL); }

/* ---- streams ------------------------------------------------------------------------------ */
CUresult sim_stream_ctx_any(CUstream s, struct CUctx_st **out) {
  if (!G.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) return sim_current_ctx_any(out);
  for (struct CUstream_st *p = G.streams; p; p = p->next)
    if (p == s) {
      *out = p->ctx;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_HANDLE;
}
CUresult sim_stream_ctx(CUstream s, struct CUctx_st **out) {
  CUresult r = sim_stream_ctx_any(s, out);
  return r != CUDA_SUCCESS ? r : (*out)->sticky;
}

CUresult CUDAAPI cuStreamCreate(CUstream *ph, unsigned int flags) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  s->ctx = c, s->flags = flags, s->next = G.streams, G.streams = s;
  *ph = s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy_v2(CUstream h) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  for (struct CUstream_st **p = &G.streams; *p; p = &(*p)->next)
    if (*p == h) {
      *p = h->next;
      free(h);
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_HANDLE;
}
CUresult CUDAAPI cuStreamDestroy(CUstream h) { return cuStreamDestroy_v2(h); }

/* Work is executed synchronously at submission; a stream sync is where pools trim. */
CUresult CUDAAPI cuStreamSynchronize(CUstream h) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_stream_ctx_any(h, &c);
  if (r != CUDA_SUCCESS) return r;
  sim_sync_wait(c, h, 0);
  if ((r = sim_sync_faults(c, h, 0)) != CUDA_SUCCESS) return r;
  sim_pools_on_sync(c->dev);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream h) { return cuStreamSynchronize(h); }
/* Work is done at submission, so a stream is complete (success, or its fault) unless a slow
 * kernel still runs on it. */
CUresult CUDAAPI cuStreamQuery(CUstream h) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_stream_ctx_any(h, &c);
  if (r != CUDA_SUCCESS) return r;
  if ((r = sim_sync_faults(c, h, 0)) != CUDA_SUCCESS) return r;
  return sim_stream_busy(c, h) ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamQuery_ptsz(CUstream h) { return cuStreamQuery(h); }
