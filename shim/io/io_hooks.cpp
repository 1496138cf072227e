// File I/O hooks: thin extern "C" entry points over the recording templates of
// io_recording.h.
//
// Every hook calls the real function exactly once with the caller's arguments and
// returns its result with the errno it left. Reads, writes, closes, fd stats and
// mappings are recorded only for descriptors the module tracks (files opened through
// a hook, or regular files held at start), so a read on a pipe or socket costs one byte
// load. Opens and path stats are always recorded while COLABTRACE_IO is on.
#undef _FORTIFY_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io/io_recording.h"
#include "io/io_state.h"
#include "raw.h"
#include "real.h"

#if defined(_FILE_OFFSET_BITS) && _FILE_OFFSET_BITS == 64 && !defined(__LP64__)
#error "the I/O hooks must see the unredirected declarations"
#endif

// Hooked entry points that no system header declares (fortified and pre-2.33 forms).
extern "C" {
int __open_2(const char* path, int flags);
int __open64_2(const char* path, int flags);
int __openat_2(int dirfd, const char* path, int flags);
int __openat64_2(int dirfd, const char* path, int flags);
ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void* buf, size_t n, off_t offset, size_t buflen);
ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t offset, size_t buflen);
size_t __fread_chk(void* ptr, size_t ptrlen, size_t size, size_t n, FILE* fp);
char* __fgets_chk(char* s, size_t size, int n, FILE* fp);
size_t __fread_unlocked_chk(void* ptr, size_t ptrlen, size_t size, size_t n, FILE* fp);
char* __fgets_unlocked_chk(char* s, size_t size, int n, FILE* fp);
int __xstat(int ver, const char* path, struct stat* st);
int __xstat64(int ver, const char* path, struct stat64* st);
int __lxstat(int ver, const char* path, struct stat* st);
int __lxstat64(int ver, const char* path, struct stat64* st);
int __fxstat(int ver, int fd, struct stat* st);
int __fxstat64(int ver, int fd, struct stat64* st);
int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags);
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags);
}

#include "io/io_hooks.def"

namespace colabtrace::shim {
COLABTRACE_DEFINE_REAL_FNS(COLABTRACE_IO_HOOKS)

namespace {
// Right after the core's start-up (priority 101): see COLABTRACE_RESOLVE_REAL_FNS.
__attribute__((constructor(102))) void ResolveIoRealFunctions() {
  COLABTRACE_RESOLVE_REAL_FNS(COLABTRACE_IO_HOOKS)
}
}  // namespace
}  // namespace colabtrace::shim

// On the hottest hooks (read, pread, close, fd stats): everything the hook calls, the
// recording template and the record's encoder included (io_recording.h), is inlined into
// it, so its fast path makes no call but the real one (a call to EmitHot cost ~15
// instructions of saves and restores).
#define CT_FLATTEN __attribute__((flatten))

// ---- entry points --------------------------------------------------------------------------
using namespace colabtrace::shim;      // NOLINT: thin entry points
using namespace colabtrace::shim::io;  // NOLINT

#define CT_MODE_ARG(flags)         \
  int mode = 0;                    \
  if (NeedsMode(flags)) {          \
    va_list ap;                    \
    va_start(ap, flags);           \
    mode = va_arg(ap, int);        \
    va_end(ap);                    \
  }

#pragma GCC visibility push(default)
extern "C" {

// opens
int open(const char* path, int flags, ...) {
  CT_MODE_ARG(flags);
  return OpenCall(IoApi::kOpen, AT_FDCWD, path, flags, [&] { return real::open.get()(path, flags, mode); });
}
int open64(const char* path, int flags, ...) {
  CT_MODE_ARG(flags);
  return OpenCall(IoApi::kOpen64, AT_FDCWD, path, flags, [&] { return real::open64.get()(path, flags, mode); });
}
int openat(int dirfd, const char* path, int flags, ...) {
  CT_MODE_ARG(flags);
  return OpenCall(IoApi::kOpenat, dirfd, path, flags,
                  [&] { return real::openat.get()(dirfd, path, flags, mode); });
}
int openat64(int dirfd, const char* path, int flags, ...) {
  CT_MODE_ARG(flags);
  return OpenCall(IoApi::kOpenat64, dirfd, path, flags,
                  [&] { return real::openat64.get()(dirfd, path, flags, mode); });
}
int __open_2(const char* path, int flags) {
  return OpenCall(IoApi::kOpen2, AT_FDCWD, path, flags, [&] { return real::__open_2.get()(path, flags); });
}
int __open64_2(const char* path, int flags) {
  return OpenCall(IoApi::kOpen64_2, AT_FDCWD, path, flags, [&] { return real::__open64_2.get()(path, flags); });
}
int __openat_2(int dirfd, const char* path, int flags) {
  return OpenCall(IoApi::kOpenat2, dirfd, path, flags,
                  [&] { return real::__openat_2.get()(dirfd, path, flags); });
}
int __openat64_2(int dirfd, const char* path, int flags) {
  return OpenCall(IoApi::kOpenat64_2, dirfd, path, flags,
                  [&] { return real::__openat64_2.get()(dirfd, path, flags); });
}
int creat(const char* path, mode_t mode) {
  return OpenCall(IoApi::kCreat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC,
                  [&] { return real::creat.get()(path, mode); });
}
int creat64(const char* path, mode_t mode) {
  return OpenCall(IoApi::kCreat64, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC,
                  [&] { return real::creat64.get()(path, mode); });
}
FILE* fopen(const char* path, const char* mode) {
  return FopenCall(IoApi::kFopen, path, mode, [&] { return real::fopen.get()(path, mode); });
}
FILE* fopen64(const char* path, const char* mode) {
  return FopenCall(IoApi::kFopen64, path, mode, [&] { return real::fopen64.get()(path, mode); });
}

FILE* freopen(const char* path, const char* mode, FILE* fp) {
  return FreopenCall(IoApi::kFreopen, path, mode, fp, real::freopen.get());
}
FILE* freopen64(const char* path, const char* mode, FILE* fp) {
  return FreopenCall(IoApi::kFreopen64, path, mode, fp, real::freopen64.get());
}
FILE* fdopen(int fd, const char* mode) {
  return FdopenCall(fd, mode, [&] { return real::fdopen.get()(fd, mode); });
}

int mkstemp(char* tmpl) {
  return MkstempCall(IoApi::kMkstemp, tmpl, 0, [&] { return real::mkstemp.get()(tmpl); });
}
int mkstemp64(char* tmpl) {
  return MkstempCall(IoApi::kMkstemp64, tmpl, 0, [&] { return real::mkstemp64.get()(tmpl); });
}
int mkostemp(char* tmpl, int flags) {
  return MkstempCall(IoApi::kMkostemp, tmpl, flags, [&] { return real::mkostemp.get()(tmpl, flags); });
}
int mkostemp64(char* tmpl, int flags) {
  return MkstempCall(IoApi::kMkostemp64, tmpl, flags, [&] { return real::mkostemp64.get()(tmpl, flags); });
}
int mkstemps(char* tmpl, int suffixlen) {
  return MkstempCall(IoApi::kMkstemps, tmpl, 0, [&] { return real::mkstemps.get()(tmpl, suffixlen); });
}
int mkstemps64(char* tmpl, int suffixlen) {
  return MkstempCall(IoApi::kMkstemps64, tmpl, 0, [&] { return real::mkstemps64.get()(tmpl, suffixlen); });
}
int mkostemps(char* tmpl, int suffixlen, int flags) {
  return MkstempCall(IoApi::kMkostemps, tmpl, flags,
                     [&] { return real::mkostemps.get()(tmpl, suffixlen, flags); });
}
int mkostemps64(char* tmpl, int suffixlen, int flags) {
  return MkstempCall(IoApi::kMkostemps64, tmpl, flags,
                     [&] { return real::mkostemps64.get()(tmpl, suffixlen, flags); });
}

// reads
CT_FLATTEN ssize_t read(int fd, void* buf, size_t n) {
  return ReadCall<ssize_t>(IoApi::kRead, fd, [&] { return real::read.get()(fd, buf, n); });
}
ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  return ReadCall<ssize_t>(IoApi::kReadChk, fd, [&] { return real::__read_chk.get()(fd, buf, n, buflen); });
}
ssize_t readv(int fd, const struct iovec* iov, int cnt) {
  return ReadCall<ssize_t>(IoApi::kReadv, fd, [&] { return real::readv.get()(fd, iov, cnt); });
}
CT_FLATTEN ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  return ReadAtCall<ssize_t>(IoApi::kPread, fd, off, [&] { return real::pread.get()(fd, buf, n, off); });
}
CT_FLATTEN ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  return ReadAtCall<ssize_t>(IoApi::kPread64, fd, off, [&] { return real::pread64.get()(fd, buf, n, off); });
}
ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen) {
  return ReadAtCall<ssize_t>(IoApi::kPreadChk, fd, off,
                             [&] { return real::__pread_chk.get()(fd, buf, n, off, buflen); });
}
ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen) {
  return ReadAtCall<ssize_t>(IoApi::kPread64Chk, fd, off,
                             [&] { return real::__pread64_chk.get()(fd, buf, n, off, buflen); });
}
ssize_t preadv(int fd, const struct iovec* iov, int cnt, off_t off) {
  return ReadAtCall<ssize_t>(IoApi::kPreadv, fd, off, [&] { return real::preadv.get()(fd, iov, cnt, off); });
}
ssize_t preadv64(int fd, const struct iovec* iov, int cnt, off64_t off) {
  return ReadAtCall<ssize_t>(IoApi::kPreadv64, fd, off,
                             [&] { return real::preadv64.get()(fd, iov, cnt, off); });
}
ssize_t preadv2(int fd, const struct iovec* iov, int cnt, off_t off, int flags) {
  auto call = [&] { return real::preadv2.get()(fd, iov, cnt, off, flags); };
  return off == -1 ? ReadCall<ssize_t>(IoApi::kPreadv2, fd, call)
                   : ReadAtCall<ssize_t>(IoApi::kPreadv2, fd, off, call);
}
ssize_t preadv64v2(int fd, const struct iovec* iov, int cnt, off64_t off, int flags) {
  auto call = [&] { return real::preadv64v2.get()(fd, iov, cnt, off, flags); };
  return off == -1 ? ReadCall<ssize_t>(IoApi::kPreadv64v2, fd, call)
                   : ReadAtCall<ssize_t>(IoApi::kPreadv64v2, fd, off, call);
}
size_t fread(void* ptr, size_t size, size_t n, FILE* fp) {
  return FreadCall(IoApi::kFread, fp, size, [&] { return real::fread.get()(ptr, size, n, fp); });
}
size_t fread_unlocked(void* ptr, size_t size, size_t n, FILE* fp) {
  return FreadCall(IoApi::kFreadUnlocked, fp, size, [&] { return real::fread_unlocked.get()(ptr, size, n, fp); });
}
size_t __fread_chk(void* ptr, size_t ptrlen, size_t size, size_t n, FILE* fp) {
  return FreadCall(IoApi::kFreadChk, fp, size,
                   [&] { return real::__fread_chk.get()(ptr, ptrlen, size, n, fp); });
}
size_t __fread_unlocked_chk(void* ptr, size_t ptrlen, size_t size, size_t n, FILE* fp) {
  return FreadCall(IoApi::kFreadUnlockedChk, fp, size,
                   [&] { return real::__fread_unlocked_chk.get()(ptr, ptrlen, size, n, fp); });
}
char* fgets(char* s, int n, FILE* fp) {
  return FgetsCall(IoApi::kFgets, fp, [&] { return real::fgets.get()(s, n, fp); });
}
char* __fgets_chk(char* s, size_t size, int n, FILE* fp) {
  return FgetsCall(IoApi::kFgetsChk, fp, [&] { return real::__fgets_chk.get()(s, size, n, fp); });
}
char* fgets_unlocked(char* s, int n, FILE* fp) {
  return FgetsCall(IoApi::kFgetsUnlocked, fp, [&] { return real::fgets_unlocked.get()(s, n, fp); });
}
char* __fgets_unlocked_chk(char* s, size_t size, int n, FILE* fp) {
  return FgetsCall(IoApi::kFgetsUnlockedChk, fp,
                   [&] { return real::__fgets_unlocked_chk.get()(s, size, n, fp); });
}
ssize_t getdelim(char** line, size_t* n, int delim, FILE* fp) {
  return GetdelimCall(IoApi::kGetdelim, fp, [&] { return real::getdelim.get()(line, n, delim, fp); });
}
ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp) {
  return GetdelimCall(IoApi::kGetdelimInternal, fp,
                      [&] { return real::__getdelim.get()(line, n, delim, fp); });
}
// getline is an extern-inline wrapper in <bits/stdio.h>; define the symbol by asm name.
ssize_t colabtrace_getline(char** line, size_t* n, FILE* fp) __asm__("getline");
ssize_t colabtrace_getline(char** line, size_t* n, FILE* fp) {
  return GetdelimCall(IoApi::kGetline, fp, [&] { return real::getline.get()(line, n, fp); });
}

// writes
ssize_t write(int fd, const void* buf, size_t n) {
  return WriteCall<ssize_t>(IoApi::kWrite, fd, 0, [&] { return real::write.get()(fd, buf, n); });
}
ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  return WriteCall<ssize_t>(IoApi::kPwrite, fd, static_cast<uint64_t>(off),
                            [&] { return real::pwrite.get()(fd, buf, n, off); });
}
ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  return WriteCall<ssize_t>(IoApi::kPwrite64, fd, static_cast<uint64_t>(off),
                            [&] { return real::pwrite64.get()(fd, buf, n, off); });
}
ssize_t writev(int fd, const struct iovec* iov, int cnt) {
  return WriteCall<ssize_t>(IoApi::kWritev, fd, 0, [&] { return real::writev.get()(fd, iov, cnt); });
}
ssize_t pwritev(int fd, const struct iovec* iov, int cnt, off_t off) {
  return WriteCall<ssize_t>(IoApi::kPwritev, fd, static_cast<uint64_t>(off),
                            [&] { return real::pwritev.get()(fd, iov, cnt, off); });
}
ssize_t pwritev64(int fd, const struct iovec* iov, int cnt, off64_t off) {
  return WriteCall<ssize_t>(IoApi::kPwritev64, fd, static_cast<uint64_t>(off),
                            [&] { return real::pwritev64.get()(fd, iov, cnt, off); });
}
ssize_t pwritev2(int fd, const struct iovec* iov, int cnt, off_t off, int flags) {
  return WriteCall<ssize_t>(IoApi::kPwritev2, fd, off == -1 ? 0 : static_cast<uint64_t>(off),
                            [&] { return real::pwritev2.get()(fd, iov, cnt, off, flags); });
}
ssize_t pwritev64v2(int fd, const struct iovec* iov, int cnt, off64_t off, int flags) {
  return WriteCall<ssize_t>(IoApi::kPwritev64v2, fd, off == -1 ? 0 : static_cast<uint64_t>(off),
                            [&] { return real::pwritev64v2.get()(fd, iov, cnt, off, flags); });
}
size_t fwrite(const void* ptr, size_t size, size_t n, FILE* fp) {
  return FwriteCall(IoApi::kFwrite, fp, size, [&] { return real::fwrite.get()(ptr, size, n, fp); });
}
size_t fwrite_unlocked(const void* ptr, size_t size, size_t n, FILE* fp) {
  return FwriteCall(IoApi::kFwriteUnlocked, fp, size,
                    [&] { return real::fwrite_unlocked.get()(ptr, size, n, fp); });
}
int fsync(int fd) { return FsyncCall(IoApi::kFsync, fd, [&] { return real::fsync.get()(fd); }); }
int fdatasync(int fd) {
  return FsyncCall(IoApi::kFdatasync, fd, [&] { return real::fdatasync.get()(fd); });
}

// descriptor lifetime
CT_FLATTEN int close(int fd) { return CloseCall(IoApi::kClose, fd, [&] { return real::close.get()(fd); }); }
int fclose(FILE* fp) {
  const int fd = FileFd(fp);
  return CloseCall(IoApi::kFclose, fd, [&] { return real::fclose.get()(fp); });
}
int close_range(unsigned lo, unsigned hi, int flags) {
  return CloseRangeFlagsCall(lo, hi, flags,
                             [&](unsigned from, unsigned to) { return real::close_range.get()(from, to, flags); });
}
#if defined(__x86_64__)
// syscall(): the assembly stub (io/syscall_x86_64.S) sends SYS_close, SYS_close_range
// and SYS_statx (further down, after statx) here and every other number straight to the
// real syscall. libuv (Node.js) closes descriptors and stats files this way.
extern void* colabtrace_real_syscall;
using SyscallFn = long (*)(long, ...);

// The stub calls this when it runs before the constructor resolved the real syscall.
__attribute__((visibility("hidden"))) void* colabtrace_resolve_syscall() {
  void* f = __atomic_load_n(&colabtrace_real_syscall, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    f = ResolveNext("syscall");
    __atomic_store_n(&colabtrace_real_syscall, f, __ATOMIC_RELEASE);
  }
  return f;
}

__attribute__((visibility("hidden"))) long colabtrace_syscall_close(long number, long fd) {
  const auto real_syscall = reinterpret_cast<SyscallFn>(colabtrace_resolve_syscall());
  // The kernel reads the arguments as 32-bit (unsigned int fd; upper halves are whatever
  // the caller's variadic call left there).
  if (static_cast<int>(fd) < 0) return real_syscall(number, fd);
  return CloseCall(IoApi::kClose, static_cast<int>(fd), [&] { return static_cast<int>(real_syscall(number, fd)); });
}

__attribute__((visibility("hidden"))) long colabtrace_syscall_close_range(long number, long first, long last,
                                                                         long flags) {
  const auto real_syscall = reinterpret_cast<SyscallFn>(colabtrace_resolve_syscall());
  return CloseRangeFlagsCall(static_cast<unsigned>(first), static_cast<unsigned>(last), static_cast<int>(flags),
                             [&](unsigned from, unsigned to) {
                               return static_cast<int>(real_syscall(number, static_cast<long>(from),
                                                                    static_cast<long>(to), flags));
                             });
}
#endif

void closefrom(int lo) {
  if (lo < 0) return real::closefrom.get()(lo);
  CloseRangeCall(IoApi::kClosefrom, static_cast<unsigned>(lo), ~0u, [](unsigned from, unsigned to) {
    if (to == ~0u) {
      real::closefrom.get()(static_cast<int>(from));
    } else if (real::close_range.get()(from, to, 0) != 0) {
      // A kernel without close_range (before 5.9): one by one, as glibc's closefrom does.
      for (unsigned fd = from; fd <= to; ++fd) raw::Close(static_cast<int>(fd));
    }
    return 0;
  });
}
int dup(int fd) { return DupCall(IoApi::kDup, fd, -1, [&] { return real::dup.get()(fd); }); }
int dup2(int fd, int fd2) {
  return DupCall(IoApi::kDup2, fd, fd2, [&] { return real::dup2.get()(fd, fd2); });
}
int dup3(int fd, int fd2, int flags) {
  return DupCall(IoApi::kDup3, fd, fd2, [&] { return real::dup3.get()(fd, fd2, flags); });
}

// fcntl is variadic; its third argument is an int, a long or a pointer depending on cmd.
// Like glibc, forward whatever is in the third argument slot as a pointer-sized value.
static int Fcntl(int (*fn)(int, int, ...), int fd, int cmd, void* arg) {
  if (cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC) return fn(fd, cmd, arg);
  return DupCall(cmd == F_DUPFD ? IoApi::kFcntlDupfd : IoApi::kFcntlDupfdCloexec, fd, -1,
                 [&] { return fn(fd, cmd, arg); });
}
int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return Fcntl(real::fcntl.get(), fd, cmd, arg);
}
int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return Fcntl(real::fcntl64.get(), fd, cmd, arg);
}
off_t lseek(int fd, off_t off, int whence) {
  return SeekCall(IoApi::kLseek, fd, off, whence, [&] { return real::lseek.get()(fd, off, whence); });
}
off64_t lseek64(int fd, off64_t off, int whence) {
  return SeekCall(IoApi::kLseek64, fd, off, whence, [&] { return real::lseek64.get()(fd, off, whence); });
}
int chdir(const char* path) { return ChdirCall([&] { return real::chdir.get()(path); }); }
int fchdir(int fd) { return ChdirCall([&] { return real::fchdir.get()(fd); }); }

// metadata
int stat(const char* path, struct stat* st) {
  return PathStatCall(IoApi::kStat, AT_FDCWD, path, st, [&] { return real::stat.get()(path, st); });
}
int stat64(const char* path, struct stat64* st) {
  return PathStatCall(IoApi::kStat64, AT_FDCWD, path, st, [&] { return real::stat64.get()(path, st); });
}
int lstat(const char* path, struct stat* st) {
  return PathStatCall(IoApi::kLstat, AT_FDCWD, path, st, [&] { return real::lstat.get()(path, st); });
}
int lstat64(const char* path, struct stat64* st) {
  return PathStatCall(IoApi::kLstat64, AT_FDCWD, path, st, [&] { return real::lstat64.get()(path, st); });
}
CT_FLATTEN int fstat(int fd, struct stat* st) {
  return FdStatCall(IoApi::kFstat, fd, st, [&] { return real::fstat.get()(fd, st); });
}
CT_FLATTEN int fstat64(int fd, struct stat64* st) {
  return FdStatCall(IoApi::kFstat64, fd, st, [&] { return real::fstat64.get()(fd, st); });
}
int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return AtStatCall(IoApi::kFstatat, dirfd, path, st, flags,
                    [&] { return real::fstatat.get()(dirfd, path, st, flags); });
}
int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  return AtStatCall(IoApi::kFstatat64, dirfd, path, st, flags,
                    [&] { return real::fstatat64.get()(dirfd, path, st, flags); });
}
int __xstat(int ver, const char* path, struct stat* st) {
  return PathStatCall(IoApi::kXstat, AT_FDCWD, path, st, [&] { return real::__xstat.get()(ver, path, st); });
}
int __xstat64(int ver, const char* path, struct stat64* st) {
  return PathStatCall(IoApi::kXstat64, AT_FDCWD, path, st,
                      [&] { return real::__xstat64.get()(ver, path, st); });
}
int __lxstat(int ver, const char* path, struct stat* st) {
  return PathStatCall(IoApi::kLxstat, AT_FDCWD, path, st,
                      [&] { return real::__lxstat.get()(ver, path, st); });
}
int __lxstat64(int ver, const char* path, struct stat64* st) {
  return PathStatCall(IoApi::kLxstat64, AT_FDCWD, path, st,
                      [&] { return real::__lxstat64.get()(ver, path, st); });
}
int __fxstat(int ver, int fd, struct stat* st) {
  return FdStatCall(IoApi::kFxstat, fd, st, [&] { return real::__fxstat.get()(ver, fd, st); });
}
int __fxstat64(int ver, int fd, struct stat64* st) {
  return FdStatCall(IoApi::kFxstat64, fd, st, [&] { return real::__fxstat64.get()(ver, fd, st); });
}
int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags) {
  return AtStatCall(IoApi::kFxstatat, dirfd, path, st, flags,
                    [&] { return real::__fxstatat.get()(ver, dirfd, path, st, flags); });
}
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags) {
  return AtStatCall(IoApi::kFxstatat64, dirfd, path, st, flags,
                    [&] { return real::__fxstatat64.get()(ver, dirfd, path, st, flags); });
}
int statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* sx) {
  return StatxCall(dirfd, path, flags, sx, [&] { return real::statx.get()(dirfd, path, flags, mask, sx); });
}
#if defined(__x86_64__)
// syscall(SYS_statx, ...), as libuv (Node.js) makes every fs.stat*: the stub
// (io/syscall_x86_64.S) sends it here. Recorded as statx() is.
__attribute__((visibility("hidden"))) long colabtrace_syscall_statx(long number, long dirfd, const char* path,
                                                                    long flags, long mask, struct statx* sx) {
  const auto real_syscall = reinterpret_cast<SyscallFn>(colabtrace_resolve_syscall());
  auto call = [&] { return static_cast<int>(real_syscall(number, dirfd, path, flags, mask, sx)); };
  // The kernel reads dirfd and flags as ints: a caller's int -100 (AT_FDCWD) passed
  // through the variadic call may arrive with its upper half zero.
  return StatxCall(static_cast<int>(dirfd), path, static_cast<int>(flags), sx, call);
}
#endif
int access(const char* path, int mode) {
  return AccessCall(IoApi::kAccess, AT_FDCWD, path, [&] { return real::access.get()(path, mode); });
}
int faccessat(int dirfd, const char* path, int mode, int flags) {
  return AccessCall(IoApi::kFaccessat, dirfd, path,
                    [&] { return real::faccessat.get()(dirfd, path, mode, flags); });
}

int euidaccess(const char* path, int mode) {
  return AccessCall(IoApi::kEuidaccess, AT_FDCWD, path, [&] { return real::euidaccess.get()(path, mode); });
}
int eaccess(const char* path, int mode) {
  return AccessCall(IoApi::kEaccess, AT_FDCWD, path, [&] { return real::eaccess.get()(path, mode); });
}

// directories
DIR* opendir(const char* path) { return OpendirCall(path, [&] { return real::opendir.get()(path); }); }
DIR* fdopendir(int fd) { return FdopendirCall(fd, [&] { return real::fdopendir.get()(fd); }); }
struct dirent* readdir(DIR* d) {
  return ReaddirCall<struct dirent>(IoApi::kReaddir, d, [&] { return real::readdir.get()(d); });
}
struct dirent64* readdir64(DIR* d) {
  return ReaddirCall<struct dirent64>(IoApi::kReaddir64, d, [&] { return real::readdir64.get()(d); });
}
int closedir(DIR* d) {
  const int fd = d != nullptr && g_fd_kind != nullptr ? dirfd(d) : -1;
  return CloseCall(IoApi::kClosedir, fd, [&] { return real::closedir.get()(d); });
}
ssize_t getdents64(int fd, void* buf, size_t n) {
  return GetdentsCall(fd, [&] { return real::getdents64.get()(fd, buf, n); });
}
int scandir(const char* dir, struct dirent*** list, int (*filter)(const struct dirent*),
            int (*compar)(const struct dirent**, const struct dirent**)) {
  return ScandirCall(IoApi::kScandir, dir, [&] { return real::scandir.get()(dir, list, filter, compar); });
}
int scandir64(const char* dir, struct dirent64*** list, int (*filter)(const struct dirent64*),
              int (*compar)(const struct dirent64**, const struct dirent64**)) {
  return ScandirCall(IoApi::kScandir64, dir,
                     [&] { return real::scandir64.get()(dir, list, filter, compar); });
}

// mappings and copies
void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return MmapCall(fd, len, prot, flags, off, [&] { return real::mmap.get()(addr, len, prot, flags, fd, off); });
}
void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  return MmapCall(fd, len, prot, flags, off,
                  [&] { return real::mmap64.get()(addr, len, prot, flags, fd, off); });
}
ssize_t copy_file_range(int in_fd, off64_t* in_off, int out_fd, off64_t* out_off, size_t len,
                        unsigned flags) {
  return CopyCall(IoApi::kCopyFileRange, in_fd, out_fd,
                  [&] { return real::copy_file_range.get()(in_fd, in_off, out_fd, out_off, len, flags); });
}
ssize_t sendfile(int out_fd, int in_fd, off_t* off, size_t count) {
  return CopyCall(IoApi::kSendfile, in_fd, out_fd, [&] { return real::sendfile.get()(out_fd, in_fd, off, count); });
}
ssize_t sendfile64(int out_fd, int in_fd, off64_t* off, size_t count) {
  return CopyCall(IoApi::kSendfile64, in_fd, out_fd,
                  [&] { return real::sendfile64.get()(out_fd, in_fd, off, count); });
}

}  // extern "C"
#pragma GCC visibility pop
