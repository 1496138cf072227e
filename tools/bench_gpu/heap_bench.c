/* Reference point for the GPU suite: the cost of a malloc(64) + free pair, to run bare
 * and under heaptrack (whose per-malloc cost shared/PRODUCT.md quotes as the anchor for
 * colabtrace's cost per cudaMalloc with stacks).
 *
 *   heap_bench [PAIRS [ROUNDS]]   prints {"median_ns_per_pair": ...} (thread CPU time) */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

static double cpu_ns(void) { return bench_ns(CLOCK_THREAD_CPUTIME_ID); }

int main(int argc, char **argv) {
  const long pairs = argc > 1 ? atol(argv[1]) : 100000;
  const int rounds = argc > 2 ? atoi(argv[2]) : 11;
  if (pairs <= 0 || rounds <= 0 || rounds > 1000) return 2;
  double per[1000];
  for (int r = 0; r < rounds; r++) {
    const double t0 = cpu_ns();
    for (long i = 0; i < pairs; i++) {
      void *volatile p = malloc(64);
      free(p);
    }
    per[r] = (cpu_ns() - t0) / (double)pairs;
  }
  qsort(per, (size_t)rounds, sizeof *per, bench_cmp);
  printf("{\"pairs\": %ld, \"rounds\": %d, \"median_ns_per_pair\": %.1f}\n", pairs, rounds, per[rounds / 2]);
  return 0;
}
