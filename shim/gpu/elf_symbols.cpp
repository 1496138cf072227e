#include "elf_symbols.h"

#include <elf.h>
#include <link.h>

#include <cstring>

#include "elf_dynamic.h"

namespace colabtrace::shim::gpu {
namespace {

// What an object's PT_DYNAMIC says about its dynamic symbols (elf_dynamic.h).
using DynInfo = ElfDynamic;

// False when the object has no dynamic symbols to look names up in.
bool ReadDyn(const struct dl_phdr_info* info, DynInfo* d) {
  *d = ReadElfDynamic(info);
  return d->symtab != nullptr && d->strtab != nullptr &&
         (d->gnu_hash != nullptr || d->sysv_hash != nullptr);
}

uint32_t GnuHash(const char* s) {
  uint32_t h = 5381;
  for (; *s != '\0'; ++s) h = h * 33 + static_cast<uint8_t>(*s);
  return h;
}

uint32_t SysvHash(const char* s) {
  uint32_t h = 0;
  for (; *s != '\0'; ++s) {
    h = (h << 4) + static_cast<uint8_t>(*s);
    const uint32_t g = h & 0xf0000000u;
    if (g != 0) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

bool IsDefault(const DynInfo& d, uint32_t idx, const char* name) {
  const ElfW(Sym)& s = d.symtab[idx];
  if (s.st_shndx == SHN_UNDEF || s.st_value == 0) return false;
  const unsigned type = ELF64_ST_TYPE(s.st_info);
  if (type != STT_FUNC && type != STT_OBJECT && type != STT_NOTYPE) return false;
  if (d.versym != nullptr && (d.versym[idx] & 0x8000) != 0) return false;  // hidden version
  return std::strcmp(d.strtab + s.st_name, name) == 0;
}

// The default-version definition of name in d, or nullptr.
const ElfW(Sym)* LookupDefined(const DynInfo& d, const char* name) {
  if (d.gnu_hash != nullptr) {
    const uint32_t* h = d.gnu_hash;
    const uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2], bloom_shift = h[3];
    if (nbuckets == 0 || bloom_size == 0) return nullptr;
    const auto* bloom = reinterpret_cast<const ElfW(Addr)*>(h + 4);
    const auto* buckets = reinterpret_cast<const uint32_t*>(bloom + bloom_size);
    const uint32_t* chain = buckets + nbuckets;
    const uint32_t hv = GnuHash(name);
    constexpr uint32_t kBits = sizeof(ElfW(Addr)) * 8;
    const ElfW(Addr) word = bloom[(hv / kBits) % bloom_size];
    const ElfW(Addr) mask = (ElfW(Addr){1} << (hv % kBits)) |
                            (ElfW(Addr){1} << ((hv >> bloom_shift) % kBits));
    if ((word & mask) != mask) return nullptr;
    uint32_t idx = buckets[hv % nbuckets];
    if (idx < symoffset) return nullptr;
    for (;; ++idx) {
      const uint32_t ch = chain[idx - symoffset];
      if ((ch | 1) == (hv | 1) && IsDefault(d, idx, name)) return &d.symtab[idx];
      if ((ch & 1) != 0) break;
    }
    return nullptr;
  }
  const uint32_t nbucket = d.sysv_hash[0];
  if (nbucket == 0) return nullptr;
  const uint32_t* bucket = d.sysv_hash + 2;
  const uint32_t* chain = bucket + nbucket;
  for (uint32_t i = bucket[SysvHash(name) % nbucket]; i != 0; i = chain[i]) {
    if (IsDefault(d, i, name)) return &d.symtab[i];
  }
  return nullptr;
}

// The file named by the version requirement of the undefined reference `name` in d
// ("libcudart.so.12"), or nullptr if the reference is unversioned or absent.
const char* NeededFile(const DynInfo& d, const char* name) {
  if (d.versym == nullptr || d.verneed == nullptr) return nullptr;
  // Undefined symbols are not in the hash tables; they sit below GNU hash's symoffset
  // (or anywhere among SysV hash's nchain entries).
  const uint32_t count = d.gnu_hash != nullptr ? d.gnu_hash[1] : d.sysv_hash[1];
  for (uint32_t i = 1; i < count; ++i) {
    const ElfW(Sym)& s = d.symtab[i];
    if (s.st_shndx != SHN_UNDEF || std::strcmp(d.strtab + s.st_name, name) != 0) continue;
    const ElfW(Half) v = d.versym[i] & 0x7fff;
    if (v < 2) return nullptr;
    const uint8_t* p = d.verneed;
    for (uint64_t k = 0; k < d.verneednum; ++k) {
      const auto* vn = reinterpret_cast<const ElfW(Verneed)*>(p);
      const uint8_t* a = p + vn->vn_aux;
      for (unsigned j = 0; j < vn->vn_cnt; ++j) {
        const auto* aux = reinterpret_cast<const ElfW(Vernaux)*>(a);
        if (aux->vna_other == v) return d.strtab + vn->vn_file;
        if (aux->vna_next == 0) break;
        a += aux->vna_next;
      }
      if (vn->vn_next == 0) break;
      p += vn->vn_next;
    }
    return nullptr;
  }
  return nullptr;
}

bool Contains(const struct dl_phdr_info* info, uintptr_t a, uintptr_t* lo, uintptr_t* hi) {
  uintptr_t l = UINTPTR_MAX, h = 0;
  bool inside = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const auto& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t s = info->dlpi_addr + ph.p_vaddr;
    if (s < l) l = s;
    if (s + ph.p_memsz > h) h = s + ph.p_memsz;
    if (a >= s && a < s + ph.p_memsz) inside = true;
  }
  if (lo != nullptr) *lo = l;
  if (hi != nullptr) *hi = h;
  return inside;
}

struct Query {
  const char* name = nullptr;
  uintptr_t in_object = 0;    // FindObjectOf / FindSymbolIn / the caller
  uintptr_t skip = 0;         // an address inside the object never to choose
  uintptr_t skip_also = 0;    // and another
  const char* needed = nullptr;  // FindLikeCaller: the version's file, once known
  bool any = false;           // FindLikeCaller's last pass: any object
  ObjectRange range;
  void* result = nullptr;
};

void* Definition(const struct dl_phdr_info* info, const char* name) {
  DynInfo d;
  if (!ReadDyn(info, &d)) return nullptr;
  const ElfW(Sym)* s = LookupDefined(d, name);
  return s != nullptr ? reinterpret_cast<void*>(info->dlpi_addr + s->st_value) : nullptr;
}

}  // namespace

bool FindObjectOf(const void* addr, ObjectRange* out) {
  Query q;
  q.in_object = reinterpret_cast<uintptr_t>(addr);
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        if (!Contains(info, q->in_object, &q->range.lo, &q->range.hi)) return 0;
        q->range.base = info->dlpi_addr;
        q->range.name = info->dlpi_name;
        return 1;
      },
      &q);
  if (q.range.hi == 0 || q.range.name == nullptr) return false;
  *out = q.range;
  return true;
}

void* FindSymbolIn(const void* in_object, const char* name) {
  Query q;
  q.name = name;
  q.in_object = reinterpret_cast<uintptr_t>(in_object);
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<Query*>(data);
        if (!Contains(info, q->in_object, nullptr, nullptr)) return 0;
        q->result = Definition(info, q->name);
        return 1;
      },
      &q);
  return q.result;
}

void* FindLikeCaller(const char* name, const void* caller, const void* skip, const void* skip_also) {
  Query q;
  q.name = name;
  q.in_object = reinterpret_cast<uintptr_t>(caller);
  q.skip = reinterpret_cast<uintptr_t>(skip);
  q.skip_also = reinterpret_cast<uintptr_t>(skip_also);
  // 1. Which file the caller's reference asks for, if it is versioned.
  if (caller != nullptr) {
    dl_iterate_phdr(
        [](struct dl_phdr_info* info, size_t, void* data) {
          auto* q = static_cast<Query*>(data);
          if (!Contains(info, q->in_object, nullptr, nullptr)) return 0;
          DynInfo d;
          if (ReadDyn(info, &d)) q->needed = NeededFile(d, q->name);
          return 1;
        },
        &q);
  }
  // 2. The object with that soname; 3. else (or if none defines it) the first definer.
  auto visit = [](struct dl_phdr_info* info, size_t, void* data) {
    auto* q = static_cast<Query*>(data);
    if (q->skip != 0 && Contains(info, q->skip, nullptr, nullptr)) return 0;
    if (q->skip_also != 0 && Contains(info, q->skip_also, nullptr, nullptr)) return 0;
    if (!q->any) {
      DynInfo d;
      if (!ReadDyn(info, &d) || d.soname == UINT64_MAX ||
          std::strcmp(d.strtab + d.soname, q->needed) != 0) {
        return 0;
      }
    }
    q->result = Definition(info, q->name);
    return q->result != nullptr ? 1 : 0;
  };
  if (q.needed != nullptr) dl_iterate_phdr(visit, &q);
  if (q.result == nullptr) {
    q.any = true;
    dl_iterate_phdr(visit, &q);
  }
  return q.result;
}

}  // namespace colabtrace::shim::gpu
