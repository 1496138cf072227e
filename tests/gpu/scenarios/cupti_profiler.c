/* A program with a CUPTI profiler of its own, as torch.profiler's Kineto is, for the CUPTI
 * hand-over tests (tests/gpu/test_gpu_cupti.py). Linked against the simulated libcuda.so.1 and
 * libcupti.so (so its CUPTI calls bind through the PLT, as libtorch's do); run bare and under the
 * shim with COLABTRACE_CUPTI=1, it must print the same.
 *
 * `gpu_cupti_profiler subscribe_twice`: cuInit, then cuptiSubscribe twice (CUPTI has one
 * subscriber: the second fails with 39), cuptiUnsubscribe, cuptiSubscribe again (succeeds).
 * Prints "first=R second=R unsubscribe=R again=R".
 *
 * `gpu_cupti_profiler profile` (entry points called directly), `profile_v2` (the same with
 * cuptiSubscribe_v2) and `profile_dlsym` (taken with dlopen(RTLD_NOLOAD) + dlsym, as a profiler
 * that loads CUPTI itself does), `activity_only` (no subscriber: only its own activity buffers,
 * which CUPTI lets one client have): cuInit, a context,
 * one module, a 4 MiB cuMemAlloc_v2 (the shim, when on, has subscribed by now); then the
 * profiler starts: cuptiSubscribe, the driver callbacks of cuMemAlloc_v2 and cuMemFree_v2, its
 * own activity buffers (malloc'ed), activity kind MEMORY2 only. Then: 8 and 16 MiB allocated,
 * the 8 MiB freed, a second module loaded (its statics are a DEVICE_STATIC record), a memory
 * pool created and destroyed (MEMORY_POOL records only if someone left that kind on), 32 MiB
 * allocated; cuptiActivityFlushAll. Prints what the profiler got: "subscribe=R callbacks=N
 * memory2=N static=N pool=N foreign=N" (foreign: buffers handed to its buffer-completed
 * callback that it never handed out). */
#define _GNU_SOURCE
#include <cuda.h>
#include <cupti_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda_test.h"
#include "driver_context.h"

#define MiB (1024ull * 1024ull)
#define BUF_BYTES (64 * 1024)

/* The profiler's CUPTI entry points. */
typedef struct {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
  CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *);
  CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*activity_enable)(CUpti_ActivityKind);
  CUptiResult (*flush_all)(uint32_t);
  CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
} cupti_fns;

static cupti_fns g_fn;
static int g_callbacks, g_memory2, g_static, g_pool, g_foreign;
static uint8_t *g_handed_out[64];
static int g_nhanded;

static void on_callback(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
  (void)ud, (void)cbid, (void)data;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) g_callbacks++;
}

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = malloc(BUF_BYTES);
  *size = *buffer ? BUF_BYTES : 0;
  *max_records = 0;
  if (*buffer && g_nhanded < 64) g_handed_out[g_nhanded++] = *buffer;
}

static void buffer_completed(struct CUctx_st *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
  (void)ctx, (void)stream, (void)size;
  int mine = 0;
  for (int i = 0; i < g_nhanded; i++) mine |= g_handed_out[i] == buffer;
  if (!mine) { /* not ours: never free it */
    g_foreign++;
    return;
  }
  CUpti_Activity *rec = NULL;
  while (g_fn.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY2) {
      const CUpti_ActivityMemory4 *m = (const CUpti_ActivityMemory4 *)rec;
      g_memory2++;
      if (m->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC) g_static++;
    } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMORY_POOL) {
      g_pool++;
    }
  }
  free(buffer);
}

static void run_profile(void) {
  scenario_driver_context();
  scenario_load_sm80_cubin();
  CUdeviceptr a, b, c, d;
  SIM_CHECK_EQ(cuMemAlloc(&a, 4 * MiB), CUDA_SUCCESS);
  CUpti_SubscriberHandle sub;
  CUpti_SubscriberParams params = {sizeof params, "profiler", NULL, 0};
  int rs = -1; /* -1: the activity API alone, no subscriber */
  if (g_fn.subscribe_v2) rs = g_fn.subscribe_v2(&sub, on_callback, NULL, &params);
  if (g_fn.subscribe) rs = g_fn.subscribe(&sub, on_callback, NULL);
  if (rs == CUPTI_SUCCESS) {
    SIM_CHECK_EQ(g_fn.enable_callback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2),
                 CUPTI_SUCCESS);
    SIM_CHECK_EQ(g_fn.enable_callback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2),
                 CUPTI_SUCCESS);
  }
  SIM_CHECK_EQ(g_fn.register_callbacks(buffer_requested, buffer_completed), CUPTI_SUCCESS);
  SIM_CHECK_EQ(g_fn.activity_enable(CUPTI_ACTIVITY_KIND_MEMORY2), CUPTI_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&b, 8 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&c, 16 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemFree(b), CUDA_SUCCESS);
  scenario_load_sm80_cubin();
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool;
  SIM_CHECK_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  SIM_CHECK_EQ(cuMemAlloc(&d, 32 * MiB), CUDA_SUCCESS);
  SIM_CHECK_EQ(g_fn.flush_all(0), CUPTI_SUCCESS);
  printf("subscribe=%d callbacks=%d memory2=%d static=%d pool=%d foreign=%d\n", rs, g_callbacks, g_memory2,
         g_static, g_pool, g_foreign);
}

/* The profiler's entry points called directly (bound through the PLT, as libtorch's are),
 * subscribing with `subscribe` or `subscribe_v2`, or neither (the activity API alone). */
static void run_direct(CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *),
                       CUptiResult (*subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                                                   CUpti_SubscriberParams *)) {
  g_fn = (cupti_fns){subscribe,           subscribe_v2,          cuptiEnableCallback,
                     cuptiActivityRegisterCallbacks, cuptiActivityEnable, cuptiActivityFlushAll,
                     cuptiActivityGetNextRecord};
  run_profile();
}

static void profile(void) { run_direct(cuptiSubscribe, NULL); }
static void profile_v2(void) { run_direct(NULL, cuptiSubscribe_v2); }
static void activity_only(void) { run_direct(NULL, NULL); }

static void profile_dlsym(void) {
  void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  SIM_CHECK(h != NULL);
  g_fn.subscribe = (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))dlsym(h, "cuptiSubscribe");
  g_fn.enable_callback = (CUptiResult(*)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId))
      dlsym(h, "cuptiEnableCallback");
  g_fn.register_callbacks = (CUptiResult(*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))
      dlsym(h, "cuptiActivityRegisterCallbacks");
  g_fn.activity_enable = (CUptiResult(*)(CUpti_ActivityKind))dlsym(h, "cuptiActivityEnable");
  g_fn.flush_all = (CUptiResult(*)(uint32_t))dlsym(h, "cuptiActivityFlushAll");
  g_fn.next_record = (CUptiResult(*)(uint8_t *, size_t, CUpti_Activity **))dlsym(h, "cuptiActivityGetNextRecord");
  SIM_CHECK(g_fn.subscribe && g_fn.enable_callback && g_fn.register_callbacks && g_fn.activity_enable &&
            g_fn.flush_all && g_fn.next_record);
  run_profile();
}

static void subscribe_twice(void) {
  SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
  CUpti_SubscriberHandle a, b, c;
  const CUptiResult first = cuptiSubscribe(&a, on_callback, NULL);
  const CUptiResult second = cuptiSubscribe(&b, on_callback, NULL);
  const CUptiResult unsub = cuptiUnsubscribe(a);
  const CUptiResult again = cuptiSubscribe(&c, on_callback, NULL);
  printf("first=%d second=%d unsubscribe=%d again=%d\n", (int)first, (int)second, (int)unsub, (int)again);
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"subscribe_twice", subscribe_twice},
      {"profile", profile},
      {"profile_v2", profile_v2},
      {"activity_only", activity_only},
      {"profile_dlsym", profile_dlsym}};
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
