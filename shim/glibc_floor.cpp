// The shim's glibc floor: it loads into programs on glibc 2.28 and later (the wheel's
// manylinux_2_28 tag), though it is built against the build machine's newer glibc.
//
// A preloaded object that needs a symbol version the process's glibc lacks is fatal to
// every program it is preloaded into (the loader refuses to start them). Linking against
// glibc 2.34+ binds a few calls to versions from 2.34 and 2.35, when libdl and libpthread
// moved into libc. Every such reference, ours and those of the static libgcc_eh and
// libstdc++ the shim carries, is renamed at link time (-Wl,--wrap=NAME, shim/CMakeLists.txt)
// to __wrap_NAME here, which calls the oldest version of NAME (`.symver`):
// - dladdr, dladdr1: GLIBC_2.2.5 / GLIBC_2.3.3. Before 2.34 they live in libdl.so.2, which
//   the shim therefore names as a dependency (on 2.34+ it is an empty stub).
// - pthread_key_create, __pthread_key_create, pthread_setspecific, pthread_once:
//   GLIBC_2.2.5, referenced weakly. Before 2.34 they live in libpthread.so.0, which the
//   shim does not load: loading it would switch a single-threaded program's libc to its
//   multi-threaded paths. Without it the program has no threads, and the wrappers act
//   as for one thread.
// - _dl_find_object (GLIBC_2.35, libgcc_eh's unwinder): the loader's own where it has one,
//   else the same answer found with dl_iterate_phdr, as libgcc did before 2.35.
// tests/package/test_wheel_policy.py checks every versioned reference of the built shim
// against the floor.
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>

#include "colabtrace/find_object.h"
#include "real.h"

extern "C" {
int colabtrace_glibc_dladdr(const void*, Dl_info*);
int colabtrace_glibc_dladdr1(const void*, Dl_info*, void**, int);
__attribute__((weak)) int colabtrace_glibc_pthread_key_create(pthread_key_t*, void (*)(void*));
__attribute__((weak)) int colabtrace_glibc___pthread_key_create(pthread_key_t*, void (*)(void*));
__attribute__((weak)) int colabtrace_glibc_pthread_setspecific(pthread_key_t, const void*);
__attribute__((weak)) int colabtrace_glibc_pthread_once(pthread_once_t*, void (*)());
}
__asm__(".symver colabtrace_glibc_dladdr,dladdr@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_dladdr1,dladdr1@GLIBC_2.3.3");
__asm__(".symver colabtrace_glibc_pthread_key_create,pthread_key_create@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc___pthread_key_create,__pthread_key_create@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_setspecific,pthread_setspecific@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_once,pthread_once@GLIBC_2.2.5");

extern "C" {

__attribute__((visibility("hidden"))) int __wrap_dladdr(const void* addr, Dl_info* info) {
  return colabtrace_glibc_dladdr(addr, info);
}

__attribute__((visibility("hidden"))) int __wrap_dladdr1(const void* addr, Dl_info* info, void** extra, int flags) {
  return colabtrace_glibc_dladdr1(addr, info, extra, flags);
}

__attribute__((visibility("hidden"))) int __wrap_pthread_key_create(pthread_key_t* key, void (*dtor)(void*)) {
  return &colabtrace_glibc_pthread_key_create != nullptr ? colabtrace_glibc_pthread_key_create(key, dtor) : ENOSYS;
}

__attribute__((visibility("hidden"))) int __wrap___pthread_key_create(pthread_key_t* key, void (*dtor)(void*)) {
  return &colabtrace_glibc___pthread_key_create != nullptr ? colabtrace_glibc___pthread_key_create(key, dtor)
                                                           : ENOSYS;
}

__attribute__((visibility("hidden"))) int __wrap_pthread_setspecific(pthread_key_t key, const void* value) {
  return &colabtrace_glibc_pthread_setspecific != nullptr ? colabtrace_glibc_pthread_setspecific(key, value)
                                                          : EINVAL;
}

// One thread (no libpthread before glibc 2.34): the first call runs init.
__attribute__((visibility("hidden"))) int __wrap_pthread_once(pthread_once_t* once, void (*init)()) {
  if (&colabtrace_glibc_pthread_once != nullptr) return colabtrace_glibc_pthread_once(once, init);
  if (*once == PTHREAD_ONCE_INIT) {
    *once = PTHREAD_ONCE_INIT + 1;
    init();
  }
  return 0;
}

__attribute__((visibility("hidden"))) int __wrap__dl_find_object(void* pc, dl_find_object* out) {
  if (const colabtrace::shim::DlFindObjectFn real = colabtrace::shim::RealDlFindObject(); real != nullptr) {
    return real(pc, out);
  }
  return colabtrace::FindObjectByPhdr(pc, out, colabtrace::shim::RealDlIteratePhdr());
}

}  // extern "C"
