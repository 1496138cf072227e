/* Simulated libcupti.so (CUPTI 13) for the shim's CUPTI subscriber (shim/gpu/cupti.cpp).
 *
 * Types and layouts are shim/gpu/cupti_api.h's, which tests/gpu/toolkit/cuda_api_check.cpp
 * checks against the toolkit's cupti.h / cupti_activity.h. It is driven by the simulated driver
 * through its tool interface (sim_tool.h): cuptiSubscribe attaches to the libcuda.so.1 already
 * loaded in the process, which then reports each successful memory call, context creation and
 * module load or unload.
 *
 * Exports carry the real library's version node (libcupti.map).
 *
 * What it does, as CUPTI does:
 *  - one subscriber at a time: a second cuptiSubscribe (or cuptiSubscribe_v2), or any with SIMCUPTI_OTHER_SUBSCRIBER=1
 *    (a profiler such as Kineto or Nsight already subscribed), returns
 *    CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (39); after cuptiUnsubscribe the slot is free
 *    again. Enabled callbacks belong to the subscriber (gone with it; each subscription gets a
 *    handle of its own), while the activity API is process-wide and needs no subscriber: one pair
 *    of buffer callbacks (the last registered), the enabled kinds (cuptiActivityEnable /
 *    cuptiActivityDisable);
 *  - driver API callbacks (CUPTI_CB_DOMAIN_DRIVER_API) for the enabled callback ids, at API exit
 *    (the simulation cannot call at entry: it learns of a call when it returned), with the call's
 *    parameter block and return value; RESOURCE callbacks for context creation and module load /
 *    unload start, with the module's image as pCubin;
 *  - activity records CUPTI_ACTIVITY_KIND_MEMORY2 (CUpti_ActivityMemory4: memoryKind DEVICE for
 *    the program's allocations, DEVICE_STATIC for a loaded module's statics, as the real driver
 *    reports them) and MEMORY_POOL
 *    (CUpti_ActivityMemoryPool3), into buffers from the client's buffer-requested callback; a
 *    full buffer, and cuptiActivityFlushAll, hand the buffer back through buffer-completed on
 *    the calling thread. SIMCUPTI_DROP=N drops the first N memory records (as when no buffer
 *    was available); cuptiActivityGetNumDroppedRecords reports them once.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cupti_api.h"
#include "sim_tool.h"

#define SIM_CUPTI_EXPORT __attribute__((visibility("default")))

/* Recursive: a full buffer is handed back (buffer-completed) with the lock held, and the client
 * asks for the dropped count from that callback. */
static pthread_mutex_t g_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
/* The subscriber. Its handle is one of g_handles, a new one for each subscription, so a stale
 * handle of an earlier subscriber is refused like any other. */
static int g_subscribed;
static char g_handles[64];
static unsigned g_generation;
static CUpti_SubscriberHandle g_handle;
static CUpti_CallbackFunc g_callback;
static void *g_userdata;
static unsigned char g_driver_cbid[1024]; /* enabled driver API callback ids */
static int g_resource_domain;
/* Process-wide: the activity API. */
static int g_attached; /* to the simulated driver's tool interface */
static CUpti_BuffersCallbackRequestFunc g_requested;
static CUpti_BuffersCallbackCompleteFunc g_completed;
static int g_memory2, g_memory_pool;
static uint8_t *g_buf;
static size_t g_size, g_used;
static size_t g_dropped;
static long g_drop_budget = -1; /* SIMCUPTI_DROP, read at the first subscription */
static uint32_t g_correlation;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Attaches to the libcuda.so.1 already loaded in the process (once); 0 if there is none. Caller
 * holds g_mu. */
static void on_event(const sim_tool_data *d);
static int attach_locked(void) {
  if (g_attached) return 1;
  void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  void (*attach)(sim_tool_fn) = drv ? (void (*)(sim_tool_fn))dlsym(drv, "simcuda_debug_tool_attach") : NULL;
  if (!attach) return 0;
  attach(on_event);
  g_attached = 1;
  return 1;
}

static size_t record_size(CUpti_ActivityKind kind) {
  if (kind == CUPTI_ACTIVITY_KIND_MEMORY2) return sizeof(CUpti_ActivityMemory4);
  if (kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) return sizeof(CUpti_ActivityMemoryPool3);
  return 0;
}

/* Hands the current buffer back to the client (buffer-completed); caller holds g_mu. */
static void deliver_locked(void) {
  if (!g_buf) return;
  uint8_t *buf = g_buf;
  size_t size = g_size, used = g_used;
  g_buf = NULL, g_size = g_used = 0;
  if (g_completed) g_completed(NULL, 0, buf, size, used);
}

static void append_locked(const void *rec, size_t n) {
  if (g_drop_budget > 0) {
    g_drop_budget--;
    g_dropped++;
    return;
  }
  if (g_buf && g_used + n > g_size) deliver_locked();
  if (!g_buf && g_requested) {
    size_t max_records = 0;
    g_requested(&g_buf, &g_size, &max_records);
    g_used = 0;
  }
  if (!g_buf || g_size < n) {
    g_buf = NULL;
    g_dropped++;
    return;
  }
  memcpy(g_buf + g_used, rec, n);
  g_used += n;
}

static void on_event(const sim_tool_data *d) {
  pthread_mutex_lock(&g_mu);
  CUpti_CallbackFunc cb = g_subscribed ? g_callback : NULL;
  void *ud = g_userdata;
  switch (d->event) {
    case SIM_TOOL_API_EXIT:
      if (cb && d->cbid < sizeof g_driver_cbid && g_driver_cbid[d->cbid]) {
        int result = d->result;
        CUpti_CallbackData data = {0};
        data.callbackSite = CUPTI_API_EXIT;
        data.functionParams = d->params;
        data.functionReturnValue = &result;
        data.context = (struct CUctx_st *)d->ctx;
        data.correlationId = ++g_correlation;
        pthread_mutex_unlock(&g_mu);
        cb(ud, CUPTI_CB_DOMAIN_DRIVER_API, d->cbid, &data);
        return;
      }
      break;
    case SIM_TOOL_CONTEXT_CREATED:
    case SIM_TOOL_MODULE_LOADED:
    case SIM_TOOL_MODULE_UNLOADING:
      if (cb && g_resource_domain) {
        CUpti_ModuleResourceData mod = {d->module_id, d->image_size, (const char *)d->image};
        CUpti_ResourceData rd = {0};
        rd.context = (struct CUctx_st *)d->ctx;
        rd.resourceDescriptor = d->event == SIM_TOOL_CONTEXT_CREATED ? NULL : &mod;
        CUpti_CallbackId id = d->event == SIM_TOOL_CONTEXT_CREATED ? CUPTI_CBID_RESOURCE_CONTEXT_CREATED
                              : d->event == SIM_TOOL_MODULE_LOADED ? CUPTI_CBID_RESOURCE_MODULE_LOADED
                                                                   : CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING;
        pthread_mutex_unlock(&g_mu);
        cb(ud, CUPTI_CB_DOMAIN_RESOURCE, id, &rd);
        return;
      }
      break;
    case SIM_TOOL_MEMORY:
      if (g_memory2) {
        CUpti_ActivityMemory4 m;
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
        m.memoryOperationType = d->op == 1 ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                           : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
        m.memoryKind = d->memory_kind ? (CUpti_ActivityMemoryKind)d->memory_kind : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        m.correlationId = d->memory_kind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC ? 0 : ++g_correlation;
        m.address = d->addr;
        m.bytes = d->bytes;
        m.timestamp = now_ns();
        m.processId = (uint32_t)getpid();
        m.deviceId = (uint32_t)d->device;
        m.isAsync = d->pool != 0;
        m.memoryPoolConfig.memoryPoolType = d->pool ? CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL
                                                    : CUPTI_ACTIVITY_MEMORY_POOL_TYPE_INVALID;
        m.memoryPoolConfig.address = d->pool;
        append_locked(&m, sizeof m);
      }
      break;
    case SIM_TOOL_POOL:
      if (g_memory_pool) {
        CUpti_ActivityMemoryPool3 p;
        memset(&p, 0, sizeof p);
        p.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
        p.memoryPoolOperationType = (CUpti_ActivityMemoryPoolOperationType)d->op;
        p.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
        p.correlationId = ++g_correlation;
        p.processId = (uint32_t)getpid();
        p.deviceId = (uint32_t)d->device;
        p.address = d->pool;
        p.size = d->bytes;
        p.timestamp = now_ns();
        append_locked(&p, sizeof p);
      }
      break;
  }
  pthread_mutex_unlock(&g_mu);
}

static CUptiResult subscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback, void *userdata) {
  if (!subscriber) return CUPTI_ERROR_INVALID_PARAMETER;
  const char *other = getenv("SIMCUPTI_OTHER_SUBSCRIBER");
  pthread_mutex_lock(&g_mu);
  if (g_subscribed || (other && strcmp(other, "1") == 0)) {
    pthread_mutex_unlock(&g_mu);
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  if (!attach_locked()) {
    pthread_mutex_unlock(&g_mu);
    return CUPTI_ERROR_NOT_INITIALIZED;
  }
  const char *drop = getenv("SIMCUPTI_DROP");
  if (g_drop_budget < 0) g_drop_budget = drop && *drop ? atol(drop) : -1;
  g_subscribed = 1;
  g_callback = callback;
  g_userdata = userdata;
  g_handle = (CUpti_SubscriberHandle)&g_handles[g_generation++ % sizeof g_handles];
  *subscriber = g_handle;
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

SIM_CUPTI_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                            void *userdata) {
  return subscribe(subscriber, callback, userdata);
}

/* CUPTI 13's variant with parameters (NULL allowed; else structSize must be set). The simulation
 * names no old subscriber. */
SIM_CUPTI_EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                                               void *userdata, CUpti_SubscriberParams *params) {
  if (params && params->structSize == 0) return CUPTI_ERROR_INVALID_PARAMETER;
  return subscribe(subscriber, callback, userdata);
}

SIM_CUPTI_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber) {
  pthread_mutex_lock(&g_mu);
  CUptiResult r = g_subscribed && subscriber == g_handle ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
  if (r == CUPTI_SUCCESS) {
    g_subscribed = 0, g_callback = NULL, g_userdata = NULL, g_handle = NULL;
    memset(g_driver_cbid, 0, sizeof g_driver_cbid);
    g_resource_domain = 0;
  }
  pthread_mutex_unlock(&g_mu);
  return r;
}

SIM_CUPTI_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                                 CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  pthread_mutex_lock(&g_mu);
  CUptiResult r = g_subscribed && subscriber == g_handle && domain == CUPTI_CB_DOMAIN_DRIVER_API &&
                          cbid < sizeof g_driver_cbid
                      ? CUPTI_SUCCESS
                      : CUPTI_ERROR_INVALID_PARAMETER;
  if (r == CUPTI_SUCCESS) g_driver_cbid[cbid] = enable != 0;
  pthread_mutex_unlock(&g_mu);
  return r;
}

SIM_CUPTI_EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                               CUpti_CallbackDomain domain) {
  pthread_mutex_lock(&g_mu);
  if (!g_subscribed || subscriber != g_handle) {
    pthread_mutex_unlock(&g_mu);
    return CUPTI_ERROR_INVALID_PARAMETER;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) g_resource_domain = enable != 0;
  pthread_mutex_unlock(&g_mu);
  return domain == CUPTI_CB_DOMAIN_RESOURCE || domain == CUPTI_CB_DOMAIN_DRIVER_API ? CUPTI_SUCCESS
                                                                                      : CUPTI_ERROR_INVALID_PARAMETER;
}

SIM_CUPTI_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc requested,
                                                            CUpti_BuffersCallbackCompleteFunc completed) {
  if (!requested || !completed) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  g_requested = requested, g_completed = completed;
  attach_locked();
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

static CUptiResult set_kind(CUpti_ActivityKind kind, int on) {
  pthread_mutex_lock(&g_mu);
  if (kind == CUPTI_ACTIVITY_KIND_MEMORY2) g_memory2 = on;
  if (kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) g_memory_pool = on;
  if (on) attach_locked();
  pthread_mutex_unlock(&g_mu);
  return record_size(kind) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_PARAMETER;
}

SIM_CUPTI_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) { return set_kind(kind, 1); }

SIM_CUPTI_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) { return set_kind(kind, 0); }

SIM_CUPTI_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  (void)flag;
  pthread_mutex_lock(&g_mu);
  if (g_buf && g_used > 0) deliver_locked();
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}

SIM_CUPTI_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record) {
  if (!buffer || !record) return CUPTI_ERROR_INVALID_PARAMETER;
  uint8_t *p = buffer;
  if (*record) {
    size_t n = record_size((*record)->kind);
    if (n == 0) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    p = (uint8_t *)*record + n;
  }
  if (p + sizeof(CUpti_Activity) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  size_t n = record_size(((CUpti_Activity *)p)->kind);
  if (n == 0 || p + n > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = (CUpti_Activity *)p;
  return CUPTI_SUCCESS;
}

SIM_CUPTI_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(struct CUctx_st *context, uint32_t streamId,
                                                               size_t *dropped) {
  (void)context, (void)streamId;
  if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
  pthread_mutex_lock(&g_mu);
  *dropped = g_dropped;
  g_dropped = 0;
  pthread_mutex_unlock(&g_mu);
  return CUPTI_SUCCESS;
}
