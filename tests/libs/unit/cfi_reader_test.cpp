// Unit tests of the shim's DWARF CFI reader (shim/libs/cfi_reader.cpp), which picks the
// caller-preserving trampoline's gadgets (a gadget's preceding address must have the
// function-entry row, or unwinding through dlopen breaks: libs_dl_semantics).
//
// - Functions whose CFI this file writes itself (assembly with .cfi directives), found
//   through this test program's own .eh_frame_hdr: the row at each instruction.
// - A function the compiler wrote: its first byte has the entry row.
// - A synthetic object built byte by byte (.eh_frame_hdr, a CIE and an FDE), placed
//   against an inaccessible page: every truncation and many corruptions of it give "no"
//   or the right row, never a read outside the object (a fault here, an ASan report in
//   the sanitizer build).
#include "libs/cfi_reader.h"

#include <gtest/gtest.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
extern "C" {
// The rows, by offset: +0 entry; +1 entry (push not yet run); +2 CFA = rsp + 16 with rbx
// saved; +3 the same; +4 entry again (after the pop).
void ct_cfi_push_pop();
// +0 entry; +1 CFA = rsp + 16, rbx saved; .cfi_remember_state; +2 entry (after the pop,
// the early return); .cfi_restore_state; +3 CFA = rsp + 16 again; +4 the same; +5 entry.
void ct_cfi_remember();
// +0 entry; +1 CFA = rsp + 8 but rbx saved at CFA - 16 (a mov, no push): not entry-like.
void ct_cfi_saved_no_push();
// +0 entry; +1 after push rbp; +4 after mov rsp, rbp: CFA = rbp + 16; +5 entry again.
void ct_cfi_frame_pointer();
// A signal frame (augmentation "S"): never entry-like, even at its first byte.
void ct_cfi_signal_frame();
// +0 entry; +1 the return address said to be in rax (DW_CFA_register): not entry-like.
void ct_cfi_ra_in_register();
// +0 entry; +1 CFA given by an expression (DW_CFA_def_cfa_expression): not understood, no.
void ct_cfi_cfa_expression();
}

__asm__(
    "  .text\n"
    "  .globl ct_cfi_push_pop\n"
    "  .type ct_cfi_push_pop, @function\n"
    "ct_cfi_push_pop:\n"
    "  .cfi_startproc\n"
    "  nop\n"
    "  pushq %rbx\n"
    "  .cfi_adjust_cfa_offset 8\n"
    "  .cfi_offset %rbx, -16\n"
    "  nop\n"
    "  popq %rbx\n"
    "  .cfi_adjust_cfa_offset -8\n"
    "  .cfi_restore %rbx\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size ct_cfi_push_pop, .-ct_cfi_push_pop\n"

    "  .globl ct_cfi_remember\n"
    "  .type ct_cfi_remember, @function\n"
    "ct_cfi_remember:\n"
    "  .cfi_startproc\n"
    "  pushq %rbx\n"
    "  .cfi_adjust_cfa_offset 8\n"
    "  .cfi_offset %rbx, -16\n"
    "  .cfi_remember_state\n"
    "  popq %rbx\n"
    "  .cfi_adjust_cfa_offset -8\n"
    "  .cfi_restore %rbx\n"
    "  ret\n"
    "  .cfi_restore_state\n"
    "  nop\n"
    "  popq %rbx\n"
    // Absolute, not adjusted: clang's integrated assembler adjusts from the offset before
    // .cfi_restore_state (CFA = rsp + 0 here), GNU as from the restored one.
    "  .cfi_def_cfa_offset 8\n"
    "  .cfi_restore %rbx\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size ct_cfi_remember, .-ct_cfi_remember\n"

    "  .globl ct_cfi_saved_no_push\n"
    "  .type ct_cfi_saved_no_push, @function\n"
    "ct_cfi_saved_no_push:\n"
    "  .cfi_startproc\n"
    "  nop\n"
    "  .cfi_offset %rbx, -16\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size ct_cfi_saved_no_push, .-ct_cfi_saved_no_push\n"

    "  .globl ct_cfi_frame_pointer\n"
    "  .type ct_cfi_frame_pointer, @function\n"
    "ct_cfi_frame_pointer:\n"
    "  .cfi_startproc\n"
    "  pushq %rbp\n"
    "  .cfi_def_cfa_offset 16\n"
    "  .cfi_offset %rbp, -16\n"
    "  movq %rsp, %rbp\n"
    "  .cfi_def_cfa_register %rbp\n"
    "  popq %rbp\n"
    "  .cfi_def_cfa %rsp, 8\n"
    "  .cfi_restore %rbp\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size ct_cfi_frame_pointer, .-ct_cfi_frame_pointer\n"

    "  .globl ct_cfi_signal_frame\n"
    "  .type ct_cfi_signal_frame, @function\n"
    "ct_cfi_signal_frame:\n"
    "  .cfi_startproc\n"
    "  .cfi_signal_frame\n"
    "  nop\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size ct_cfi_signal_frame, .-ct_cfi_signal_frame\n"

    "  .globl ct_cfi_ra_in_register\n"
    "  .type ct_cfi_ra_in_register, @function\n"
    "ct_cfi_ra_in_register:\n"
    "  .cfi_startproc\n"
    "  nop\n"
    "  .cfi_register %rip, %rax\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size ct_cfi_ra_in_register, .-ct_cfi_ra_in_register\n"

    "  .globl ct_cfi_cfa_expression\n"
    "  .type ct_cfi_cfa_expression, @function\n"
    "ct_cfi_cfa_expression:\n"
    "  .cfi_startproc\n"
    "  nop\n"
    // DW_CFA_def_cfa_expression, 2 bytes: DW_OP_breg7 (rsp) 8.
    "  .cfi_escape 0x0f, 0x02, 0x77, 0x08\n"
    "  ret\n"
    "  .cfi_endproc\n"
    "  .size ct_cfi_cfa_expression, .-ct_cfi_cfa_expression\n");
#endif

// What the compiler writes for an ordinary function: its first byte has the entry row.
extern "C" __attribute__((noinline)) int ct_cfi_compiled(int x) {
  __asm__ volatile("" ::: "memory");
  return x * 3 + 1;
}

namespace colabtrace::shim::libs {
namespace {

struct ObjectQuery {
  uintptr_t address;
  bool opened = false;
  UnwindTable table;
};

// The unwind table of the loaded object holding `address` (this test program).
UnwindTable TableOf(const void* address) {
  ObjectQuery q{reinterpret_cast<uintptr_t>(address)};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* q = static_cast<ObjectQuery*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && q->address >= lo && q->address < lo + ph.p_memsz) {
            q->opened = OpenUnwindTable(info, &q->table);
            return 1;
          }
        }
        return 0;
      },
      &q);
  EXPECT_TRUE(q.opened) << "no .eh_frame_hdr found for this test program";
  return q.table;
}

// The entry-likeness of the rows at fn + 0, fn + 1, ... fn + n - 1.
std::vector<bool> Rows(void (*fn)(), int n) {
  const UnwindTable t = TableOf(reinterpret_cast<const void*>(fn));
  std::vector<bool> rows;
  for (int i = 0; i < n; ++i) rows.push_back(EntryLikeRowAt(t, reinterpret_cast<uintptr_t>(fn) + i));
  return rows;
}

#if defined(__x86_64__)
TEST(CfiReader, PushAndPopMoveTheRowAwayFromEntryAndBack) {
  EXPECT_EQ(Rows(ct_cfi_push_pop, 5), (std::vector<bool>{true, true, false, false, true}));
}

TEST(CfiReader, RememberAndRestoreState) {
  EXPECT_EQ(Rows(ct_cfi_remember, 6), (std::vector<bool>{true, false, true, false, false, true}));
}

TEST(CfiReader, ARegisterSavedWithoutMovingTheCfaIsNotEntryLike) {
  EXPECT_EQ(Rows(ct_cfi_saved_no_push, 2), (std::vector<bool>{true, false}));
}

TEST(CfiReader, AFramePointerCfaIsNotEntryLike) {
  // push rbp (1 byte), mov rsp, rbp (3 bytes), pop rbp (1 byte), ret.
  EXPECT_EQ(Rows(ct_cfi_frame_pointer, 6), (std::vector<bool>{true, false, false, false, false, true}));
}

TEST(CfiReader, ASignalFrameIsNeverEntryLike) {
  EXPECT_EQ(Rows(ct_cfi_signal_frame, 2), (std::vector<bool>{false, false}));
}

TEST(CfiReader, AReturnAddressInARegisterIsNotEntryLike) {
  EXPECT_EQ(Rows(ct_cfi_ra_in_register, 2), (std::vector<bool>{true, false}));
}

TEST(CfiReader, ACfaExpressionIsNotUnderstood) {
  EXPECT_EQ(Rows(ct_cfi_cfa_expression, 2), (std::vector<bool>{true, false}));
}
#endif

TEST(CfiReader, ACompiledFunctionStartsWithTheEntryRow) {
  const UnwindTable t = TableOf(reinterpret_cast<const void*>(&ct_cfi_compiled));
  EXPECT_TRUE(EntryLikeRowAt(t, reinterpret_cast<uintptr_t>(&ct_cfi_compiled)));
  EXPECT_EQ(ct_cfi_compiled(2), 7);
}

TEST(CfiReader, AnAddressNoFdeCoversIsNotEntryLike) {
  static int data_object = 0;
  const UnwindTable t = TableOf(reinterpret_cast<const void*>(&ct_cfi_compiled));
  EXPECT_FALSE(EntryLikeRowAt(t, reinterpret_cast<uintptr_t>(&data_object)));
  EXPECT_FALSE(EntryLikeRowAt(t, 0));
  EXPECT_FALSE(EntryLikeRowAt(t, ~uintptr_t{0}));
}

// ---- a synthetic object ------------------------------------------------------------------
//
// Offsets from the object's start: a 16-byte "function" at kFunc, the .eh_frame_hdr at
// kHdr (one table entry), then .eh_frame: a CIE ("zR", pcrel sdata4 FDE pointers, the
// entry row as its initial instructions), one FDE covering the function, a terminator.

constexpr size_t kFunc = 0x10, kFuncSize = 0x10, kHdr = 0x20;

void Put32(std::vector<uint8_t>& b, size_t at, uint32_t v) { std::memcpy(b.data() + at, &v, 4); }
void Add(std::vector<uint8_t>& b, std::initializer_list<uint8_t> bytes) { b.insert(b.end(), bytes); }
void Add32(std::vector<uint8_t>& b, uint32_t v) {
  b.resize(b.size() + 4);
  Put32(b, b.size() - 4, v);
}
// Pads the record that started at `start` (its length field) to a multiple of 4 and
// writes its length.
void EndRecord(std::vector<uint8_t>& b, size_t start) {
  while ((b.size() - start) % 4 != 0) b.push_back(0);  // DW_CFA_nop
  Put32(b, start, static_cast<uint32_t>(b.size() - start - 4));
}

struct Synthetic {
  std::vector<uint8_t> bytes;
  size_t fde_end = 0;  // the end of the FDE record: a shorter object has lost part of it
};

// fde_insns: the FDE's CFA program. cie_aug: the CIE's augmentation ("zR", or "zRS").
Synthetic BuildObject(std::initializer_list<uint8_t> fde_insns, const char* cie_aug = "zR") {
  std::vector<uint8_t> b(kHdr, 0xc3);
  Add(b, {1, 0x1b /* eh_frame_ptr: pcrel sdata4 */, 0x03 /* count: udata4 */, 0x3b /* datarel sdata4 */});
  const size_t frame_ptr_field = b.size();
  Add32(b, 0);  // eh_frame_ptr
  Add32(b, 1);  // fde_count
  Add32(b, static_cast<uint32_t>(kFunc - kHdr));
  const size_t table_fde_field = b.size();
  Add32(b, 0);  // the FDE, datarel
  const size_t cie = b.size();
  Put32(b, frame_ptr_field, static_cast<uint32_t>(cie - frame_ptr_field));
  Add32(b, 0);  // length
  Add32(b, 0);  // CIE id
  b.push_back(1);
  for (const char* a = cie_aug; *a != '\0'; ++a) b.push_back(static_cast<uint8_t>(*a));
  b.push_back(0);
  Add(b, {1 /* code_align */, 0x78 /* data_align -8 */, 16 /* ra: rip */, 1 /* aug length */, 0x1b});
  Add(b, {0x0c, 7, 8 /* def_cfa rsp 8 */, 0x90, 1 /* offset rip, cfa - 8 */});
  EndRecord(b, cie);
  const size_t fde = b.size();
  Put32(b, table_fde_field, static_cast<uint32_t>(fde - kHdr));
  Add32(b, 0);  // length
  Add32(b, static_cast<uint32_t>(b.size() - cie));  // CIE pointer: back from this field
  const size_t begin_field = b.size();
  Add32(b, static_cast<uint32_t>(kFunc - begin_field));  // pc_begin, pcrel
  Add32(b, kFuncSize);
  b.push_back(0);  // augmentation data length
  b.insert(b.end(), fde_insns);
  EndRecord(b, fde);
  Synthetic s;
  s.fde_end = b.size();
  Add32(b, 0);  // terminator
  s.bytes = std::move(b);
  return s;
}

// Two inaccessible pages around a readable one: an object copied against either edge
// faults on the first byte read past that edge.
class GuardedPage {
 public:
  GuardedPage() {
    page_ = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    void* m = mmap(nullptr, 3 * page_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(m, MAP_FAILED);
    base_ = static_cast<uint8_t*>(m);
    EXPECT_EQ(mprotect(base_ + page_, page_, PROT_READ | PROT_WRITE), 0);
  }
  ~GuardedPage() { munmap(base_, 3 * page_); }
  GuardedPage(const GuardedPage&) = delete;
  GuardedPage& operator=(const GuardedPage&) = delete;
  uint8_t* Start() const { return base_ + page_; }
  uint8_t* End() const { return base_ + 2 * page_; }

 private:
  size_t page_ = 0;
  uint8_t* base_ = nullptr;
};

// The row at the synthetic function's byte `offset`, with the object's first `n` bytes
// copied to `at` (one loaded segment of n bytes; the .eh_frame_hdr segment at kHdr).
bool RowOfCopy(const std::vector<uint8_t>& bytes, size_t n, uint8_t* at, size_t offset) {
  std::memcpy(at, bytes.data(), n);
  ElfW(Phdr) ph[2] = {};
  ph[0].p_type = PT_LOAD;
  ph[0].p_flags = PF_R | PF_X;
  ph[0].p_filesz = ph[0].p_memsz = n;
  ph[1].p_type = PT_GNU_EH_FRAME;
  ph[1].p_vaddr = kHdr;
  ph[1].p_filesz = ph[1].p_memsz = 20;
  struct dl_phdr_info info = {};
  info.dlpi_addr = reinterpret_cast<ElfW(Addr)>(at);
  info.dlpi_name = "synthetic";
  info.dlpi_phdr = ph;
  info.dlpi_phnum = 2;
  UnwindTable t;
  if (!OpenUnwindTable(&info, &t)) return false;
  return EntryLikeRowAt(t, reinterpret_cast<uintptr_t>(at) + kFunc + offset);
}

TEST(CfiReader, SyntheticObjectHasTheRowsItsFdeSays) {
  // advance 1; def_cfa_offset 16; offset rbx (3) at cfa - 16; advance 2; restore rbx;
  // def_cfa_offset 8.
  const Synthetic s = BuildObject({0x41, 0x0e, 16, 0x83, 2, 0x42, 0xc3, 0x0e, 8});
  GuardedPage page;
  std::vector<bool> rows;
  for (size_t off = 0; off < 5; ++off) rows.push_back(RowOfCopy(s.bytes, s.bytes.size(), page.Start(), off));
  EXPECT_EQ(rows, (std::vector<bool>{true, false, false, true, true}));
  // Past the FDE's range, and before the function: no FDE covers them.
  EXPECT_FALSE(RowOfCopy(s.bytes, s.bytes.size(), page.Start(), kFuncSize));
  EXPECT_FALSE(RowOfCopy(s.bytes, s.bytes.size(), page.Start(), static_cast<size_t>(-1)));
}

TEST(CfiReader, SyntheticSignalFrameIsNotEntryLike) {
  const Synthetic s = BuildObject({}, "zRS");
  GuardedPage page;
  EXPECT_FALSE(RowOfCopy(s.bytes, s.bytes.size(), page.Start(), 0));
  const Synthetic plain = BuildObject({});
  EXPECT_TRUE(RowOfCopy(plain.bytes, plain.bytes.size(), page.Start(), 0));
}

TEST(CfiReader, RememberStateDeeperThanEightIsRefused) {
  GuardedPage page;
  const Synthetic eight = BuildObject({0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a});
  EXPECT_TRUE(RowOfCopy(eight.bytes, eight.bytes.size(), page.Start(), 0));
  const Synthetic nine = BuildObject({0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a, 0x0a});
  EXPECT_FALSE(RowOfCopy(nine.bytes, nine.bytes.size(), page.Start(), 0));
  const Synthetic unbalanced = BuildObject({0x0b});
  EXPECT_FALSE(RowOfCopy(unbalanced.bytes, unbalanced.bytes.size(), page.Start(), 0));
}

// An .eh_frame_hdr whose 8-byte FDE count makes count * 8 wrap to 8 (one entry's worth):
// refused, not searched over 2^61 entries.
TEST(CfiReader, AnFdeCountThatWrapsIsRefused) {
  std::vector<uint8_t> b(kHdr, 0xc3);
  Add(b, {1, 0x1b, 0x04 /* count: udata8 */, 0x3b});
  Add32(b, 0);                                       // eh_frame_ptr
  Add32(b, 1);                                       // count, low half
  Add32(b, 1u << 29);                                // count, high half: 2^61 + 1 in all
  Add32(b, static_cast<uint32_t>(kFunc - kHdr));     // the one real entry
  Add32(b, 0);
  GuardedPage page;
  EXPECT_FALSE(RowOfCopy(b, b.size(), page.End() - b.size(), 0));
}

// Every prefix of the object, against the page's end (a read past the object faults)
// and against its start (a read before it faults): "no" until the FDE is whole.
TEST(CfiReader, TruncatedObjectsAreReadWithinTheirBounds) {
  const Synthetic s = BuildObject({0x41, 0x0e, 16});
  GuardedPage page;
  for (size_t n = 0; n <= s.bytes.size(); ++n) {
    const bool at_end = RowOfCopy(s.bytes, n, page.End() - n, 0);
    const bool at_start = RowOfCopy(s.bytes, n, page.Start(), 0);
    EXPECT_EQ(at_end, n >= s.fde_end) << "prefix of " << n << " bytes";
    EXPECT_EQ(at_start, at_end) << "prefix of " << n << " bytes";
  }
}

// Every byte of the unwind data set to values that make lengths, pointers, encodings and
// opcodes hostile: whatever the answer, every read stays inside the object.
TEST(CfiReader, CorruptedObjectsAreReadWithinTheirBounds) {
  const Synthetic s = BuildObject({0x41, 0x0e, 16, 0x83, 2});
  GuardedPage page;
  int answered = 0;
  for (size_t i = kHdr; i < s.bytes.size(); ++i) {
    for (uint8_t v : {0x00, 0x01, 0x7f, 0x80, 0xc0, 0xfe, 0xff}) {
      std::vector<uint8_t> bad = s.bytes;
      bad[i] = v;
      RowOfCopy(bad, bad.size(), page.End() - bad.size(), 0);
      RowOfCopy(bad, bad.size(), page.Start(), 0);
      ++answered;
    }
  }
  EXPECT_EQ(answered, static_cast<int>((s.bytes.size() - kHdr) * 7));
}

}  // namespace
}  // namespace colabtrace::shim::libs
