// Per-call cost of read, pread, close, open and stat, each call timed on its own with
// CLOCK_MONOTONIC; prints the median per call in ns. The bench runs it bare, under a
// no-op LD_PRELOAD, under colabtrace, strace -f and ltrace, and reports the differences.
// Usage: microbench FILE ITERATIONS
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static inline long long Now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int Cmp(const void* a, const void* b) {
  long long x = *(const long long*)a, y = *(const long long*)b;
  return x < y ? -1 : x > y;
}

static long long Median(long long* v, int n) {
  qsort(v, (size_t)n, sizeof(*v), Cmp);
  return v[n / 2];
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const char* path = argv[1];
  const int n = atoi(argv[2]);
  long long* t_read = malloc(sizeof(long long) * n);
  long long* t_pread = malloc(sizeof(long long) * n);
  long long* t_open = malloc(sizeof(long long) * n);
  long long* t_close = malloc(sizeof(long long) * n);
  long long* t_stat = malloc(sizeof(long long) * n);
  long long* t_empty = malloc(sizeof(long long) * n);
  char buf[64];
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 1;
  for (int i = 0; i < n; ++i) {
    long long a = Now();
    long long b = Now();
    t_empty[i] = b - a;  // the timer itself
    if (i % 64 == 0) lseek(fd, 0, SEEK_SET);
    a = Now();
    if (read(fd, buf, sizeof(buf)) < 0) return 1;
    b = Now();
    t_read[i] = b - a;
    a = Now();
    if (pread(fd, buf, sizeof(buf), 128) < 0) return 1;
    b = Now();
    t_pread[i] = b - a;
  }
  close(fd);
  for (int i = 0; i < n; ++i) {
    long long a = Now();
    int f = open(path, O_RDONLY);
    long long b = Now();
    long long c = Now();
    close(f);
    long long d = Now();
    t_open[i] = b - a;
    t_close[i] = d - c;
  }
  struct stat st;
  for (int i = 0; i < n; ++i) {
    long long a = Now();
    stat(path, &st);
    t_stat[i] = Now() - a;
  }
  long long e = Median(t_empty, n);
  printf("{\"read\": %lld, \"pread\": %lld, \"open\": %lld, \"close\": %lld, \"stat\": %lld, \"timer\": %lld}\n",
         Median(t_read, n) - e, Median(t_pread, n) - e, Median(t_open, n) - e,
         Median(t_close, n) - e, Median(t_stat, n) - e, e);
  return 0;
}
