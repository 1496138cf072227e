// The CLI's glibc floor (COLABTRACE_PORTABLE_CLI builds, the wheel's): it runs on glibc
// 2.28 and later though it is built against a newer one. abseil, zstd, libstdc++ and
// libgcc are linked in statically (analyzer/CMakeLists.txt); libc is the one dynamic
// dependency left, and every call the build machine's glibc gave a version newer than
// GLIBC_2.28 goes through a wrapper here (-Wl,--wrap=NAME) to its oldest version.
// tests/package/test_wheel_policy.py checks every versioned reference of the built CLI.
#ifdef COLABTRACE_PORTABLE_CLI

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <cstdint>

#include "colabtrace/find_object.h"

extern "C" {
// libstdc++ reads it to skip atomic reference counts while the process has one thread
// (glibc 2.32+). Our own, never set: always the atomic path, correct at any glibc.
char __libc_single_threaded = 0;

using InitFn = void (*)(int, char**, char**);
using MainFn = int (*)(int, char**, char**);
int colabtrace_glibc_libc_start_main(MainFn, int, char**, InitFn, void (*)(), void (*)(), void*);
int colabtrace_glibc_xstat(int, const char*, struct stat*);
int colabtrace_glibc_lxstat(int, const char*, struct stat*);
int colabtrace_glibc_fxstat(int, int, struct stat*);
int colabtrace_glibc_fxstatat(int, int, const char*, struct stat*, int);
int colabtrace_glibc_xstat64(int, const char*, struct stat64*);
int colabtrace_glibc_lxstat64(int, const char*, struct stat64*);
int colabtrace_glibc_fxstat64(int, int, struct stat64*);
int colabtrace_glibc_fxstatat64(int, int, const char*, struct stat64*, int);
double colabtrace_glibc_pow(double, double);
double colabtrace_glibc_log2(double);
int colabtrace_glibc_pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
int colabtrace_glibc_pthread_join(pthread_t, void**);
int colabtrace_glibc_pthread_detach(pthread_t);
int colabtrace_glibc_pthread_once(pthread_once_t*, void (*)());
int colabtrace_glibc_pthread_key_create(pthread_key_t*, void (*)(void*));
int colabtrace_glibc___pthread_key_create(pthread_key_t*, void (*)(void*));
void* colabtrace_glibc_pthread_getspecific(pthread_key_t);
int colabtrace_glibc_pthread_setspecific(pthread_key_t, const void*);
int colabtrace_glibc_pthread_sigmask(int, const sigset_t*, sigset_t*);
double colabtrace_glibc_exp(double);
double colabtrace_glibc_log(double);
void* colabtrace_glibc_dlsym(void*, const char*);
void* colabtrace_glibc_dlvsym(void*, const char*, const char*);

// What crti.o and the linker give every executable: its DT_INIT and DT_INIT_ARRAY.
void _init();
extern InitFn __init_array_start[] __attribute__((visibility("hidden")));
extern InitFn __init_array_end[] __attribute__((visibility("hidden")));
}
__asm__(".symver colabtrace_glibc_libc_start_main,__libc_start_main@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_xstat,__xstat@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_lxstat,__lxstat@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_fxstat,__fxstat@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_fxstatat,__fxstatat@GLIBC_2.4");
__asm__(".symver colabtrace_glibc_xstat64,__xstat64@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_lxstat64,__lxstat64@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_fxstat64,__fxstat64@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_fxstatat64,__fxstatat64@GLIBC_2.4");
__asm__(".symver colabtrace_glibc_pow,pow@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_log2,log2@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_create,pthread_create@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_join,pthread_join@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_detach,pthread_detach@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_once,pthread_once@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_key_create,pthread_key_create@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc___pthread_key_create,__pthread_key_create@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_getspecific,pthread_getspecific@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_setspecific,pthread_setspecific@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_pthread_sigmask,pthread_sigmask@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_exp,exp@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_log,log@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_dlsym,dlsym@GLIBC_2.2.5");
__asm__(".symver colabtrace_glibc_dlvsym,dlvsym@GLIBC_2.2.5");

namespace {

constexpr int kStatVer = 1;  // _STAT_VER_LINUX on x86-64

// Runs the executable's constructors, as the __libc_csu_init of crt files before glibc
// 2.34 did: glibc 2.34+ runs them itself when init is null, older glibc only calls init.
void RunConstructors(int argc, char** argv, char** envp) {
  _init();
  for (InitFn* f = __init_array_start; f != __init_array_end; ++f) (*f)(argc, argv, envp);
}

}  // namespace

extern "C" {

// _start (crt1.o of glibc 2.34+) passes init = nullptr and calls __libc_start_main@2.34.
// The 2.2.5 version exists in every glibc; given an init, 2.34+ calls it instead of
// running the constructors itself, so they run once either way.
int __wrap___libc_start_main(MainFn main, int argc, char** argv, InitFn init, void (*fini)(),
                             void (*rtld_fini)(), void* stack_end) {
  return colabtrace_glibc_libc_start_main(main, argc, argv, init != nullptr ? init : RunConstructors, fini,
                                          rtld_fini, stack_end);
}

// stat and friends became functions in glibc 2.33; before, they were inline calls of
// __xstat and friends, which every glibc still exports.
int __wrap_stat(const char* path, struct stat* st) { return colabtrace_glibc_xstat(kStatVer, path, st); }
int __wrap_lstat(const char* path, struct stat* st) { return colabtrace_glibc_lxstat(kStatVer, path, st); }
int __wrap_fstat(int fd, struct stat* st) { return colabtrace_glibc_fxstat(kStatVer, fd, st); }
int __wrap_fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return colabtrace_glibc_fxstatat(kStatVer, dirfd, path, st, flags);
}

// glibc 2.29 gave pow, exp and log faster versions under new symbol versions; the old
// ones are the same functions to within an ulp.
int __wrap_stat64(const char* path, struct stat64* st) { return colabtrace_glibc_xstat64(kStatVer, path, st); }
int __wrap_lstat64(const char* path, struct stat64* st) { return colabtrace_glibc_lxstat64(kStatVer, path, st); }
int __wrap_fstat64(int fd, struct stat64* st) { return colabtrace_glibc_fxstat64(kStatVer, fd, st); }
int __wrap_fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  return colabtrace_glibc_fxstatat64(kStatVer, dirfd, path, st, flags);
}

double __wrap_pow(double x, double y) { return colabtrace_glibc_pow(x, y); }
double __wrap_log2(double x) { return colabtrace_glibc_log2(x); }
double __wrap_exp(double x) { return colabtrace_glibc_exp(x); }
double __wrap_log(double x) { return colabtrace_glibc_log(x); }

// dlsym moved from libdl to libc in 2.34 (the CLI links libdl.so.2 for older ones).
void* __wrap_dlsym(void* handle, const char* name) { return colabtrace_glibc_dlsym(handle, name); }

// The threads functions moved from libpthread to libc in 2.34 (the CLI links
// libpthread.so.0 for older ones).
int __wrap_pthread_create(pthread_t* t, const pthread_attr_t* a, void* (*f)(void*), void* arg) {
  return colabtrace_glibc_pthread_create(t, a, f, arg);
}
int __wrap_pthread_join(pthread_t t, void** r) { return colabtrace_glibc_pthread_join(t, r); }
int __wrap_pthread_detach(pthread_t t) { return colabtrace_glibc_pthread_detach(t); }
int __wrap_pthread_once(pthread_once_t* o, void (*f)()) { return colabtrace_glibc_pthread_once(o, f); }
int __wrap_pthread_key_create(pthread_key_t* k, void (*d)(void*)) { return colabtrace_glibc_pthread_key_create(k, d); }
int __wrap___pthread_key_create(pthread_key_t* k, void (*d)(void*)) {
  return colabtrace_glibc___pthread_key_create(k, d);
}
void* __wrap_pthread_getspecific(pthread_key_t k) { return colabtrace_glibc_pthread_getspecific(k); }
int __wrap_pthread_setspecific(pthread_key_t k, const void* v) { return colabtrace_glibc_pthread_setspecific(k, v); }
int __wrap_pthread_sigmask(int how, const sigset_t* set, sigset_t* old) {
  return colabtrace_glibc_pthread_sigmask(how, set, old);
}

// libstdc++'s std::random_device (glibc 2.36's arc4random): the kernel's getrandom (2.25).
uint32_t __wrap_arc4random() {
  uint32_t v = 0;
  while (getrandom(&v, sizeof(v), 0) != static_cast<ssize_t>(sizeof(v))) {
  }
  return v;
}

// libgcc's unwinder (glibc 2.35's _dl_find_object): the loader's where it has one, else
// the same answer from dl_iterate_phdr, as libgcc found it before 2.35.
int __wrap__dl_find_object(void* pc, dl_find_object* out) {
  using Fn = int (*)(void*, dl_find_object*);
  static Fn real = reinterpret_cast<Fn>(colabtrace_glibc_dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35"));
  if (real != nullptr) return real(pc, out);
  return colabtrace::FindObjectByPhdr(pc, out, dl_iterate_phdr);
}

}  // extern "C"

#endif  // COLABTRACE_PORTABLE_CLI
