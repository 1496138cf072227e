#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>

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

// The kernel's getdents64 record.
struct LinuxDirent64 {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

// One TraceFile exists per process, so the extent table is static storage.
uint8_t* g_extent_addr[kMaxExtents];
uint16_t g_extent_finished[kMaxExtents];

template <class T> T Load(const T* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
template <class T> void Store(T* p, T v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// Writes zeros over [off, off+len) for filesystems without fallocate().
int ZeroFill(int fd, uint64_t off, uint64_t len) {
  static const uint8_t kZeros[4096] = {};
  while (len > 0) {
    const size_t n = len < sizeof(kZeros) ? len : sizeof(kZeros);
    long w = raw::Syscall6(SYS_pwrite64, fd, reinterpret_cast<long>(kZeros),
                           static_cast<long>(n), static_cast<long>(off));
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

bool TraceFile::Create(const char* path, uint32_t pid, uint64_t features,
                       uint64_t ticks_per_sec, uint64_t start_ticks, uint64_t mono_ns,
                       uint64_t realtime_ns) {
  fd_ = raw::Open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd_ < 0) return false;
  if (!MapTo(kExtentBytes, true)) {
    // No room for even the first extent (full disk, a small RLIMIT_FSIZE): remove the
    // empty file we just created, so the caller does not take it for a name in use.
    raw::Close(fd_);
    raw::Syscall6(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(path), 0);
    fd_ = -1;
    return false;
  }
  auto* h = reinterpret_cast<FileHeader*>(g_extent_addr[0]);
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
  std::memcpy(h->magic, format::kFileMagic, sizeof(h->magic));
  image_ = 0;
  g_extent_finished[0] = 1;  // the header slot never gets a "finished" mark
  Store(&header_, h);
  return true;
}

bool TraceFile::Adopt(int fd, uint32_t pid) {
  FileHeader h;
  if (raw::Pread(fd, &h, sizeof(h), 0) != sizeof(h)) return false;
  if (!format::HasValidMagic(h) || h.pid != pid || h.chunk_size != kChunkSize) return false;
  if ((h.flags & format::kFlagExecPending) == 0) return false;
  struct stat st;
  if (raw::Syscall6(SYS_fstat, fd, reinterpret_cast<long>(&st)) != 0) return false;
  fd_ = fd;
  raw::Fcntl(fd_, F_SETFD, FD_CLOEXEC);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (!MapTo(size < kExtentBytes ? kExtentBytes : size, true)) {
    fd_ = -1;
    return false;
  }
  auto* hp = reinterpret_cast<FileHeader*>(g_extent_addr[0]);
  image_ = __atomic_fetch_add(&hp->image_count, 1, __ATOMIC_ACQ_REL);
  __atomic_fetch_and(&hp->flags, ~static_cast<uint32_t>(format::kFlagExecPending),
                     __ATOMIC_ACQ_REL);
  // Chunks the previous image left unfinished are never released; mark the extents
  // it filled as done so the new image can unmap them as its own chunks complete.
  Store(&header_, hp);
  return true;
}

int TraceFile::FindInheritedTrace(uint32_t pid) {
  const int dir = raw::Open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return -1;
  alignas(8) char buf[4096];
  int found = -1;
  for (;;) {
    const long n = raw::Getdents64(dir, buf, sizeof(buf));
    if (n <= 0) break;
    for (long pos = 0; pos < n && found < 0;) {
      auto* d = reinterpret_cast<const LinuxDirent64*>(buf + pos);
      pos += d->reclen;
      int fd = 0;
      bool numeric = d->name[0] != '\0';
      for (const char* c = d->name; *c; ++c) {
        if (*c < '0' || *c > '9') numeric = false;
        else fd = fd * 10 + (*c - '0');
      }
      if (!numeric || fd == dir) continue;
      char link[64] = "/proc/self/fd/";
      std::memcpy(link + 14, d->name, strnlen(d->name, 40) + 1);
      char target[512];
      const long len = raw::Readlink(link, target, sizeof(target) - 1);
      if (len < 7) continue;
      target[len] = '\0';
      if (std::memcmp(target + len - 7, ".ctrace", 7) != 0) continue;
      FileHeader h;
      if (raw::Pread(fd, &h, sizeof(h), 0) != sizeof(h)) continue;
      if (format::HasValidMagic(h) && h.pid == pid && (h.flags & format::kFlagExecPending)) {
        found = fd;
      }
    }
    if (found >= 0) break;
  }
  raw::Close(dir);
  return found;
}

bool TraceFile::MapTo(uint64_t end, bool may_block) {
  if (end <= Load(&mapped_end_)) return true;
  while (__atomic_exchange_n(&extend_lock_, 1, __ATOMIC_ACQUIRE) != 0) {
    if (!may_block) return false;
    raw::Syscall6(SYS_sched_yield);
  }
  bool ok = true;
  uint64_t cur = Load(&mapped_end_);
  while (cur < end) {
    const uint64_t next = cur + kExtentBytes;
    int err = 0;
    if (next > kMaxTraceBytes || next > FileSizeLimit()) {
      err = EFBIG;
    } else {
      int r = raw::Fallocate(fd_, 0, static_cast<off_t>(cur), kExtentBytes);
      if (r == -EOPNOTSUPP || r == -ENOSYS) r = ZeroFill(fd_, cur, kExtentBytes);
      if (r < 0) err = -r;
    }
    if (err == 0) {
      void* p = raw::Mmap(nullptr, kExtentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd_,
                          static_cast<off_t>(cur));
      if (raw::MmapFailed(p)) {
        err = static_cast<int>(-reinterpret_cast<intptr_t>(p));
      } else {
        Store(&g_extent_addr[cur / kExtentBytes], static_cast<uint8_t*>(p));
      }
    }
    if (err != 0) {
      MarkTruncated(err);
      ok = false;
      break;
    }
    cur = next;
    Store(&mapped_end_, cur);
  }
  __atomic_store_n(&extend_lock_, 0, __ATOMIC_RELEASE);
  return ok;
}

uint8_t* TraceFile::AllocChunk(bool may_block) {
  FileHeader* h = Load(&header_);
  if (h == nullptr) return nullptr;
  constexpr uint32_t kStop = format::kFlagTruncated | format::kFlagClosing;
  if (Load(&h->flags) & kStop) return nullptr;
  const uint64_t off = __atomic_fetch_add(&h->next_chunk_offset, kChunkSize, __ATOMIC_SEQ_CST);
  // Re-check after claiming: Close() reads the high-water mark after setting
  // kFlagClosing, so a chunk claimed after that is never used.
  if (__atomic_load_n(&h->flags, __ATOMIC_SEQ_CST) & kStop) return nullptr;
  if (!MapTo(off + kChunkSize, may_block)) return nullptr;
  // Stay one extent ahead so that threads rarely wait on an extension.
  if (off + kChunkSize + kExtentBytes / 2 > Load(&mapped_end_)) {
    MapTo(Load(&mapped_end_) + kExtentBytes, false);
  }
  return Load(&g_extent_addr[off / kExtentBytes]) + off % kExtentBytes;
}

void TraceFile::ReleaseChunk(uint8_t* chunk) {
  // Find the extent holding this chunk; unmap it once every chunk in it is finished,
  // so that a long trace does not keep growing the host's RSS.
  const uint64_t extents = Load(&mapped_end_) / kExtentBytes;
  for (uint64_t i = 1; i < extents; ++i) {
    uint8_t* base = Load(&g_extent_addr[i]);
    if (base == nullptr || chunk < base || chunk >= base + kExtentBytes) continue;
    if (__atomic_add_fetch(&g_extent_finished[i], 1, __ATOMIC_ACQ_REL) == kChunksPerExtent) {
      Store(&g_extent_addr[i], static_cast<uint8_t*>(nullptr));
      raw::Munmap(base, kExtentBytes);
    }
    return;
  }
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
  const uint64_t hwm = __atomic_load_n(&h->next_chunk_offset, __ATOMIC_SEQ_CST);
  const uint64_t mapped = Load(&mapped_end_);
  const uint64_t end = hwm < mapped ? hwm : mapped;
  // Never grows the file (so never SIGXFSZ); every chunk in use lies below `end`.
  raw::Ftruncate(fd_, static_cast<off_t>(end));
  __atomic_fetch_or(&h->flags, static_cast<uint32_t>(format::kFlagEnded), __ATOMIC_ACQ_REL);
}

void TraceFile::PrepareExecHandoff() {
  FileHeader* h = Load(&header_);
  if (h == nullptr) return;
  raw::Fcntl(fd_, F_SETFD, 0);
  __atomic_fetch_or(&h->flags, static_cast<uint32_t>(format::kFlagExecPending), __ATOMIC_ACQ_REL);
}

void TraceFile::UndoExecHandoff() {
  FileHeader* h = Load(&header_);
  if (h == nullptr) return;
  __atomic_fetch_and(&h->flags, ~static_cast<uint32_t>(format::kFlagExecPending),
                     __ATOMIC_ACQ_REL);
  raw::Fcntl(fd_, F_SETFD, FD_CLOEXEC);
}

void TraceFile::AbandonInChild() {
  const uint64_t extents = Load(&mapped_end_) / kExtentBytes;
  for (uint64_t i = 0; i < extents; ++i) {
    if (g_extent_addr[i] != nullptr) raw::Munmap(g_extent_addr[i], kExtentBytes);
    g_extent_addr[i] = nullptr;
    g_extent_finished[i] = 0;
  }
  if (fd_ >= 0) raw::Close(fd_);
  fd_ = -1;
  header_ = nullptr;
  mapped_end_ = 0;
  extend_lock_ = 0;
  image_ = 0;
}

}  // namespace colabtrace::shim
