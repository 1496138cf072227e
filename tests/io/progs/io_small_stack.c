/* io_small_stack KIB DIR: one thread with a KIB KiB stack opens 8 files in DIR and
 * closes them with close_range, opens 8 more and closes them with closefrom, and prints
 * "closed 16"; the closes run 14 KiB deeper in the stack than the opens. The shim's hooks run on that thread's stack: they must fit where bare
 * libc calls fit (PTHREAD_STACK_MIN is 16 KiB; glibc takes the thread's TLS from it
 * too). Prints "FD API first last" for each batch so the test can check the records. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char* g_dir;

/* Opens 8 files at descriptors base..base+7 (dup2, so that the batch is contiguous
 * whatever the process inherited); returns the last one or -1. */
static int open_batch(const char* tag, int base) {
  for (int i = 0; i < 8; ++i) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s%d", g_dir, tag, i);
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, base + i) != base + i || close(fd) != 0) return -1;
  }
  return base + 7;
}

/* Closes [first, last] with close_range (or closefrom first) 14 KiB deeper in the
 * stack than the opens, where bare libc still has room on a 32 KiB stack. */
__attribute__((noinline)) static int close_deep(int use_closefrom, int first, int last) {
  volatile char pad[14 * 1024];
  pad[0] = 1;
  pad[sizeof(pad) - 1] = 1;
  int r = 0;
  if (use_closefrom) {
    closefrom(first);
  } else {
    r = close_range((unsigned)first, (unsigned)last, 0);
  }
  return r + pad[0] - 1;
}

static void* body(void* arg) {
  (void)arg;
  static char report[128];
  int first = 200, last;
  if ((last = open_batch("range", first)) < 0) return NULL;
  if (close_deep(0, first, last) != 0) return NULL;
  int n = snprintf(report, sizeof(report), "FD close_range %d %d\n", first, last);
  first = 300;
  if ((last = open_batch("from", first)) < 0) return NULL;
  if (close_deep(1, first, last) != 0) return NULL;
  if (fcntl(first, F_GETFD) != -1) return NULL;
  snprintf(report + n, sizeof(report) - n, "FD closefrom %d %d\nclosed 16\n", first, last);
  return report;
}

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  g_dir = argv[2];
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  if (pthread_attr_setstacksize(&attr, (size_t)atoi(argv[1]) * 1024) != 0) return 3;
  pthread_t t;
  if (pthread_create(&t, &attr, body, NULL) != 0) return 4;
  void* result = NULL;
  pthread_join(t, &result);
  if (result == NULL) return 5;
  fputs((const char*)result, stdout);
  return 0;
}
