#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>

#include <cstring>

#include "raw.h"

namespace colabtrace::shim {
namespace {

using format::ChunkHeader;
using format::FileHeader;
using format::kChunkSize;

// The file grows in extents: reserved on disk, then mapped, one at a time. Extents are
// mapped wherever the kernel likes; the table maps a file offset to its address, so no
// large address range is reserved up front (RLIMIT_AS users never notice us).
constexpr uint64_t kExtentBytes = 2u << 20;
constexpr uint64_t kMaxTraceBytes = 32ull << 30;
constexpr uint64_t kMaxExtents = kMaxTraceBytes / kExtentBytes;
constexpr uint32_t kChunksPerExtent = kExtentBytes / kChunkSize;
static_assert(kExtentBytes % kChunkSize == 0);

// One TraceFile exists per process, so the extent table is static storage.
uint8_t* g_extent_addr[kMaxExtents];
uint16_t g_extent_finished[kMaxExtents];
uint8_t g_extent_kept[kMaxExtents];  // holds a chunk never released (KeepsMapped)

// The queue of event chunks their threads have left, oldest first: the ones the window
// rewrites. A chunk's index in the file and its last record's ticks. Static storage
// (1.5 MiB of address space; a page is touched only as the queue reaches it), behind a
// spin lock taken once per event chunk, never on a record's path.
constexpr uint64_t kQueueSlots = 1u << 17;  // 4 GiB of event chunks: COLABTRACE_WINDOW_MB's maximum
static_assert(kQueueSlots * kChunkSize == (4096ull << 20));
uint32_t g_queue_chunk[kQueueSlots];
uint64_t g_queue_end[kQueueSlots];
uint64_t g_queue_head = 0, g_queue_tail = 0;  // under g_queue_lock
int g_queue_lock = 0;

bool LockQueue(bool may_block) {
  while (__atomic_exchange_n(&g_queue_lock, 1, __ATOMIC_ACQUIRE) != 0) {
    if (!may_block) return false;
    raw::Syscall6(SYS_sched_yield);
  }
  return true;
}
void UnlockQueue() { __atomic_store_n(&g_queue_lock, 0, __ATOMIC_RELEASE); }

// The pool of record chunks that threads left partly used (TraceFile::PoolRecordChunk):
// slots claimed by a compare-and-swap on their state, so neither a preempted thread nor a
// signal handler ever waits on another. A chunk is in one slot or with one thread, never
// both. kPoolSlots bounds the chunks kept there for later threads; a thread that leaves one
// while all are taken finishes it (it stays in the file, as every record chunk does).
constexpr int kPoolSlots = 64;
enum : uint32_t { kSlotEmpty = 0, kSlotBusy = 1, kSlotFull = 2 };
struct PoolSlot {
  uint32_t state = kSlotEmpty;  // atomic
  TraceFile::LeftRecordChunk left;
};
constinit PoolSlot g_pool[kPoolSlots];  // zeroes in .bss: no static initializer (core_e2e_startup)
int g_pooled = 0;  // slots full, about (atomic): an empty pool is found without a scan

// The kernel may hand a new mapping the addresses of one just unmapped (a 32 KiB chunk
// mapped on its own is often given the hole its predecessor left). Stores through the
// old mapping happen before those through the new one, but the mmap and munmap system
// calls are raw (ThreadSanitizer does not see them), so that order is also said with
// atomics: a release before each unmap, an acquire after each map. Once per chunk or
// extent, never per record.
uint64_t g_unmaps = 0;
void BeforeUnmap() { __atomic_fetch_add(&g_unmaps, 1, __ATOMIC_RELEASE); }
void AfterMap() { (void)__atomic_load_n(&g_unmaps, __ATOMIC_ACQUIRE); }

// Zeros n bytes (a multiple of 8) with the shim's own stores (see writer.h's CopyBytes:
// no memset call a sanitizer runtime would see).
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void ZeroWords(uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t z = 0;
    __builtin_memcpy(p + i, &z, 8);
  }
}

template <class T> T Load(const T* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
template <class T> void Store(T* p, T v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// Drops a finished chunk's pages from this process (its bytes stay in the file).
void GiveUpPages(uint8_t* chunk) {
  raw::Syscall6(SYS_madvise, reinterpret_cast<long>(chunk), format::kChunkSize, MADV_DONTNEED);
}

// Zeros for ZeroFill's writes: one page in .bss that every iovec entry points at. The
// kernel reads the source of a write page by page, and each page of .bss it reads first
// is a fault (the shared zero page mapped in): 36 KiB written from one page cost one
// fault instead of nine (7 us of every process's start, rdtsc marks).
uint8_t g_zeros[4096];
constexpr int kZeroIov = 64;  // 256 KiB per system call; 1 KiB of stack for the vector

// Writes zeros over [off, off+len) with pwritev.
int ZeroFill(int fd, uint64_t off, uint64_t len) {
  struct iovec iov[kZeroIov];
  while (len > 0) {
    int n = 0;
    for (uint64_t left = len; n < kZeroIov && left > 0; ++n) {
      iov[n].iov_base = g_zeros;
      iov[n].iov_len = left < sizeof(g_zeros) ? left : sizeof(g_zeros);
      left -= iov[n].iov_len;
    }
    const long w = raw::Syscall6(SYS_pwritev, fd, reinterpret_cast<long>(iov), n,
                                 static_cast<long>(off), static_cast<long>(off >> 32));
    if (w == -EINTR) continue;
    if (w <= 0) return w == 0 ? -ENOSPC : static_cast<int>(w);
    off += static_cast<uint64_t>(w);
    len -= static_cast<uint64_t>(w);
  }
  return 0;
}

// The file-size limit, checked before every extension: growing past it would send
// SIGXFSZ to the host.
uint64_t FileSizeLimit() {
  struct rlimit lim;
  if (raw::Syscall6(SYS_prlimit64, 0, RLIMIT_FSIZE, 0, reinterpret_cast<long>(&lim)) != 0) {
    return UINT64_MAX;
  }
  return lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : lim.rlim_cur;
}

}  // namespace

namespace {

constexpr uint64_t kMinFirstExtent = 2 * kChunkSize;  // the header slot and one chunk

// How much of the file the first extent maps: one extent, or less under an RLIMIT_FSIZE
// below that (the same in an exec'd image, which inherits the limit).
uint64_t FirstExtentBytes() {
  const uint64_t limit = FileSizeLimit();
  return limit < kExtentBytes ? limit / kChunkSize * kChunkSize : kExtentBytes;
}
constexpr int kHandoverWindow = 16;  // descriptors searched above HandoverFloor()

// Reserves [off, off+len) on disk, extending the file, so that a full disk fails here
// (ENOSPC) and never a later store through the mapping (SIGBUS). Two ways:
// - ZeroFill writes zeros: the pages are then in the page cache and the first store
//   to each is a minor fault (0.3 us per page measured on this project's ext4, against
//   ~8 us for a page of a 32 KiB fallocate). Used for a new trace's first chunk, which
//   every process fills at once, most of them with little more.
// - Reserve fallocates: the steps that follow (doubling up to 2 MiB, 3 us per page at
//   its first store) write nothing ahead. Zeros written that far ahead were written back
//   to disk and then written again with the records, and a store to a page under
//   writeback waits for it: per-call costs of long traces on disk doubled (cudaMalloc
//   +146 ns against +60 on tmpfs).
int Reserve(int fd, uint64_t off, uint64_t len) {
  int r = static_cast<int>(raw::Syscall6(SYS_fallocate, fd, 0, static_cast<long>(off), static_cast<long>(len)));
  if (r == -EOPNOTSUPP || r == -ENOSYS) r = ZeroFill(fd, off, len);
  return r;
}

// The first extent's first pages are touched by every process, most of which write
// little. Those of the first chunk are normally in the page cache (ZeroFill wrote them);
// elsewhere, or where they were evicted, a write fault would read ahead over the reserved
// range (~400 us on
// ext4 once, for a process that writes four pages). Later pages and extents keep the
// kernel's read-ahead.
constexpr uint64_t kNoReadAheadBytes = 256u << 10;
void AdviseFirstExtent(void* p, uint64_t size) {
  raw::Syscall6(SYS_madvise, reinterpret_cast<long>(p),
                static_cast<long>(size < kNoReadAheadBytes ? size : kNoReadAheadBytes), MADV_RANDOM);
}

int Fstat(int fd, struct stat* st) {
  return static_cast<int>(raw::Syscall6(SYS_fstat, fd, reinterpret_cast<long>(st)));
}

// Copies path into out as an absolute path (relative to the working directory now).
bool MakeAbsolute(const char* path, char* out, size_t cap) {
  size_t n = 0;
  if (path[0] != '/') {
    const long r = raw::Syscall6(SYS_getcwd, reinterpret_cast<long>(out), static_cast<long>(cap));
    if (r <= 0) return false;
    n = std::strlen(out);
    if (n + 1 < cap && (n == 0 || out[n - 1] != '/')) out[n++] = '/';
  }
  const size_t len = std::strlen(path);
  if (n + len + 1 > cap) return false;
  std::memcpy(out + n, path, len + 1);
  return true;
}

// Appends the decimal v to s (NUL-terminated, room assumed).
void AppendNum(char* s, uint64_t v) {
  char d[24];
  int k = 0;
  do d[k++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
  s += std::strlen(s);
  while (k > 0) *s++ = d[--k];
  *s = '\0';
}

// Gives the unnamed (O_TMPFILE) file open on fd the name path; -errno on failure.
int LinkTmpfile(int fd, const char* path) {
  char proc[48] = "/proc/self/fd/";
  AppendNum(proc, static_cast<uint64_t>(fd));
  int r = static_cast<int>(raw::Syscall6(SYS_linkat, AT_FDCWD, reinterpret_cast<long>(proc),
                                         AT_FDCWD, reinterpret_cast<long>(path),
                                         AT_SYMLINK_FOLLOW));
  if (r == -ENOENT) {  // no /proc: needs CAP_DAC_READ_SEARCH, tried last
    r = static_cast<int>(raw::Syscall6(SYS_linkat, fd, reinterpret_cast<long>(""), AT_FDCWD,
                                       reinterpret_cast<long>(path), AT_EMPTY_PATH));
  }
  return r;
}

// Renames tmp to path without replacing anything there; -errno on failure.
int RenameNoReplace(const char* tmp, const char* path) {
  int r = static_cast<int>(raw::Syscall6(SYS_renameat2, AT_FDCWD, reinterpret_cast<long>(tmp),
                                         AT_FDCWD, reinterpret_cast<long>(path),
                                         1 /* RENAME_NOREPLACE */));
  if (r == -EINVAL || r == -ENOSYS) {
    r = static_cast<int>(raw::Syscall6(SYS_linkat, AT_FDCWD, reinterpret_cast<long>(tmp),
                                       AT_FDCWD, reinterpret_cast<long>(path), 0));
    if (r == 0) raw::Syscall6(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(tmp), 0);
  }
  return r;
}

}  // namespace

void TraceFile::Reset() {
  path_[0] = '\0';
  dev_ = ino_ = 0;
  handoff_fd_ = -1;
  kept_fd_ = -1;
  first_extent_bytes_ = 0;
  first_extent_err_ = 0;
  mapped_end_ = 0;
  reserved_end_ = 0;
  extend_lock_ = 0;
  image_ = 0;
  header_ = nullptr;
  event_chunks_ = 0;
  event_order_ = 0;
  g_queue_head = g_queue_tail = 0;
  g_queue_lock = 0;
  for (PoolSlot& slot : g_pool) slot = PoolSlot{};
  g_pooled = 0;
}

void TraceFile::SetLimits(uint64_t window_bytes, uint64_t window_s, uint64_t max_bytes) {
  max_bytes_ = max_bytes;
  // Room set aside for the records that are never dropped: event chunks stop growing the
  // file a quarter of the cap (at most 64 MiB) below it.
  const uint64_t aside = max_bytes / 4 < (64ull << 20) ? max_bytes / 4 : (64ull << 20);
  events_limit_ = max_bytes - aside;
  window_bytes_ = window_bytes;
  window_s_ = window_s;
}

void TraceFile::StoreLimits(FileHeader* h, uint64_t ticks_per_sec) {
  Store(&window_ticks_, window_s_ * ticks_per_sec);  // read by AllocEventChunk on any thread
  h->window_bytes = window_bytes_;
  h->window_ticks = window_s_ * ticks_per_sec;
  h->max_bytes = max_bytes_;
}

int TraceFile::HandoverFloor() {
  struct rlimit lim;
  uint64_t soft = 1024;
  if (raw::Syscall6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, reinterpret_cast<long>(&lim)) == 0) {
    soft = lim.rlim_cur;
  }
  const uint64_t cap = soft < 1024 ? soft : 1024;
  if (cap > 64) return static_cast<int>(cap) - kHandoverWindow;
  return cap > 8 ? static_cast<int>(cap / 2) : 3;
}

bool TraceFile::WriteHeader(int fd, uint32_t pid, uint64_t features, uint64_t ticks_per_sec,
                            uint64_t start_ticks, uint64_t mono_ns, uint64_t realtime_ns) {
  // The first extent is mapped whole, but only the header slot and the first chunk are
  // reserved on disk now, and the file is only as long as what is reserved (a
  // reservation extends it): later chunks are reserved, and the file grows, as they are handed out
  // (ReserveTo). No page of the mapping past the reservation is ever touched, so the
  // mapping reaching past the file's end is never a SIGBUS. The file is never sized
  // sparse ahead of its reservation: that cost an ftruncate at creation and another at
  // exit (two journal transactions on ext4) in every process. Under an RLIMIT_FSIZE below
  // one extent the first extent is shorter, and tracing stops, marked truncated, when it
  // is full.
  const uint64_t size = FirstExtentBytes();
  if (size < kMinFirstExtent) {
    create_error_ = EFBIG;
    return false;
  }
  // The header slot needs only its first page on disk (the header is 256 bytes); the
  // rest of the slot stays a hole, never written: 28 KiB less to write per process.
  uint64_t header_page = getauxval(AT_PAGESZ);
  if (header_page < 4096 || header_page > kChunkSize) header_page = kChunkSize;
  int err = -ZeroFill(fd, 0, header_page);
  if (err == 0) err = -ZeroFill(fd, kChunkSize, kMinFirstExtent - kChunkSize);
  if (err != 0) {
    create_error_ = err;
    return false;
  }
  void* p = raw::Mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (raw::MmapFailed(p)) {
    create_error_ = static_cast<int>(-reinterpret_cast<intptr_t>(p));
    return false;
  }
  AdviseFirstExtent(p, size);
  Store(&g_extent_addr[0], static_cast<uint8_t*>(p));
  first_extent_bytes_ = size;
  first_extent_err_ = size < kExtentBytes ? EFBIG : 0;
  Store(&mapped_end_, size);
  Store(&reserved_end_, kMinFirstExtent);
  auto* h = static_cast<FileHeader*>(p);
  h->version_major = format::kVersionMajor;
  h->version_minor = format::kVersionMinor;
  h->header_size = sizeof(FileHeader);
  h->features = features;
  h->chunk_size = kChunkSize;
  h->pid = pid;
  h->start_ticks = start_ticks;
  h->start_mono_ns = mono_ns;
  h->start_realtime_ns = realtime_ns;
  h->ticks_per_sec_hint = ticks_per_sec;
  h->next_chunk_offset = kChunkSize;  // chunk slot 0 holds the header
  h->image_count = 1;
  h->next_string_id = 1;
  h->next_stack_id = 1;
  StoreLimits(h, ticks_per_sec);
  std::memcpy(h->magic, format::kFileMagic, sizeof(h->magic));
  image_ = 0;
  g_extent_finished[0] = 1;  // the header slot never gets a "finished" mark
  return true;
}

bool TraceFile::Create(const char* path, uint32_t pid, uint64_t features,
                       uint64_t ticks_per_sec, uint64_t start_ticks, uint64_t mono_ns,
                       uint64_t realtime_ns) {
  Reset();
  create_error_ = 0;
  if (!MakeAbsolute(path, path_, sizeof(path_))) {
    create_error_ = ENAMETOOLONG;
    path_[0] = '\0';
    return false;
  }
  // No look at the name first: the link or rename below refuses a taken name (a pid
  // reused in the same directory, rare), and every other start saves a path lookup.
  struct stat st;
  char dir[sizeof(path_)];
  std::memcpy(dir, path_, sizeof(dir));
  char* slash = std::strrchr(dir, '/');
  if (slash == dir) slash[1] = '\0'; else *slash = '\0';
  int fd = raw::Open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  char tmp[sizeof(path_) + 64] = {};
  if (fd < 0) {
    // No O_TMPFILE on this filesystem: a hidden temporary name (not *.ctrace), renamed
    // once the header is written.
    if (fd != -EOPNOTSUPP && fd != -EISDIR && fd != -EINVAL) {
      create_error_ = -fd;
      Reset();
      return false;
    }
    std::memcpy(tmp, dir, std::strlen(dir) + 1);
    std::strcat(tmp, "/.colabtrace-tmp.");
    AppendNum(tmp, pid);
    std::strcat(tmp, ".");
    AppendNum(tmp, start_ticks & 0xffffff);
    fd = raw::Open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
      create_error_ = -fd;
      Reset();
      return false;
    }
  }
  auto discard = [&](int err) {
    if (g_extent_addr[0] != nullptr) raw::Munmap(g_extent_addr[0], first_extent_bytes_);
    g_extent_addr[0] = nullptr;
    g_extent_finished[0] = 0;
    raw::Close(fd);
    if (tmp[0] != '\0') raw::Syscall6(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(tmp), 0);
    const int e = err != 0 ? err : create_error_;
    Reset();
    create_error_ = e;
    return false;
  };
  if (!WriteHeader(fd, pid, features, ticks_per_sec, start_ticks, mono_ns, realtime_ns)) {
    return discard(0);
  }
  const int r = tmp[0] == '\0' ? LinkTmpfile(fd, path_) : RenameNoReplace(tmp, path_);
  if (r != 0) return discard(-r);
  tmp[0] = '\0';  // named now: nothing to remove
  if (Fstat(fd, &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
  }
  raw::Close(fd);  // the mapping keeps the file; extensions reopen it by path
  Store(&header_, reinterpret_cast<FileHeader*>(g_extent_addr[0]));
  return true;
}

int TraceFile::Reopen() {
  int fd;
  if (kept_fd_ >= 0) {
    // The program may have closed the number and reused it: the identity check below
    // refuses anything but the trace.
    fd = raw::Fcntl(kept_fd_, F_DUPFD_CLOEXEC, kept_fd_);
  } else {
    if (path_[0] == '\0') return -ENOENT;
    fd = raw::Open(path_, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  }
  if (fd < 0) return fd;
  struct stat st;
  if (Fstat(fd, &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
    raw::Close(fd);
    return -ESTALE;  // renamed away or replaced: never write into someone else's file
  }
  return fd;
}

bool TraceFile::MapExisting(int fd, uint64_t size) {
  // The file is as long as the previous image reserved (WriteHeader, ReserveTo).
  if (size < kMinFirstExtent) return false;
  const uint64_t first = FirstExtentBytes();
  if (first < kMinFirstExtent) return false;
  void* p = raw::Mmap(nullptr, first, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (raw::MmapFailed(p)) return false;
  Store(&g_extent_addr[0], static_cast<uint8_t*>(p));
  first_extent_bytes_ = first;
  first_extent_err_ = first < kExtentBytes ? EFBIG : 0;
  g_extent_finished[0] = 1;
  // Only the extents from the high-water mark on take new chunks; the ones below are
  // the previous image's and stay unmapped.
  const auto* h = static_cast<const FileHeader*>(p);
  const uint64_t hwm = Load(&h->next_chunk_offset);
  // A short trace continues in the first pages, as a new one starts there: without
  // this, the exec'd image's first write fault read ahead over the whole sparse extent
  // (a third of a fork+exec'd tiny program's time on ext4, measured with perf).
  if (hwm < kNoReadAheadBytes) AdviseFirstExtent(p, first);
  // Everything up to the file's end was reserved by the previous image, every chunk
  // below the mark among it.
  Store(&reserved_end_, size);
  uint64_t cur = first;
  while (first == kExtentBytes && cur + kExtentBytes <= size) {
    if (cur + kExtentBytes > hwm) {
      void* e = raw::Mmap(nullptr, kExtentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                          static_cast<off_t>(cur));
      if (raw::MmapFailed(e)) break;
      Store(&g_extent_addr[cur / kExtentBytes], static_cast<uint8_t*>(e));
    }
    cur += kExtentBytes;
  }
  Store(&mapped_end_, cur);
  return true;
}

namespace {
// The descriptor the previous image of process pid handed over (PrepareExecHandoff),
// or -1: one without FD_CLOEXEC in the hand-over window, holding a trace of pid with
// kFlagExecPending.
int FindHandover(uint32_t pid) {
  const int floor = TraceFile::HandoverFloor();
  // Which descriptors of the window are open, in one poll() (POLLNVAL: not open)
  // instead of one fcntl each: nearly always none is, and every process asks.
  struct pollfd window[kHandoverWindow];
  for (int i = 0; i < kHandoverWindow; ++i) window[i] = {floor + i, 0, 0};
  struct timespec no_wait = {0, 0};  // ppoll: aarch64 has no poll system call
  const bool polled = raw::Syscall6(SYS_ppoll, reinterpret_cast<long>(window), kHandoverWindow,
                                    reinterpret_cast<long>(&no_wait), 0, _NSIG / 8) >= 0;
  for (int fd = floor; fd < floor + kHandoverWindow; ++fd) {
    if (polled && (window[fd - floor].revents & POLLNVAL)) continue;
    const int fdflags = raw::Fcntl(fd, F_GETFD);
    if (fdflags < 0 || (fdflags & FD_CLOEXEC)) continue;
    FileHeader h;
    if (raw::Pread(fd, &h, sizeof(h), 0) != sizeof(h)) continue;
    if (format::HasValidMagic(h) && h.pid == pid && h.chunk_size == kChunkSize &&
        (h.flags & format::kFlagExecPending)) {
      return fd;
    }
  }
  return -1;
}
}  // namespace

bool TraceFile::AdoptInherited(uint32_t pid) {
  const int fd = FindHandover(pid);
  if (fd < 0) return false;
  struct stat st;
  if (Fstat(fd, &st) != 0) {
    raw::Close(fd);
    return false;
  }
  Reset();
  char link[48] = "/proc/self/fd/";
  AppendNum(link, static_cast<uint64_t>(fd));
  const long n = raw::Readlink(link, path_, sizeof(path_) - 1);
  path_[n > 0 ? n : 0] = '\0';
  dev_ = st.st_dev;
  ino_ = st.st_ino;
  const bool mapped = MapExisting(fd, static_cast<uint64_t>(st.st_size));
  if (!mapped) {
    raw::Close(fd);
    Reset();
    return false;
  }
  if (const int probe = Reopen(); probe >= 0) {
    raw::Close(probe);
    raw::Close(fd);  // the program never sees it
  } else {
    raw::Fcntl(fd, F_SETFD, FD_CLOEXEC);  // not openable by path: kept (see kept_fd_)
    kept_fd_ = fd;
  }
  auto* hp = reinterpret_cast<FileHeader*>(g_extent_addr[0]);
  // This image's window starts empty: the previous image's event chunks stay as they are
  // (they were within its own window), and are never rewritten.
  StoreLimits(hp, hp->ticks_per_sec_hint);
  image_ = __atomic_fetch_add(&hp->image_count, 1, __ATOMIC_ACQ_REL);
  __atomic_fetch_and(&hp->flags, ~static_cast<uint32_t>(format::kFlagExecPending),
                     __ATOMIC_ACQ_REL);
  Store(&header_, hp);
  return true;
}

void TraceFile::CloseInherited(uint32_t pid) {
  const int fd = FindHandover(pid);
  if (fd >= 0) raw::Close(fd);
}

bool TraceFile::MapTo(uint64_t end, bool may_block, bool speculative) {
  if (end <= Load(&mapped_end_)) return true;
  while (__atomic_exchange_n(&extend_lock_, 1, __ATOMIC_ACQUIRE) != 0) {
    if (!may_block) return false;
    raw::Syscall6(SYS_sched_yield);
  }
  bool ok = true;
  int fd = -1;
  uint64_t cur = Load(&mapped_end_);
  while (cur < end) {
    const uint64_t next = cur + kExtentBytes;
    int err = 0;
    if (cur % kExtentBytes != 0) {
      err = first_extent_err_ != 0 ? first_extent_err_ : ENOSPC;  // a short start stays short
    } else if (next > kMaxTraceBytes || next > FileSizeLimit()) {
      err = EFBIG;
    } else {
      // Mapped, not reserved (the mapping may reach past the file's end): ReserveTo
      // reserves each chunk's blocks, and extends the file, before the chunk is handed
      // out, so no page of the mapping is written without disk behind it.
      if (fd < 0) fd = Reopen();
      if (fd < 0) err = -fd;
    }
    if (err == 0) {
      void* p = raw::Mmap(nullptr, kExtentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                          static_cast<off_t>(cur));
      if (raw::MmapFailed(p)) {
        err = static_cast<int>(-reinterpret_cast<intptr_t>(p));
      } else {
        AfterMap();
        Store(&g_extent_addr[cur / kExtentBytes], static_cast<uint8_t*>(p));
      }
    }
    if (err != 0) {
      // A look-ahead that fails stops nothing: the chunks already mapped still fill.
      if (!speculative) MarkTruncated(err);
      ok = false;
      break;
    }
    cur = next;
    Store(&mapped_end_, cur);
  }
  if (fd >= 0) raw::Close(fd);
  __atomic_store_n(&extend_lock_, 0, __ATOMIC_RELEASE);
  return ok;
}

bool TraceFile::ReserveTo(uint64_t end, bool may_block) {
  if (end <= Load(&reserved_end_)) return true;
  while (__atomic_exchange_n(&extend_lock_, 1, __ATOMIC_ACQUIRE) != 0) {
    if (!may_block) return false;
    raw::Syscall6(SYS_sched_yield);
  }
  bool ok = true;
  const uint64_t cur = Load(&reserved_end_);
  if (cur < end) {
    // As much again as is reserved (at most one extent, never past what is mapped), so
    // a long trace reserves rarely and a short one holds at most its own size unused.
    const uint64_t mapped = Load(&mapped_end_);
    uint64_t target = cur + (cur < kExtentBytes ? cur : kExtentBytes);
    if (target > mapped) target = mapped;
    if (max_bytes_ != 0 && target > max_bytes_) target = max_bytes_;  // the file never passes the cap
    if (target < end) target = end;
    const int fd = Reopen();
    int r = fd < 0 ? fd : Reserve(fd, cur, target - cur);
    if (r < 0 && fd >= 0 && target > end) {
      target = end;  // a nearly full disk may still hold this one chunk
      r = Reserve(fd, cur, target - cur);
    }
    if (fd >= 0) raw::Close(fd);
    if (r < 0) {
      MarkTruncated(-r);
      ok = false;
    } else {
      Store(&reserved_end_, target);
    }
  }
  __atomic_store_n(&extend_lock_, 0, __ATOMIC_RELEASE);
  return ok;
}

uint8_t* TraceFile::GrowChunk(bool may_block, uint64_t limit, uint64_t* offset) {
  FileHeader* h = Load(&header_);
  if (h == nullptr) return nullptr;
  constexpr uint32_t kStop = format::kFlagTruncated | format::kFlagClosing;
  if (Load(&h->flags) & kStop) return nullptr;
  uint64_t off = Load(&h->next_chunk_offset);
  do {
    if (off + kChunkSize > limit) return nullptr;
  } while (!__atomic_compare_exchange_n(&h->next_chunk_offset, &off, off + kChunkSize, true,
                                        __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  // Re-check after claiming: Close() reads the high-water mark after setting
  // kFlagClosing, so a chunk claimed after that is never used.
  if (__atomic_load_n(&h->flags, __ATOMIC_SEQ_CST) & kStop) return nullptr;
  if (!MapTo(off + kChunkSize, may_block, /*speculative=*/false)) return nullptr;
  if (!ReserveTo(off + kChunkSize, may_block)) return nullptr;
  // Stay one extent ahead so that threads rarely wait on an extension.
  if (off + kChunkSize + kExtentBytes / 2 > Load(&mapped_end_) &&
      (max_bytes_ == 0 || Load(&mapped_end_) + kExtentBytes <= max_bytes_)) {
    MapTo(Load(&mapped_end_) + kExtentBytes, false, /*speculative=*/true);
  }
  if (offset != nullptr) *offset = off;
  return Load(&g_extent_addr[off / kExtentBytes]) + off % kExtentBytes;
}

void TraceFile::SetCapped() {
  FileHeader* h = Load(&header_);
  if (h != nullptr && (Load(&h->flags) & format::kFlagCapped) == 0) {
    __atomic_fetch_or(&h->flags, static_cast<uint32_t>(format::kFlagCapped), __ATOMIC_ACQ_REL);
  }
}

uint8_t* TraceFile::TakeOldestEventChunk(bool may_block, uint64_t* offset) {
  if (Load(&header_) == nullptr || !LockQueue(may_block)) return nullptr;
  LeftChunk left;
  const bool got = PopOldestLocked(&left);
  UnlockQueue();
  return got ? RewriteLeftChunk(left, offset) : nullptr;
}

bool TraceFile::PopOldestLocked(LeftChunk* out) {
  if (g_queue_head == g_queue_tail) return false;
  const uint64_t slot = g_queue_head++ % kQueueSlots;
  out->offset = static_cast<uint64_t>(g_queue_chunk[slot]) * kChunkSize;
  out->end_ticks = g_queue_end[slot];
  return true;
}

uint8_t* TraceFile::RewriteLeftChunk(const LeftChunk& left, uint64_t* offset) {
  FileHeader* h = Load(&header_);
  const uint64_t off = left.offset;
  const uint64_t end_ticks = left.end_ticks;
  // Its events give way: say so first, so that a kill from here on leaves a header that
  // claims no more in full than the file holds.
  uint64_t seen = Load(&h->dropped_until_ticks);
  while (seen < end_ticks && !__atomic_compare_exchange_n(&h->dropped_until_ticks, &seen, end_ticks, true,
                                                          __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
  }
  // A mapping of its own: its extent may be unmapped already, or still hold chunks that
  // other threads fill (whose finished count it must not touch). A file that cannot be
  // mapped again (renamed away, replaced) stops tracing, as an extension would.
  const int fd = Reopen();
  if (fd < 0) {
    MarkTruncated(-fd);
    return nullptr;
  }
  void* p = raw::Mmap(nullptr, kChunkSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(off));
  raw::Close(fd);
  if (raw::MmapFailed(p)) {
    MarkTruncated(static_cast<int>(-reinterpret_cast<intptr_t>(p)));
    return nullptr;
  }
  AfterMap();
  auto* c = static_cast<uint8_t*>(p);
  // The magic first: a reader never sees the chunk half rewritten.
  __atomic_store_n(reinterpret_cast<uint32_t*>(c), 0u, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  ZeroWords(c + 8, kChunkSize - 8);
  __atomic_store_n(reinterpret_cast<uint32_t*>(c + 4), 0u, __ATOMIC_RELAXED);
  __atomic_fetch_add(&h->recycled_chunks, 1, __ATOMIC_RELAXED);
  if (offset != nullptr) *offset = off;
  return c;
}

uint8_t* TraceFile::AllocChunk(bool may_block, bool* own_map) {
  if (own_map != nullptr) *own_map = false;
  const uint64_t limit = max_bytes_ != 0 ? max_bytes_ : kMaxTraceBytes;
  if (uint8_t* c = GrowChunk(may_block, limit, nullptr); c != nullptr) return c;
  FileHeader* h = Load(&header_);
  if (h == nullptr || (Load(&h->flags) & (format::kFlagTruncated | format::kFlagClosing))) return nullptr;
  // At the cap: the records that are never dropped take the oldest event chunk's place.
  if (own_map != nullptr && max_bytes_ != 0) {
    if (uint8_t* c = TakeOldestEventChunk(may_block, nullptr); c != nullptr) {
      SetCapped();
      *own_map = true;
      return c;
    }
  }
  if (Load(&h->next_chunk_offset) + kChunkSize > limit) MarkTruncated(EFBIG);
  return nullptr;
}

uint8_t* TraceFile::AllocEventChunk(uint64_t now, bool* own_map, uint64_t* offset) {
  *own_map = false;
  *offset = 0;
  FileHeader* h = Load(&header_);
  if (h == nullptr) return nullptr;
  if (Load(&h->flags) & (format::kFlagTruncated | format::kFlagClosing)) return nullptr;
  if (window_bytes_ == 0) return GrowChunk(true, kMaxTraceBytes, offset);  // no window set
  bool take_oldest = false, at_cap = false;
  if (!LockQueue(true)) return nullptr;
  const bool queued = g_queue_head != g_queue_tail;
  at_cap = Load(&h->next_chunk_offset) + kChunkSize > events_limit_;
  if (queued) {
    const bool full = event_chunks_ * kChunkSize >= window_bytes_;
    const uint64_t oldest_end = g_queue_end[g_queue_head % kQueueSlots];
    const uint64_t ticks = Load(&window_ticks_);
    const bool aged = ticks != 0 && now > ticks && oldest_end < now - ticks;
    take_oldest = full || aged || at_cap;
    at_cap = at_cap && !full && !aged;
  }
  // The chunk to rewrite is taken off the queue under the same lock that saw it there:
  // taken after the unlock, another thread could take it first, and this record would
  // be neither written nor counted.
  LeftChunk left;
  if (take_oldest) take_oldest = PopOldestLocked(&left);
  if (!take_oldest && !at_cap) ++event_chunks_;
  UnlockQueue();
  if (take_oldest) {
    if (at_cap) SetCapped();
    uint8_t* c = RewriteLeftChunk(left, offset);
    if (c != nullptr) *own_map = true;
    return c;
  }
  if (!at_cap) {
    if (uint8_t* c = GrowChunk(true, events_limit_, offset); c != nullptr) return c;
    if (Load(&h->flags) & (format::kFlagTruncated | format::kFlagClosing)) return nullptr;
  }
  // The cap leaves no room and every event chunk is some thread's current one: this
  // record is not written, only counted.
  SetCapped();
  __atomic_fetch_add(&h->events_lost, 1, __ATOMIC_RELAXED);
  return nullptr;
}

void TraceFile::ReleaseChunk(uint8_t* chunk, bool own_map) {
  if (own_map) {
    BeforeUnmap();
    raw::Munmap(chunk, kChunkSize);
    return;
  }
  // Find the extent holding this chunk; unmap it once every chunk in it is finished,
  // so that a long trace does not keep growing the host's RSS. An extent that stays
  // mapped for good (the first, or one holding an I/O aggregate chunk) gives up the
  // finished chunk's pages instead: its bytes stay in the file and the page cache.
  const uint64_t extents = Load(&mapped_end_) / kExtentBytes;
  if (InFirstExtent(chunk)) {
    if (Load(&g_extent_kept[0])) GiveUpPages(chunk);
    return;
  }
  for (uint64_t i = 1; i < extents; ++i) {
    uint8_t* base = Load(&g_extent_addr[i]);
    if (base == nullptr || chunk < base || chunk >= base + kExtentBytes) continue;
    if (__atomic_add_fetch(&g_extent_finished[i], 1, __ATOMIC_ACQ_REL) == kChunksPerExtent) {
      Store(&g_extent_addr[i], static_cast<uint8_t*>(nullptr));
      BeforeUnmap();
      raw::Munmap(base, kExtentBytes);
    } else if (Load(&g_extent_kept[i])) {
      GiveUpPages(chunk);
    }
    return;
  }
}

bool TraceFile::InFirstExtent(const uint8_t* chunk) const {
  const uint8_t* first = Load(&g_extent_addr[0]);
  return first != nullptr && chunk >= first && chunk < first + first_extent_bytes_;
}

void TraceFile::KeepsMapped(const uint8_t* chunk) {
  if (InFirstExtent(chunk)) {
    Store(&g_extent_kept[0], uint8_t{1});
    return;
  }
  const uint64_t extents = Load(&mapped_end_) / kExtentBytes;
  for (uint64_t i = 1; i < extents; ++i) {
    const uint8_t* base = Load(&g_extent_addr[i]);
    if (base != nullptr && chunk >= base && chunk < base + kExtentBytes) {
      Store(&g_extent_kept[i], uint8_t{1});
      return;
    }
  }
}

namespace {
// Under the queue lock: puts the event chunk at file index `index` on the queue.
void QueueEventChunk(uint64_t index, uint64_t end_ticks) {
  if (g_queue_tail - g_queue_head < kQueueSlots) {
    const uint64_t slot = g_queue_tail++ % kQueueSlots;
    g_queue_chunk[slot] = static_cast<uint32_t>(index);
    g_queue_end[slot] = end_ticks;
  }
}
}  // namespace

void TraceFile::ReleaseEventChunk(uint8_t* chunk, bool own_map, uint64_t offset, uint64_t end_ticks) {
  const uint64_t index = offset / kChunkSize;
  if (window_bytes_ != 0 && index != 0 && LockQueue(true)) {
    QueueEventChunk(index, end_ticks);
    UnlockQueue();
  }
  ReleaseChunk(chunk, own_map);
}

bool TraceFile::RetireEventChunk(uint8_t* chunk, bool own_map, uint64_t offset, uint64_t end_ticks, uint64_t events) {
  FileHeader* h = Load(&header_);
  const uint64_t index = offset / kChunkSize;
  const bool retire = h != nullptr && window_bytes_ != 0 && index != 0;
  if (retire && LockQueue(true)) {
    // Under the lock, so that each mark is the header's value right after its own events
    // were added: a reader takes the chunk as counted there iff the header has reached it.
    const uint64_t counted = Load(&h->events_retired) + events;
    auto* eh = reinterpret_cast<format::EventChunkHeader*>(chunk);
    Store(&eh->retired, counted + 1);
    Store(&h->events_retired, counted);
    QueueEventChunk(index, end_ticks);
    UnlockQueue();
  }
  ReleaseChunk(chunk, own_map);
  return retire;
}

uint8_t* TraceFile::MapChunkAlone(uint8_t* chunk) {
  const uint64_t extents = Load(&mapped_end_) / kExtentBytes;
  for (uint64_t i = 1; i < extents; ++i) {
    uint8_t* base = Load(&g_extent_addr[i]);
    if (base == nullptr || chunk < base || chunk >= base + kExtentBytes) continue;
    const int fd = Reopen();
    if (fd < 0) return nullptr;
    const uint64_t off = i * kExtentBytes + static_cast<uint64_t>(chunk - base);
    void* p = raw::Mmap(nullptr, kChunkSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(off));
    raw::Close(fd);
    if (raw::MmapFailed(p)) return nullptr;
    AfterMap();
    ReleaseChunk(chunk);  // the extent's view: finished there, so the extent may go
    return static_cast<uint8_t*>(p);
  }
  return nullptr;
}

bool TraceFile::PoolRecordChunk(const LeftRecordChunk& left) {
  if (Load(&header_) == nullptr) return false;
  for (PoolSlot& slot : g_pool) {
    uint32_t empty = kSlotEmpty;
    if (Load(&slot.state) != kSlotEmpty ||
        !__atomic_compare_exchange_n(&slot.state, &empty, kSlotBusy, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      continue;
    }
    LeftRecordChunk kept = left;
    if (!kept.own_map && !InFirstExtent(kept.chunk)) {
      // Left in its extent, it would keep the whole extent mapped (and its finished
      // chunks' pages resident) for as long as it waits here. Once per chunk: a chunk
      // taken from the pool comes back with its own mapping.
      kept.chunk = MapChunkAlone(kept.chunk);
      if (kept.chunk == nullptr) {
        Store(&slot.state, uint32_t{kSlotEmpty});
        return false;
      }
      kept.own_map = true;
    }
    slot.left = kept;
    Store(&slot.state, uint32_t{kSlotFull});
    __atomic_fetch_add(&g_pooled, 1, __ATOMIC_RELAXED);
    return true;
  }
  return false;
}

bool TraceFile::TakePooledRecordChunk(size_t need, LeftRecordChunk* out) {
  for (PoolSlot& slot : g_pool) {
    if (__atomic_load_n(&g_pooled, __ATOMIC_RELAXED) <= 0) return false;
    uint32_t full = kSlotFull;
    if (Load(&slot.state) != kSlotFull ||
        !__atomic_compare_exchange_n(&slot.state, &full, kSlotBusy, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
      continue;
    }
    const LeftRecordChunk left = slot.left;
    Store(&slot.state, uint32_t{kSlotEmpty});
    __atomic_fetch_sub(&g_pooled, 1, __ATOMIC_RELAXED);
    if (kChunkSize - left.used > need) {
      *out = left;
      return true;
    }
    ReleaseChunk(left.chunk, left.own_map);  // too full for this record: finished
  }
  return false;
}

void TraceFile::MarkTruncated(int err) {
  FileHeader* h = Load(&header_);
  if (h == nullptr) {
    // Still creating: the header is in extent 0 if that is mapped.
    h = reinterpret_cast<FileHeader*>(Load(&g_extent_addr[0]));
    if (h == nullptr) return;
  }
  uint32_t zero = 0;
  __atomic_compare_exchange_n(&h->truncation_errno, &zero, static_cast<uint32_t>(err), false,
                              __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
  if ((Load(&h->flags) & format::kFlagTruncated) == 0) {
    Store(&h->truncated_at_offset, Load(&mapped_end_));
  }
  __atomic_fetch_or(&h->flags, static_cast<uint32_t>(format::kFlagTruncated), __ATOMIC_ACQ_REL);
}

void TraceFile::Close() {
  FileHeader* h = Load(&header_);
  if (h == nullptr) return;
  __atomic_fetch_or(&h->flags, static_cast<uint32_t>(format::kFlagClosing), __ATOMIC_SEQ_CST);
  __atomic_load_n(&h->next_chunk_offset, __ATOMIC_SEQ_CST);  // orders the claims before us
  // Nothing to trim: the file is exactly as long as its reservation, and every chunk in
  // use lies in it. The reserved zeros past the last chunk (at most the trace's own size,
  // and at most one extent; ReserveTo) stay: freeing reserved blocks costs a journal
  // transaction (0.3 to 6 ms measured on a busy ext4).
  __atomic_fetch_or(&h->flags, static_cast<uint32_t>(format::kFlagEnded), __ATOMIC_ACQ_REL);
}

void TraceFile::PrepareExecHandoff() {
  FileHeader* h = Load(&header_);
  if (h == nullptr || handoff_fd_ >= 0) return;
  const int fd = Reopen();
  if (fd < 0) return;
  const int floor = HandoverFloor();
  const int high = raw::Fcntl(fd, F_DUPFD, floor);  // no FD_CLOEXEC: it crosses exec
  raw::Close(fd);
  if (high < 0) return;
  if (high >= floor + kHandoverWindow) {  // the next image would not look there
    raw::Close(high);
    return;
  }
  handoff_fd_ = high;
  __atomic_fetch_or(&h->flags, static_cast<uint32_t>(format::kFlagExecPending), __ATOMIC_ACQ_REL);
}

void TraceFile::UndoExecHandoff() {
  FileHeader* h = Load(&header_);
  if (h == nullptr || handoff_fd_ < 0) return;
  __atomic_fetch_and(&h->flags, ~static_cast<uint32_t>(format::kFlagExecPending),
                     __ATOMIC_ACQ_REL);
  raw::Close(handoff_fd_);
  handoff_fd_ = -1;
}

void TraceFile::AbandonInChild() {
  for (PoolSlot& slot : g_pool) {  // the parent's pooled chunks mapped on their own
    if (slot.state == kSlotFull && slot.left.own_map) raw::Munmap(slot.left.chunk, kChunkSize);
  }
  const uint64_t extents = (Load(&mapped_end_) + kExtentBytes - 1) / kExtentBytes;
  for (uint64_t i = 0; i < extents; ++i) {
    if (g_extent_addr[i] != nullptr) {
      raw::Munmap(g_extent_addr[i], i == 0 ? first_extent_bytes_ : kExtentBytes);
    }
    g_extent_addr[i] = nullptr;
    g_extent_finished[i] = 0;
    g_extent_kept[i] = 0;
  }
  if (handoff_fd_ >= 0) raw::Close(handoff_fd_);
  if (kept_fd_ >= 0) raw::Close(kept_fd_);
  Reset();
}

}  // namespace colabtrace::shim
