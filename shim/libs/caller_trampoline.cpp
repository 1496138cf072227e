// The caller-preserving call helper and the per-object gadget cache (see
// caller_trampoline.h); the gadget's unwind row is checked by cfi_reader.h.
#include "caller_trampoline.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>

#include "cfi_reader.h"
#include "raw.h"
#include "real.h"


// ---- the assembly helper -------------------------------------------------------------
//
// colabtrace_call_as_caller(fn=rdi, a0=rsi, a1=rdx, a2=rcx, a3=r8, gadget=r9):
// shifts the arguments into place, pushes the continuation and then the gadget (so
// rsp % 16 == 8 at fn's entry, as after a call) and jumps to fn. fn returns to the
// gadget, whose `ret` pops the continuation, which returns to our caller.
//
// CFI: while fn runs, an unwinder reaches this frame through the gadget with
// rsp = our entry rsp and looks up the row at continuation - 1, the int3 that is never
// executed: there CFA = rsp + 8, as at entry.
#if defined(__x86_64__)
__asm__(
    "  .text\n"
    "  .globl colabtrace_call_as_caller\n"
    "  .hidden colabtrace_call_as_caller\n"
    "  .type colabtrace_call_as_caller, @function\n"
    "  .p2align 4\n"
    "colabtrace_call_as_caller:\n"
    "  .cfi_startproc\n"
    "  movq %rdi, %r11\n"
    "  movq %rsi, %rdi\n"
    "  movq %rdx, %rsi\n"
    "  movq %rcx, %rdx\n"
    "  movq %r8, %rcx\n"
    "  leaq 1f(%rip), %rax\n"
    "  pushq %rax\n"
    "  .cfi_adjust_cfa_offset 8\n"
    "  pushq %r9\n"
    "  .cfi_adjust_cfa_offset 8\n"
    "  jmpq *%r11\n"
    "  .cfi_adjust_cfa_offset -16\n"
    "  int3\n"
    "1:\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size colabtrace_call_as_caller, .-colabtrace_call_as_caller\n");
#else
extern "C" uintptr_t colabtrace_call_as_caller(const void* fn, uintptr_t a0, uintptr_t a1,
                                               uintptr_t a2, uintptr_t a3, const void*) {
  using F = uintptr_t (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t);
  return reinterpret_cast<F>(const_cast<void*>(fn))(a0, a1, a2, a3);
}
#endif

namespace colabtrace::shim::libs {
namespace {

// ---- finding a gadget in an object -------------------------------------------------------

constexpr uint8_t kRet = 0xC3;
constexpr int kMaxVerifyAttempts = 4096;

struct GadgetSearch {
  uintptr_t address;  // in: an address inside the object (the caller's return address)
  bool found = false;
  const void* gadget = nullptr;
  bool verified = false;
  const char* name = nullptr;
  uint64_t base = 0;
};

bool ContainsAddress(const struct dl_phdr_info* info, uintptr_t a) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (a >= lo && a < lo + ph.p_memsz) return true;
  }
  return false;
}

int SearchGadget(struct dl_phdr_info* info, size_t, void* data) {
  auto* q = static_cast<GadgetSearch*>(data);
  if (!ContainsAddress(info, q->address)) return 0;
  q->found = true;
  q->name = info->dlpi_name;
  q->base = info->dlpi_addr;
  UnwindTable table;
  const bool have_cfi = OpenUnwindTable(info, &table);
  int attempts = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & (PF_X | PF_R)) != (PF_X | PF_R)) continue;
    const uint8_t* begin = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = begin + ph.p_filesz;
    for (const uint8_t* p = begin + 1; p < end; ++p) {
      // A loop, not memchr: a sanitizer runtime (TSan) calls dlsym from its start-up,
      // when its memchr interceptor cannot reach the real one yet.
      while (p < end && *p != kRet) ++p;
      if (p == end) break;
      if (q->gadget == nullptr) q->gadget = p;  // the fallback: any ret byte
      if (!have_cfi || attempts >= kMaxVerifyAttempts) return 1;
      ++attempts;
      if (EntryLikeRowAt(table, reinterpret_cast<uintptr_t>(p) - 1)) {
        q->gadget = p;
        q->verified = true;
        return 1;
      }
    }
  }
  return 1;
}

// A page of our own holding one `ret`, for callers in no loaded object (JIT code):
// glibc then finds no caller object, exactly as for the original call.
const void* AnonymousGadget() {
  static const void* g_page = nullptr;
  const void* p = __atomic_load_n(&g_page, __ATOMIC_ACQUIRE);
  if (p != nullptr) return p;
  void* m = raw::Mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw::MmapFailed(m)) return nullptr;
  static_cast<uint8_t*>(m)[0] = kRet;
  if (raw::Syscall6(SYS_mprotect, reinterpret_cast<long>(m), 4096, PROT_READ | PROT_EXEC) != 0) {
    raw::Munmap(m, 4096);
    return nullptr;
  }
  const void* expected = nullptr;
  if (!__atomic_compare_exchange_n(&g_page, &expected, m, false, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    raw::Munmap(m, 4096);
    return expected;
  }
  return m;
}

// ---- the cache -------------------------------------------------------------------------
//
// Open addressing keyed by the caller's object: its link_map plus the shape of its
// mapping (start, end, unwind data) as _dl_find_object reports it now, so an entry can
// never describe a different object that reuses a freed link_map. Without
// _dl_find_object (glibc < 2.35) the key is the link_map alone and entries are dropped
// by an epoch that InvalidateCallerCache() bumps. Each slot is a seqlock: writers take
// an odd sequence number with a CAS (losing writers just do not cache); a torn or stale
// read is a miss.

struct ObjectId {
  const void* map = nullptr;  // link_map; nullptr: the address is in no object
  const void* start = nullptr;
  const void* end = nullptr;
  const void* eh_frame = nullptr;
  uint32_t epoch = 0;
  bool operator==(const ObjectId&) const = default;
};

// Every member initialized: the table is then constant-initialized (.bss). One left
// uninitialized made it a dynamic initializer that wrote all 72 KiB at every load.
struct Slot {
  uint32_t seq = 0;
  ObjectId id;
  const void* gadget = nullptr;
  const char* name = nullptr;
  uint64_t base = 0;
};

constexpr size_t kSlots = 1024;
constexpr size_t kProbe = 8;
Slot g_slots[kSlots];
uint32_t g_epoch = 1;

size_t SlotIndex(const void* key) {
  uint64_t h = reinterpret_cast<uintptr_t>(key);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return static_cast<size_t>(h) & (kSlots - 1);
}

template <class T> T LoadRelaxed(const T& v) { return __atomic_load_n(&v, __ATOMIC_RELAXED); }

bool CacheLookup(const ObjectId& id, CallerObject* out) {
  const size_t start = SlotIndex(id.map);
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& s = g_slots[(start + i) & (kSlots - 1)];
    const uint32_t s1 = __atomic_load_n(&s.seq, __ATOMIC_ACQUIRE);
    if (s1 & 1) continue;
    ObjectId k;
    k.map = LoadRelaxed(s.id.map);
    k.start = LoadRelaxed(s.id.start);
    k.end = LoadRelaxed(s.id.end);
    k.eh_frame = LoadRelaxed(s.id.eh_frame);
    k.epoch = LoadRelaxed(s.id.epoch);
    CallerObject c;
    c.gadget = LoadRelaxed(s.gadget);
    c.name = LoadRelaxed(s.name);
    c.base = LoadRelaxed(s.base);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&s.seq, __ATOMIC_RELAXED) != s1) continue;
    if (k == id) {
      *out = c;
      return true;
    }
    if (k.map == nullptr) return false;
  }
  return false;
}

void CacheStore(const ObjectId& id, const CallerObject& c) {
  const size_t start = SlotIndex(id.map);
  Slot* victim = &g_slots[start];
  for (size_t i = 0; i < kProbe; ++i) {
    Slot& s = g_slots[(start + i) & (kSlots - 1)];
    const void* k = LoadRelaxed(s.id.map);
    if (k == nullptr || k == id.map || LoadRelaxed(s.id.epoch) != id.epoch) {
      victim = &s;
      break;
    }
  }
  uint32_t seq = __atomic_load_n(&victim->seq, __ATOMIC_RELAXED);
  if ((seq & 1) || !__atomic_compare_exchange_n(&victim->seq, &seq, seq + 1, false,
                                                __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
    return;
  }
  __atomic_store_n(&victim->id.map, id.map, __ATOMIC_RELAXED);
  __atomic_store_n(&victim->id.start, id.start, __ATOMIC_RELAXED);
  __atomic_store_n(&victim->id.end, id.end, __ATOMIC_RELAXED);
  __atomic_store_n(&victim->id.eh_frame, id.eh_frame, __ATOMIC_RELAXED);
  __atomic_store_n(&victim->id.epoch, id.epoch, __ATOMIC_RELAXED);
  __atomic_store_n(&victim->gadget, c.gadget, __ATOMIC_RELAXED);
  __atomic_store_n(&victim->name, c.name, __ATOMIC_RELAXED);
  __atomic_store_n(&victim->base, c.base, __ATOMIC_RELAXED);
  __atomic_store_n(&victim->seq, seq + 2, __ATOMIC_RELEASE);
}

// The object holding `a`: lock-free through _dl_find_object (glibc 2.35+), else through
// dladdr1 (which takes the loader's lock). id.map is nullptr when `a` is in no object.
ObjectId IdentifyObject(const void* a) {
  ObjectId id;
  if (const DlFindObjectFn find = RealDlFindObject(); find != nullptr) {
    struct dl_find_object fo;
    if (find(const_cast<void*>(a), &fo) == 0) {
      id.map = fo.dlfo_link_map;
      id.start = fo.dlfo_map_start;
      id.end = fo.dlfo_map_end;
      id.eh_frame = fo.dlfo_eh_frame;
    }
    return id;
  }
  Dl_info info;
  struct link_map* map = nullptr;
  if (dladdr1(a, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0) {
    id.map = map;
    id.epoch = __atomic_load_n(&g_epoch, __ATOMIC_ACQUIRE);
  }
  return id;
}

// This library's own mapping, found once.
uintptr_t g_self_lo = 0, g_self_hi = 0;
int g_self_known = 0;

int FindSelf(struct dl_phdr_info* info, size_t, void* data) {
  const uintptr_t self = reinterpret_cast<uintptr_t>(data);
  if (!ContainsAddress(info, self)) return 0;
  uintptr_t lo = ~uintptr_t{0}, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t a = info->dlpi_addr + ph.p_vaddr;
    if (a < lo) lo = a;
    if (a + ph.p_memsz > hi) hi = a + ph.p_memsz;
  }
  g_self_lo = lo;
  g_self_hi = hi;
  return 1;
}

}  // namespace

bool IsShimCode(const void* addr) {
  if (__atomic_load_n(&g_self_known, __ATOMIC_ACQUIRE) == 0) {
    RealDlIteratePhdr()(FindSelf, reinterpret_cast<void*>(&IsShimCode));
    __atomic_store_n(&g_self_known, 1, __ATOMIC_RELEASE);
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr);
  return a >= g_self_lo && a < g_self_hi;
}

CallerObject FindCaller(const void* return_address) {
  CallerObject c;
#if defined(__x86_64__)
  const ObjectId id = IdentifyObject(return_address);
  if (id.map == nullptr) {
    c.gadget = AnonymousGadget();
    return c;
  }
  if (CacheLookup(id, &c)) return c;
  GadgetSearch q{reinterpret_cast<uintptr_t>(return_address)};
  RealDlIteratePhdr()(SearchGadget, &q);
  if (!q.found) {
    c.gadget = AnonymousGadget();
    return c;
  }
  c.gadget = q.gadget;
  c.name = q.name;
  c.base = q.base;
  CacheStore(id, c);
#else
  (void)return_address;
#endif
  return c;
}

void InvalidateCallerCache() { __atomic_add_fetch(&g_epoch, 1, __ATOMIC_ACQ_REL); }


}  // namespace colabtrace::shim::libs
