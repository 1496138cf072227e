// What reserving trace space costs, two ways, per 4 KiB page: the reservation itself and
// the first store to each page through a MAP_SHARED mapping (what the shim does with
// every page of a trace). fallocate leaves unwritten extents, which the first store
// converts; zeros written with pwritev leave the pages in the page cache, where the first
// store is a minor fault. The shim writes zeros (shim/trace_file.cpp, Reserve).
//
// Usage: reserve_pages DIR STEP_BYTES TOTAL_BYTES ROUNDS
// Prints one JSON line: {"fallocate": {"reserve_us_per_page", "store_us_per_page"},
// "zeros": {...}}, medians over ROUNDS files of TOTAL_BYTES reserved STEP_BYTES at a time.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static char zeros[64 << 10];

static double NowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int Cmp(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int ReserveZeros(int fd, long off, long len) {
  struct iovec iov[1024];
  while (len > 0) {
    int n = 0;
    for (long left = len; left > 0 && n < 1024; ++n) {
      const long k = left < (long)sizeof(zeros) ? left : (long)sizeof(zeros);
      iov[n].iov_base = zeros;
      iov[n].iov_len = (size_t)k;
      left -= k;
    }
    const ssize_t w = pwritev(fd, iov, n, off);
    if (w <= 0) return -1;
    off += w;
    len -= w;
  }
  return 0;
}

// One file: reserve [0, total) step by step, storing one byte into each page of a step
// right after reserving it. Adds the time per page of each part to *reserve, *store.
static int OneFile(const char* dir, int zero_fill, long step, long total, double* reserve,
                   double* store) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/reserve_pages.%d.tmp", dir, (int)getpid());
  const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  char* p = mmap(NULL, (size_t)total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -1;
  double r = 0, s = 0;
  for (long off = 0; off < total; off += step) {
    const double t0 = NowUs();
    const int rc = zero_fill ? ReserveZeros(fd, off, step) : fallocate(fd, 0, off, step);
    const double t1 = NowUs();
    if (rc != 0) return -1;
    for (long k = off; k < off + step; k += 4096) p[k] = 1;
    s += NowUs() - t1;
    r += t1 - t0;
  }
  munmap(p, (size_t)total);
  close(fd);
  unlink(path);
  *reserve = r / (double)(total / 4096);
  *store = s / (double)(total / 4096);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 5) return 2;
  const long step = atol(argv[2]), total = atol(argv[3]);
  const int rounds = atoi(argv[4]);
  double* v = malloc(sizeof(double) * 4 * (size_t)rounds);
  for (int i = 0; i < rounds; ++i) {  // the two ways interleaved, round by round
    for (int z = 0; z < 2; ++z) {
      if (OneFile(argv[1], z, step, total, &v[(z * 2) * rounds + i], &v[(z * 2 + 1) * rounds + i]) != 0) {
        perror("reserve_pages");
        return 1;
      }
    }
  }
  double med[4];
  for (int k = 0; k < 4; ++k) {
    qsort(v + k * rounds, (size_t)rounds, sizeof(double), Cmp);
    med[k] = v[k * rounds + rounds / 2];
  }
  printf("{\"fallocate\": {\"reserve_us_per_page\": %.3f, \"store_us_per_page\": %.3f}, "
         "\"zeros\": {\"reserve_us_per_page\": %.3f, \"store_us_per_page\": %.3f}}\n",
         med[0], med[1], med[2], med[3]);
  return 0;
}
