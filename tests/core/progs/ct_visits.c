// File visits for the window tests (tests/core/test_window.py): each visit stats, opens,
// reads (the file's 4 KiB, then end of file) and closes one of NFILES files, five file
// I/O calls. Usage: ct_visits DIR NFILES VISITS SECONDS THREADS COUNTER
//   VISITS > 0: that many visits in all (split between the threads); else visits go on
//   until SECONDS have passed. COUNTER: a file of 8 bytes, mapped shared, that holds the
//   visits completed so far (a test that kills the program reads it). Prints
//   "visits N" at the end.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char* g_dir;
static long g_files, g_per_thread, g_threads;
static double g_seconds;
static volatile uint64_t* g_counter;

static double Now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void* Visit(void* arg) {
  const long first = (long)(intptr_t)arg;
  const double until = Now() + g_seconds;
  char path[4096], buf[8192];
  for (long i = 0; g_per_thread > 0 ? i < g_per_thread : Now() < until; ++i) {
    snprintf(path, sizeof(path), "%s/f%05ld", g_dir, (first + i) % g_files);
    struct stat st;
    if (stat(path, &st) != 0) abort();
    const int fd = open(path, O_RDONLY);
    if (fd < 0) abort();
    if (read(fd, buf, sizeof(buf)) != st.st_size || read(fd, buf, sizeof(buf)) != 0) abort();
    close(fd);
    __atomic_add_fetch(g_counter, 1, __ATOMIC_RELEASE);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: ct_visits DIR NFILES VISITS SECONDS THREADS COUNTER\n");
    return 2;
  }
  g_dir = argv[1];
  g_files = atol(argv[2]);
  const long visits = atol(argv[3]);
  g_seconds = atof(argv[4]);
  g_threads = atol(argv[5]);
  const int cfd = open(argv[6], O_RDWR | O_CREAT, 0600);
  if (cfd < 0 || ftruncate(cfd, 8) != 0) return 2;
  g_counter = mmap(NULL, 8, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
  close(cfd);
  if (g_counter == MAP_FAILED) return 2;
  *g_counter = 0;
  g_per_thread = visits / g_threads;
  pthread_t th[64];
  for (long t = 0; t < g_threads && t < 64; ++t) {
    pthread_create(&th[t], NULL, Visit, (void*)(intptr_t)(t * 7919));
  }
  for (long t = 0; t < g_threads && t < 64; ++t) pthread_join(th[t], NULL);
  printf("visits %llu\n", (unsigned long long)*g_counter);
  return 0;
}
