// _dl_find_object's answer (glibc 2.35) from dl_iterate_phdr, for glibc before 2.35: the
// object whose PT_LOAD segments hold pc, its extent and its PT_GNU_EH_FRAME (what libgcc's
// unwinder reads), no link_map. The shim and the CLI carry libgcc's unwinder statically
// and run on glibc 2.28+ (shim/glibc_floor.cpp, analyzer/cli/glibc_floor.cpp).
#pragma once

#include <link.h>

#include <cstdint>

namespace colabtrace {

// iterate: dl_iterate_phdr, or the shim's real one. 0 when found, -1 when pc is in no object.
template <class Iterate> int FindObjectByPhdr(void* pc, dl_find_object* out, Iterate iterate) {
  struct Arg {
    uintptr_t pc;
    dl_find_object* out;
    bool found;
  } a{reinterpret_cast<uintptr_t>(pc), out, false};
  iterate(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* a = static_cast<Arg*>(data);
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        bool inside = false;
        void* eh_frame = nullptr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD) {
            inside = inside || (a->pc >= start && a->pc < start + ph.p_memsz);
            lo = start < lo ? start : lo;
            hi = start + ph.p_memsz > hi ? start + ph.p_memsz : hi;
          } else if (ph.p_type == PT_GNU_EH_FRAME) {
            eh_frame = reinterpret_cast<void*>(start);
          }
        }
        if (!inside) return 0;
        *a->out = dl_find_object{};
        a->out->dlfo_map_start = reinterpret_cast<void*>(lo);
        a->out->dlfo_map_end = reinterpret_cast<void*>(hi);
        a->out->dlfo_eh_frame = eh_frame;
        a->found = true;
        return 1;
      },
      &a);
  return a.found ? 0 : -1;
}

}  // namespace colabtrace
