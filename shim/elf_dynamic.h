// Reading a loaded object's dynamic section (its PT_DYNAMIC, or link_map::l_ld).
//
// The shim's one reader of DT_* entries: libc's dynamic symbols for the real dlsym
// (real.cpp), the GPU module's symbol lookups (gpu/elf_symbols.cpp), the library
// inventory's sonames and DT_NEEDED lists (libs/inventory.cpp) and the LD_AUDIT check
// (libs/dl_hooks.cpp). It reads the entries and resolves their addresses; what the
// tables mean (hash chains, versions) stays with the caller.
//
// Header-only, allocation-free and async-signal-safe, and it calls no function at all:
// real.cpp runs it while a sanitizer runtime initialises, before that runtime's
// interceptors (strcmp, memchr, dl_iterate_phdr) can reach the real functions.
#pragma once

#include <elf.h>
#include <link.h>

#include <cstdint>

namespace colabtrace::shim {

// More entries than any object has: bounds a walk over a damaged section.
inline constexpr int kMaxDynamicEntries = 4096;

// Calls f(entry) for each entry of `dyn` before its DT_NULL (at most kMaxDynamicEntries);
// nothing when dyn is nullptr.
template <class F> inline void ForEachDynamicEntry(const ElfW(Dyn)* dyn, F&& f) {
  if (dyn == nullptr) return;
  int count = 0;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL && count < kMaxDynamicEntries; ++d, ++count) f(*d);
}

// What an object's dynamic section says, its addresses resolved. A tag that appears
// twice counts by its last entry, as glibc's loader reads it.
//
// Addresses: glibc relocates some d_ptr entries in place to absolute addresses
// (DT_SYMTAB, DT_STRTAB, the hash tables, DT_VERSYM) but not others (DT_VERDEF,
// DT_VERNEED), and none where .dynamic is read-only (the vDSO) or on architectures where
// it never does; those hold link-time addresses. Every byte of a loaded object lies at
// or above its load bias, so an address below the bias is a link-time one and gets the
// bias added. An address of 0 is no table.
struct ElfDynamic {
  const ElfW(Dyn)* dyn = nullptr;  // nullptr: the object has no dynamic section
  uintptr_t base = 0;              // the load bias (dlpi_addr, l_addr)
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  uint64_t strsz = 0;
  const uint32_t* gnu_hash = nullptr;
  const uint32_t* sysv_hash = nullptr;  // DT_HASH
  const ElfW(Half)* versym = nullptr;
  const uint8_t* verdef = nullptr;
  const uint8_t* verneed = nullptr;
  uint64_t verneednum = 0;
  uint64_t soname = UINT64_MAX;  // DT_SONAME's offset into strtab; UINT64_MAX: none
  bool audit = false;            // a DT_AUDIT or DT_DEPAUDIT entry (LD_AUDIT modules)

  // The address a d_ptr value stands for (see above), or nullptr for 0.
  template <class T> const T* At(uintptr_t p) const {
    return p == 0 ? nullptr : reinterpret_cast<const T*>(p < base ? p + base : p);
  }

  // The string at `off` of the string table, or nullptr when there is no table, off is
  // not below DT_STRSZ, or the string does not end within DT_STRSZ.
  const char* String(uint64_t off) const {
    if (strtab == nullptr || off >= strsz) return nullptr;
    for (uint64_t i = off; i < strsz; ++i) {
      if (strtab[i] == '\0') return strtab + off;
    }
    return nullptr;
  }
};

// Reads the dynamic section at `dyn` of the object loaded with bias `base`.
inline ElfDynamic ReadElfDynamic(const ElfW(Dyn)* dyn, uintptr_t base) {
  ElfDynamic d;
  d.dyn = dyn;
  d.base = base;
  ForEachDynamicEntry(dyn, [&d](const ElfW(Dyn)& e) {
    const uintptr_t p = e.d_un.d_ptr;
    switch (e.d_tag) {
      case DT_SYMTAB: d.symtab = d.At<ElfW(Sym)>(p); break;
      case DT_STRTAB: d.strtab = d.At<char>(p); break;
      case DT_STRSZ: d.strsz = e.d_un.d_val; break;
      case DT_GNU_HASH: d.gnu_hash = d.At<uint32_t>(p); break;
      case DT_HASH: d.sysv_hash = d.At<uint32_t>(p); break;
      case DT_VERSYM: d.versym = d.At<ElfW(Half)>(p); break;
      case DT_VERDEF: d.verdef = d.At<uint8_t>(p); break;
      case DT_VERNEED: d.verneed = d.At<uint8_t>(p); break;
      case DT_VERNEEDNUM: d.verneednum = e.d_un.d_val; break;
      case DT_SONAME: d.soname = e.d_un.d_val; break;
      case DT_AUDIT:
      case DT_DEPAUDIT: d.audit = true; break;
      default: break;
    }
  });
  return d;
}

// The dynamic section of a loaded object: its PT_DYNAMIC (the last one, as the loader
// takes it), or nullptr.
inline const ElfW(Dyn)* DynamicSectionOf(const struct dl_phdr_info* info) {
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    }
  }
  return dyn;
}

inline ElfDynamic ReadElfDynamic(const struct dl_phdr_info* info) {
  return ReadElfDynamic(DynamicSectionOf(info), info->dlpi_addr);
}

// Calls f(name) for each DT_NEEDED entry whose name String() can read, in order.
template <class F> inline void ForEachNeeded(const ElfDynamic& d, F&& f) {
  ForEachDynamicEntry(d.dyn, [&](const ElfW(Dyn)& e) {
    if (e.d_tag == DT_NEEDED) {
      if (const char* s = d.String(e.d_un.d_val)) f(s);
    }
  });
}

}  // namespace colabtrace::shim
