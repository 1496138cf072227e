/* Simulated CUDA driver, part 2: the first-fit range allocator and every memory API
 * (plain/pitched/managed/host memory, stream-ordered pools, VMM, copies). See README.md. */
#include "sim_driver_internal.h" /* first: defines _GNU_SOURCE */

#include <stdlib.h>
#include <string.h>


/* ---- sim_range: sorted array of used blocks ----------------------------------------------- */
static int range_insert(sim_range *r, size_t at, sim_blk b) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? r->cap * 2 : 16;
    sim_blk *v = realloc(r->v, cap * sizeof *v);
    if (!v) return 0;
    r->v = v, r->cap = cap;
  }
  memmove(r->v + at + 1, r->v + at, (r->n - at) * sizeof *r->v);
  r->v[at] = b;
  r->n++;
  r->used += b.len;
  return 1;
}

void sim_range_remove(sim_range *r, size_t i) {
  r->used -= r->v[i].len;
  memmove(r->v + i, r->v + i + 1, (r->n - i - 1) * sizeof *r->v);
  r->n--;
}

void sim_range_clear(sim_range *r) {
  free(r->v);
  r->v = NULL, r->n = r->cap = 0, r->used = 0;
}

/* gap i lies between block i-1 and block i (gap 0 starts at base, gap n ends at base+size) */
static uint64_t gap_lo(const sim_range *r, size_t i) { return i ? r->v[i - 1].addr + r->v[i - 1].len : r->base; }
static uint64_t gap_hi(const sim_range *r, size_t i) { return i < r->n ? r->v[i].addr : r->base + r->size; }

int sim_range_alloc(sim_range *r, uint64_t len, uint64_t align, int kind, void *owner, uint64_t *out) {
  for (size_t i = 0; i <= r->n; i++) {
    uint64_t lo = sim_round_up(gap_lo(r, i), align), hi = gap_hi(r, i);
    if (lo < hi && hi - lo >= len) {
      if (!range_insert(r, i, (sim_blk){lo, len, kind, owner, 0})) return 0;
      *out = lo;
      return 1;
    }
  }
  return 0;
}

int sim_range_alloc_top(sim_range *r, uint64_t len, int kind, void *owner, uint64_t *out) {
  for (size_t i = r->n + 1; i-- > 0;) {
    uint64_t lo = gap_lo(r, i), hi = gap_hi(r, i);
    if (hi - lo >= len) {
      if (!range_insert(r, i, (sim_blk){hi - len, len, kind, owner, 0})) return 0;
      *out = hi - len;
      return 1;
    }
  }
  return 0;
}

long sim_range_find(const sim_range *r, uint64_t addr) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) { /* first block with addr > target */
    size_t mid = (lo + hi) / 2;
    if (r->v[mid].addr <= addr) lo = mid + 1;
    else hi = mid;
  }
  if (lo == 0) return -1;
  const sim_blk *b = &r->v[lo - 1];
  return addr < b->addr + b->len ? (long)(lo - 1) : -1;
}

int sim_range_alloc_at(sim_range *r, uint64_t addr, uint64_t len, int kind, void *owner) {
  if (addr < r->base || len > r->size || addr - r->base > r->size - len) return 0;
  size_t i = 0;
  while (i < r->n && r->v[i].addr < addr) i++; /* insertion point: gap i */
  if (gap_lo(r, i) > addr || gap_hi(r, i) < addr + len) return 0;
  return range_insert(r, i, (sim_blk){addr, len, kind, owner, 0});
}

uint64_t sim_range_largest_gap(const sim_range *r, uint64_t align) {
  uint64_t best = 0;
  for (size_t i = 0; i <= r->n; i++) {
    uint64_t lo = sim_round_up(gap_lo(r, i), align), hi = gap_hi(r, i);
    if (lo < hi && (hi - lo) / align * align > best) best = (hi - lo) / align * align;
  }
  return best;
}

/* ---- lookups ------------------------------------------------------------------------------- */
static sim_device *dev_of_addr(uint64_t p) {
  for (int i = 0; i < G.ndev; i++) {
    sim_range *h = &G.dev[i].heap;
    if (p >= h->base && p - h->base < h->size) return &G.dev[i];
  }
  return NULL;
}

/* Resolve a device address to the allocation containing it: sets [*lo, *hi). Covers cuMemAlloc/
 * Pitch/Managed blocks, pool sub-allocations and VMM mappings. */
static int device_span(uint64_t p, uint64_t *lo, uint64_t *hi) {
  sim_device *d = dev_of_addr(p);
  if (d) {
    long i = sim_range_find(&d->heap, p);
    if (i < 0) return 0;
    sim_blk *b = &d->heap.v[i];
    if (b->kind == K_MEM || b->kind == K_MANAGED) {
      *lo = b->addr, *hi = b->addr + b->len;
      return 1;
    }
    if (b->kind != K_CHUNK) return 0;
    sim_range *sub = &((sim_chunk *)b->owner)->sub;
    long j = sim_range_find(sub, p);
    if (j < 0) return 0;
    *lo = sub->v[j].addr, *hi = sub->v[j].addr + sub->v[j].len;
    return 1;
  }
  long i = sim_range_find(&G.va, p);
  if (i < 0) return 0;
  sim_range *maps = &((sim_reservation *)G.va.v[i].owner)->maps;
  long j = sim_range_find(maps, p);
  if (j < 0) return 0;
  /* extend across adjacent mappings: contiguous mapped VA is one span */
  size_t a = (size_t)j, z = (size_t)j;
  while (a > 0 && maps->v[a - 1].addr + maps->v[a - 1].len == maps->v[a].addr) a--;
  while (z + 1 < maps->n && maps->v[z].addr + maps->v[z].len == maps->v[z + 1].addr) z++;
  *lo = maps->v[a].addr, *hi = maps->v[z].addr + maps->v[z].len;
  return 1;
}

static int valid_device_range(uint64_t p, size_t n) {
  uint64_t lo, hi;
  return device_span(p, &lo, &hi) && n <= hi - p;
}

/* ---- plain device memory ------------------------------------------------------------------ */
static CUresult heap_alloc(struct CUctx_st *c, uint64_t bytes, int kind, size_t requested, CUdeviceptr *out) {
  sim_range *h = &G.dev[c->dev].heap;
  uint64_t len = sim_round_up(bytes, SIM_GRANULE), at;
  if (len < bytes || !sim_range_alloc(h, len, SIM_GRANULE, kind, c, &at)) return CUDA_ERROR_OUT_OF_MEMORY;
  h->v[sim_range_find(h, at)].aux = requested;
  *out = at;
  return CUDA_SUCCESS;
}

static CUresult mem_alloc(CUdeviceptr *dptr, size_t bytesize) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  r = heap_alloc(c, bytesize, K_MEM, bytesize, dptr);
  if (r == CUDA_SUCCESS) {
    struct { CUdeviceptr *dptr; size_t bytesize; } params = {dptr, bytesize};
    sim_tool_memory(1, *dptr, bytesize, c->dev, 0);
    sim_tool_api(243, &params, c); /* CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 */
  }
  return r;
}
CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) { return mem_alloc(dptr, bytesize); }

/* What a statically linked cudart does: allocate through the driver's internal entry (its
 * export table), never through an exported symbol an LD_PRELOAD shim could interpose. The
 * tool interface still sees it, as CUPTI does. */
SIM_EXPORT CUresult simcuda_debug_internal_alloc(CUdeviceptr *dptr, size_t bytesize) {
  return mem_alloc(dptr, bytesize);
}

CUresult CUDAAPI cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t width, size_t height,
                                    unsigned int elemSize) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!dptr || !pPitch || !width || !height || (elemSize != 4 && elemSize != 8 && elemSize != 16))
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t pitch = sim_round_up(width, SIM_PITCH_ALIGN);
  if (height > UINT64_MAX / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  r = heap_alloc(c, pitch * height, K_MEM, pitch * height, dptr);
  if (r == CUDA_SUCCESS) {
    *pPitch = pitch;
    struct { CUdeviceptr *dptr; size_t *pPitch; size_t w, h; unsigned int e; } params = {dptr, pPitch, width,
                                                                                        height, elemSize};
    sim_tool_memory(1, *dptr, pitch * height, c->dev, 0);
    sim_tool_api(244, &params, c); /* cuMemAllocPitch_v2 */
  }
  return r;
}

/* Managed memory is charged to the current context's device like cuMemAlloc (no host backing). */
CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
    return CUDA_ERROR_INVALID_VALUE;
  r = heap_alloc(c, bytesize, K_MANAGED, bytesize, dptr);
  if (r == CUDA_SUCCESS) {
    struct { CUdeviceptr *dptr; size_t bytesize; unsigned int flags; } params = {dptr, bytesize, flags};
    sim_tool_memory(1, *dptr, bytesize, c->dev, 0);
    sim_tool_api(371, &params, c); /* cuMemAllocManaged */
  }
  return r;
}

static void pool_free_sub(struct CUmemPoolHandle_st *p, sim_chunk *ch, size_t j);

/* Frees cuMemAlloc/Pitch/Managed blocks and pool sub-allocations (either API may free either). */
static CUresult free_device_ptr(CUdeviceptr p) {
  sim_device *d = dev_of_addr(p);
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  long i = sim_range_find(&d->heap, p);
  if (i < 0) return CUDA_ERROR_INVALID_VALUE;
  sim_blk *b = &d->heap.v[i];
  if ((b->kind == K_MEM || b->kind == K_MANAGED) && b->addr == p) {
    sim_range_remove(&d->heap, (size_t)i);
    return CUDA_SUCCESS;
  }
  if (b->kind == K_CHUNK) {
    sim_chunk *ch = b->owner;
    long j = sim_range_find(&ch->sub, p);
    if (j >= 0 && ch->sub.v[j].addr == p) {
      pool_free_sub(ch->sub.v[j].owner, ch, (size_t)j);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  r = free_device_ptr(dptr);
  if (r == CUDA_SUCCESS) {
    struct { CUdeviceptr dptr; } params = {dptr};
    sim_tool_memory(2, dptr, 0, c->dev, 0);
    sim_tool_api(245, &params, c); /* cuMemFree_v2 */
  }
  return r;
}

void sim_ctx_free_memory(struct CUctx_st *c) {
  sim_range *h = &G.dev[c->dev].heap;
  for (size_t i = h->n; i-- > 0;)
    if ((h->v[i].kind == K_MEM || h->v[i].kind == K_MANAGED) && h->v[i].owner == c) sim_range_remove(h, i);
}

CUresult CUDAAPI cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
  sim_range *h = &G.dev[c->dev].heap;
  *free_bytes = h->size - h->used;
  *total = h->size;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  uint64_t lo, hi;
  if (!device_span(dptr, &lo, &hi)) return CUDA_ERROR_NOT_FOUND;
  sim_device *d = dev_of_addr(dptr);
  if (d) { /* report the requested size for plain allocations */
    sim_blk *b = &d->heap.v[sim_range_find(&d->heap, dptr)];
    if (b->kind != K_CHUNK && b->aux) hi = lo + b->aux;
  }
  if (pbase) *pbase = lo;
  if (psize) *psize = hi - lo;
  return CUDA_SUCCESS;
}

/* ---- legacy v1 (32-bit) entry points -------------------------------------------------------
 * Sizes are 32-bit and reported values clamp to 4 GiB - 1. Simulated device addresses do not fit
 * in a 32-bit CUdeviceptr_v1, so the v1 allocate/free calls validate like v2 and then return
 * CUDA_ERROR_NOT_SUPPORTED without allocating. */
CUresult CUDAAPI cuMemGetInfo(unsigned int *free_bytes, unsigned int *total) {
  size_t f = 0, t = 0;
  CUresult r = cuMemGetInfo_v2(free_bytes ? &f : NULL, total ? &t : NULL);
  if (r == CUDA_SUCCESS) {
    *free_bytes = f > 0xffffffffull ? 0xffffffffu : (unsigned)f;
    *total = t > 0xffffffffull ? 0xffffffffu : (unsigned)t;
  }
  return r;
}
static CUresult legacy_ptr_call(int bad_args) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  return bad_args ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
}
CUresult CUDAAPI cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize) {
  return legacy_ptr_call(!dptr || !bytesize);
}
CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int w, unsigned int h,
                                 unsigned int elemSize) {
  return legacy_ptr_call(!dptr || !pPitch || !w || !h || (elemSize != 4 && elemSize != 8 && elemSize != 16));
}
CUresult CUDAAPI cuMemFree(CUdeviceptr_v1 dptr) {
  (void)dptr;
  return legacy_ptr_call(0);
}

/* ---- pinned host memory (real host memory, not charged to any device) -------------------- */
typedef struct host_blk { void *p; size_t n; struct host_blk *next; } host_blk;
static host_blk *g_host;

static CUresult host_alloc(void **pp, size_t n, unsigned flags) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!pp || !n || (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                                        CU_MEMHOSTALLOC_WRITECOMBINED)))
    return CUDA_ERROR_INVALID_VALUE;
  host_blk *h = malloc(sizeof *h);
  void *p = NULL;
  if (!h || posix_memalign(&p, 4096, n) != 0) {
    free(h);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  h->p = p, h->n = n, h->next = g_host, g_host = h;
  *pp = p;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemAllocHost_v2(void **pp, size_t n) { return host_alloc(pp, n, 0); }
CUresult CUDAAPI cuMemAllocHost(void **pp, unsigned int n) { return host_alloc(pp, n, 0); }
CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t n, unsigned int flags) { return host_alloc(pp, n, flags); }

CUresult CUDAAPI cuMemFreeHost(void *p) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  for (host_blk **h = &g_host; *h; h = &(*h)->next)
    if ((*h)->p == p) {
      host_blk *dead = *h;
      *h = dead->next;
      free(dead->p);
      free(dead);
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_INVALID_VALUE;
}

/* Host memory (pinned or pageable) is any non-NULL address outside the simulated device heaps
 * and the VMM reservation space. */
static int host_range(const void *p, size_t n) {
  uint64_t a = (uintptr_t)p;
  (void)n;
  return p != NULL && !dev_of_addr(a) && !(a >= G.va.base && a - G.va.base < G.va.size);
}

/* ---- copies and sets: validated against live allocations, no data is moved --------------- */
/* sync: a synchronous copy, which waits for the legacy default stream and so for every blocking
 * stream: a pending device fault becomes sticky there. */
static CUresult copy_check_in(CUstream s, int sync, int dev_dst, uint64_t dst, int dev_src, uint64_t src,
                              size_t n) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_stream_ctx_any(s, &c);
  if (r != CUDA_SUCCESS) return r;
  if (sync) sim_sync_wait(c, s, 1);
  if ((r = sync ? sim_sync_faults(c, s, 1) : c->sticky) != CUDA_SUCCESS) return r;
  if (n == 0) return CUDA_SUCCESS;
  if (dev_dst ? !valid_device_range(dst, n) : !host_range((void *)(uintptr_t)dst, n))
    return CUDA_ERROR_INVALID_VALUE;
  if (dev_src >= 0 && (dev_src ? !valid_device_range(src, n) : !host_range((void *)(uintptr_t)src, n)))
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
static CUresult copy_check(CUstream s, int dev_dst, uint64_t dst, int dev_src, uint64_t src, size_t n) {
  return copy_check_in(s, 0, dev_dst, dst, dev_src, src, n);
}
static CUresult sync_copy_check(int dev_dst, uint64_t dst, int dev_src, uint64_t src, size_t n) {
  return copy_check_in(NULL, 1, dev_dst, dst, dev_src, src, n);
}

/* cuMemcpy/cuMemcpyAsync infer direction from the addresses (unified addressing). A host to host
 * copy really copies; every copy touching device memory only validates. */
static CUresult copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, int sync) {
  int dd, sd; /* an address inside the simulated device space is "device", valid or not */
  {
    SIM_LOCKED;
    dd = !host_range((void *)(uintptr_t)dst, n), sd = !host_range((void *)(uintptr_t)src, n);
  }
  CUresult r = copy_check_in(s, sync, dd, dst, sd, src, n);
  if (r == CUDA_SUCCESS && !dd && !sd && n) memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
  return r;
}
CUresult CUDAAPI cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy_any(d, s, n, NULL, 1); }
CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return copy_any(d, s, n, NULL, 1); }
CUresult CUDAAPI cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  return copy_any(d, s, n, st, 0);
}
CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  return copy_any(d, s, n, st, 0);
}
CUresult CUDAAPI cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) {
  return sync_copy_check(1, d, 0, (uintptr_t)h, n);
}
CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *h, size_t n) { return cuMemcpyHtoD_v2(d, h, n); }
CUresult CUDAAPI cuMemcpyDtoH_v2(void *h, CUdeviceptr s, size_t n) {
  return sync_copy_check(0, (uintptr_t)h, 1, s, n);
}
CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *h, CUdeviceptr s, size_t n) { return cuMemcpyDtoH_v2(h, s, n); }
CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) { return sync_copy_check(1, d, 1, s, n); }
CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) { return cuMemcpyDtoD_v2(d, s, n); }
CUresult CUDAAPI cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  (void)v;
  return copy_check(NULL, 1, d, -1, 0, n);
}
CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) { return cuMemsetD8_v2(d, v, n); }
CUresult CUDAAPI cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
  (void)v;
  return n > SIZE_MAX / 4 ? CUDA_ERROR_INVALID_VALUE : copy_check(NULL, 1, d, -1, 0, n * 4);
}
CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) { return cuMemsetD32_v2(d, v, n); }

/* ---- stream-ordered memory pools ----------------------------------------------------------
 * A pool owns chunks carved from the device heap (max(32 MiB, request rounded to 2 MiB); if that
 * does not fit, exactly the rounded request). Sub-allocations are first-fit inside chunks (in
 * chunk creation order), rounded to 512 bytes. reserved = sum of chunk sizes, used = sum of live
 * rounded sub-allocations. Freed memory stays reserved until cuMemPoolTrimTo or a synchronize
 * (stream/context) finds reserved > release threshold: then wholly empty chunks are released,
 * newest first, while reserved stays above the threshold / minBytesToKeep. */
static int known_pool(struct CUmemPoolHandle_st *p) {
  for (struct CUmemPoolHandle_st *q = G.pools; q; q = q->next)
    if (q == p && !q->destroyed) return 1;
  return 0;
}

static struct CUmemPoolHandle_st *pool_new(int dev, int is_default) {
  struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->dev = dev, p->is_default = is_default;
  p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
  p->next = G.pools, G.pools = p;
  return p;
}

static struct CUmemPoolHandle_st *default_pool(int dev) {
  sim_device *d = &G.dev[dev];
  if (!d->default_pool) d->default_pool = pool_new(dev, 1);
  if (!d->current_pool) d->current_pool = d->default_pool;
  return d->current_pool;
}

static void chunk_release(struct CUmemPoolHandle_st *p, size_t k) {
  sim_chunk *ch = p->chunks[k];
  sim_range *h = &G.dev[p->dev].heap;
  sim_range_remove(h, (size_t)sim_range_find(h, ch->sub.base));
  p->reserved -= ch->sub.size;
  sim_range_clear(&ch->sub);
  free(ch);
  memmove(p->chunks + k, p->chunks + k + 1, (p->nchunks - k - 1) * sizeof *p->chunks);
  p->nchunks--;
}

static void pool_trim(struct CUmemPoolHandle_st *p, uint64_t keep) {
  for (size_t k = p->nchunks; k-- > 0 && p->reserved > keep;)
    if (p->chunks[k]->sub.n == 0) chunk_release(p, k);
}

static void pool_maybe_delete(struct CUmemPoolHandle_st *p) {
  if (!p->destroyed) return;
  pool_trim(p, 0);
  if (p->nchunks) return; /* outstanding allocations: deleted when the last one is freed */
  for (struct CUmemPoolHandle_st **q = &G.pools; *q; q = &(*q)->next)
    if (*q == p) {
      *q = p->next;
      break;
    }
  free(p->chunks);
  free(p);
}

static void pool_free_sub(struct CUmemPoolHandle_st *p, sim_chunk *ch, size_t j) {
  p->used -= ch->sub.v[j].len;
  sim_range_remove(&ch->sub, j);
  pool_maybe_delete(p);
}

void sim_pools_on_sync(int dev) {
  for (struct CUmemPoolHandle_st *p = G.pools; p; p = p->next)
    if (p->dev == dev && !p->destroyed) pool_trim(p, p->threshold);
}

static CUresult pool_alloc(struct CUmemPoolHandle_st *p, size_t bytes, CUdeviceptr *out) {
  uint64_t len = sim_round_up(bytes, SIM_POOL_ALIGN), at;
  if (len < bytes) return CUDA_ERROR_OUT_OF_MEMORY;
  sim_chunk *ch = NULL;
  for (size_t k = 0; k < p->nchunks; k++)
    if (sim_range_alloc(&p->chunks[k]->sub, len, SIM_POOL_ALIGN, K_SUB, p, &at)) {
      ch = p->chunks[k];
      break;
    }
  if (!ch) {
    sim_range *h = &G.dev[p->dev].heap;
    uint64_t want = sim_round_up(len, SIM_GRANULE), base;
    sim_chunk **v = realloc(p->chunks, (p->nchunks + 1) * sizeof *v);
    if (!v || !(ch = calloc(1, sizeof *ch))) return CUDA_ERROR_OUT_OF_MEMORY;
    p->chunks = v;
    uint64_t size = want < SIM_POOL_CHUNK ? SIM_POOL_CHUNK : want;
    int ok = sim_range_alloc(h, size, SIM_GRANULE, K_CHUNK, ch, &base);
    if (!ok && want < size) ok = sim_range_alloc(h, size = want, SIM_GRANULE, K_CHUNK, ch, &base);
    if (!ok) {
      free(ch);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    ch->sub.base = base, ch->sub.size = size;
    p->chunks[p->nchunks++] = ch;
    p->reserved += size;
    if (p->reserved > p->reserved_high) p->reserved_high = p->reserved;
    sim_range_alloc(&ch->sub, len, SIM_POOL_ALIGN, K_SUB, p, &at);
  }
  p->used += len;
  if (p->used > p->used_high) p->used_high = p->used;
  *out = at;
  return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, struct CUmemPoolHandle_st *pool, CUstream s) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_stream_ctx(s, &c);
  if (r != CUDA_SUCCESS) return r;
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  if (pool && !known_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
  struct CUmemPoolHandle_st *p = pool ? pool : default_pool(c->dev);
  r = pool_alloc(p, bytes, dptr);
  if (r == CUDA_SUCCESS) {
    struct { CUdeviceptr *dptr; size_t bytesize; CUstream hStream; } params = {dptr, bytes, s};
    sim_tool_memory(1, *dptr, bytes, c->dev, (uint64_t)(uintptr_t)p);
    if (!pool) sim_tool_api(598, &params, c); /* cuMemAllocAsync */
  }
  return r;
}
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *d, size_t n, CUstream s) { return alloc_async(d, n, NULL, s); }
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *d, size_t n, CUstream s) { return alloc_async(d, n, NULL, s); }
CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream s) {
  return p ? alloc_async(d, n, p, s) : CUDA_ERROR_INVALID_VALUE;
}
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *d, size_t n, CUmemoryPool p, CUstream s) {
  return cuMemAllocFromPoolAsync(d, n, p, s);
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream s) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_stream_ctx(s, &c);
  if (r != CUDA_SUCCESS) return r;
  r = free_device_ptr(dptr);
  if (r == CUDA_SUCCESS) {
    struct { CUdeviceptr dptr; CUstream hStream; } params = {dptr, s};
    sim_tool_memory(2, dptr, 0, c->dev, 0);
    sim_tool_api(600, &params, c); /* cuMemFreeAsync */
  }
  return r;
}
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) { return cuMemFreeAsync(dptr, s); }

static int valid_location(const CUmemLocation *l) {
  return l->type == CU_MEM_LOCATION_TYPE_DEVICE && sim_valid_dev(l->id);
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED || !valid_location(&props->location))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUmemPoolHandle_st *p = pool_new(props->location.id, 0);
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  *pool = p;
  sim_tool_data t = {.event = SIM_TOOL_POOL, .op = 1, .pool = (uint64_t)(uintptr_t)p, .bytes = props->maxSize,
                     .device = props->location.id};
  sim_tool(&t);
  return CUDA_SUCCESS;
}

/* Destroying a pool with outstanding allocations defers the release to their frees. A device's
 * default pool cannot be destroyed (CUDA_ERROR_INVALID_VALUE). */
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!known_pool(pool) || pool->is_default) return CUDA_ERROR_INVALID_VALUE;
  sim_device *d = &G.dev[pool->dev];
  if (d->current_pool == pool) d->current_pool = d->default_pool;
  pool->destroyed = 1;
  sim_tool_data t = {.event = SIM_TOOL_POOL, .op = 2, .pool = (uint64_t)(uintptr_t)pool, .device = pool->dev};
  sim_tool(&t);
  pool_maybe_delete(pool);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!known_pool(pool)) return CUDA_ERROR_INVALID_VALUE;
  pool_trim(pool, minBytesToKeep);
  sim_tool_data t = {.event = SIM_TOOL_POOL, .op = 3, .pool = (uint64_t)(uintptr_t)pool, .bytes = minBytesToKeep,
                     .device = pool->dev};
  sim_tool(&t);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!known_pool(pool) || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
      pool->reuse[attr - 1] = *(int *)value != 0;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: pool->threshold = *(cuuint64_t *)value; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: /* only resettable to 0 (= current) */
      if (*(cuuint64_t *)value) return CUDA_ERROR_INVALID_VALUE;
      pool->reserved_high = pool->reserved;
      return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (*(cuuint64_t *)value) return CUDA_ERROR_INVALID_VALUE;
      pool->used_high = pool->used;
      return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!known_pool(pool) || !value) return CUDA_ERROR_INVALID_VALUE;
  switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: *(int *)value = pool->reuse[attr - 1]; break;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = pool->threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = pool->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = pool->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = pool->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = pool->used_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  default_pool(dev);
  *pool = G.dev[dev].default_pool;
  return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!pool) return CUDA_ERROR_INVALID_VALUE;
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pool = default_pool(dev);
  return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!sim_valid_dev(dev)) return CUDA_ERROR_INVALID_DEVICE;
  if (!known_pool(pool) || pool->dev != dev) return CUDA_ERROR_INVALID_VALUE;
  default_pool(dev);
  G.dev[dev].current_pool = pool;
  return CUDA_SUCCESS;
}

/* ---- virtual memory management -------------------------------------------------------------
 * Granularity is 2 MiB (minimum and recommended). cuMemCreate takes physical memory from the
 * device heap: one contiguous block when possible, otherwise 2 MiB-aligned pieces first-fit (so a
 * handle never fails for fragmentation while enough memory is free). Reservations live in a
 * global VA space (SIM_VA_BASE) and hold their mappings. */
static sim_vmm *find_vmm(CUmemGenericAllocationHandle h) {
  for (sim_vmm *v = G.vmms; v; v = v->next)
    if ((uintptr_t)v == h && !v->released) return v;
  return NULL;
}

static void vmm_free(sim_vmm *v) {
  sim_range *h = &G.dev[v->dev].heap;
  for (size_t i = 0; i < v->npieces; i++) sim_range_remove(h, (size_t)sim_range_find(h, v->piece_addr[i]));
  for (sim_vmm **p = &G.vmms; *p; p = &(*p)->next)
    if (*p == v) {
      *p = v->next;
      break;
    }
  free(v->piece_addr);
  free(v->piece_len);
  free(v);
}

static CUresult check_prop(const CUmemAllocationProp *prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
    return CUDA_ERROR_INVALID_VALUE;
  return sim_valid_dev(prop->location.id) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!g || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult r = check_prop(prop);
  if (r == CUDA_SUCCESS) *g = SIM_GRANULE;
  return r;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                             unsigned long long flags) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!handle || size == 0 || size % SIM_GRANULE || flags) return CUDA_ERROR_INVALID_VALUE;
  CUresult r = check_prop(prop);
  if (r != CUDA_SUCCESS) return r;
  sim_range *h = &G.dev[prop->location.id].heap;
  if (h->size - h->used < size) return CUDA_ERROR_OUT_OF_MEMORY;
  sim_vmm *v = calloc(1, sizeof *v);
  size_t maxp = h->n + 1; /* at most one piece per gap */
  if (!v || !(v->piece_addr = calloc(maxp, 8)) || !(v->piece_len = calloc(maxp, 8))) goto oom;
  v->dev = prop->location.id, v->size = size;
  uint64_t at, left = size;
  if (sim_range_alloc(h, size, SIM_GRANULE, K_VMM, v, &at)) {
    v->piece_addr[0] = at, v->piece_len[0] = size, v->npieces = 1, left = 0;
  }
  while (left) {
    uint64_t best = sim_range_largest_gap(h, SIM_GRANULE), take = best < left ? best : left;
    if (!take || v->npieces == maxp || !sim_range_alloc(h, take, SIM_GRANULE, K_VMM, v, &at)) {
      for (size_t i = 0; i < v->npieces; i++) sim_range_remove(h, (size_t)sim_range_find(h, v->piece_addr[i]));
      goto oom;
    }
    v->piece_addr[v->npieces] = at, v->piece_len[v->npieces++] = take, left -= take;
  }
  v->next = G.vmms, G.vmms = v;
  *handle = (uintptr_t)v;
  return CUDA_SUCCESS;
oom:
  if (v) free(v->piece_addr), free(v->piece_len);
  free(v);
  return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Releasing a mapped handle only drops the handle; memory returns when the last mapping goes. */
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  sim_vmm *v = find_vmm(handle);
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  v->released = 1;
  if (v->maps == 0) vmm_free(v);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                     unsigned long long flags) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!ptr || size == 0 || size % SIM_GRANULE || flags || (alignment & (alignment - 1)))
    return CUDA_ERROR_INVALID_VALUE;
  sim_reservation *res = calloc(1, sizeof *res);
  if (!res) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t align = alignment > SIM_GRANULE ? alignment : SIM_GRANULE, at;
  if (addr && addr % align == 0 && sim_range_alloc_at(&G.va, addr, size, K_RESERVE, res)) {
    at = addr; /* the hint is honoured when free and aligned, ignored otherwise */
  } else if (!sim_range_alloc(&G.va, size, align, K_RESERVE, res, &at)) {
    free(res);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  res->maps.base = at, res->maps.size = size;
  *ptr = at;
  return CUDA_SUCCESS;
}

/* Must name a whole reservation; a reservation that still has mappings cannot be freed. */
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  long i = sim_range_find(&G.va, ptr);
  if (i < 0 || G.va.v[i].addr != ptr || G.va.v[i].len != size) return CUDA_ERROR_INVALID_VALUE;
  sim_reservation *res = G.va.v[i].owner;
  if (res->maps.n) return CUDA_ERROR_INVALID_VALUE;
  sim_range_remove(&G.va, (size_t)i);
  sim_range_clear(&res->maps);
  free(res);
  return CUDA_SUCCESS;
}

static sim_reservation *reservation_of(uint64_t ptr, size_t size) {
  long i = sim_range_find(&G.va, ptr);
  if (i < 0 || size > G.va.v[i].addr + G.va.v[i].len - ptr) return NULL;
  return G.va.v[i].owner;
}

/* offset must be 0 (as in the real API); size a granularity multiple <= the handle's size; the
 * VA must be inside one reservation and not already mapped. */
CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                          unsigned long long flags) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  sim_vmm *v = find_vmm(handle);
  sim_reservation *res = reservation_of(ptr, size);
  if (!v || !res || flags || offset || size == 0 || size % SIM_GRANULE || ptr % SIM_GRANULE || size > v->size)
    return CUDA_ERROR_INVALID_VALUE;
  if (!sim_range_alloc_at(&res->maps, ptr, size, K_MAP, v)) return CUDA_ERROR_INVALID_VALUE;
  v->maps++;
  return CUDA_SUCCESS;
}

/* The range must consist exactly of whole, adjacent mappings (no partial unmap). */
static long mapped_run(sim_reservation *res, uint64_t ptr, size_t size, long *last) {
  long i = sim_range_find(&res->maps, ptr);
  if (i < 0 || res->maps.v[i].addr != ptr) return -1;
  uint64_t end = ptr;
  long j = i;
  for (; j < (long)res->maps.n && res->maps.v[j].addr == end && end - ptr < size; j++) end += res->maps.v[j].len;
  if (end - ptr != size) return -1;
  *last = j - 1;
  return i;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  sim_reservation *res = reservation_of(ptr, size);
  long last, first = res && size ? mapped_run(res, ptr, size, &last) : -1;
  if (first < 0) return CUDA_ERROR_INVALID_VALUE;
  for (long j = last; j >= first; j--) {
    sim_vmm *v = res->maps.v[j].owner;
    sim_range_remove(&res->maps, (size_t)j);
    if (--v->maps == 0 && v->released) vmm_free(v);
  }
  return CUDA_SUCCESS;
}

/* Each mapping records the access flags of its last cuMemSetAccess in aux. */
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  if (!desc || !count) return CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; k < count; k++) {
    if (desc[k].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!sim_valid_dev(desc[k].location.id)) return CUDA_ERROR_INVALID_DEVICE;
    if (desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
        desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
      return CUDA_ERROR_INVALID_VALUE;
  }
  sim_reservation *res = reservation_of(ptr, size);
  long last, first = res && size ? mapped_run(res, ptr, size, &last) : -1;
  if (first < 0) return CUDA_ERROR_INVALID_VALUE;
  for (long j = first; j <= last; j++) res->maps.v[j].aux = desc[count - 1].flags;
  return CUDA_SUCCESS;
}
