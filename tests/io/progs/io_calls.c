// Calls every hooked file I/O entry point on files in DIR and prints, for each call:
//   R <what> <result> <errno name>     what the call returned (compared with a run
//                                      without the shim: must be identical)
//   EXPECT <record> key=value ...      the record the shim must have written
// Descriptors are printed relative to the first free descriptor (fd=+N), so the output
// does not depend on the shim's own trace descriptor. Usage: io_calls DIR
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int __open_2(const char*, int);
int __open64_2(const char*, int);
int __openat_2(int, const char*, int);
int __openat64_2(int, const char*, int);
ssize_t __read_chk(int, void*, size_t, size_t);
ssize_t __pread_chk(int, void*, size_t, off_t, size_t);
ssize_t __pread64_chk(int, void*, size_t, off64_t, size_t);
size_t __fread_chk(void*, size_t, size_t, size_t, FILE*);
char* __fgets_chk(char*, size_t, int, FILE*);
size_t __fread_unlocked_chk(void*, size_t, size_t, size_t, FILE*);
char* __fgets_unlocked_chk(char*, size_t, int, FILE*);
int __xstat(int, const char*, struct stat*);
int __xstat64(int, const char*, struct stat64*);
int __lxstat(int, const char*, struct stat*);
int __lxstat64(int, const char*, struct stat64*);
int __fxstat(int, int, struct stat*);
int __fxstat64(int, int, struct stat64*);
int __fxstatat(int, int, const char*, struct stat*, int);
int __fxstatat64(int, int, const char*, struct stat64*, int);

static int g_base;
static char g_dir[1024];

static const char* Err(long r, int e) {
  if (r >= 0) return "-";
  const char* n = strerrorname_np(e);
  return n ? n : "?";
}
static void R(const char* what, long r, int e) { printf("R %s %ld %s\n", what, r, Err(r, e)); }
// A descriptor (or -errno) as printed in EXPECT lines and R lines.
static const char* F(long fd, int e, char* buf) {
  if (fd < 0) snprintf(buf, 32, "-%d", e);
  else snprintf(buf, 32, "+%ld", fd - g_base);
  return buf;
}
static char* P(const char* name) {
  static char buf[4][1200];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof(buf[k]), "%s/%s", g_dir, name);
  return buf[k];
}

#define OPEN(api, expr, name)                                                        \
  do {                                                                               \
    errno = 0;                                                                       \
    long r_ = (expr);                                                                \
    int e_ = errno;                                                                  \
    char b_[32];                                                                     \
    printf("R %s %s %s\n", api, r_ >= 0 ? "fd" : "-1", Err(r_, e_));                 \
    printf("EXPECT io_open api=%s fd=%s path=%s\n", api, F(r_, e_, b_), P(name));    \
    last = (int)r_;                                                                  \
  } while (0)

// A call on fd returning a count: record `rec` with result.
#define CALL(rec, api, fd, expr, extra_fmt, ...)                                        \
  do {                                                                                \
    errno = 0;                                                                        \
    long r_ = (long)(expr);                                                           \
    int e_ = errno;                                                                   \
    char b_[32];                                                                      \
    R(api, r_, e_);                                                                   \
    printf("EXPECT " rec " api=%s fd=%s result=%ld" extra_fmt "\n", api, F(fd, 0, b_), \
           r_ < 0 ? -(long)e_ : r_, ##__VA_ARGS__);                                   \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  snprintf(g_dir, sizeof(g_dir), "%s", argv[1]);
  g_base = dup(2);  // the first free descriptor (stderr is untraced: a pipe or a tty)
  close(g_base);
  printf("BASE %d\n", g_base);
  int last = -1;
  char buf[8192];
  char b1[32], b2[32];

  // --- a 10,000-byte data file ---
  memset(buf, 'x', sizeof(buf));
  for (int i = 0; i < 100; ++i) buf[i * 80] = '\n';
  OPEN("open", open(P("data"), O_CREAT | O_WRONLY | O_TRUNC, 0644), "data");
  CALL("io_write", "write", last, write(last, buf, 8192), " offset=0");
  CALL("io_write", "write", last, write(last, buf, 10000 - 8192), " offset=0");
  CALL("io_close", "close", last, close(last), "");
  printf("# opens\n");
  OPEN("open", open(P("data"), O_RDONLY), "data");
  int fd = last;
  CALL("io_read", "read", fd, read(fd, buf, 100), "");
  CALL("io_read", "__read_chk", fd, __read_chk(fd, buf, 100, sizeof(buf)), "");
  struct iovec iov[2] = {{buf, 50}, {buf + 50, 70}};
  CALL("io_read", "readv", fd, readv(fd, iov, 2), "");
  CALL("io_read_at", "pread", fd, pread(fd, buf, 1000, 5000), " offset=5000");
  CALL("io_read_at", "pread64", fd, pread64(fd, buf, 1000, 9500), " offset=9500");
  CALL("io_read_at", "__pread_chk", fd, __pread_chk(fd, buf, 10, 20, sizeof(buf)), " offset=20");
  CALL("io_read_at", "__pread64_chk", fd, __pread64_chk(fd, buf, 10, 30, sizeof(buf)), " offset=30");
  CALL("io_read_at", "preadv", fd, preadv(fd, iov, 2, 100), " offset=100");
  CALL("io_read_at", "preadv64", fd, preadv64(fd, iov, 2, 200), " offset=200");
  CALL("io_read_at", "preadv2", fd, preadv2(fd, iov, 2, 300, 0), " offset=300");
  CALL("io_read", "preadv2", fd, preadv2(fd, iov, 2, -1, 0), "");
  CALL("io_read_at", "preadv64v2", fd, preadv64v2(fd, iov, 1, 9990, 0), " offset=9990");
  CALL("io_seek", "lseek", fd, lseek(fd, 9000, SEEK_SET), " offset=9000 whence=0");
  errno = 0;
  R("lseek-tell", lseek(fd, 0, SEEK_CUR), errno);  // a pure tell: not recorded
  CALL("io_seek", "lseek64", fd, lseek64(fd, 10, SEEK_CUR), " offset=10 whence=1");
  CALL("io_read", "read", fd, read(fd, buf, 8192), "");
  CALL("io_read", "read", fd, read(fd, buf, 8192), "");  // end of file: 0
  {
    struct stat st;
    errno = 0;
    int r = fstat(fd, &st);
    R("fstat", r, errno);
    printf("EXPECT io_stat api=fstat fd=%s result=0 size=10000 ftype=8\n", F(fd, 0, b1));
    struct stat64 st64;
    r = fstat64(fd, &st64);
    R("fstat64", r, errno);
    printf("EXPECT io_stat api=fstat64 fd=%s result=0 size=10000 ftype=8\n", F(fd, 0, b1));
    r = __fxstat(1, fd, &st);
    R("__fxstat", r, errno);
    printf("EXPECT io_stat api=__fxstat fd=%s result=0 size=10000 ftype=8\n", F(fd, 0, b1));
    r = __fxstat64(1, fd, &st64);
    R("__fxstat64", r, errno);
    printf("EXPECT io_stat api=__fxstat64 fd=%s result=0 size=10000 ftype=8\n", F(fd, 0, b1));
    r = fstatat(fd, "", &st, AT_EMPTY_PATH);
    R("fstatat-empty", r, errno);
    printf("EXPECT io_stat api=fstatat fd=%s result=0 size=10000 ftype=8\n", F(fd, 0, b1));
    struct statx sx;
    r = statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, &sx);
    R("statx-fd", r, errno);
    printf("EXPECT io_stat api=statx fd=%s result=0 size=10000 ftype=8\n", F(fd, 0, b1));
  }
  // dup family and fcntl
  {
    errno = 0;
    int d = dup(fd);
    R("dup", d >= 0 ? 0 : -1, errno);
    printf("EXPECT io_dup api=dup oldfd=%s newfd=%s\n", F(fd, 0, b1), F(d, errno, b2));
    int d2 = dup2(fd, d + 1);
    R("dup2", d2 >= 0 ? 0 : -1, errno);
    printf("EXPECT io_dup api=dup2 oldfd=%s newfd=%s\n", F(fd, 0, b1), F(d2, errno, b2));
    int d3 = dup3(fd, d + 2, O_CLOEXEC);
    R("dup3", d3 >= 0 ? 0 : -1, errno);
    printf("EXPECT io_dup api=dup3 oldfd=%s newfd=%s\n", F(fd, 0, b1), F(d3, errno, b2));
    int d4 = fcntl(fd, F_DUPFD, 50);
    R("F_DUPFD", d4, errno);  // the lowest free >= 50: identical with or without the shim
    printf("EXPECT io_dup api=F_DUPFD oldfd=%s newfd=%s\n", F(fd, 0, b1), F(d4, errno, b2));
    int d5 = fcntl(fd, F_DUPFD_CLOEXEC, 60);
    R("F_DUPFD_CLOEXEC", d5, errno);
    printf("EXPECT io_dup api=F_DUPFD_CLOEXEC oldfd=%s newfd=%s\n", F(fd, 0, b1), F(d5, errno, b2));
    R("F_GETFD", fcntl(d5, F_GETFD), errno);
    R("F_GETFL", fcntl(fd, F_GETFL) & O_ACCMODE, errno);
    struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
    R("F_GETLK", fcntl(fd, F_GETLK, &fl), errno);  // the pointer must be forwarded
    R("F_GETLK-type", fl.l_type, 0);
    CALL("io_read_at", "pread", d2, pread(d2, buf, 10, 0), " offset=0");
    CALL("io_close", "close", d, close(d), "");
    CALL("io_close", "close", d2, close(d2), "");
    CALL("io_close", "close", d3, close(d3), "");
    CALL("io_close", "close", d4, close(d4), "");
    // close_range over [d5, d5]: one IoClose.
    errno = 0;
    int r = close_range((unsigned)d5, (unsigned)d5, 0);
    R("close_range", r, errno);
    printf("EXPECT io_close api=close_range fd=%s result=0\n", F(d5, 0, b1));
  }
  {
    errno = 0;
    void* m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 4096);
    R("mmap", m == MAP_FAILED ? -1 : 0, errno);
    printf("EXPECT io_mmap fd=%s length=4096 offset=4096 result=0\n", F(fd, 0, b1));
    munmap(m, 4096);
    m = mmap64(NULL, 100, PROT_READ, MAP_SHARED, fd, 0);
    R("mmap64", m == MAP_FAILED ? -1 : 0, errno);
    printf("EXPECT io_mmap fd=%s length=100 offset=0 result=0\n", F(fd, 0, b1));
    munmap(m, 100);
  }
  // copies
  {
    int out;
    OPEN("open", open(P("copy"), O_CREAT | O_WRONLY | O_TRUNC, 0600), "copy");
    out = last;
    off64_t in_off = 0;
    CALL("io_copy", "copy_file_range", fd, copy_file_range(fd, &in_off, out, NULL, 1000, 0), "");
    off_t so = 0;
    CALL("io_copy", "sendfile", fd, sendfile(out, fd, &so, 500), "");
    off64_t so64 = 0;
    CALL("io_copy", "sendfile64", fd, sendfile64(out, fd, &so64, 250), "");
    CALL("io_write", "write", out, write(out, "abc", 3), " offset=0");
    CALL("io_write", "pwrite", out, pwrite(out, "abc", 3, 7), " offset=7");
    CALL("io_write", "pwrite64", out, pwrite64(out, "abcd", 4, 9), " offset=9");
    CALL("io_write", "writev", out, writev(out, iov, 2), " offset=0");
    CALL("io_write", "pwritev", out, pwritev(out, iov, 1, 3), " offset=3");
    CALL("io_write", "pwritev64", out, pwritev64(out, iov, 1, 4), " offset=4");
    CALL("io_write", "pwritev2", out, pwritev2(out, iov, 1, 5, 0), " offset=5");
    CALL("io_write", "pwritev64v2", out, pwritev64v2(out, iov, 1, 6, 0), " offset=6");
    CALL("io_fsync", "fsync", out, fsync(out), "");
    CALL("io_fsync", "fdatasync", out, fdatasync(out), "");
    CALL("io_close", "close", out, close(out), "");
  }
  CALL("io_close", "close", fd, close(fd), "");

  printf("# open variants\n");
  OPEN("open64", open64(P("data"), O_RDONLY), "data");
  CALL("io_close", "close", last, close(last), "");
  OPEN("__open_2", __open_2(P("data"), O_RDONLY), "data");
  CALL("io_close", "close", last, close(last), "");
  OPEN("__open64_2", __open64_2(P("data"), O_RDONLY), "data");
  CALL("io_close", "close", last, close(last), "");
  int dfd = open(g_dir, O_RDONLY | O_DIRECTORY);
  printf("EXPECT io_open api=open fd=%s path=%s\n", F(dfd, 0, b1), g_dir);
  OPEN("openat", openat(dfd, "data", O_RDONLY), "data");
  CALL("io_close", "close", last, close(last), "");
  OPEN("openat64", openat64(dfd, "./data", O_RDONLY), "data");
  CALL("io_close", "close", last, close(last), "");
  OPEN("__openat_2", __openat_2(AT_FDCWD, P("data"), O_RDONLY), "data");
  CALL("io_close", "close", last, close(last), "");
  OPEN("__openat64_2", __openat64_2(dfd, "data", O_RDONLY), "data");
  CALL("io_close", "close", last, close(last), "");
  OPEN("creat", creat(P("c1"), 0600), "c1");
  CALL("io_close", "close", last, close(last), "");
  OPEN("creat64", creat64(P("c2"), 0600), "c2");
  CALL("io_close", "close", last, close(last), "");
  {
    struct stat st;
    errno = 0;
    int r = fstatat(dfd, "data", &st, 0);
    R("fstatat", r, errno);
    printf("EXPECT io_stat api=fstatat path=%s result=0 size=10000 ftype=8\n", P("data"));
    struct stat64 st64;
    r = fstatat64(dfd, "nope", &st64, 0);
    R("fstatat64-enoent", r, errno);
    printf("EXPECT io_stat api=fstatat64 path=%s result=-%d\n", P("nope"), ENOENT);
    r = __fxstatat(1, dfd, "data", &st, AT_SYMLINK_NOFOLLOW);
    R("__fxstatat", r, errno);
    printf("EXPECT io_stat api=__fxstatat path=%s result=0 size=10000 ftype=8\n", P("data"));
    r = __fxstatat64(1, AT_FDCWD, P("data"), &st64, 0);
    R("__fxstatat64", r, errno);
    printf("EXPECT io_stat api=__fxstatat64 path=%s result=0 size=10000 ftype=8\n", P("data"));
    r = faccessat(dfd, "data", R_OK, 0);
    R("faccessat", r, errno);
    printf("EXPECT io_stat api=faccessat path=%s result=0\n", P("data"));
  }
  // fdopendir on the directory descriptor: a scan summary with the entry count.
  {
    errno = 0;
    DIR* d = fdopendir(dfd);
    R("fdopendir", d ? 0 : -1, errno);
    printf("EXPECT io_dir api=fdopendir fd=%s result=0\n", F(dfd, 0, b1));
    int n = 0;
    while (readdir64(d) != NULL) ++n;
    printf("EXPECT io_dir api=readdir64 fd=%s result=%d\n", F(dfd, 0, b1), n);
    errno = 0;
    R("closedir", closedir(d), errno);
    printf("EXPECT io_close api=closedir fd=%s result=0\n", F(dfd, 0, b1));
  }

  printf("# stats\n");
  {
    struct stat st;
    struct stat64 st64;
#define PSTAT(api, expr, name, res, size)                                               \
  do {                                                                                  \
    errno = 0;                                                                          \
    int r_ = (expr);                                                                    \
    R(api, r_, errno);                                                                  \
    if ((res) == 0)                                                                     \
      printf("EXPECT io_stat api=%s path=%s result=0 size=%d\n", api, P(name), size);   \
    else                                                                                \
      printf("EXPECT io_stat api=%s path=%s result=%d\n", api, P(name), res);           \
  } while (0)
    PSTAT("stat", stat(P("data"), &st), "data", 0, 10000);
    PSTAT("stat64", stat64(P("data"), &st64), "data", 0, 10000);
    PSTAT("lstat", lstat(P("data"), &st), "data", 0, 10000);
    PSTAT("lstat64", lstat64(P("data"), &st64), "data", 0, 10000);
    PSTAT("__xstat", __xstat(1, P("data"), &st), "data", 0, 10000);
    PSTAT("__xstat64", __xstat64(1, P("data"), &st64), "data", 0, 10000);
    PSTAT("__lxstat", __lxstat(1, P("data"), &st), "data", 0, 10000);
    PSTAT("__lxstat64", __lxstat64(1, P("data"), &st64), "data", 0, 10000);
    struct statx sx;
    PSTAT("statx", statx(AT_FDCWD, P("data"), 0, STATX_SIZE, &sx), "data", 0, 10000);
    PSTAT("access", access(P("data"), R_OK), "data", 0, 0);
    PSTAT("euidaccess", euidaccess(P("data"), R_OK), "data", 0, 0);
    PSTAT("eaccess", eaccess(P("missing"), R_OK), "missing", -ENOENT, 0);
    PSTAT("stat", stat(P("missing"), &st), "missing", -ENOENT, 0);
    PSTAT("lstat64", lstat64(P("missing"), &st64), "missing", -ENOENT, 0);
    PSTAT("access", access(P("missing"), F_OK), "missing", -ENOENT, 0);
    PSTAT("__xstat", __xstat(1, P("missing"), &st), "missing", -ENOENT, 0);
    PSTAT("statx", statx(AT_FDCWD, P("missing"), 0, STATX_SIZE, &sx), "missing", -ENOENT, 0);
  }

  printf("# stdio\n");
  {
    errno = 0;
    FILE* f = fopen(P("data"), "r");
    R("fopen", f ? 0 : -1, errno);
    int ffd = fileno(f);
    printf("EXPECT io_open api=fopen fd=%s path=%s\n", F(ffd, 0, b1), P("data"));
    CALL("io_read", "fread", ffd, fread(buf, 1, 100, f), "");
    CALL("io_read", "fread", ffd, fread(buf, 10, 5, f) * 10, "");
    CALL("io_read", "fread_unlocked", ffd, (fread_unlocked)(buf, 1, 30, f), "");
    CALL("io_read", "__fread_chk", ffd, __fread_chk(buf, sizeof(buf), 1, 20, f), "");
    char* s = fgets(buf, sizeof(buf), f);
    R("fgets", s ? (long)strlen(s) : -1, errno);
    printf("EXPECT io_read api=fgets fd=%s result=%ld\n", F(ffd, 0, b1), s ? (long)strlen(s) : 0L);
    s = __fgets_chk(buf, sizeof(buf), 50, f);
    R("__fgets_chk", s ? (long)strlen(s) : -1, errno);
    printf("EXPECT io_read api=__fgets_chk fd=%s result=%ld\n", F(ffd, 0, b1), s ? (long)strlen(s) : 0L);
    s = fgets_unlocked(buf, 30, f);
    R("fgets_unlocked", s ? (long)strlen(s) : -1, errno);
    printf("EXPECT io_read api=fgets_unlocked fd=%s result=%ld\n", F(ffd, 0, b1), s ? (long)strlen(s) : 0L);
    s = __fgets_unlocked_chk(buf, sizeof(buf), 40, f);
    R("__fgets_unlocked_chk", s ? (long)strlen(s) : -1, errno);
    printf("EXPECT io_read api=__fgets_unlocked_chk fd=%s result=%ld\n", F(ffd, 0, b1),
           s ? (long)strlen(s) : 0L);
    CALL("io_read", "__fread_unlocked_chk", ffd, __fread_unlocked_chk(buf, sizeof(buf), 2, 7, f) * 2, "");
    char* line = NULL;
    size_t cap = 0;
    // Through a pointer: <stdio.h> inlines a direct getline() call into __getdelim().
    ssize_t (*volatile getline_fn)(char**, size_t*, FILE*) = getline;
    ssize_t n = getline_fn(&line, &cap, f);
    R("getline", n, errno);
    printf("EXPECT io_read api=getline fd=%s result=%zd\n", F(ffd, 0, b1), n);
    n = getdelim(&line, &cap, 'x', f);
    R("getdelim", n, errno);
    printf("EXPECT io_read api=getdelim fd=%s result=%zd\n", F(ffd, 0, b1), n);
    free(line);
    fseek(f, 0, SEEK_END);
    CALL("io_read", "fread", ffd, fread(buf, 1, 10, f), "");  // at EOF: 0
    errno = 0;
    R("fclose", fclose(f), errno);
    printf("EXPECT io_close api=fclose fd=%s result=0\n", F(ffd, 0, b1));
    // fopen64 + freopen + fdopen + fwrite
    f = fopen64(P("out"), "w");
    ffd = fileno(f);
    printf("EXPECT io_open api=fopen64 fd=%s path=%s\n", F(ffd, 0, b1), P("out"));
    size_t w = fwrite("hello", 1, 5, f);
    R("fwrite", (long)w, errno);
    printf("EXPECT io_write api=fwrite fd=%s result=5\n", F(ffd, 0, b1));
    w = (fwrite_unlocked)("hello", 5, 1, f);
    R("fwrite_unlocked", (long)w, errno);
    printf("EXPECT io_write api=fwrite_unlocked fd=%s result=5\n", F(ffd, 0, b1));
    FILE* g = freopen(P("data"), "r", f);
    R("freopen", g ? 0 : -1, errno);
    int gfd = fileno(g);
    printf("EXPECT io_close api=freopen fd=%s result=0\n", F(ffd, 0, b1));
    printf("EXPECT io_open api=freopen fd=%s path=%s\n", F(gfd, 0, b1), P("data"));
    fclose(g);
    printf("EXPECT io_close api=fclose fd=%s result=0\n", F(gfd, 0, b1));
    int raw = open(P("data"), O_RDONLY);
    printf("EXPECT io_open api=open fd=%s path=%s\n", F(raw, 0, b1), P("data"));
    FILE* h = fdopen(raw, "r");
    R("fdopen", h ? 0 : -1, errno);
    printf("EXPECT io_open api=fdopen fd=%s path=%s\n", F(raw, 0, b1), P("data"));
    CALL("io_read", "fread", raw, fread(buf, 1, 4, h), "");
    fclose(h);
    printf("EXPECT io_close api=fclose fd=%s result=0\n", F(raw, 0, b1));
    FILE* c1 = fopen(P("c1"), "r");
    int c1fd = fileno(c1);
    printf("EXPECT io_open api=fopen fd=%s path=%s\n", F(c1fd, 0, b1), P("c1"));
    FILE* fr = freopen64(P("data"), "r", c1);
    R("freopen64", fr ? 0 : -1, errno);
    printf("EXPECT io_close api=freopen64 fd=%s result=0\n", F(c1fd, 0, b1));
    printf("EXPECT io_open api=freopen64 fd=%s path=%s\n", F(fileno(fr), 0, b1), P("data"));
    printf("EXPECT io_close api=fclose fd=%s result=0\n", F(fileno(fr), 0, b1));
    fclose(fr);
  }

  printf("# temporary files (libc opens them itself)\n");
  {
    // Each variant: the open with the name libc chose, then a write and a close on it.
#define TEMP(api, expr, tmpl_name, suffix)                                                   \
  do {                                                                                     \
    char t_[1200];                                                                         \
    snprintf(t_, sizeof(t_), "%s/%s", g_dir, tmpl_name);                                   \
    char* tmpl = t_;                                                                       \
    (void)tmpl;                                                                            \
    errno = 0;                                                                             \
    int fd_ = (expr);                                                                      \
    printf("R %s %s %s suffix-kept=%d\n", api, fd_ >= 0 ? "fd" : "-1", Err(fd_, errno),  \
           strcmp(t_ + strlen(t_) - strlen(suffix), suffix) == 0);                          \
    printf("EXPECT io_open api=%s fd=%s path=%s\n", api, F(fd_, errno, b1), t_);          \
    if (fd_ >= 0) {                                                                        \
      CALL("io_write", "write", fd_, write(fd_, "abc", 3), " offset=0");                   \
      CALL("io_close", "close", fd_, close(fd_), "");                                      \
    }                                                                                      \
  } while (0)
    TEMP("mkstemp", mkstemp(tmpl), "t1XXXXXX", "");
    TEMP("mkstemp64", mkstemp64(tmpl), "t2XXXXXX", "");
    TEMP("mkostemp", mkostemp(tmpl, O_CLOEXEC), "t3XXXXXX", "");
    TEMP("mkostemp64", mkostemp64(tmpl, O_APPEND), "t4XXXXXX", "");
    TEMP("mkstemps", mkstemps(tmpl, 4), "t5XXXXXX.sfx", ".sfx");
    TEMP("mkstemps64", mkstemps64(tmpl, 4), "t6XXXXXX.sfx", ".sfx");
    TEMP("mkostemps", mkostemps(tmpl, 4, O_CLOEXEC), "t7XXXXXX.sfx", ".sfx");
    TEMP("mkostemps64", mkostemps64(tmpl, 4, 0), "t8XXXXXX.sfx", ".sfx");
    // A template without XXXXXX: EINVAL, the template unchanged.
    TEMP("mkstemp", mkstemp(tmpl), "no-template", "");
    // In a directory that does not exist: ENOENT.
    TEMP("mkstemp", mkstemp(tmpl), "missing/tXXXXXX", "");
#undef TEMP
  }

  printf("# directories\n");
  {
    errno = 0;
    DIR* d = opendir(g_dir);
    R("opendir", d ? 0 : -1, errno);
    int dfd2 = dirfd(d);
    printf("EXPECT io_dir api=opendir path=%s fd=%s result=0\n", g_dir, F(dfd2, 0, b1));
    int n = 0;
    while (readdir(d) != NULL) ++n;
    printf("EXPECT io_dir api=readdir fd=%s result=%d\n", F(dfd2, 0, b1), n);
    closedir(d);
    printf("EXPECT io_close api=closedir fd=%s result=0\n", F(dfd2, 0, b1));
    int gfd = open(g_dir, O_RDONLY | O_DIRECTORY);
    printf("EXPECT io_open api=open fd=%s path=%s\n", F(gfd, 0, b1), g_dir);
    long got = getdents64(gfd, buf, sizeof(buf));
    R("getdents64", got > 0 ? 1 : got, errno);
    printf("EXPECT io_dir api=getdents64 fd=%s result=%ld\n", F(gfd, 0, b1), got);
    close(gfd);
    printf("EXPECT io_close api=close fd=%s result=0\n", F(gfd, 0, b1));
    struct dirent** list;
    int m = scandir(g_dir, &list, NULL, alphasort);
    R("scandir", m, errno);
    printf("EXPECT io_dir api=scandir path=%s result=%d\n", g_dir, m);
    for (int i = 0; i < m; ++i) free(list[i]);
    free(list);
    struct dirent64** list64;
    m = scandir64(g_dir, &list64, NULL, NULL);
    R("scandir64", m, errno);
    printf("EXPECT io_dir api=scandir64 path=%s result=%d\n", g_dir, m);
    for (int i = 0; i < m; ++i) free(list64[i]);
    free(list64);
    DIR* none = opendir(P("missing"));
    R("opendir-enoent", none ? 0 : -1, errno);
    printf("EXPECT io_dir api=opendir path=%s result=-%d\n", P("missing"), ENOENT);
  }

  printf("# failures keep errno and results\n");
  {
    OPEN("open", open(P("missing"), O_RDONLY), "missing");
    OPEN("openat", openat(AT_FDCWD, P("missing/x"), O_RDONLY), "missing/x");
    errno = 0;
    FILE* f = fopen(P("missing"), "r");
    R("fopen-enoent", f ? 0 : -1, errno);
    printf("EXPECT io_open api=fopen fd=-%d path=%s\n", ENOENT, P("missing"));
    // Untracked or invalid descriptors: the hooks pass them through unrecorded.
    errno = 0;
    R("read-ebadf", read(999, buf, 1), errno);
    R("close-ebadf", close(999), errno);
    R("fstat-ebadf", fstat(999, NULL), errno);
    R("dup-ebadf", dup(999), errno);
    R("dup2-ebadf", dup2(999, 998), errno);
    R("lseek-ebadf", lseek(999, 5, SEEK_SET), errno);
    R("fsync-ebadf", fsync(999), errno);
    R("pread-ebadf", pread(999, buf, 1, 0), errno);
    // A tracked descriptor whose reads fail: read() on a directory.
    int dd = open(g_dir, O_RDONLY | O_DIRECTORY);
    printf("EXPECT io_open api=open fd=%s path=%s\n", F(dd, 0, b1), g_dir);
    CALL("io_read", "read", dd, read(dd, buf, 10), "");
    CALL("io_read_at", "pread", dd, pread(dd, buf, 10, 0), " offset=0");
    CALL("io_close", "close", dd, close(dd), "");
    // Writes to a read-only descriptor: EBADF from the kernel, recorded.
    int ro = open(P("data"), O_RDONLY);
    printf("EXPECT io_open api=open fd=%s path=%s\n", F(ro, 0, b1), P("data"));
    CALL("io_write", "write", ro, write(ro, "x", 1), " offset=0");
    CALL("io_close", "close", ro, close(ro), "");
  }
  printf("# done\n");
  return 0;
}
