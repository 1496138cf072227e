// Raw system calls for the shim's own I/O.
//
// The shim never calls the libc functions it hooks for its own work: these go straight
// to the kernel, so they are never traced, never re-enter a hook, and are
// async-signal-safe. Each returns the kernel's result (-errno on failure) and leaves
// errno alone.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace colabtrace::shim::raw {

// A syscall that never touches errno: x86-64 and aarch64 inline assembly.
#if defined(__x86_64__)
inline long Syscall6(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                     long f = 0) {
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
inline long Syscall6(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0,
                     long f = 0) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}
#else
#error "colabtrace's shim supports x86-64 and aarch64"
#endif

inline int OpenAt(int dirfd, const char* path, int flags, int mode = 0) {
  return static_cast<int>(Syscall6(SYS_openat, dirfd, reinterpret_cast<long>(path), flags, mode));
}
inline int Open(const char* path, int flags, int mode = 0) {
  return OpenAt(AT_FDCWD, path, flags, mode);
}
inline long Read(int fd, void* buf, size_t n) {
  return Syscall6(SYS_read, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}
inline long Pread(int fd, void* buf, size_t n, off_t off) {
  return Syscall6(SYS_pread64, fd, reinterpret_cast<long>(buf), static_cast<long>(n), off);
}
inline long Write(int fd, const void* buf, size_t n) {
  return Syscall6(SYS_write, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}
inline int Close(int fd) { return static_cast<int>(Syscall6(SYS_close, fd)); }
inline int Ftruncate(int fd, off_t len) {
  return static_cast<int>(Syscall6(SYS_ftruncate, fd, len));
}
inline int Fcntl(int fd, int cmd, long arg = 0) {
  return static_cast<int>(Syscall6(SYS_fcntl, fd, cmd, arg));
}
inline void* Mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  return reinterpret_cast<void*>(Syscall6(SYS_mmap, reinterpret_cast<long>(addr),
                                          static_cast<long>(len), prot, flags, fd, off));
}
inline bool MmapFailed(void* p) {
  return reinterpret_cast<uintptr_t>(p) > static_cast<uintptr_t>(-4096);
}
inline int Munmap(void* addr, size_t len) {
  return static_cast<int>(Syscall6(SYS_munmap, reinterpret_cast<long>(addr), static_cast<long>(len)));
}
inline int Getpid() { return static_cast<int>(Syscall6(SYS_getpid)); }

// True on a signal handler's alternate stack (sigaltstack), which may be small: Rust's
// stack-overflow handler gets 8 KiB, and a handler may write or _exit there.
inline bool OnAlternateSignalStack() {
  stack_t ss;
  return Syscall6(SYS_sigaltstack, 0, reinterpret_cast<long>(&ss)) == 0 && (ss.ss_flags & SS_ONSTACK) != 0;
}
inline int Getppid() { return static_cast<int>(Syscall6(SYS_getppid)); }
inline int Gettid() { return static_cast<int>(Syscall6(SYS_gettid)); }
inline long Readlink(const char* path, char* buf, size_t n) {
  return Syscall6(SYS_readlinkat, AT_FDCWD, reinterpret_cast<long>(path),
                  reinterpret_cast<long>(buf), static_cast<long>(n));
}
inline long Getdents64(int fd, void* buf, size_t n) {
  return Syscall6(SYS_getdents64, fd, reinterpret_cast<long>(buf), static_cast<long>(n));
}
// One entry of a getdents64 buffer (the kernel's struct linux_dirent64).
struct Dirent64 {
  uint64_t ino;
  int64_t off;
  uint16_t reclen;
  uint8_t type;
  char name[1];
};

// Calls fn(name) for each entry of the directory at path ("." and ".." included), with
// no allocation. Returns false when the directory could not be opened.
template <class Fn> inline bool ForEachDirEntry(const char* path, Fn&& fn) {
  const int dfd = Open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) return false;
  alignas(8) char dents[4096];
  for (;;) {
    const long n = Getdents64(dfd, dents, sizeof(dents));
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const Dirent64*>(dents + off);
      off += d->reclen;
      fn(static_cast<const char*>(d->name));
    }
  }
  Close(dfd);
  return true;
}

inline int Kill(int pid, int sig) { return static_cast<int>(Syscall6(SYS_kill, pid, sig)); }
inline int Tgkill(int pid, int tid, int sig) {
  return static_cast<int>(Syscall6(SYS_tgkill, pid, tid, sig));
}

// Reads up to n-1 bytes of a small file (procfs, sysfs) and NUL-terminates. Returns the
// byte count, or -1.
inline long ReadSmallFile(const char* path, char* buf, size_t n) {
  const int fd = Open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < n) {
    const size_t want = n - 1 - got;
    const long r = Read(fd, buf + got, want);
    if (r <= 0) break;
    got += static_cast<size_t>(r);
    // A short read is the end: a regular file's, or that of a /proc or /sys file the
    // kernel formats whole on the first read (all this is used for). Saves the second
    // read() that only returned 0.
    if (static_cast<size_t>(r) < want) break;
  }
  Close(fd);
  buf[got] = '\0';
  return static_cast<long>(got);
}

}  // namespace colabtrace::shim::raw
