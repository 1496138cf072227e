// The file I/O module's recording logic, one template per shape of hooked call: each
// takes the real call as a callable (the hook's lambda), decides whether the call is
// recorded (a traced descriptor, or COLABTRACE_IO on for paths), times it, and builds
// and emits its record. io_hooks.cpp's extern "C" entry points only pick the template,
// the IoApi and the real function.
//
// Everything here is inline and included by io_hooks.cpp alone: the hottest hooks (read,
// pread, close, fd stats: CT_FLATTEN) inline all of it, the record's encoder included,
// so that their fast path makes no call but the real one. The recording path makes raw
// system calls only and leaves errno as the real call left it.
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <string_view>

#include <type_traits>

#include "io/io_agg.h"
#include "io/io_state.h"
#include "state.h"

namespace colabtrace::shim::io {

inline constexpr int kIoErrSeen = 0x20;  // glibc's _IO_ERR_SEEN bit of FILE::_flags

// A FILE's descriptor without calling fileno() (which may set errno): -1 for streams
// without one (fmemopen, fopencookie).
inline int FileFd(FILE* fp) { return fp == nullptr ? -1 : fp->_fileno; }

inline bool PathsOn() { return g_io_on && Recording(); }

// A syscall-style result: the value, or -errno when negative. errno is read only when the
// call failed, so a hot hook's success costs no __errno_location call.
inline int64_t Result(int64_t r) { return r < 0 ? -static_cast<int64_t>(errno) : r; }

// ---- reads and writes (hot) ---------------------------------------------------------------

// The one shape of every timed call on a descriptor: pass through unless fd is traced,
// time the real call, then record Rec with the call's start, duration, the result
// to_result(ret) (read right after the call, so errno is the call's) and whatever
// fill(rec) adds. Returns what the real call returned.
// What a call recorded as Rec is, for its in-flight note (state.h).
template <class Rec> constexpr format::InFlightCall InFlightCallOf() {
  if constexpr (std::is_same_v<Rec, format::IoWrite>) return format::InFlightCall::kWrite;
  if constexpr (std::is_same_v<Rec, format::IoStat>) return format::InFlightCall::kFstat;
  if constexpr (std::is_same_v<Rec, format::IoFsync>) return format::InFlightCall::kFsync;
  return format::InFlightCall::kRead;
}

// stdio reads (fread, fgets, getline...): served from a FILE's buffer (file_stats.cpp).
inline bool IsStdioRead(IoApi api) {
  return (api >= IoApi::kFread && api <= IoApi::kGetdelimInternal) || api == IoApi::kFgetsUnlocked ||
         api == IoApi::kFgetsUnlockedChk || api == IoApi::kFreadUnlockedChk;
}

// A read's sums in its file's slot, and the descriptor's position, as the analyzer's
// replay of the record counts them (file_stats.cpp, ProcessReplay::Read). at: the
// offset of a positional read (has_at).
inline void AggRead(FdSlot& fs, IoApi api, int64_t result, uint64_t dur, bool has_at, uint64_t at) {
  IoAggSlot* s = fs.agg;
  if (s == nullptr) return;
  AggAdd(s->read_ns, dur);
  if (result < 0) {
    AggCount(s, format::kIoAggReadErrors);
    return;
  }
  const uint64_t n = static_cast<uint64_t>(result);
  const bool known = has_at || fs.pos_known;
  const uint64_t off = has_at ? at : fs.pos;
  if (n == 0) {
    AggCount(s, format::kIoAggZeroReads);
    if (known) AggMax(s->eof_at, off);
    return;
  }
  AggAdd(s->bytes_read, n);
  AggCount(s, static_cast<IoAggCount>(format::kIoAggReadSize + format::IoAggSizeBin(n)));
  if (IsStdioRead(api)) {
    AggCount(s, format::kIoAggStdioReads);
  } else if (n <= 4096) {
    AggCount(s, format::kIoAggSmallReads);
  }
  if (!fs.read_any) {
    fs.read_any = true;
    AggCount(s, format::kIoAggPasses);
  }
  if (known) AggMax(s->max_end, off + n);
  if (!has_at) fs.pos += n;
}

// What a hot record adds to its file's slot and its descriptor's position.
template <class Rec> inline void AggOf(const Rec& rec) {
  FdSlot& fs = g_fd_slots[rec.fd];
  const auto api = static_cast<IoApi>(rec.api);
  if constexpr (std::is_same_v<Rec, format::IoRead>) {
    AggRead(fs, api, rec.result, rec.dur, false, 0);
  } else if constexpr (std::is_same_v<Rec, format::IoReadAt>) {
    AggRead(fs, api, rec.result, rec.dur, true, rec.offset);
  } else if constexpr (std::is_same_v<Rec, format::IoStat>) {
    AggStat(fs.agg, false, rec.result, rec.dur, rec.size, rec.ftype);
  } else if constexpr (std::is_same_v<Rec, format::IoWrite>) {
    const bool positional = api == IoApi::kPwrite || api == IoApi::kPwrite64 || api == IoApi::kPwritev ||
                            api == IoApi::kPwritev64 ||
                            ((api == IoApi::kPwritev2 || api == IoApi::kPwritev64v2) && rec.offset != 0);
    if (rec.result > 0 && !positional) fs.pos += static_cast<uint64_t>(rec.result);
  }
}

template <class Rec, class Call, class ToResult, class Fill>
inline auto TimedFdCall(IoApi api, int fd, Call&& call, ToResult&& to_result, Fill&& fill)
    -> decltype(call()) {
  if (!FdTracked(fd) || !Recording()) return call();
  const uint64_t t0 = Ticks();
  format::CallNote* note = BeginNote(&format::ThreadNotes::call, InFlightCallOf<Rec>(),
                                     static_cast<uint32_t>(api), t0, static_cast<uint64_t>(fd));
  const auto r = call();
  EndNote(note);
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
    AggOf(rec);
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
    if (r >= 0) {
      g_fd_slots[fd].pos = static_cast<uint64_t>(r);
      g_fd_slots[fd].pos_known = true;
    }
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
inline constexpr unsigned kCloseWindow = 4096;

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
  // A null path names no file: the call fails with EFAULT and visits nothing (Rust's std
  // probes for statx with statx(0, NULL, 0, STATX_ALL, NULL)).
  if (path == nullptr) return false;
  RecordScope scope;
  if (!scope.entered()) return false;
  PreparePath(dirfd, path, pp);
  return true;
}

// An open or path stat about to be made: noted in flight with its path (state.h), and the
// thread's Python thread state remembered for an outside reader of its stack.
inline format::CallNote* BeginPathNote(format::InFlightCall call, IoApi api, uint64_t t0, const PreparedPath& pp) {
  format::CallNote* note = BeginNote(&format::ThreadNotes::call, call, static_cast<uint32_t>(api), t0, pp.id);
  if (note != nullptr) NotePythonThread(t_thread.notes);
  return note;
}

template <class Call> inline int OpenCall(IoApi api, int dirfd, const char* path, int flags, Call&& call) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(dirfd, path, &pp)) return call();
  const uint64_t t0 = Ticks();
  format::CallNote* note = BeginPathNote(format::InFlightCall::kOpen, api, t0, pp);
  const int fd = call();
  EndNote(note);
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
  format::CallNote* note = BeginPathNote(format::InFlightCall::kOpen, api, t0, pp);
  FILE* const fp = call();
  EndNote(note);
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    RecordOpen(api, pp, FlagsOfMode(mode), fp ? FileFd(fp) : -static_cast<int64_t>(errno), t0, t1);
  }
  return fp;
}

// freopen: the stream's old descriptor is closed (recorded as such if it was traced) and
// the path opened on the same FILE. fn: the real freopen or freopen64.
inline FILE* FreopenCall(IoApi api, const char* path, const char* mode, FILE* fp,
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

// fdopen of a traced descriptor: an open record with the descriptor's path.
template <class Call> inline FILE* FdopenCall(int fd, const char* mode, Call&& call) {
  if (!FdTracked(fd) || !Recording()) return call();
  const uint64_t t0 = Ticks();
  FILE* const r = call();
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    format::IoOpen rec;
    rec.ts = t0;
    rec.api = static_cast<uint64_t>(IoApi::kFdopen);
    rec.fd = r ? fd : -static_cast<int64_t>(errno);
    // From here the stream may be positioned with fseek, which is not traced.
    if (r) g_fd_slots[fd].pos_known = false;
    rec.path = g_fd_slots[fd].path;
    rec.flags = static_cast<uint64_t>(FlagsOfMode(mode));
    rec.dur = t1 - t0;
    Emit(rec);
  }
  return r;
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
  format::CallNote* note = BeginPathNote(format::InFlightCall::kStat, api, t0, pp);
  const int r = call();
  EndNote(note);
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

inline void EmitDir(IoApi api, uint64_t path, int fd, int64_t result, uint64_t t0, uint64_t t1) {
  format::IoDir rec;
  rec.ts = t0;
  rec.api = static_cast<uint64_t>(api);
  rec.path = path;
  rec.fd = fd;
  rec.result = result;
  rec.dur = t1 - t0;
  Emit(rec);
}

// chdir and fchdir: a successful call refreshes the cached working directory.
template <class Call> inline int ChdirCall(Call&& call) {
  const int r = call();
  if (r == 0 && PathsOn()) {
    ShimScope scope;
    RefreshCwd();
  }
  return r;
}

// A directory scan (opendir, scandir) of pp's path in its slot; ok: it succeeded. The
// caller releases the slot (AggRelease).
inline IoAggSlot* AggDirScan(const PreparedPath& pp, bool ok) {
  if (pp.id == 0) return nullptr;
  IoAggSlot* s = AggSlotOf(std::string_view(pp.ap.s, pp.ap.n), pp.id, 0);
  if (s == nullptr) return nullptr;
  AggCount(s, format::kIoAggDirScans);
  if (ok) AggFlags(s, format::kIoAggIsDirectory);
  return s;
}

// opendir: the directory's descriptor is traced (with its absolute path, for *at calls
// relative to it) and its readdir scans summarised.
template <class Call> inline DIR* OpendirCall(const char* path, Call&& call) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(AT_FDCWD, path, &pp)) return call();
  const uint64_t t0 = Ticks();
  DIR* const d = call();
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    const AbsPath& ap = pp.ap;
    const uint64_t id = pp.id;
    const int fd = d ? dirfd(d) : -1;
    IoAggSlot* agg = AggDirScan(pp, d != nullptr);
    if (fd >= 0) {
      TrackFd(fd, kFdDir, id, agg);
      if (ap.absolute) SetDirPath(fd, std::string_view(ap.s, ap.n));
    }
    AggRelease(agg);
    EmitDir(IoApi::kOpendir, id, fd, d ? 0 : -static_cast<int64_t>(errno), t0, t1);
  }
  return d;
}

template <class Call> inline DIR* FdopendirCall(int fd, Call&& call) {
  if (!PathsOn()) return call();
  const uint64_t t0 = Ticks();
  DIR* const d = call();
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    if (d != nullptr && !FdTracked(fd)) TrackFd(fd, kFdDir, 0);
    if (d != nullptr && FdTracked(fd) && g_fd_slots[fd].agg != nullptr) {
      AggFlags(g_fd_slots[fd].agg, format::kIoAggIsDirectory);
      AggCount(g_fd_slots[fd].agg, format::kIoAggDirScans);
    }
    EmitDir(IoApi::kFdopendir, FdTracked(fd) ? g_fd_slots[fd].path : 0, fd,
            d ? 0 : -static_cast<int64_t>(errno), t0, t1);
  }
  return d;
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

template <class Call> inline ssize_t GetdentsCall(int fd, Call&& call) {
  if (!FdTracked(fd) || !Recording()) return call();
  const uint64_t t0 = Ticks();
  const ssize_t r = call();
  const uint64_t t1 = Ticks();
  RecordScope scope;
  if (scope.entered()) EmitDir(IoApi::kGetdents64, 0, fd, Result(r), t0, t1);
  return r;
}

template <class Call> inline int ScandirCall(IoApi api, const char* path, Call&& call) {
  PreparedPath pp;
  if (!PathsOn() || !Prepare(AT_FDCWD, path, &pp)) return call();
  const uint64_t t0 = Ticks();
  const int r = call();
  const uint64_t t1 = Ticks();
  ShimScope scope;
  if (scope.entered()) {
    AggRelease(AggDirScan(pp, r >= 0));
    EmitDir(api, pp.id, -1, Result(r), t0, t1);
  }
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
    // A copy out of a traced file that moved bytes reads its data (io.metadata-heavy).
    if (r > 0 && FdTracked(in_fd) && g_fd_slots[in_fd].agg != nullptr) {
      AggCount(g_fd_slots[in_fd].agg, format::kIoAggDataCopies);
    }
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


}  // namespace colabtrace::shim::io
