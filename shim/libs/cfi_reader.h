// A minimal reader of a loaded object's DWARF call frame information (.eh_frame_hdr and
// .eh_frame), for the caller-preserving trampoline (caller_trampoline.h).
//
// It answers one question: is the CFI row in effect at an address the state of a
// function's entry on x86-64 (CFA = rsp + 8, return address at CFA - 8, no other
// register saved in memory)? A `ret` byte whose preceding address has that row can serve
// as a gadget: an unwinder that stops there recovers the trampoline's continuation.
//
// It computes that row only: the CFA rule, the return-address rule and whether any other
// register is saved; anything it does not understand (a CFA expression, an encoding it
// does not know) is "no". It needs no unwinder, allocates nothing and calls nothing
// (a sanitizer runtime may call dlsym, and so this reader, from its own start-up), and
// every read is bounded by the readable segment holding the unwind data, so damaged
// unwind data gives "no", never a read outside the object.
#pragma once

#include <link.h>

#include <cstddef>
#include <cstdint>

namespace colabtrace::shim::libs {

// Bytes [begin, end) of the loaded segment that holds an object's unwind data.
struct UnwindRegion {
  const uint8_t* begin;
  const uint8_t* end;
  bool Has(const uint8_t* p, size_t n) const {
    return p >= begin && p <= end && n <= static_cast<size_t>(end - p);
  }
};

// The unwind data of one object: its .eh_frame_hdr search table, bounded by the
// readable segment that holds it.
struct UnwindTable {
  const uint8_t* hdr = nullptr;
  UnwindRegion region{nullptr, nullptr};
  const uint8_t* table = nullptr;  // pairs of (initial_loc, fde) as datarel sdata4
  uint64_t count = 0;
};

// Finds the object's PT_GNU_EH_FRAME and the PT_LOAD segment holding it, and reads the
// .eh_frame_hdr's binary search table. False when the object has none, or one this
// reader cannot search (its table must be datarel sdata4, as every linker writes it).
bool OpenUnwindTable(const struct dl_phdr_info* info, UnwindTable* t);

// True when the CFI row at `pc` says: CFA = rsp + 8, return address at CFA - 8, and no
// other register saved in memory. That is the state in which a gadget runs, so an
// unwinder that looks up pc (= gadget - 1) recovers the continuation correctly. False
// for a pc no FDE covers, a signal frame, and anything the reader does not understand.
bool EntryLikeRowAt(const UnwindTable& t, uintptr_t pc);

}  // namespace colabtrace::shim::libs
