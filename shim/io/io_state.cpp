// The file I/O module's state and its slow paths: mount table, working directory,
// directory-to-mount cache, path resolution, open/stat records and module start.
#include "io/io_state.h"
#include "io/io_agg.h"

#include <fcntl.h>
#include <linux/stat.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <cstring>

#include "config.h"
#include "io/mountinfo.h"
#include "modules.h"
#include "raw.h"
#include "spin_lock.h"

namespace colabtrace::shim {
namespace io {

uint8_t* g_fd_kind = nullptr;
FdSlot* g_fd_slots = nullptr;
bool g_io_on = false;

namespace {

// ---- small lock-free building blocks ----------------------------------------------------

void* MapAnon(size_t bytes) {
  void* p = raw::Mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return raw::MmapFailed(p) ? nullptr : p;
}

// Bump allocator for strings that must outlive a call (mount table, directory paths).
// Never freed; when full, callers go without caching.
class Arena {
 public:
  const char* Copy(const char* s, size_t n) {
    if (base_ == nullptr) {
      void* p = MapAnon(kBytes);
      if (p == nullptr) return nullptr;
      char* expected = nullptr;
      if (!__atomic_compare_exchange_n(&base_, &expected, static_cast<char*>(p), false,
                                       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        raw::Munmap(p, kBytes);
      }
    }
    const size_t off = __atomic_fetch_add(&used_, n + 1, __ATOMIC_RELAXED);
    if (off + n + 1 > kBytes) return nullptr;
    char* d = __atomic_load_n(&base_, __ATOMIC_ACQUIRE) + off;
    std::memcpy(d, s, n);
    d[n] = '\0';
    return d;
  }

 private:
  static constexpr size_t kBytes = 4u << 20;
  char* base_ = nullptr;
  size_t used_ = 0;
};

Arena g_arena;


// ---- the mount table ------------------------------------------------------------------

struct MountEntry {
  uint64_t id;
  uint64_t dev;
  const char* mountpoint;
  uint32_t mountpoint_len;
  const char* fstype;
  const char* source;
};

constexpr uint32_t kMaxMounts = 4096;
MountEntry* g_mounts = nullptr;  // entries [0, g_mount_count) are immutable once published
uint32_t g_mount_count = 0;
uint32_t g_mount_emitted = 0;  // entries [0, g_mount_emitted) have a Mount record
bool g_mounts_read = false;    // /proc/self/mountinfo was read at least once (atomic)
SpinLock g_mount_lock;
char* g_mountinfo_buf = nullptr;
constexpr size_t kMountInfoBytes = 1u << 20;

void EmitMount(const MountEntry& m) {
  format::Mount r;
  r.ts = Ticks();
  r.id = m.id;
  r.dev = m.dev;
  r.fstype = InternCString(m.fstype);
  r.mountpoint = InternString(std::string_view(m.mountpoint, m.mountpoint_len));
  r.source = InternCString(m.source);
  Emit(r);
}

const MountEntry* FindMountById(uint64_t id) {
  const uint32_t n = __atomic_load_n(&g_mount_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < n; ++i) {
    if (g_mounts[i].id == id) return &g_mounts[i];
  }
  return nullptr;
}

// Reads /proc/self/mountinfo and adds (and records) mounts not yet known.
void ReloadMounts() {
  if (g_mounts == nullptr) return;
  g_mount_lock.Lock();
  if (g_mountinfo_buf == nullptr) g_mountinfo_buf = static_cast<char*>(MapAnon(kMountInfoBytes));
  if (g_mountinfo_buf != nullptr) {
    const int fd = raw::Open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    if (fd >= 0) {
      while (got < kMountInfoBytes) {
        const long r = raw::Read(fd, g_mountinfo_buf + got, kMountInfoBytes - got);
        if (r <= 0) break;
        got += static_cast<size_t>(r);
      }
      raw::Close(fd);
    }
    ForEachMountInfoLine(g_mountinfo_buf, got, [](const MountInfoLine& line) {
      uint32_t n = g_mount_count;
      for (uint32_t i = 0; i < n; ++i) {
        if (g_mounts[i].id == line.id) return;
      }
      if (n >= kMaxMounts) return;
      MountEntry& m = g_mounts[n];
      m.id = line.id;
      m.dev = MakeDev(line.major, line.minor);
      m.mountpoint = g_arena.Copy(line.mountpoint.data(), line.mountpoint.size());
      m.mountpoint_len = m.mountpoint ? static_cast<uint32_t>(line.mountpoint.size()) : 0;
      m.fstype = g_arena.Copy(line.fstype.data(), line.fstype.size());
      m.source = g_arena.Copy(line.source.data(), line.source.size());
      if (m.mountpoint == nullptr || m.fstype == nullptr || m.source == nullptr) return;
      __atomic_store_n(&g_mount_count, n + 1, __ATOMIC_RELEASE);
    });
  }
  __atomic_store_n(&g_mounts_read, true, __ATOMIC_RELEASE);
  g_mount_lock.Unlock();
}

// The mount whose mount point is the longest prefix of p (at a component boundary); the
// later line wins a tie, as it is mounted on top.
const MountEntry* MountByPrefix(std::string_view p) {
  if (!__atomic_load_n(&g_mounts_read, __ATOMIC_ACQUIRE)) ReloadMounts();  // the first need
  const uint32_t n = __atomic_load_n(&g_mount_count, __ATOMIC_ACQUIRE);
  const MountEntry* best = nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    const MountEntry& m = g_mounts[i];
    const size_t k = m.mountpoint_len;
    if (k == 0 || k > p.size() || std::memcmp(m.mountpoint, p.data(), k) != 0) continue;
    if (!(k == 1 || k == p.size() || p[k] == '/')) continue;
    if (best == nullptr || k >= best->mountpoint_len) best = &m;
  }
  return best;
}

}  // namespace

// Writes the Mount records of mounts found since the last call. Hooks call it after
// their own record, so that record keeps its start time (a record's ts cannot be
// earlier than the one before it in the chunk).
void EmitPendingMounts() {
  if (g_mounts == nullptr ||
      __atomic_load_n(&g_mount_emitted, __ATOMIC_ACQUIRE) == __atomic_load_n(&g_mount_count, __ATOMIC_ACQUIRE)) {
    return;
  }
  g_mount_lock.Lock();
  const uint32_t n = g_mount_count;
  for (uint32_t i = g_mount_emitted; i < n; ++i) EmitMount(g_mounts[i]);
  __atomic_store_n(&g_mount_emitted, n, __ATOMIC_RELEASE);
  g_mount_lock.Unlock();
}

namespace {

uint64_t MountIdOrReload(uint64_t id) {
  if (FindMountById(id) == nullptr) ReloadMounts();  // mounted after we started
  return FindMountById(id) != nullptr ? id : 0;
}

// ---- directory -> mount cache ----------------------------------------------------------
// Each slot packs (40-bit hash of the directory << 24) | mount id (ids < 2^24).
constexpr size_t kDirSlots = 1u << 14;
constexpr size_t kDirProbes = 8;
uint64_t* g_dir_cache = nullptr;

// ---- working directory (a seqlock: readers never block) ---------------------------------
char g_cwd[4096];
uint32_t g_cwd_len = 0;
uint32_t g_cwd_seq = 0;
SpinLock g_cwd_lock;

size_t ReadCwd(char* out) {
  for (;;) {
    const uint32_t s1 = __atomic_load_n(&g_cwd_seq, __ATOMIC_ACQUIRE);
    if (s1 & 1) continue;
    const uint32_t n = __atomic_load_n(&g_cwd_len, __ATOMIC_RELAXED);
    std::memcpy(out, g_cwd, n < sizeof(g_cwd) ? n : sizeof(g_cwd));
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&g_cwd_seq, __ATOMIC_RELAXED) == s1) return n;
  }
}

int g_max_fd = -1;  // highest descriptor ever tracked (bounds range scans)

void NoteFd(int fd) {
  int cur = __atomic_load_n(&g_max_fd, __ATOMIC_RELAXED);
  while (fd > cur &&
         !__atomic_compare_exchange_n(&g_max_fd, &cur, fd, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

}  // namespace

// ---- descriptors ------------------------------------------------------------------------

void ReleaseFdAgg(int fd) {
  FdSlot& s = g_fd_slots[fd];
  if (!s.agg_held || __atomic_load_n(&g_fd_kind[fd], __ATOMIC_RELAXED) == kFdNone) return;
  s.agg_held = false;
  if (s.agg_epoch == AggEpoch()) AggRelease(s.agg);  // not a parent's (a fork child's copy)
}

void TrackFd(int fd, FdKind kind, uint64_t path, format::IoAggSlot* agg, bool pos_known) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kMaxFds) || g_fd_kind == nullptr) return;
  FdSlot& s = g_fd_slots[fd];
  ReleaseFdAgg(fd);  // a number reused without a close we saw
  AggHold(agg);
  s.path = path;
  s.agg = agg;
  s.agg_held = AggHeld(agg);
  s.agg_epoch = AggEpoch();
  s.pos = 0;
  s.pos_known = pos_known;
  s.read_any = false;
  s.dir_path = nullptr;
  s.dir_path_len = 0;
  s.dir_entries = 0;
  s.dir_ticks = 0;
  NoteFd(fd);
  __atomic_store_n(&g_fd_kind[fd], static_cast<uint8_t>(kind), __ATOMIC_RELEASE);
}

void UntrackFd(int fd) {
  if (static_cast<unsigned>(fd) >= static_cast<unsigned>(kMaxFds) || g_fd_kind == nullptr) return;
  // No other thread tracks this number meanwhile: it stays open until our close.
  const uint8_t was = __atomic_load_n(&g_fd_kind[fd], __ATOMIC_RELAXED);
  ReleaseFdAgg(fd);
  __atomic_store_n(&g_fd_kind[fd], static_cast<uint8_t>(kFdNone), __ATOMIC_RELEASE);
  // A directory's path is forgotten now; any other slot is reset by the next TrackFd
  // of this number before anything reads it (ResolvePath reads only tracked slots).
  if (was == kFdDir) {
    g_fd_slots[fd].dir_path = nullptr;
    g_fd_slots[fd].dir_path_len = 0;
  }
}

void CopyFd(int oldfd, int newfd) {
  if (static_cast<unsigned>(newfd) >= static_cast<unsigned>(kMaxFds) || g_fd_kind == nullptr) return;
  if (!FdTracked(oldfd)) {
    UntrackFd(newfd);
    return;
  }
  const FdSlot& o = g_fd_slots[oldfd];
  TrackFd(newfd, static_cast<FdKind>(g_fd_kind[oldfd]), o.path, o.agg, o.pos_known);
  // A dup shares the description: its position and passes go on from the original's
  // (the replay shares them; here each number follows its own from this point).
  g_fd_slots[newfd].pos = o.pos;
  g_fd_slots[newfd].read_any = o.read_any;
  g_fd_slots[newfd].dir_path = o.dir_path;
  g_fd_slots[newfd].dir_path_len = o.dir_path_len;
}

int MaxTrackedFd() { return __atomic_load_n(&g_max_fd, __ATOMIC_RELAXED); }

void SetDirPath(int fd, std::string_view path) {
  if (!FdTracked(fd)) return;
  const char* copy = g_arena.Copy(path.data(), path.size());
  if (copy == nullptr) return;
  g_fd_slots[fd].dir_path_len = static_cast<uint32_t>(path.size());
  __atomic_store_n(&g_fd_slots[fd].dir_path, copy, __ATOMIC_RELEASE);
}

// ---- paths ------------------------------------------------------------------------------

void RefreshCwd() {
  char buf[sizeof(g_cwd)];
  const long n = raw::Syscall6(SYS_getcwd, reinterpret_cast<long>(buf), sizeof(buf));
  // The kernel counts the terminating NUL; an unreachable cwd starts with "(unreachable)".
  const uint32_t len = n > 1 && buf[0] == '/' ? static_cast<uint32_t>(n - 1) : 0;
  g_cwd_lock.Lock();
  __atomic_store_n(&g_cwd_seq, g_cwd_seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  std::memcpy(g_cwd, buf, len);
  __atomic_store_n(&g_cwd_len, len, __ATOMIC_RELAXED);
  __atomic_store_n(&g_cwd_seq, g_cwd_seq + 1, __ATOMIC_RELEASE);
  g_cwd_lock.Unlock();
}

AbsPath ResolvePath(int dirfd, const char* path, char* buf) {
  AbsPath out;
  if (path == nullptr) return out;
  const size_t plen = std::strlen(path);
  out.s = path;
  out.n = plen;
  if (path[0] == '/') {
    out.absolute = true;
    return out;
  }
  size_t base = 0;
  if (dirfd == AT_FDCWD) {
    base = ReadCwd(buf);
  } else if (FdTracked(dirfd) &&
             __atomic_load_n(&g_fd_slots[dirfd].dir_path, __ATOMIC_ACQUIRE) != nullptr) {
    base = g_fd_slots[dirfd].dir_path_len;
    std::memcpy(buf, g_fd_slots[dirfd].dir_path, base);
  } else if (dirfd >= 0) {
    char link[32] = "/proc/self/fd/";
    size_t k = 14;
    char digits[12];
    int nd = 0;
    for (unsigned v = static_cast<unsigned>(dirfd); nd == 0 || v != 0; v /= 10) {
      digits[nd++] = static_cast<char>('0' + v % 10);
    }
    while (nd > 0) link[k++] = digits[--nd];
    link[k] = '\0';
    const long r = raw::Readlink(link, buf, 4096);
    if (r > 0 && buf[0] == '/') {
      base = static_cast<size_t>(r);
      SetDirPath(dirfd, std::string_view(buf, base));
    }
  }
  if (base == 0) return out;  // unknown base: keep the path as given
  // "./x" and "." add nothing to the base.
  const char* rel = path;
  while (rel[0] == '.' && rel[1] == '/') {
    rel += 2;
    while (*rel == '/') ++rel;
  }
  size_t rest = plen - static_cast<size_t>(rel - path);
  if (rest == 1 && rel[0] == '.') rest = 0;
  if (rest > 0) {
    if (buf[base - 1] != '/') buf[base++] = '/';
    if (base + rest >= kPathBuf) rest = kPathBuf - 1 - base;
    std::memcpy(buf + base, rel, rest);
  }
  buf[base + rest] = '\0';
  out.s = buf;
  out.n = base + rest;
  out.absolute = true;
  return out;
}

namespace {
uint64_t MountOfDirectory(std::string_view p, size_t dirlen, bool exists);
}  // namespace

uint64_t MountOf(std::string_view p, uint64_t path_id, bool exists) {
  if (g_mounts == nullptr || p.empty() || p[0] != '/') return 0;
  // The thread's last directory (a signal handler that rewrites it meanwhile makes this a
  // miss).
  ThreadState& t = t_thread;
  uint32_t cached_len = 0;
  const uint8_t* cached_dir = nullptr;
  uint64_t cached_mount = 0, cached_path = 0;
  const bool valid = ReadThreadCache(t.dir_gen, [&] {
                       cached_len = t.dir_len;
                       cached_dir = t.dir_data;
                       cached_mount = t.dir_mount;
                       cached_path = t.dir_path_id;
                     }) && cached_dir != nullptr;
  // The same file again (a reopen): no directory compare at all.
  if (valid && path_id != 0 && cached_path == path_id) return cached_mount;
  const void* slash = memrchr(p.data(), '/', p.size());
  size_t dirlen = slash ? static_cast<size_t>(static_cast<const char*>(slash) - p.data()) + 1 : 0;
  if (dirlen > 1) --dirlen;  // drop the slash, except for the root directory
  // Another file in the thread's last directory: a loop over one directory's files
  // skips the hash.
  if (valid && cached_len == dirlen && std::memcmp(cached_dir, p.data(), dirlen) == 0) {
    if (path_id != 0) RewriteThreadCache(t.dir_gen, [&] { t.dir_path_id = path_id; });
    return cached_mount;
  }
  const uint64_t id = MountOfDirectory(p, dirlen, exists);
  // Only a path the thread just interned has a stable copy (in the intern arena) to keep.
  if (const uint8_t* stored = LastInterned(p); stored != nullptr && id != 0) {
    RewriteThreadCache(t.dir_gen, [&] {
      t.dir_len = static_cast<uint32_t>(dirlen);
      t.dir_data = stored;
      t.dir_mount = id;
      t.dir_path_id = path_id;
    });
  }
  return id;
}

namespace {
uint64_t MountOfDirectory(std::string_view p, size_t dirlen, bool exists) {
  const uint64_t key = (HashBytes(p.data(), dirlen) >> 24) | 1;
  uint64_t* const cache = g_dir_cache;
  size_t slot = key & (kDirSlots - 1);
  for (size_t i = 0; i < kDirProbes; ++i, slot = (slot + 1) & (kDirSlots - 1)) {
    const uint64_t v = __atomic_load_n(&cache[slot], __ATOMIC_RELAXED);
    if (v == 0) break;
    if ((v >> 24) == key) return v & 0xffffff;
  }
  if (!exists) {
    const MountEntry* m = MountByPrefix(p);
    return m ? m->id : 0;
  }
  // First open in this directory: ask the kernel which mount holds it (this follows
  // symlinks, e.g. a dataset directory linked into a Drive mount).
  char dir[kPathBuf];
  std::memcpy(dir, p.data(), dirlen);
  dir[dirlen] = '\0';
  struct statx sx;
  uint64_t id = 0;
  if (raw::Syscall6(SYS_statx, AT_FDCWD, reinterpret_cast<long>(dir), 0, STATX_MNT_ID,
                    reinterpret_cast<long>(&sx)) == 0 &&
      (sx.stx_mask & STATX_MNT_ID) != 0) {
    id = MountIdOrReload(sx.stx_mnt_id);
  }
  if (id == 0) {
    const MountEntry* m = MountByPrefix(p);
    id = m ? m->id : 0;
  }
  if (id == 0 || id >= (1u << 24)) return id;
  const uint64_t v = (key << 24) | id;
  slot = key & (kDirSlots - 1);
  for (size_t i = 0; i < kDirProbes; ++i, slot = (slot + 1) & (kDirSlots - 1)) {
    uint64_t expected = 0;
    if (__atomic_compare_exchange_n(&cache[slot], &expected, v, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED) ||
        (expected >> 24) == key) {
      break;
    }
  }
  return id;
}
}  // namespace

FdFacts MeasureFd(int fd) {
  FdFacts f;
  struct statx sx;
  if (raw::Syscall6(SYS_statx, fd, reinterpret_cast<long>(""), AT_EMPTY_PATH,
                    STATX_TYPE | STATX_SIZE | STATX_MNT_ID, reinterpret_cast<long>(&sx)) != 0) {
    return f;
  }
  f.ftype = (sx.stx_mode & S_IFMT) >> 12;
  f.size = sx.stx_size;
  // Pipes, sockets and terminals live on mounts that mountinfo never lists: looking them
  // up would re-read the mount table for each (three times at every Python start).
  const bool file_or_dir = S_ISREG(sx.stx_mode) || S_ISDIR(sx.stx_mode);
  if (file_or_dir && (sx.stx_mask & STATX_MNT_ID)) f.mount = MountIdOrReload(sx.stx_mnt_id);
  return f;
}

// ---- records ----------------------------------------------------------------------------

void PreparePath(int dirfd, const char* path, PreparedPath* out) {
  out->ap = ResolvePath(dirfd, path, out->buf);
  out->id = out->ap.s ? InternString(std::string_view(out->ap.s, out->ap.n)) : 0;
}

// The open's sums in its file's aggregate slot (as the analyzer's replay counts it).
format::IoAggSlot* AggOpen(const PreparedPath& pp, const format::IoOpen& r, int flags) {
  if (pp.id == 0) return nullptr;
  format::IoAggSlot* s = nullptr;
  const bool tmpfile = (flags & O_TMPFILE) == O_TMPFILE;
  if (tmpfile) {
    // O_TMPFILE holds O_DIRECTORY's bit: the path names a directory, the open makes a file
    // with no name of its own. Such files are summed together per directory, as the
    // analyzer's replay names them: "<dir>/<O_TMPFILE>" (rare: interned here, not cached).
    static constexpr char kTmp[] = "/<O_TMPFILE>";
    char name[kPathBuf + sizeof(kTmp)];
    size_t n = pp.ap.n;
    while (n > 1 && pp.ap.s[n - 1] == '/') --n;
    if (n > kPathBuf) return nullptr;
    std::memcpy(name, pp.ap.s, n);
    std::memcpy(name + n, kTmp, sizeof(kTmp) - 1);
    const std::string_view key(name, n + sizeof(kTmp) - 1);
    s = AggSlotOf(key, InternString(key), r.mount);
  } else {
    s = AggSlotOf(std::string_view(pp.ap.s, pp.ap.n), pp.id, r.mount);
  }
  if (s == nullptr) return nullptr;
  uint16_t bits = 0;
  if ((flags & O_DIRECTORY) && !tmpfile && r.fd >= 0) bits |= format::kIoAggIsDirectory;
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_CREAT)) bits |= format::kIoAggOutput;
  if (r.ftype == (S_IFDIR >> 12)) bits |= format::kIoAggIsDirectory;
  if (bits != 0) AggFlags(s, bits);
  if (r.ftype == (S_IFREG >> 12)) AggMax(s->size, r.size + 1);
  AggCount(s, r.fd < 0 ? format::kIoAggOpenErrors : format::kIoAggOpens);
  AggAdd(s->open_ns, r.dur);
  return s;
}

void RecordOpen(IoApi api, const PreparedPath& pp, int flags, int64_t fd, uint64_t t0, uint64_t t1) {
  const AbsPath& ap = pp.ap;
  format::IoOpen r;
  r.ts = t0;
  r.api = static_cast<uint64_t>(api);
  r.fd = fd;
  r.path = pp.id;
  r.flags = static_cast<uint32_t>(flags);
  r.dur = t1 - t0;
  if (ap.absolute) {
    r.mount = MountOf(std::string_view(ap.s, ap.n), pp.id, fd >= 0);
  } else if (fd >= 0) {
    const FdFacts f = MeasureFd(static_cast<int>(fd));
    r.mount = f.mount;
    r.size = f.size;
    r.ftype = f.ftype;
  }
  format::IoAggSlot* agg = AggOpen(pp, r, flags);
  if (fd >= 0) {
    const bool dir = (flags & O_DIRECTORY) != 0;
    TrackFd(static_cast<int>(fd), dir ? kFdDir : kFdFile, r.path, agg, (flags & O_APPEND) == 0);
    if (dir && ap.absolute) SetDirPath(static_cast<int>(fd), std::string_view(ap.s, ap.n));
  }
  AggRelease(agg);  // the descriptor holds it now
  EmitHot(r);
  EmitPendingMounts();
}

void RecordStat(IoApi api, const PreparedPath* pp, int dirfd, int fd, int64_t result, uint64_t t0,
                uint64_t t1, uint64_t size, uint32_t mode) {
  format::IoStat r;
  r.ts = t0;
  r.api = static_cast<uint64_t>(api);
  r.result = result;
  r.dur = t1 - t0;
  if (pp != nullptr) {
    r.path = pp->id;
    r.fd = pp->ap.absolute ? -1 : dirfd;
  } else {
    r.fd = fd;
  }
  if (result == 0) {
    r.size = size;
    r.ftype = (mode & S_IFMT) >> 12;
  }
  format::IoAggSlot* agg = pp != nullptr ? (pp->id != 0 ? AggSlotOf(std::string_view(pp->ap.s, pp->ap.n), pp->id, 0)
                                                        : nullptr)
                           : FdTracked(fd) ? g_fd_slots[fd].agg
                                           : nullptr;
  AggStat(agg, pp != nullptr, result, r.dur, r.size, r.ftype);
  if (pp != nullptr) AggRelease(agg);  // by descriptor: the descriptor's hold
  EmitHot(r);
}

void FlushDirScan(int fd, IoApi api) {
  if (!FdTracked(fd)) return;
  FdSlot& s = g_fd_slots[fd];
  if (s.dir_entries == 0 && s.dir_ticks == 0) return;
  if (s.agg != nullptr) AggFlags(s.agg, format::kIoAggIsDirectory);  // a readdir pass
  format::IoDir r;
  r.ts = Ticks();
  r.api = static_cast<uint64_t>(api);
  r.fd = fd;
  r.result = s.dir_entries;
  r.dur = s.dir_ticks;
  s.dir_entries = 0;
  s.dir_ticks = 0;
  Emit(r);
}

int FlagsOfMode(const char* mode) {
  if (mode == nullptr) return 0;
  int flags = 0;
  bool plus = false;
  for (const char* m = mode; *m != '\0' && *m != ','; ++m) {
    if (*m == '+') plus = true;
    if (*m == 'e') flags |= O_CLOEXEC;
    if (*m == 'x') flags |= O_EXCL;
  }
  switch (mode[0]) {
    case 'r': return flags | (plus ? O_RDWR : O_RDONLY);
    case 'w': return flags | (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC;
    case 'a': return flags | (plus ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND;
    default: return flags;
  }
}

// ---- module start ------------------------------------------------------------------------

namespace {

// Records every regular file or directory the process holds open at start (inherited
// from the parent, a fork, or the previous exec image) as an "inherited" open, with its
// current position.
void AdoptOpenDescriptors() {
  const int max = __atomic_load_n(&g_max_fd, __ATOMIC_RELAXED);
  for (int fd = 0; fd <= max && fd < kMaxFds; ++fd) UntrackFd(fd);
  const int dfd = raw::Open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return;
  alignas(8) char dents[4096];
  for (;;) {
    const long n = raw::Getdents64(dfd, dents, sizeof(dents));
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const raw::Dirent64*>(dents + off);
      off += d->reclen;
      int fd = 0;
      const char* c = d->name;
      if (*c < '0' || *c > '9') continue;
      for (; *c >= '0' && *c <= '9'; ++c) fd = fd * 10 + (*c - '0');
      if (fd == dfd || fd == g_trace.fd() || fd >= kMaxFds) continue;
      const FdFacts facts = MeasureFd(fd);
      const bool reg = facts.ftype == (S_IFREG >> 12), dir = facts.ftype == (S_IFDIR >> 12);
      if (!reg && !dir) continue;
      char link[32] = "/proc/self/fd/";
      std::memcpy(link + 14, d->name, std::strlen(d->name) + 1);
      char path[4096];
      const long len = raw::Readlink(link, path, sizeof(path));
      if (len <= 0) continue;
      format::IoOpen r;
      r.ts = Ticks();
      r.api = static_cast<uint64_t>(IoApi::kInherited);
      r.fd = fd;
      r.path = InternString(std::string_view(path, static_cast<size_t>(len)));
      r.flags = static_cast<uint32_t>(raw::Fcntl(fd, F_GETFL));
      r.mount = facts.mount;
      r.size = facts.size;
      r.ftype = facts.ftype;
      // An inherited descriptor opens nothing: its file gets a slot (and what it says of
      // the file), no open. Its position is known from the position record below.
      format::IoAggSlot* agg = AggSlotOf(std::string_view(path, static_cast<size_t>(len)), r.path, r.mount);
      if (agg != nullptr) {
        if (dir) AggFlags(agg, format::kIoAggIsDirectory);
        if ((r.flags & O_ACCMODE) != O_RDONLY || (r.flags & O_CREAT)) AggFlags(agg, format::kIoAggOutput);
        if (reg) AggMax(agg->size, r.size + 1);
      }
      TrackFd(fd, dir ? kFdDir : kFdFile, r.path, agg, false);
      AggRelease(agg);
      if (dir && path[0] == '/') SetDirPath(fd, std::string_view(path, static_cast<size_t>(len)));
      Emit(r);
      if (reg) {
        const long pos = raw::Syscall6(SYS_lseek, fd, 0, SEEK_CUR);
        format::IoSeek s;
        s.ts = r.ts;
        s.api = static_cast<uint64_t>(IoApi::kPosition);
        s.fd = fd;
        s.offset = pos;
        s.whence = SEEK_SET;
        s.result = pos;
        if (pos >= 0) {
          g_fd_slots[fd].pos = static_cast<uint64_t>(pos);
          g_fd_slots[fd].pos_known = true;
          Emit(s);
        }
      }
    }
  }
  raw::Close(dfd);
}

}  // namespace

void StartIo(StartKind kind) {
  if (!g_config.io) {
    g_io_on = false;
    return;
  }
  if (g_fd_kind == nullptr) {
    auto* kinds = static_cast<uint8_t*>(MapAnon(kMaxFds));
    auto* slots = static_cast<FdSlot*>(MapAnon(kMaxFds * sizeof(FdSlot)));
    auto* mounts = static_cast<MountEntry*>(MapAnon(kMaxMounts * sizeof(MountEntry)));
    auto* cache = static_cast<uint64_t*>(MapAnon(kDirSlots * sizeof(uint64_t)));
    if (kinds == nullptr || slots == nullptr || mounts == nullptr || cache == nullptr) return;
    g_fd_slots = slots;
    g_mounts = mounts;
    g_dir_cache = cache;
    __atomic_store_n(&g_fd_kind, kinds, __ATOMIC_RELEASE);
  }
  if (kind == StartKind::kForkChild) {
    // A new trace: locks held by threads that do not exist here are free, and the mount
    // table we inherited must be written again.
    g_mount_lock.Reset();
    g_cwd_lock.Reset();
    g_mount_emitted = 0;
  }
  // The mount table is read when a record first needs a mount (MountByPrefix, or an id
  // not known yet; here: an inherited file): a process that touches no file pays nothing
  // for it (~70 us here). The Mount records follow the records that use them, as after
  // every hook; a fork child re-emits the table its parent had read.
  ResetAgg();  // a new trace (or image): a table of its own
  RefreshCwd();
  AdoptOpenDescriptors();
  EmitPendingMounts();
  g_io_on = true;
}

}  // namespace io

void IoModuleStart(StartKind kind) { io::StartIo(kind); }

}  // namespace colabtrace::shim
