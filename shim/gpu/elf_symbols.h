// Looking up symbols in loaded objects by reading their dynamic symbol tables.
//
// The GPU module needs "the cudaMalloc this caller would have bound to" and "the
// cuMemGetInfo_v2 of this particular libcuda". dlsym on a link_map is not an answer:
// glibc only gives a search list to the main program and to objects opened with dlopen,
// so dlsym(link_map_of_a_DT_NEEDED_library, ...) crashes; dlsym also takes the loader
// lock and leaves dlerror state behind. These functions read the objects' own .dynsym
// (GNU hash tables, symbol versions, DT_SONAME, DT_VERNEED) in place: no allocation, no
// loader lock beyond dl_iterate_phdr's, no side effects.
#pragma once

#include <cstddef>
#include <cstdint>

namespace colabtrace::shim::gpu {

// The address range of the loaded object holding addr, and its name ("" for the main
// program). False if addr is in no object.
struct ObjectRange {
  uintptr_t lo = 0, hi = 0;
  uintptr_t base = 0;        // load bias
  const char* name = nullptr;
};
bool FindObjectOf(const void* addr, ObjectRange* out);

// The default-version definition of `name` in the object holding `in_object` (any
// address inside it); nullptr if that object does not define it.
void* FindSymbolIn(const void* in_object, const char* name);

// The definition of `name` that code at `caller` binds to when the shim is not there:
// if the caller's reference carries a symbol version (cudaMalloc@libcudart.so.12), the
// definition in the loaded object whose DT_SONAME is that version's file; otherwise the
// first definition in load order. Objects holding `skip` (the shim) or `skip_also` (an
// object the shim loaded for itself, when not nullptr) are never chosen. nullptr if nothing
// else defines it.
void* FindLikeCaller(const char* name, const void* caller, const void* skip, const void* skip_also = nullptr);

}  // namespace colabtrace::shim::gpu
