/* A training loop in C for the step aggregate tests (tests/steps/test_steps_window.py):
 * each step waits for its "batch" (colabtrace_batch_wait_begin/_end around READS/2 preads
 * of 64 bytes of FILE and WAIT_US of spinning), computes (spins COMPUTE_US, or SLOW_US from
 * step SLOW_FROM on: a run that slows down late), reads READS/2 more outside the wait, and
 * marks its end with colabtrace_step(i + 1).
 * Usage: step_loop FILE STEPS SLOW_FROM WAIT_US COMPUTE_US SLOW_US READS COUNTER [nomark]
 *   STEPS 0: steps go on until killed. nomark: no colabtrace_step (the batch waits are
 *   then the steps). COUNTER: a file of 8 bytes, mapped shared, that
 *   holds the steps completed so far (colabtrace_step returned). Prints "steps N". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "colabtrace/colabtrace.h"

extern void colabtrace_batch_wait_begin(const char* where) __attribute__((weak));
extern void colabtrace_batch_wait_end(uint64_t kind, const char* where, uint64_t n) __attribute__((weak));

static const char kWhere[] = "step_loop.c:next_batch in main";

static uint64_t NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void Spin(uint64_t us) {
  const uint64_t until = NowNs() + us * 1000ull;
  while (NowNs() < until) {
  }
}

static void Reads(int fd, long n) {
  char buf[64];
  for (long k = 0; k < n; ++k) {
    if (pread(fd, buf, sizeof(buf), (k * 64) % 4096) != (ssize_t)sizeof(buf)) abort();
  }
}

int main(int argc, char** argv) {
  if (argc != 9 && !(argc == 10 && strcmp(argv[9], "nomark") == 0)) {
    fprintf(stderr, "usage: step_loop FILE STEPS SLOW_FROM WAIT_US COMPUTE_US SLOW_US READS COUNTER [nomark]\n");
    return 2;
  }
  const int mark = argc == 9;
  const int fd = open(argv[1], O_RDONLY);
  const long steps = atol(argv[2]), slow_from = atol(argv[3]), reads = atol(argv[7]);
  const uint64_t wait_us = strtoull(argv[4], NULL, 10), compute_us = strtoull(argv[5], NULL, 10),
                 slow_us = strtoull(argv[6], NULL, 10);
  const int cfd = open(argv[8], O_RDWR | O_CREAT, 0600);
  if (fd < 0 || cfd < 0 || ftruncate(cfd, 8) != 0) return 2;
  volatile uint64_t* counter = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
  close(cfd);
  if (counter == MAP_FAILED) return 2;
  *counter = 0;
  long i = 0;
  for (; steps == 0 || i < steps; ++i) {
    if (colabtrace_batch_wait_begin) colabtrace_batch_wait_begin(kWhere);
    Reads(fd, reads / 2);
    Spin(wait_us);
    if (colabtrace_batch_wait_end) colabtrace_batch_wait_end(1, kWhere, (uint64_t)i);
    Spin(i >= slow_from ? slow_us : compute_us);
    Reads(fd, reads - reads / 2);
    if (mark) colabtrace_step((uint64_t)i + 1);
    __atomic_store_n(counter, (uint64_t)i + 1, __ATOMIC_RELEASE);
  }
  printf("steps %ld\n", i);
  return 0;
}
