// Finding the real functions behind the shim's hooks.
//
// RealFn<F> holds one real function pointer, resolved on first use with the real dlsym
// and RTLD_NEXT (relative to the shim, which is what we want for libc's functions).
// COLABTRACE_DEFINE_REAL_FNS(X) turns a hooks.def group into `real::name` holders typed
// from the real declarations.
//
// The real dlsym and dlvsym are found by reading libc's dynamic symbol table directly,
// so resolving never goes through a hook, even when dlsym itself is hooked.
#pragma once

#include <link.h>

#include <cstdint>

#include "writer.h"

namespace colabtrace::shim {

using DlsymFn = void* (*)(void*, const char*);
using DlvsymFn = void* (*)(void*, const char*, const char*);

// glibc's own dlsym and dlvsym, never the shim's.
DlsymFn RealDlsym();
DlvsymFn RealDlvsym();

// glibc's own dl_iterate_phdr: the dlsym hook's walks run while a sanitizer runtime
// (TSan) initialises, before its dl_iterate_phdr interceptor can call the real one.
using DlIteratePhdrFn = int (*)(int (*)(dl_phdr_info*, size_t, void*), void*);
DlIteratePhdrFn RealDlIteratePhdr();

// The loader's _dl_find_object (glibc 2.35+; nullptr on older ones), found in its dynamic
// symbol table like RealDlsym: callable from a signal handler after the first call.
using DlFindObjectFn = int (*)(void*, struct dl_find_object*);
DlFindObjectFn RealDlFindObject();

// dlsym(RTLD_NEXT, name) as seen from the shim.
void* ResolveNext(const char* name);

template <class F> struct RealFn {
  F fn;
  const char* name;
  F get() {
    F f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    if (__builtin_expect(f == nullptr, 0)) {
      f = reinterpret_cast<F>(ResolveNext(name));
      __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
    }
    return f;
  }
};

#define CT_REAL_FN(name) \
  inline ::colabtrace::shim::RealFn<decltype(&::name)> name{nullptr, #name};
#define COLABTRACE_DEFINE_REAL_FNS(GROUP) \
  namespace real {                        \
  GROUP(CT_REAL_FN)                       \
  }

// Resolves every real function of a group now. Modules do this at start-up: a lazy
// lookup later would go through dlsym, which clears a dlerror() the program has not
// read yet.
#define CT_RESOLVE_REAL_FN(name) ::colabtrace::shim::real::name.get();
#define COLABTRACE_RESOLVE_REAL_FNS(GROUP) GROUP(CT_RESOLVE_REAL_FN)

}  // namespace colabtrace::shim
