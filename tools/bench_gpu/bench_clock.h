/* The clock and median helpers the GPU suite's benchmark programs share. */
#ifndef COLABTRACE_BENCH_CLOCK_H
#define COLABTRACE_BENCH_CLOCK_H

#include <stdlib.h>
#include <time.h>

/* Nanoseconds on `clock` (CLOCK_THREAD_CPUTIME_ID: this thread's CPU time). */
static inline double bench_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int bench_cmp(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts v[0..n) and returns its median. */
static inline double bench_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, bench_cmp);
  return v[n / 2];
}

#endif
