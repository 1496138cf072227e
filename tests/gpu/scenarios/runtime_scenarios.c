/* GPU memory scenarios through the CUDA runtime API (linked against the simulated
 * libcudart.so.13, which reaches the simulated driver by dlopen + cuGetProcAddress_v2).
 *
 * `gpu_runtime_scenarios NAME` runs one scenario; the device is configured by the test
 * through SIMCUDA_* variables (tests/gpu/test_gpu_memory.py), so each scenario states the
 * sizes it expects in its comment. Every scenario checks its own CUDA results and exits
 * non-zero on a surprise, so the traced run's figures are known exactly. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simcuda_test.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

static void *must_alloc(size_t n) {
  void *p = NULL;
  SIM_CHECK_EQ(cudaMalloc(&p, n), cudaSuccess);
  SIM_CHECK(p != NULL);
  return p;
}

/* 3 allocations (1, 2, 4 MiB), 2 frees, one memory query, the versions. */
static void basic(void) {
  int rt = 0, drv = 0;
  SIM_CHECK_EQ(cudaRuntimeGetVersion(&rt), cudaSuccess);
  SIM_CHECK_EQ(cudaDriverGetVersion(&drv), cudaSuccess);
  void *a = must_alloc(1 * MiB), *b = must_alloc(2 * MiB), *c = must_alloc(4 * MiB);
  size_t f = 0, t = 0;
  SIM_CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(a), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(b), cudaSuccess);
  (void)c; /* 4 MiB leaked */
  printf("runtime=%d driver=%d\n", rt, drv);
}

/* SIMCUDA_MEM_BYTES=4608M SIMCUDA_CONTEXT_BYTES=0: nine 512 MiB blocks fill the device;
 * freeing every other one leaves 2.5 GiB free in five 512 MiB holes, so 1 GiB fails. */
static void fragmentation_oom(void) {
  void *p[9];
  for (int i = 0; i < 9; i++) p[i] = must_alloc(512 * MiB);
  for (int i = 0; i < 9; i += 2) SIM_CHECK_EQ(cudaFree(p[i]), cudaSuccess);
  void *big = NULL;
  SIM_CHECK_EQ(cudaMalloc(&big, 1 * GiB), cudaErrorMemoryAllocation);
  size_t f = 0, t = 0;
  SIM_CHECK_EQ(cudaMemGetInfo(&f, &t), cudaSuccess);
  SIM_CHECK_EQ(f, 2560 * MiB);
  SIM_CHECK_EQ(simcuda_largest_free(0), 512 * MiB);
  /* blocks 1, 3, 5, 7 stay allocated (2 GiB "leaked") */
}

/* SIMCUDA_MEM_BYTES=8G (context 512 MiB): seven 1 GiB blocks, the eighth fails. */
static void genuine_oom(void) {
  void *p[7];
  for (int i = 0; i < 7; i++) p[i] = must_alloc(1 * GiB);
  void *q = NULL;
  SIM_CHECK_EQ(cudaMalloc(&q, 1 * GiB), cudaErrorMemoryAllocation);
  for (int i = 0; i < 7; i++) SIM_CHECK_EQ(cudaFree(p[i]), cudaSuccess);
}

/* SIMCUDA_MEM_BYTES=8G SIMCUDA_OTHER_BYTES=5G (context 512 MiB): 1 GiB fits, 2 GiB does not. */
static void other_process_oom(void) {
  void *a = must_alloc(1 * GiB);
  void *q = NULL;
  SIM_CHECK_EQ(cudaMalloc(&q, 2 * GiB), cudaErrorMemoryAllocation);
  SIM_CHECK_EQ(cudaFree(a), cudaSuccess);
}

/* SIMCUDA_MEM_BYTES=2G SIMCUDA_CONTEXT_BYTES=900M: 600 MiB fits, a second 600 MiB does not. */
static void context_oom(void) {
  void *a = must_alloc(600 * MiB);
  void *q = NULL;
  SIM_CHECK_EQ(cudaMalloc(&q, 600 * MiB), cudaErrorMemoryAllocation);
  SIM_CHECK_EQ(cudaFree(a), cudaSuccess);
}

/* Two allocation sites leak: leak_small 3 x 64 MiB, leak_big 1 x 256 MiB; one block is
 * freed. */
/* A training loop that leaks: 12 steps of 200 ms, each leaking two 8 MiB blocks (leak_small)
 * and one 32 MiB block (leak_big) and freeing a transient 8 MiB one. 48 allocations, 12
 * frees; 576 MiB never freed, growing all run long; peak 584 MiB (the last transient). */
__attribute__((noinline)) static void *leak_small(void) { return must_alloc(8 * MiB); }
__attribute__((noinline)) static void *leak_big(void) { return must_alloc(32 * MiB); }
static void step_pause(void) { usleep(10 * 1000); }
static void long_step_pause(void) { usleep(200 * 1000); }
static void leaks(void) {
  volatile int steps = 12, small = 2; /* loops the compiler cannot unroll: one site each */
  for (int s = 0; s < steps; s++) {
    for (int i = 0; i < small; i++) leak_small();
    leak_big();
    SIM_CHECK_EQ(cudaFree(must_alloc(8 * MiB)), cudaSuccess);
    long_step_pause();
  }
}

/* A long run that churns (the trace's window rolls many times over): a known early peak
 * (8 x 64 MiB live at once, then freed), then 20 rounds of 10,000 cudaMalloc/cudaFree
 * pairs of 1 MiB, each round leaking one 4 MiB block from slow_leak and pausing 100 ms.
 * 8 + 200,000 + 20 allocations, 8 + 200,000 frees, peak
 * 512 MiB, 80 MiB never freed (slow_leak's 20 blocks, growing all run long). */
/* With CHURN_PROGRESS=FILE the program keeps in that file (mapped, so a SIGKILL leaves
 * it) three u64 counts of calls that returned: allocations, frees, slow_leak blocks. */
__attribute__((noinline)) static void *slow_leak(void) { return must_alloc(4 * MiB); }
static volatile uint64_t *churn_progress(void) {
  static uint64_t none[3];
  const char *path = getenv("CHURN_PROGRESS");
  if (path == NULL) return none;
  int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  SIM_CHECK(fd >= 0 && ftruncate(fd, 3 * sizeof(uint64_t)) == 0);
  void *m = mmap(NULL, 3 * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  SIM_CHECK(m != MAP_FAILED);
  close(fd);
  return m;
}
static void churn_window(void) {
  volatile uint64_t *done = churn_progress();
  void *early[8];
  for (int i = 0; i < 8; i++) {
    early[i] = must_alloc(64 * MiB);
    done[0]++;
  }
  for (int i = 0; i < 8; i++) {
    SIM_CHECK_EQ(cudaFree(early[i]), cudaSuccess);
    done[1]++;
  }
  volatile int rounds = 20, pairs = 10000;
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < pairs; i++) {
      void *p = must_alloc(1 * MiB);
      done[0]++;
      SIM_CHECK_EQ(cudaFree(p), cudaSuccess);
      done[1]++;
    }
    slow_leak();
    done[0]++;
    done[2]++;
    usleep(100 * 1000);
  }
}

/* Less held at exit than at warm-up, while one site's blocks pile up: 8 x 64 MiB held
 * from the start and freed half-way, and 30 rounds of 100 ms that each leak one 4 MiB
 * block from slow_leak (120 MiB at exit). The process holds more at the end of warm-up
 * (the first quarter: over 512 MiB) than at exit, so by gpu.leak's rule nothing grows.
 * 38 allocations, 8 frees. */
static void shrink_while_leaking(void) {
  void *early[8];
  for (int i = 0; i < 8; i++) early[i] = must_alloc(64 * MiB);
  volatile int rounds = 30;
  for (int r = 0; r < rounds; r++) {
    slow_leak();
    if (r == rounds / 2) {
      for (int i = 0; i < 8; i++) SIM_CHECK_EQ(cudaFree(early[i]), cudaSuccess);
    }
    usleep(100 * 1000);
  }
}

/* A caching allocator: four 64 MiB segments at warm-up, then 12 steps of 10 ms that
 * allocate and free 8 MiB; the segments are still held at exit. 16 allocations, 12 frees,
 * 256 MiB held at exit and nothing growing: no leak. */
__attribute__((noinline)) static void *cache_segment(void) { return must_alloc(64 * MiB); }
static void cache_like(void) {
  volatile int segments = 4, steps = 12;
  for (int i = 0; i < segments; i++) cache_segment();
  for (int s = 0; s < steps; s++) {
    SIM_CHECK_EQ(cudaFree(must_alloc(8 * MiB)), cudaSuccess);
    step_pause();
  }
}

/* 2000 raw allocate/free pairs of 1 MiB: caching is bypassed. */
static void churn(void) {
  for (int i = 0; i < 2000; i++) SIM_CHECK_EQ(cudaFree(must_alloc(1 * MiB)), cudaSuccess);
}

/* Stream-ordered allocation: 4 x 16 MiB from the default pool (2 freed), a pool of our
 * own with 2 x 8 MiB (both freed), trimmed and destroyed. 6 allocations, 4 frees, 32 MiB
 * still allocated at exit. */
static void async_pools(void) {
  void *a[4];
  for (int i = 0; i < 4; i++) SIM_CHECK_EQ(cudaMallocAsync(&a[i], 16 * MiB, 0), cudaSuccess);
  SIM_CHECK_EQ(cudaFreeAsync(a[0], 0), cudaSuccess);
  SIM_CHECK_EQ(cudaFreeAsync(a[1], 0), cudaSuccess);
  struct cudaMemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = 0;
  cudaMemPool_t pool;
  SIM_CHECK_EQ(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  void *b[2];
  for (int i = 0; i < 2; i++) SIM_CHECK_EQ(cudaMallocFromPoolAsync(&b[i], 8 * MiB, pool, 0), cudaSuccess);
  for (int i = 0; i < 2; i++) SIM_CHECK_EQ(cudaFreeAsync(b[i], 0), cudaSuccess);
  SIM_CHECK_EQ(cudaStreamSynchronize(0), cudaSuccess);
  SIM_CHECK_EQ(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  SIM_CHECK_EQ(cudaMemPoolDestroy(pool), cudaSuccess);
}

/* Managed 32 MiB, pitched 1000 x 100 (pitch 1024: 102400 bytes), pinned host 1 MiB and
 * 2 MiB; everything freed. */
static void managed_and_host(void) {
  void *m = NULL, *pitched = NULL, *h1 = NULL, *h2 = NULL;
  size_t pitch = 0;
  SIM_CHECK_EQ(cudaMallocManaged(&m, 32 * MiB, cudaMemAttachGlobal), cudaSuccess);
  SIM_CHECK_EQ(cudaMallocPitch(&pitched, &pitch, 1000, 100), cudaSuccess);
  SIM_CHECK_EQ(pitch, 1024);
  SIM_CHECK_EQ(cudaMallocHost(&h1, 1 * MiB), cudaSuccess);
  SIM_CHECK_EQ(cudaHostAlloc(&h2, 2 * MiB, cudaHostAllocPortable), cudaSuccess);
  SIM_CHECK_EQ(cudaFreeHost(h1), cudaSuccess);
  SIM_CHECK_EQ(cudaFreeHost(h2), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(m), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(pitched), cudaSuccess);
}

/* 8 threads at once, each 500 x (1 MiB alloc + free), then thread i keeps (i+1) MiB.
 * With the warm-up pair on the main thread: 4009 allocations, 4001 frees, 36 MiB leaked. */
static void *thread_main(void *arg) {
  const size_t i = (size_t)arg;
  for (int k = 0; k < 500; k++) SIM_CHECK_EQ(cudaFree(must_alloc(1 * MiB)), cudaSuccess);
  must_alloc((i + 1) * MiB);
  return NULL;
}
static void threads(void) {
  SIM_CHECK_EQ(cudaFree(must_alloc(1 * MiB)), cudaSuccess);
  pthread_t t[8];
  for (size_t i = 0; i < 8; i++) SIM_CHECK_EQ(pthread_create(&t[i], NULL, thread_main, (void *)i), 0);
  for (int i = 0; i < 8; i++) SIM_CHECK_EQ(pthread_join(t[i], NULL), 0);
}

/* Ten steps of 200 ms, each leaking a 32 MiB block, then SIGKILL: the trace ends without
 * an exit record, 320 MiB live. */
static void killed(void) {
  volatile int n = 10;
  for (int i = 0; i < n; i++) {
    must_alloc(32 * MiB);
    long_step_pause();
  }
  fflush(stdout);
  raise(SIGKILL);
}

/* SIMCUDA_MEM_BYTES=4G SIMCUDA_CONTEXT_BYTES=0, like a framework's cache: eight 512 MiB
 * segments fill the device, 1 GiB fails, the "cache" releases one segment and the retry
 * fails again (free 512 MiB < 1 GiB). */
static void flush_retry_oom(void) {
  void *p[8];
  for (int i = 0; i < 8; i++) p[i] = must_alloc(512 * MiB);
  void *q = NULL;
  SIM_CHECK_EQ(cudaMalloc(&q, 1 * GiB), cudaErrorMemoryAllocation);
  SIM_CHECK_EQ(cudaFree(p[3]), cudaSuccess);
  SIM_CHECK_EQ(cudaMalloc(&q, 1 * GiB), cudaErrorMemoryAllocation);
  for (int i = 0; i < 8; i++)
    if (i != 3) SIM_CHECK_EQ(cudaFree(p[i]), cudaSuccess);
}

/* Same device; this time the flush frees two adjacent segments and the retry succeeds. */
static void flush_retry_recovered(void) {
  void *p[8];
  for (int i = 0; i < 8; i++) p[i] = must_alloc(512 * MiB);
  void *q = NULL;
  SIM_CHECK_EQ(cudaMalloc(&q, 1 * GiB), cudaErrorMemoryAllocation);
  SIM_CHECK_EQ(cudaFree(p[0]), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(p[1]), cudaSuccess);
  SIM_CHECK_EQ(cudaMalloc(&q, 1 * GiB), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(q), cudaSuccess);
  for (int i = 2; i < 8; i++) SIM_CHECK_EQ(cudaFree(p[i]), cudaSuccess);
}

/* The allocator setting arrives after the first allocation. */
static void late_config(void) {
  void *a = must_alloc(1 * MiB);
  setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
  void *b = must_alloc(1 * MiB);
  SIM_CHECK_EQ(cudaFree(a), cudaSuccess);
  SIM_CHECK_EQ(cudaFree(b), cudaSuccess);
}

/* SIMCUDA_MEM_BYTES=2G SIMCUDA_CONTEXT_BYTES=0: one block of 98% of the device. */
static void near_capacity(void) {
  void *a = must_alloc(2006 * MiB);
  SIM_CHECK_EQ(cudaFree(a), cudaSuccess);
}

/* Holds HOLD_MIB MiB until stdin closes, printing "held" once it has it: another
 * process on the same (simulated) device for the test that runs a second program. */
static void hold(void) {
  const char *mib = getenv("HOLD_MIB");
  void *p = must_alloc((size_t)atoll(mib ? mib : "0") * MiB);
  printf("held\n");
  fflush(stdout);
  char buf[64];
  while (fread(buf, 1, sizeof buf, stdin) > 0) {
  }
  SIM_CHECK_EQ(cudaFree(p), cudaSuccess);
}

/* No driver on the library path: the runtime's own error code. Prints what it got. */
static void no_driver(void) {
  void *p = (void *)0x1;
  int e = cudaMalloc(&p, 1 * MiB);
  size_t f = 7, t = 7;
  int m = cudaMemGetInfo(&f, &t);
  int v = -1;
  int d = cudaDriverGetVersion(&v);
  printf("cudaMalloc=%d ptr=%p cudaMemGetInfo=%d free=%zu total=%zu driver=%d/%d last=%d\n", e, p, m,
         f, t, d, v, (int)cudaGetLastError());
}

int main(int argc, char **argv) {
  static const simcuda_scenario list[] = {
      {"basic", basic},
      {"fragmentation_oom", fragmentation_oom},
      {"genuine_oom", genuine_oom},
      {"other_process_oom", other_process_oom},
      {"context_oom", context_oom},
      {"leaks", leaks},
      {"cache_like", cache_like},
      {"churn", churn},
      {"churn_window", churn_window},
      {"shrink_while_leaking", shrink_while_leaking},
      {"async_pools", async_pools},
      {"managed_and_host", managed_and_host},
      {"threads", threads},
      {"killed", killed},
      {"flush_retry_oom", flush_retry_oom},
      {"flush_retry_recovered", flush_retry_recovered},
      {"late_config", late_config},
      {"near_capacity", near_capacity},
      {"no_driver", no_driver},
      {"hold", hold},
  };
  return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
}
