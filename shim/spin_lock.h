// A spin lock for the shim's cold paths (taking chunks, registering mounts, the current
// directory, NCCL communicators): one word, no allocation, no system call, so that it
// may be taken where a mutex may not (before the C library is ready, in a fork child).
// Held for a few stores or system calls at most; never on a per-call hot path.
#pragma once

namespace colabtrace::shim {

// The pause a spin-wait loop makes between looks (x86's `pause`; nothing elsewhere).
inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#endif
}

class SpinLock {
 public:
  void Lock() {
    while (__atomic_exchange_n(&v_, 1, __ATOMIC_ACQUIRE) != 0) CpuRelax();
  }
  void Unlock() { __atomic_store_n(&v_, 0, __ATOMIC_RELEASE); }
  void Reset() { v_ = 0; }  // fork child: the holder may not exist here

 private:
  int v_ = 0;
};

}  // namespace colabtrace::shim
