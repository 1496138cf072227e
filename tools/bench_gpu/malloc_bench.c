/* Benchmark: the cost of cudaMalloc + cudaFree pairs against the simulated runtime
 * (tests/simcuda), to compare a bare run, an empty LD_PRELOAD library and the shim.
 *
 *   malloc_bench [PAIRS [ROUNDS [BYTES]]]
 *
 * Each round times PAIRS back-to-back cudaMalloc(BYTES)/cudaFree pairs with the
 * thread's CPU clock (user + kernel time spent on its behalf, page faults on the trace
 * included; time other processes take from a shared machine is not), and with
 * CLOCK_MONOTONIC; prints one JSON object with the median, min and max ns per pair over
 * the rounds. tools/bench_gpu/suite.py runs it under each configuration. */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"

int main(int argc, char **argv) {
  const long pairs = argc > 1 ? atol(argv[1]) : 20000;
  const int rounds = argc > 2 ? atoi(argv[2]) : 15;
  const size_t bytes = argc > 3 ? (size_t)atoll(argv[3]) : (size_t)1 << 20;
  if (pairs <= 0 || rounds <= 0 || rounds > 1000) return 2;
  void *p = NULL;
  for (int i = 0; i < 1000; i++) { /* initialise the runtime and warm the caches */
    if (cudaMalloc(&p, bytes) != cudaSuccess || cudaFree(p) != cudaSuccess) return 1;
  }
  double cpu[1000], wall[1000];
  for (int r = 0; r < rounds; r++) {
    const double c0 = bench_ns(CLOCK_THREAD_CPUTIME_ID), w0 = bench_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < pairs; i++) {
      cudaMalloc(&p, bytes);
      cudaFree(p);
    }
    wall[r] = (bench_ns(CLOCK_MONOTONIC) - w0) / (double)pairs;
    cpu[r] = (bench_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)pairs;
  }
  qsort(cpu, (size_t)rounds, sizeof *cpu, bench_cmp);
  qsort(wall, (size_t)rounds, sizeof *wall, bench_cmp);
  printf("{\"pairs\": %ld, \"rounds\": %d, \"bytes\": %zu, \"median_ns_per_pair\": %.1f, "
         "\"min_ns_per_pair\": %.1f, \"max_ns_per_pair\": %.1f, \"median_wall_ns_per_pair\": %.1f}\n",
         pairs, rounds, bytes, cpu[rounds / 2], cpu[0], cpu[rounds - 1], wall[rounds / 2]);
  return 0;
}
