#include "real.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include "elf_dynamic.h"

namespace colabtrace::shim {
namespace {

// Looks `name`@`version` up in libc's .dynsym (version nullptr: the default version)
// through its GNU hash table; called a handful of times per process.
//
// This runs before anything is set up: a sanitizer runtime (ASan, TSan) calls dlsym
// (ours) from its own initialisation, before its interceptors of dl_iterate_phdr,
// strcmp and strstr have their real functions. So the lookup calls no libc function:
// it walks the loader's list of objects (_r_debug), reads libc's dynamic section with
// elf_dynamic.h (which calls nothing) and compares strings itself.
struct LibcLookup {
  const char* name;
  const char* version;
  void* result;
  bool in_loader = false;  // look in the dynamic loader (ld-linux*.so) instead
};

bool SameString(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

bool PathHas(const char* path, const char* part) {
  for (const char* p = path; *p != '\0'; ++p) {
    size_t i = 0;
    while (part[i] != '\0' && p[i] == part[i]) ++i;
    if (part[i] == '\0') return true;
  }
  return false;
}

// libc, and libdl: before glibc 2.34 dlsym, dlvsym and dladdr live there (the shim's
// floor is glibc 2.28; on 2.34 and later libdl.so.2 is an empty stub).
bool IsLibcPath(const char* path) { return PathHas(path, "/libc.so") || PathHas(path, "/libdl.so"); }

int FindInObject(const struct link_map* object, LibcLookup* q) {
  const char* path = object->l_name;
  if (path == nullptr || !(q->in_loader ? PathHas(path, "/ld-linux") : IsLibcPath(path))) return 0;
  if (object->l_ld == nullptr) return 0;
  const ElfDynamic dyn = ReadElfDynamic(object->l_ld, object->l_addr);
  const ElfW(Sym)* symtab = dyn.symtab;
  const char* strtab = dyn.strtab;
  const ElfW(Half)* versym = dyn.versym;
  const uint8_t* verdef = dyn.verdef;
  const uint32_t* gnu_hash = dyn.gnu_hash;
  if (symtab == nullptr || strtab == nullptr || gnu_hash == nullptr) return 0;
  // The GNU hash table's chain for the name: a few candidates instead of a walk over
  // libc's ~3,000 symbols (and the pages of .dynsym and .dynstr it touched).
  const uint32_t nbuckets = gnu_hash[0], symoffset = gnu_hash[1], bloom = gnu_hash[2];
  const uint32_t* buckets =
      reinterpret_cast<const uint32_t*>(reinterpret_cast<const ElfW(Addr)*>(gnu_hash + 4) + bloom);
  const uint32_t* chains = buckets + nbuckets;
  uint32_t hash = 5381;
  for (const char* c = q->name; *c != '\0'; ++c) hash = hash * 33 + static_cast<uint8_t>(*c);
  const uint32_t first = nbuckets == 0 ? 0 : buckets[hash % nbuckets];
  bool more = first != 0 && first >= symoffset;  // 0: an empty bucket
  for (uint32_t i = first; more; ++i) {
    const uint32_t chain = chains[i - symoffset];
    more = (chain & 1) == 0;  // the low bit ends the chain
    if ((chain | 1) != (hash | 1)) continue;
    const ElfW(Sym)& s = symtab[i];
    if (s.st_value == 0 || !SameString(strtab + s.st_name, q->name)) continue;
    if (versym != nullptr && verdef != nullptr) {
      const ElfW(Half) v = versym[i];
      const bool hidden = (v & 0x8000) != 0;
      if (q->version == nullptr && hidden) continue;  // want the default version
      if (q->version != nullptr) {
        const char* vname = nullptr;
        for (const uint8_t* p = verdef;;) {
          auto* vd = reinterpret_cast<const ElfW(Verdef)*>(p);
          if (vd->vd_ndx == (v & 0x7fff)) {
            auto* aux = reinterpret_cast<const ElfW(Verdaux)*>(p + vd->vd_aux);
            vname = strtab + aux->vda_name;
            break;
          }
          if (vd->vd_next == 0) break;
          p += vd->vd_next;
        }
        if (vname == nullptr || !SameString(vname, q->version)) continue;
      }
    }
    q->result = reinterpret_cast<void*>(object->l_addr + s.st_value);
    return 1;
  }
  return 0;
}

void* FindSymbol(LibcLookup q) {
  for (const struct link_map* m = _r_debug.r_map; m != nullptr; m = m->l_next) {
    if (FindInObject(m, &q) != 0) break;
  }
  return q.result;
}

void* FindLibcSymbol(const char* name) {
  LibcLookup q{name, nullptr, nullptr};
  for (const struct link_map* m = _r_debug.r_map; m != nullptr; m = m->l_next) {
    if (FindInObject(m, &q) != 0) break;
  }
  return q.result;
}

DlsymFn g_dlsym = nullptr;
DlvsymFn g_dlvsym = nullptr;

}  // namespace

DlsymFn RealDlsym() {
  DlsymFn f = __atomic_load_n(&g_dlsym, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    f = reinterpret_cast<DlsymFn>(FindLibcSymbol("dlsym"));
    __atomic_store_n(&g_dlsym, f, __ATOMIC_RELEASE);
  }
  return f;
}

DlvsymFn RealDlvsym() {
  DlvsymFn f = __atomic_load_n(&g_dlvsym, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    f = reinterpret_cast<DlvsymFn>(FindLibcSymbol("dlvsym"));
    __atomic_store_n(&g_dlvsym, f, __ATOMIC_RELEASE);
  }
  return f;
}

DlFindObjectFn RealDlFindObject() {
  // 1: looked up, none (glibc before 2.35).
  static uintptr_t g_fn = 0;
  uintptr_t f = __atomic_load_n(&g_fn, __ATOMIC_ACQUIRE);
  if (f == 0) {
    f = reinterpret_cast<uintptr_t>(FindSymbol(LibcLookup{"_dl_find_object", "GLIBC_2.35", nullptr, true}));
    if (f == 0) f = 1;
    __atomic_store_n(&g_fn, f, __ATOMIC_RELEASE);
  }
  return f == 1 ? nullptr : reinterpret_cast<DlFindObjectFn>(f);
}

DlIteratePhdrFn RealDlIteratePhdr() {
  static DlIteratePhdrFn g_fn = nullptr;
  DlIteratePhdrFn f = __atomic_load_n(&g_fn, __ATOMIC_ACQUIRE);
  if (f == nullptr) {
    f = reinterpret_cast<DlIteratePhdrFn>(FindLibcSymbol("dl_iterate_phdr"));
    if (f == nullptr) f = &dl_iterate_phdr;  // a libc without it in .dynsym: the usual binding
    __atomic_store_n(&g_fn, f, __ATOMIC_RELEASE);
  }
  return f;
}

void* ResolveNext(const char* name) {
  DlsymFn dlsym_fn = RealDlsym();
  return dlsym_fn == nullptr ? nullptr : dlsym_fn(RTLD_NEXT, name);
}

}  // namespace colabtrace::shim
