// The file I/O module's state: which descriptors are traced files, the mount table, the
// working directory, and the directory-to-mount cache. Everything is lock-free for
// readers and lives in anonymous mappings made at module start (no malloc).
//
// Hot paths (read, pread, close) only test FdTracked(fd): one byte load. Opens resolve
// the path to an absolute one (cached working directory, no syscall) and find its mount
// through a per-directory cache; the first open in a directory costs one statx on the
// directory, later ones none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "colabtrace/format/records.h"
#include "colabtrace/format/wire.h"
#include "modules.h"
#include "writer.h"

namespace colabtrace::shim::io {

using format::IoApi;

// ---- per-descriptor state -------------------------------------------------------------

enum FdKind : uint8_t { kFdNone = 0, kFdFile = 1, kFdDir = 2 };

struct FdSlot {
  uint64_t path = 0;            // String id in this trace (0: unknown)
  format::IoAggSlot* agg = nullptr;  // the file's aggregate slot (io_agg.h), or null
  // The description's position as the analyzer's replay of the records follows it
  // (file_stats.cpp): 0 at open, moved by reads, writes and seeks; unknown after an
  // fdopen, an O_APPEND or inherited open until a seek. read_any: a byte was read.
  uint64_t pos = 0;
  bool pos_known = false;
  bool read_any = false;
  bool agg_held = false;   // agg is a heavy-hitter entry's slot, held by this descriptor
  uint32_t agg_epoch = 0;  // AggEpoch() when agg was taken (a fork child's are not its own)
  const char* dir_path = nullptr;  // absolute path text of a directory fd (arena), or null
  uint32_t dir_path_len = 0;
  uint32_t dir_entries = 0;     // readdir entries since the last scan summary
  uint64_t dir_ticks = 0;       // ticks spent in readdir since the last summary
};

inline constexpr int kMaxFds = 1 << 17;  // descriptors above this are not traced

extern uint8_t* g_fd_kind;  // kMaxFds bytes, FdKind; null when I/O tracing is off
extern FdSlot* g_fd_slots;  // kMaxFds slots
extern bool g_io_on;        // the module started and COLABTRACE_IO is not 0

// What fd is to the module (kFdNone: not traced, out of range, or I/O tracing off).
inline FdKind KindOfFd(int fd) {
  uint8_t* k = g_fd_kind;
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kMaxFds) || k == nullptr) return kFdNone;
  return static_cast<FdKind>(__atomic_load_n(&k[fd], __ATOMIC_RELAXED));
}
inline bool FdTracked(int fd) { return KindOfFd(fd) != kFdNone; }

// Releases the heavy-hitter entry tracked fd holds (io_agg.h), if it holds one taken in
// this trace.
void ReleaseFdAgg(int fd);
// Marks fd as a traced file (or directory) with its path id and aggregate slot, at
// position 0 (known when pos_known).
void TrackFd(int fd, FdKind kind, uint64_t path, format::IoAggSlot* agg = nullptr, bool pos_known = false);
// Forgets fd (before it is closed, so a concurrent open cannot reuse it first).
void UntrackFd(int fd);
// The same for a descriptor known to be a traced file (KindOfFd(fd) == kFdFile): its
// slot is reset by the next TrackFd of this number before anything reads it.
inline void UntrackFileFd(int fd) {
  if (__builtin_expect(g_fd_slots[fd].agg_held, 0)) ReleaseFdAgg(fd);
  __atomic_store_n(&g_fd_kind[fd], static_cast<uint8_t>(kFdNone), __ATOMIC_RELEASE);
}
// Copies the state of oldfd to newfd (dup); forgets newfd if oldfd is not traced.
void CopyFd(int oldfd, int newfd);
// Remembers the absolute path of a directory descriptor, for *at calls relative to it.
void SetDirPath(int fd, std::string_view path);
// The highest descriptor ever traced (-1: none); bounds close_range/closefrom scans.
int MaxTrackedFd();

// ---- paths and mounts -------------------------------------------------------------------

// A path made absolute: either the caller's string (already absolute) or buf.
struct AbsPath {
  const char* s = nullptr;
  size_t n = 0;
  bool absolute = false;  // false: could not resolve; s is the path as given
};

inline constexpr size_t kPathBuf = 4096 + 256;

// Resolves path against dirfd (AT_FDCWD: the cached working directory). May readlink a
// dirfd whose path it does not know yet (once per descriptor). buf has kPathBuf bytes.
AbsPath ResolvePath(int dirfd, const char* path, char* buf);

// The Mount record id of the filesystem holding the absolute path p (0: unknown), whose
// String id is path_id (0: none). exists: the path (or its directory) exists, so a statx
// on the directory may be used on a cache miss; otherwise only the mount table's longest
// prefix is used.
uint64_t MountOf(std::string_view p, uint64_t path_id, bool exists);

// The mount id of an open descriptor, with its size and file type (one statx).
struct FdFacts {
  uint64_t mount = 0, size = 0, ftype = 0;
};
FdFacts MeasureFd(int fd);

// Re-reads the working directory after chdir/fchdir succeeded.
void RefreshCwd();

// ---- recording -------------------------------------------------------------------------

// Marks the thread busy while a record is written. The recording path makes raw system
// calls only and never changes errno, so read/write hooks need not save it on success.
class RecordScope {
 public:
  RecordScope() : t_(t_thread), entered_(t_.busy == 0) { t_.busy = 1; }
  ~RecordScope() {
    if (entered_) t_.busy = 0;
  }
  RecordScope(const RecordScope&) = delete;
  RecordScope& operator=(const RecordScope&) = delete;
  bool entered() const { return entered_; }

 private:
  ThreadState& t_;
  bool entered_;
};

// A path resolved and interned before the call it names, so that the String record
// precedes the call's own record (whose ts is the call's start).
struct PreparedPath {
  AbsPath ap;
  uint64_t id = 0;
  char buf[kPathBuf];
};
void PreparePath(int dirfd, const char* path, PreparedPath* out);

// Records an open that returned fd (or -errno).
void RecordOpen(IoApi api, const PreparedPath& path, int flags, int64_t fd, uint64_t t0, uint64_t t1);
// Records a path stat (path non-null) or an fd stat.
void RecordStat(IoApi api, const PreparedPath* path, int dirfd, int fd, int64_t result, uint64_t t0,
                uint64_t t1, uint64_t size, uint32_t mode);
// Writes Mount records for mounts discovered since the last call (after the hook's own
// record, which must keep its start time).
void EmitPendingMounts();
// Emits the readdir scan summary of fd if entries are pending.
void FlushDirScan(int fd, IoApi api);

// Module start: mount table, working directory, descriptors inherited from the parent or
// the previous exec image.
void StartIo(StartKind kind);

// flags of an fopen mode string ("r", "w+", "ae"...).
int FlagsOfMode(const char* mode);

}  // namespace colabtrace::shim::io
