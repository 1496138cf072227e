/* The I/O aggregates' test program (test_io_aggregates.py).
 *
 * visit DIR N PASSES CHUNK STOP_AFTER
 *   N files DIR/f00000.bin ... : each pass stats each file, opens it, reads it in
 *   CHUNK-byte read()s to the end (the 0-byte read included), preads its first 100 bytes,
 *   fstats it and closes it. After STOP_AFTER visits (0: never) it prints "stopped V" and
 *   waits to be killed. At the end: one JSON line of what it did.
 * threads FILE T M
 *   T threads each pread FILE's first 64 bytes M times.
 * overflow DIR_MISSING N DIR_REAL K
 *   stats N missing files DIR_MISSING/m<i> (each fails, ENOENT), then visits K files
 *   DIR_REAL/f<i>.bin as `visit` does, once.
 * heavy DIR_MISSING N DIR_REAL K HOT R [PAUSE_US]
 *   as overflow (printing "filled" after the stats; with PAUSE_US, that many microseconds
 *   between two visits and "half" after half of them), then opens DIR_REAL/f<HOT>.bin again, preads its first 100 bytes R times
 *   and closes it (the heavy-hitter table's test); prints its JSON line and "stopped",
 *   then waits to be killed.
 * lateread DIR_MISSING N FILE R
 *   stats N missing files, then opens FILE and preads its first 100 bytes R times, in
 *   blocks of 1,000 timed with CLOCK_MONOTONIC: prints the least block's ns per pread
 *   (tools/bench --suite io: a read of a file past the file slots). */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static unsigned long long g_opens, g_reads, g_bytes, g_stats, g_preads;

static int visit(const char* dir, int i, size_t chunk) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/f%05d.bin", dir, i);
  struct stat st;
  if (stat(path, &st) != 0) return -1;
  ++g_stats;
  int fd = open(path, O_RDONLY);
  if (fd < 0) return -1;
  ++g_opens;
  static char buf[1 << 20];
  for (;;) {
    ssize_t r = read(fd, buf, chunk);
    if (r < 0) return -1;
    ++g_reads;
    g_bytes += (unsigned long long)r;
    if (r == 0) break;
  }
  ssize_t r = pread(fd, buf, 100, 0);
  if (r < 0) return -1;
  ++g_preads;
  g_bytes += (unsigned long long)r;
  if (fstat(fd, &st) != 0) return -1;
  ++g_stats;
  close(fd);
  return 0;
}

/* Stats n missing files dir/m<i> (each fails, ENOENT): n new paths. */
static int stat_missing(const char* dir, int n) {
  char path[4096];
  struct stat st;
  for (int i = 0; i < n; ++i) {
    snprintf(path, sizeof(path), "%s/m%06d", dir, i);
    if (stat(path, &st) == 0) return -1;
  }
  return 0;
}

static const char* g_file;
static int g_m;

static void* preader(void* arg) {
  (void)arg;
  int fd = open(g_file, O_RDONLY);
  char buf[64];
  for (int k = 0; k < g_m; ++k) {
    if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) abort();
  }
  close(fd);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc == 7 && strcmp(argv[1], "visit") == 0) {
    const int n = atoi(argv[3]), passes = atoi(argv[4]), stop = atoi(argv[6]);
    const size_t chunk = (size_t)atol(argv[5]);
    int visits = 0;
    for (int p = 0; p < passes; ++p) {
      for (int i = 0; i < n; ++i) {
        if (visit(argv[2], i, chunk) != 0) return 2;
        if (++visits == stop) {
          printf("stopped %d\n", visits);
          fflush(stdout);
          for (;;) pause();
        }
      }
    }
  } else if (argc == 5 && strcmp(argv[1], "threads") == 0) {
    g_file = argv[2];
    const int t = atoi(argv[3]);
    g_m = atoi(argv[4]);
    pthread_t th[64];
    if (t > 64) return 2;
    for (int k = 0; k < t; ++k) pthread_create(&th[k], NULL, preader, NULL);
    for (int k = 0; k < t; ++k) pthread_join(th[k], NULL);
  } else if (argc == 6 && strcmp(argv[1], "overflow") == 0) {
    const int n = atoi(argv[3]), k = atoi(argv[5]);
    if (stat_missing(argv[2], n) != 0) return 2;
    for (int i = 0; i < k; ++i) {
      if (visit(argv[4], i, 4096) != 0) return 2;
    }
  } else if (argc == 6 && strcmp(argv[1], "lateread") == 0) {
    const int n = atoi(argv[3]), r = atoi(argv[5]);
    if (stat_missing(argv[2], n) != 0) return 2;
    const int fd = open(argv[4], O_RDONLY);
    if (fd < 0) return 2;
    char buf[100];
    double best = 1e18;
    for (int b = 0; b < r / 1000; ++b) {
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      for (int i = 0; i < 1000; ++i) {
        if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) return 2;
      }
      clock_gettime(CLOCK_MONOTONIC, &t1);
      const double ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1000.0;
      if (ns < best) best = ns;
    }
    close(fd);
    printf("{\"ns_per_pread\": %.1f}\n", best);
    return 0;
  } else if ((argc == 8 || argc == 9) && strcmp(argv[1], "heavy") == 0) {
    const int n = atoi(argv[3]), k = atoi(argv[5]), hot = atoi(argv[6]), r = atoi(argv[7]);
    const int pause_us = argc == 9 ? atoi(argv[8]) : 0;
    char path[4096];
    if (stat_missing(argv[2], n) != 0) return 2;
    printf("filled\n");
    fflush(stdout);
    for (int i = 0; i < k; ++i) {
      if (visit(argv[4], i, 4096) != 0) return 2;
      if (pause_us > 0) usleep((useconds_t)pause_us);
      if (pause_us > 0 && i + 1 == k / 2) {
        printf("half\n");
        fflush(stdout);
      }
    }
    snprintf(path, sizeof(path), "%s/f%05d.bin", argv[4], hot);
    const int fd = open(path, O_RDONLY);
    if (fd < 0) return 2;
    ++g_opens;
    char buf[100];
    for (int i = 0; i < r; ++i) {
      if (pread(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf)) return 2;
      ++g_preads;
      g_bytes += sizeof(buf);
    }
    close(fd);
    printf("{\"opens\": %llu, \"reads\": %llu, \"preads\": %llu, \"bytes\": %llu, \"stats\": %llu}\nstopped\n",
           g_opens, g_reads, g_preads, g_bytes, g_stats);
    fflush(stdout);
    for (;;) pause();
  } else {
    fprintf(stderr, "usage: see io_agg_visit.c\n");
    return 2;
  }
  printf("{\"opens\": %llu, \"reads\": %llu, \"preads\": %llu, \"bytes\": %llu, \"stats\": %llu}\n", g_opens,
         g_reads, g_preads, g_bytes, g_stats);
  return 0;
}
