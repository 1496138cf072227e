// What a new trace file's creation costs in a directory, with and without files deleted
// just before (ext4 without a journal skips recently deleted inodes when it allocates one,
// and each skip is a buffer-cache lookup). Creates N files the way the shim does
// (O_TMPFILE, then linkat through /proc/self/fd) and prints the mean time per create.
// Usage: create_churn DIR DELETE [N]   DELETE=1 unlinks each file right after creating it
//        (the next creates then run among recently deleted inodes); 0 keeps them until
//        the end. Run "DIR 0", then "DIR 1", then "DIR 0" again, to see both sides.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double NowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: create_churn DIR DELETE [N]\n");
    return 2;
  }
  const char* dir = argv[1];
  const int del = atoi(argv[2]);
  const int n = argc > 3 ? atoi(argv[3]) : 2000;
  double total = 0;
  for (int i = 0; i < n; ++i) {
    char link[64], name[4096];
    const double t = NowUs();
    const int fd = open(dir, O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);
    if (fd < 0) {
      perror("open O_TMPFILE");
      return 1;
    }
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    snprintf(name, sizeof(name), "%s/churn.%d.%d", dir, (int)getpid(), i);
    if (linkat(AT_FDCWD, link, AT_FDCWD, name, AT_SYMLINK_FOLLOW) != 0) {
      perror("linkat");
      return 1;
    }
    close(fd);
    total += NowUs() - t;
    if (del) unlink(name);
  }
  printf("%s, delete=%d: %.1f us per create (%d files)\n", dir, del, total / n, n);
  if (!del) {
    for (int i = 0; i < n; ++i) {
      char name[4096];
      snprintf(name, sizeof(name), "%s/churn.%d.%d", dir, (int)getpid(), i);
      unlink(name);
    }
  }
  return 0;
}
