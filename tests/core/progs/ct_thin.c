// Memory spikes under rolling samples, for the thinned-sample tests
// (tests/core/test_thinned_samples.py). Usage: ct_thin FILE LEAD_S SPIKES HOLD_MS SECONDS STATE
//   Stats FILE for LEAD_S seconds (so that the window has rolled), then makes SPIKES spikes, spike k (from 0) of 32 + 16 k MiB of anonymous memory, each
//   touched and then held for HOLD_MS while stat()ing FILE (traced calls, so the shim's
//   periodic samples fall due), and freed; then stats FILE for SECONDS more.
//   STATE: a file of 32 bytes, mapped shared: u64 spikes held so far, u64 the RSS (from
//   /proc/self/statm) at the start of the last hold, u64 CLOCK_MONOTONIC ns at the end
//   of the last hold, u64 1 once the run is over (a test that kills the program reads it).
//   Prints "peak_end_ns N" (the last hold's end) at the end.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t RssBytes(void) {
  FILE* f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, resident = 0;
  if (f == NULL || fscanf(f, "%lu %lu", &size, &resident) != 2) abort();
  fclose(f);
  return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void StatFor(const char* file, uint64_t ns) {
  const uint64_t until = NowNs() + ns;
  struct stat st;
  while (NowNs() < until) {
    if (stat(file, &st) != 0) abort();
  }
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: ct_thin FILE LEAD_S SPIKES HOLD_MS SECONDS STATE\n");
    return 2;
  }
  const char* file = argv[1];
  const uint64_t lead_ns = (uint64_t)(atof(argv[2]) * 1e9);
  const long spikes = atol(argv[3]);
  const uint64_t hold_ns = (uint64_t)atol(argv[4]) * 1000000ull;
  const uint64_t seconds_ns = (uint64_t)(atof(argv[5]) * 1e9);
  const int sfd = open(argv[6], O_RDWR | O_CREAT, 0600);
  if (sfd < 0 || ftruncate(sfd, 32) != 0) return 2;
  volatile uint64_t* state = mmap(NULL, 32, PROT_READ | PROT_WRITE, MAP_SHARED, sfd, 0);
  close(sfd);
  if (state == MAP_FAILED) return 2;
  StatFor(file, lead_ns);
  for (long k = 0; k < spikes; ++k) {
    const size_t bytes = (size_t)(32 + 16 * k) << 20;
    char* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) abort();
    for (size_t i = 0; i < bytes; i += 4096) p[i] = 1;
    const uint64_t rss = RssBytes();
    StatFor(file, hold_ns);
    state[1] = rss;
    state[2] = NowNs();
    __atomic_store_n(&state[0], (uint64_t)(k + 1), __ATOMIC_RELEASE);
    munmap(p, bytes);
  }
  StatFor(file, seconds_ns);
  state[3] = 1;
  printf("peak_end_ns %llu\n", (unsigned long long)state[2]);
  return 0;
}
