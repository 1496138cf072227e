/* io_raw_syscall DIR: closes descriptors with syscall(2), as libuv (Node.js) does, and
 * makes other system calls through syscall(2) that must pass through the shim's stub
 * untouched. Prints what it saw; the test compares bare and traced runs and the report.
 *   1. DIR/a (1000 B): open, read 100 B, syscall(SYS_close); a pipe then gets the same
 *      number and carries 10 reads of 10 B. Only the file's one read is the file's.
 *   2. DIR/b: open, read 50 B, syscall(SYS_close_range, fd, fd, 0); DIR/c opened next
 *      gets the number and is read 20 B.
 *   3. syscall(SYS_close, -1) and syscall(SYS_close, 123456): -1 with errno EBADF.
 *   4. syscall(SYS_getpid) and a six-argument syscall(SYS_mmap) pass through.
 *   5. syscall(SYS_statx), as libuv makes every fs.stat*: DIR/a by path 3 times (AT_FDCWD
 *      passed as an int, so the register's upper half is not sign-extended), DIR/b by
 *      descriptor once (AT_EMPTY_PATH), DIR/missing once (-1, ENOENT). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#ifndef SYS_statx
#define SYS_statx 332
#endif

static int OpenIn(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  return open(path, O_RDONLY);
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  char buf[100];
  const int a = OpenIn(argv[1], "a");
  if (a < 0 || read(a, buf, 100) != 100) return 10;
  if (syscall(SYS_close, a) != 0) return 11;
  int p[2];
  if (pipe(p) != 0) return 12;
  for (int i = 0; i < 10; ++i) {
    if (write(p[1], buf, 10) != 10 || read(p[0], buf, 10) != 10) return 13;
  }
  printf("a %d pipe %d\n", a, p[0]);
  close(p[0]);
  close(p[1]);

  const int b = OpenIn(argv[1], "b");
  if (b < 0 || read(b, buf, 50) != 50) return 20;
  if (syscall(SYS_close_range, b, b, 0) != 0) return 21;
  const int c = OpenIn(argv[1], "c");
  if (c < 0 || read(c, buf, 20) != 20) return 22;
  printf("b %d c %d\n", b, c);
  close(c);

  errno = 0;
  long r1 = syscall(SYS_close, -1);
  int e1 = errno;
  errno = 0;
  long r2 = syscall(SYS_close, 123456);
  int e2 = errno;
  printf("bad closes %ld %s %ld %s\n", r1, strerror(e1), r2, strerror(e2));

  printf("getpid %s\n", syscall(SYS_getpid) == getpid() ? "same" : "different");
  void* m = (void*)syscall(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 30;
  memset(m, 7, 4096);
  printf("mmap %d\n", ((char*)m)[4095]);

  char path[4096];
  struct statx sx;
  long sizes = 0;
  snprintf(path, sizeof(path), "%s/a", argv[1]);
  for (int i = 0; i < 3; ++i) {
    if (syscall(SYS_statx, AT_FDCWD, path, 0, STATX_ALL, &sx) != 0) return 40;
    sizes += (long)sx.stx_size;
  }
  const int b2 = OpenIn(argv[1], "b");
  if (b2 < 0 || syscall(SYS_statx, b2, "", AT_EMPTY_PATH, STATX_SIZE, &sx) != 0) return 41;
  sizes += (long)sx.stx_size;
  close(b2);
  snprintf(path, sizeof(path), "%s/missing", argv[1]);
  errno = 0;
  long r3 = syscall(SYS_statx, AT_FDCWD, path, 0, STATX_ALL, &sx);
  printf("statx sizes %ld missing %ld %s\n", sizes, r3, strerror(errno));
  return 0;
}
