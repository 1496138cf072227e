// File I/O hooks: thin extern "C" entry points over the templates below.
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

namespace io {
namespace {

constexpr int kIoErrSeen = 0x20;  // glibc's _IO_ERR_SEEN bit of FILE::_flags

// A FILE's descriptor without calling fileno() (which may set errno): -1 for streams
// without one (fmemopen, fopencookie).
inline int FileFd(FILE* fp) { return fp == nullptr ? -1 : fp->_fileno; }

inline bool PathsOn() { return g_io_on && Recording(); }

// A syscall-style result: the value, or -errno when negative. errno is read only when the
// call failed, so a hot hook's success costs no __errno_location call.
inline int64_t Result(int64_t r) { return r < 0 ? -static_cast<int64_t>(errno) : r; }

// On the hottest hooks (read, pread, close, fd stats): everything the hook calls in this
// file, the record's encoder included, is inlined into it, so its fast path makes no call
// but the real one (a call to EmitHot cost ~15 instructions of saves and restores).
#define CT_FLATTEN __attribute__((flatten))

// ---- reads and writes (hot) ---------------------------------------------------------------

// The one shape of every timed call on a descriptor: pass through unless fd is traced,
// time the real call, then record Rec with the call's start, duration, the result
// to_result(ret) (read right after the call, so errno is the call's) and whatever
// fill(rec) adds. Returns what the real call returned.
template <class Rec, class Call, class ToResult, class Fill>
inline auto TimedFdCall(IoApi api, int fd, Call&& call, ToResult&& to_result, Fill&& fill)
    -> decltype(call()) {
  if (!FdTracked(fd) || !Recording()) return call();
  const uint64_t t0 = Ticks();
  const auto r = call();
  const uint64_t t1 = Ticks();
  RecordScope scope;
  if (scope.entered()) {
    Rec rec;
    rec.ts = t0;
    rec.api = static_cast<uint64_t>(api);
    rec.fd = fd;
    rec.result = to_result(r);
    rec.dur = t1 - t0;
    fill(rec);
    EmitHot(rec);
  }
  return r;
}

inline constexpr auto kNoFill = [](auto&) {};
inline constexpr auto kSyscallResult = [](auto r) -> int64_t { return Result(static_cast<int64_t>(r)); };

template <class R, class Call> inline R ReadCall(IoApi api, int fd, Call&& call) {
  return TimedFdCall<format::IoRead>(api, fd, call, kSyscallResult, kNoFill);
}

template <class R, class Call>
inline R ReadAtCall(IoApi api, int fd, int64_t offset, Call&& call) {
  return TimedFdCall<format::IoReadAt>(api, fd, call, kSyscallResult,
                                       [offset](auto& rec) { rec.offset = static_cast<uint64_t>(offset); });
}

template <class R, class Call>
inline R WriteCall(IoApi api, int fd, uint64_t offset, Call&& call) {
  return TimedFdCall<format::IoWrite>(api, fd, call, kSyscallResult,
                                      [offset](auto& rec) { rec.offset = offset; });
}

// stdio: bytes = what the call handed to the caller. A short or empty result with the
// stream's error flag set is recorded as -errno; at end of file it is the byte count.
template <class Call> inline size_t FreadCall(IoApi api, FILE* fp, size_t size, Call&& call) {
  return TimedFdCall<format::IoRead>(
      api, FileFd(fp), call,
      [fp, size](size_t items) {
        return items == 0 && (fp->_flags & kIoErrSeen) ? -static_cast<int64_t>(errno)
                                                       : static_cast<int64_t>(items * size);
      },
      kNoFill);
}

template <class Call> inline char* FgetsCall(IoApi api, FILE* fp, Call&& call) {
  return TimedFdCall<format::IoRead>(
      api, FileFd(fp), call,
      [fp](char* s) {
        return s != nullptr                  ? static_cast<int64_t>(strlen(s))
               : (fp->_flags & kIoErrSeen) ? -static_cast<int64_t>(errno)
                                             : 0;
      },
      kNoFill);
}

template <class Call> inline ssize_t GetdelimCall(IoApi api, FILE* fp, Call&& call) {
  return TimedFdCall<format::IoRead>(
      api, FileFd(fp), call,
      [fp](ssize_t r) -> int64_t {
        return r >= 0 ? r : (fp != nullptr && (fp->_flags & kIoErrSeen)) ? -static_cast<int64_t>(errno) : 0;
      },
      kNoFill);
}

template <class Call> inline size_t FwriteCall(IoApi api, FILE* fp, size_t size, Call&& call) {
  return TimedFdCall<format::IoWrite>(
      api, FileFd(fp), call, [size](size_t items) { return static_cast<int64_t>(items * size); },
      kNoFill);
}

template <class Call> inline int FsyncCall(IoApi api, int fd, Call&& call) {
  return TimedFdCall<format::IoFsync>(api, fd, call, kSyscallResult, kNoFill);
}

// ---- descriptor lifetime ------------------------------------------------------------------

inline void EmitClose(IoApi api, int fd, int64_t result, uint64_t ts) {
  format::IoClose rec;
  rec.ts = ts;
  rec.api = static_cast<uint64_t>(api);
  rec.fd = fd;
  rec.result = result;
  EmitHot(rec);
}

// The descriptor is forgotten before the real close, so a concurrent open that reuses
// the number is never forgotten by mistake.
template <class Call> inline int CloseCall(IoApi api, int fd, Call&& call) {
  const FdKind kind = KindOfFd(fd);
  if (kind == kFdNone || !Recording()) return call();
  const uint64_t t0 = Ticks();
  if (__builtin_expect(kind == kFdFile, 1)) {
    UntrackFileFd(fd);
  } else {
    RecordScope scope;
    if (kind == kFdDir) FlushDirScan(fd, IoApi::kReaddir);
    UntrackFd(fd);
  }
  const int r = call();
  RecordScope scope;
  if (scope.entered()) EmitClose(api, fd, Result(r), t0);  // inlined: close() is CT_FLATTEN
  return r;
}

template <class Call> inline int DupCall(IoApi api, int oldfd, int target, Call&& call) {
  if (!g_io_on || !Recording()) return call();
  const bool target_tracked = target >= 0 && target != oldfd && FdTracked(target);
  const bool old_tracked = FdTracked(oldfd);
  const int r = call();
  if (!old_tracked && !target_tracked && r < 0) return r;
  const int err = errno;
  RecordScope scope;
  if (r >= 0 && r != oldfd) CopyFd(oldfd, r);
  if (scope.entered() && (old_tracked || target_tracked)) {
    format::IoDup rec;
    rec.ts = Ticks();
    rec.api = static_cast<uint64_t>(api);
    rec.oldfd = oldfd;
    rec.newfd = r < 0 ? -static_cast<int64_t>(err) : r;
    Emit(rec);
  }
  return r;
}

template <class Call> inline off64_t SeekCall(IoApi api, int fd, off64_t off, int whence, Call&& call) {
  if ((off == 0 && whence == SEEK_CUR) || !FdTracked(fd) || !Recording()) return call();
  const uint64_t t0 = Ticks();
  const off64_t r = call();
  RecordScope scope;
  if (scope.entered()) {
    format::IoSeek rec;
    rec.ts = t0;
    rec.api = static_cast<uint64_t>(api);
    rec.fd = fd;
    rec.offset = off;
    rec.whence = static_cast<uint64_t>(whence);
    rec.result = Result(r);
    Emit(rec);
  }
  return r;
}

// close_range and closefrom, window by window: the traced descriptors among [lo, hi]
// are untracked before the call and get their close records after it. The call(lo, hi)
// closes one window of kCloseWindow descriptors at a time up to the last traced one,
// then everything above in one call, so the window's bitset takes 512 bytes of stack: a
// bitset of every descriptor (16 KiB) overflowed a thread with a small stack
// (PTHREAD_STACK_MIN is 16 KiB) that bare had room for. One window in the usual case.
constexpr unsigned kCloseWindow = 4096;

template <class Call> inline int CloseRangeCall(IoApi api, unsigned lo, unsigned hi, Call&& call) {
  const int max = MaxTrackedFd();
  if (!g_io_on || !Recording() || max < 0 || lo > static_cast<unsigned>(max) || lo > hi) {
    return call(lo, hi);
  }
  const unsigned top = hi < static_cast<unsigned>(max) ? hi : static_cast<unsigned>(max);
  const uint64_t t0 = Ticks();
  for (unsigned w = lo;; w += kCloseWindow) {
    const bool last = top - w < kCloseWindow;
    const unsigned w_top = last ? top : w + kCloseWindow - 1;
    uint64_t was[kCloseWindow / 64] = {};
    for (unsigned fd = w; fd <= w_top; ++fd) {
      if (FdTracked(static_cast<int>(fd))) {
        was[(fd - w) / 64] |= 1ull << ((fd - w) % 64);
        RecordScope scope;
        if (g_fd_kind[fd] == kFdDir) FlushDirScan(static_cast<int>(fd), IoApi::kReaddir);
        UntrackFd(static_cast<int>(fd));
      }
    }
    const int r = call(w, last ? hi : w_top);
    if (r < 0) return r;
    RecordScope scope;
    if (scope.entered()) {
      for (unsigned fd = w; fd <= w_top; ++fd) {
        if (was[(fd - w) / 64] & (1ull << ((fd - w) % 64))) EmitClose(api, static_cast<int>(fd), 0, t0);
      }
    }
    if (last) return r;
  }
}

// close_range(lo, hi, flags) however it is reached: with CLOSE_RANGE_CLOEXEC it only marks
// the descriptors (nothing is closed now); otherwise CloseRangeCall.
template <class Call> inline int CloseRangeFlagsCall(unsigned lo, unsigned hi, int flags, Call&& call) {
  if (flags & CLOSE_RANGE_CLOEXEC) return call(lo, hi);
  return CloseRangeCall(IoApi::kCloseRange, lo, hi, call);
}

// ---- opens and stats ------------------------------------------------------------------

inline bool NeedsMode(int flags) {
  return (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
}

// Resolves and interns the path before the call (see PreparedPath); false if the shim
// is already busy on this thread.
inline bool Prepare(int dirfd, const char* path, PreparedPath* pp) {
  RecordScope scope;
  if (!scope.entered()) return false;
  PreparePath(dirfd, path, pp);
  return true;
}

template <class Call> inline int OpenCall(IoApi api, int dirfd, const char* path, int flags, Call&& call) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(dirfd, path, &pp)) return call();
  const uint64_t t0 = Ticks();
  const int fd = call();
  const uint64_t t1 = Ticks();
  const int64_t result = Result(fd);
  RecordScope scope;  // the recording path leaves errno as the call left it (raw syscalls only)
  if (scope.entered()) RecordOpen(api, pp, flags, result, t0, t1);
  return fd;
}

template <class Call> inline FILE* FopenCall(IoApi api, const char* path, const char* mode, Call&& call) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(AT_FDCWD, path, &pp)) return call();
  const uint64_t t0 = Ticks();
  FILE* const fp = call();
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    RecordOpen(api, pp, FlagsOfMode(mode), fp ? FileFd(fp) : -static_cast<int64_t>(errno), t0, t1);
  }
  return fp;
}

// The mkstemp family: libc opens the file itself (a call no hook sees), and the name is
// known only when the call returns, with the template's XXXXXX filled in. So the path is
// resolved and interned after the call; no read can use the descriptor before it is
// returned. flags: what the variant adds to O_RDWR | O_CREAT | O_EXCL.
template <class Call> inline int MkstempCall(IoApi api, char* tmpl, int flags, Call&& call) {
  if (!PathsOn() || tmpl == nullptr) return call();
  const uint64_t t0 = Ticks();
  const int fd = call();
  const uint64_t t1 = Ticks();
  const int err = errno;
  const int64_t result = fd < 0 ? -static_cast<int64_t>(err) : fd;
  RecordScope scope;
  if (scope.entered()) {
    PreparedPath pp;
    PreparePath(AT_FDCWD, tmpl, &pp);
    RecordOpen(api, pp, O_RDWR | O_CREAT | O_EXCL | flags, result, t0, t1);
  }
  errno = err;
  return fd;
}

template <class St, class Call>
inline int PathStatCall(IoApi api, int dirfd, const char* path, St* st, Call&& call) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(dirfd, path, &pp)) return call();
  const uint64_t t0 = Ticks();
  const int r = call();
  const uint64_t t1 = Ticks();
  const int64_t result = Result(r);
  RecordScope scope;  // as in OpenCall
  if (scope.entered()) {
    RecordStat(api, &pp, dirfd, -1, result, t0, t1, r == 0 && st ? static_cast<uint64_t>(st->st_size) : 0,
               r == 0 && st ? st->st_mode : 0);
  }
  return r;
}

// An fd stat: recorded here rather than through RecordStat (no path to resolve), so that
// fstat's fast path stays inline (CT_FLATTEN).
template <class St, class Call> inline int FdStatCall(IoApi api, int fd, St* st, Call&& call) {
  return TimedFdCall<format::IoStat>(api, fd, call, kSyscallResult, [st](auto& rec) {
    if (rec.result == 0 && st != nullptr) {
      rec.size = static_cast<uint64_t>(st->st_size);
      rec.ftype = (st->st_mode & S_IFMT) >> 12;
    }
  });
}

// fstatat and friends: AT_EMPTY_PATH with "" is an fd stat.
template <class St, class Call>
inline int AtStatCall(IoApi api, int dirfd, const char* path, St* st, int flags, Call&& call) {
  if ((flags & AT_EMPTY_PATH) && path != nullptr && path[0] == '\0') {
    return FdStatCall(api, dirfd, st, call);
  }
  return PathStatCall(api, dirfd, path, st, call);
}

template <class Call> inline int AccessCall(IoApi api, int dirfd, const char* path, Call&& call) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(dirfd, path, &pp)) return call();
  const uint64_t t0 = Ticks();
  const int r = call();
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) RecordStat(api, &pp, dirfd, -1, Result(r), t0, t1, 0, 0);
  return r;
}

// ---- directories ----------------------------------------------------------------------

void EmitDir(IoApi api, uint64_t path, int fd, int64_t result, uint64_t t0, uint64_t t1) {
  format::IoDir rec;
  rec.ts = t0;
  rec.api = static_cast<uint64_t>(api);
  rec.path = path;
  rec.fd = fd;
  rec.result = result;
  rec.dur = t1 - t0;
  Emit(rec);
}

template <class Dirent, class Call> inline Dirent* ReaddirCall(IoApi api, DIR* d, Call&& call) {
  const int fd = d != nullptr && g_fd_kind != nullptr ? dirfd(d) : -1;
  if (!FdTracked(fd) || !Recording()) return call();
  const uint64_t t0 = Ticks();
  Dirent* const e = call();
  FdSlot& slot = g_fd_slots[fd];
  slot.dir_ticks += Ticks() - t0;
  if (e != nullptr) {
    ++slot.dir_entries;
  } else {
    RecordScope scope;
    if (scope.entered()) FlushDirScan(fd, api);
  }
  return e;
}

template <class Call> inline int ScandirCall(IoApi api, const char* path, Call&& call) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(AT_FDCWD, path, &pp)) return call();
  const uint64_t t0 = Ticks();
  const int r = call();
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) EmitDir(api, pp.id, -1, Result(r), t0, t1);
  return r;
}

template <class Call> inline ssize_t CopyCall(IoApi api, int in_fd, int out_fd, Call&& call) {
  if (!(FdTracked(in_fd) || FdTracked(out_fd)) || !Recording()) return call();
  const uint64_t t0 = Ticks();
  const ssize_t r = call();
  const uint64_t t1 = Ticks();
  RecordScope scope;
  if (scope.entered()) {
    format::IoCopy rec;
    rec.ts = t0;
    rec.api = static_cast<uint64_t>(api);
    rec.in_fd = in_fd;
    rec.out_fd = out_fd;
    rec.result = Result(r);
    rec.dur = t1 - t0;
    Emit(rec);
  }
  return r;
}

template <class Call>
inline void* MmapCall(int fd, size_t len, int prot, int flags, off64_t off, Call&& call) {
  if (fd < 0 || !FdTracked(fd) || !Recording()) return call();
  void* const r = call();
  RecordScope scope;
  if (scope.entered()) {
    format::IoMmap rec;
    rec.ts = Ticks();
    rec.fd = fd;
    rec.addr = r == MAP_FAILED ? 0 : reinterpret_cast<uint64_t>(r);
    rec.length = len;
    rec.offset = static_cast<uint64_t>(off);
    rec.prot = static_cast<uint64_t>(prot);
    rec.flags = static_cast<uint64_t>(flags);
    rec.result = r == MAP_FAILED ? -static_cast<int64_t>(errno) : 0;
    Emit(rec);
  }
  return r;
}

// statx however it is reached (libc's statx, or syscall(SYS_statx) as libuv makes it):
// call() makes the real one, which returns -1 with errno set on failure.
template <class Call> inline int StatxCall(int dirfd, const char* path, int flags, struct statx* sx, Call&& call) {
  // statx has its own field names; adapt it to the st_size/st_mode the templates read.
  struct View {
    uint64_t st_size;
    uint32_t st_mode;
  };
  auto record = [&](bool fd_stat) -> int {
    PreparedPath pp;
    if (!fd_stat && !Prepare(dirfd, path, &pp)) return call();
    const uint64_t t0 = Ticks();
    const int r = call();
    const uint64_t t1 = Ticks();
    ShimScope scope;
    if (scope.entered()) {
      const bool ok = r == 0 && sx != nullptr;
      const View v{ok && (sx->stx_mask & STATX_SIZE) ? sx->stx_size : 0, ok ? sx->stx_mode : 0u};
      if (fd_stat) {
        RecordStat(IoApi::kStatx, nullptr, dirfd, dirfd, Result(r), t0, t1, v.st_size, v.st_mode);
      } else {
        RecordStat(IoApi::kStatx, &pp, dirfd, -1, Result(r), t0, t1, v.st_size, v.st_mode);
      }
    }
    return r;
  };
  if ((flags & AT_EMPTY_PATH) && path != nullptr && path[0] == '\0') {
    if (!FdTracked(dirfd) || !Recording()) return call();
    return record(true);
  }
  if (!PathsOn()) return call();
  return record(false);
}

}  // namespace
}  // namespace io
}  // namespace colabtrace::shim

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

static FILE* Freopen(IoApi api, const char* path, const char* mode, FILE* fp,
                     FILE* (*fn)(const char*, const char*, FILE*)) {
  const int oldfd = FileFd(fp);
  PreparedPath pp;
  // NULL: the same file in a new mode; nothing to record.
  if (!PathsOn() || path == nullptr || !Prepare(AT_FDCWD, path, &pp)) return fn(path, mode, fp);
  const bool was = FdTracked(oldfd);
  const uint64_t t0 = Ticks();
  if (was) UntrackFd(oldfd);
  FILE* const r = fn(path, mode, fp);
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    if (was) EmitClose(api, oldfd, 0, t0);
    RecordOpen(api, pp, FlagsOfMode(mode), r ? FileFd(r) : -static_cast<int64_t>(errno), t0, t1);
  }
  return r;
}
FILE* freopen(const char* path, const char* mode, FILE* fp) {
  return Freopen(IoApi::kFreopen, path, mode, fp, real::freopen.get());
}
FILE* freopen64(const char* path, const char* mode, FILE* fp) {
  return Freopen(IoApi::kFreopen64, path, mode, fp, real::freopen64.get());
}
FILE* fdopen(int fd, const char* mode) {
  if (!FdTracked(fd) || !Recording()) return real::fdopen.get()(fd, mode);
  const uint64_t t0 = Ticks();
  FILE* const r = real::fdopen.get()(fd, mode);
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    colabtrace::format::IoOpen rec;
    rec.ts = t0;
    rec.api = static_cast<uint64_t>(IoApi::kFdopen);
    rec.fd = r ? fd : -static_cast<int64_t>(errno);
    rec.path = g_fd_slots[fd].path;
    rec.flags = static_cast<uint64_t>(FlagsOfMode(mode));
    rec.dur = t1 - t0;
    Emit(rec);
  }
  return r;
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
int chdir(const char* path) {
  const int r = real::chdir.get()(path);
  if (r == 0 && PathsOn()) {
    ShimScope scope;
    RefreshCwd();
  }
  return r;
}
int fchdir(int fd) {
  const int r = real::fchdir.get()(fd);
  if (r == 0 && PathsOn()) {
    ShimScope scope;
    RefreshCwd();
  }
  return r;
}

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
DIR* opendir(const char* path) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(AT_FDCWD, path, &pp)) return real::opendir.get()(path);
  const uint64_t t0 = Ticks();
  DIR* const d = real::opendir.get()(path);
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    const AbsPath& ap = pp.ap;
    const uint64_t id = pp.id;
    const int fd = d ? dirfd(d) : -1;
    if (fd >= 0) {
      TrackFd(fd, kFdDir, id);
      if (ap.absolute) SetDirPath(fd, std::string_view(ap.s, ap.n));
    }
    EmitDir(IoApi::kOpendir, id, fd, d ? 0 : -static_cast<int64_t>(errno), t0, t1);
  }
  return d;
}
DIR* fdopendir(int fd) {
  if (!PathsOn()) return real::fdopendir.get()(fd);
  const uint64_t t0 = Ticks();
  DIR* const d = real::fdopendir.get()(fd);
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    if (d != nullptr && !FdTracked(fd)) TrackFd(fd, kFdDir, 0);
    EmitDir(IoApi::kFdopendir, FdTracked(fd) ? g_fd_slots[fd].path : 0, fd,
            d ? 0 : -static_cast<int64_t>(errno), t0, t1);
  }
  return d;
}
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
  if (!FdTracked(fd) || !Recording()) return real::getdents64.get()(fd, buf, n);
  const uint64_t t0 = Ticks();
  const ssize_t r = real::getdents64.get()(fd, buf, n);
  const uint64_t t1 = Ticks();
  RecordScope scope;
  if (scope.entered()) EmitDir(IoApi::kGetdents64, 0, fd, Result(r), t0, t1);
  return r;
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
