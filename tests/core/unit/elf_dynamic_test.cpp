// Unit tests of the shim's dynamic-section reader (shim/elf_dynamic.h), which real.cpp,
// gpu/elf_symbols.cpp, libs/inventory.cpp and libs/dl_hooks.cpp share: the objects
// loaded in this process (libc, relocated in place; the vDSO, whose read-only section
// keeps link-time addresses; this program's DT_NEEDED list) and sections built inline.
#include "elf_dynamic.h"

#include <gtest/gtest.h>
#include <link.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace colabtrace::shim {
namespace {

struct Found {
  const char* name_part;
  bool first = false;  // the main program (the first object) instead of a name
  bool found = false;
  ElfDynamic dyn;
  uintptr_t lo = 0, hi = 0;  // the object's loaded segments
};

// The dynamic section of the loaded object whose name contains name_part.
Found FindObject(const char* name_part, bool first = false) {
  Found f{name_part, first};
  dl_iterate_phdr(
      [](struct dl_phdr_info* info, size_t, void* data) {
        auto* f = static_cast<Found*>(data);
        const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        if (!f->first && std::strstr(name, f->name_part) == nullptr) return 0;
        f->found = true;
        f->dyn = ReadElfDynamic(info);
        f->lo = ~uintptr_t{0};
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          const uintptr_t a = info->dlpi_addr + ph.p_vaddr;
          if (a < f->lo) f->lo = a;
          if (a + ph.p_memsz > f->hi) f->hi = a + ph.p_memsz;
        }
        return 1;
      },
      &f);
  return f;
}

bool Inside(const Found& f, const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  return a >= f.lo && a < f.hi;
}

TEST(ElfDynamic, LibcHasItsSymbolTablesAndSoname) {
  const Found libc = FindObject("/libc.so");
  ASSERT_TRUE(libc.found);
  const ElfDynamic& d = libc.dyn;
  ASSERT_NE(d.dyn, nullptr);
  // glibc relocates DT_SYMTAB, DT_STRTAB, DT_GNU_HASH and DT_VERSYM in place but leaves
  // DT_VERDEF a link-time address: every one must come out inside libc.
  for (const void* table : {static_cast<const void*>(d.symtab), static_cast<const void*>(d.strtab),
                            static_cast<const void*>(d.gnu_hash), static_cast<const void*>(d.versym),
                            static_cast<const void*>(d.verdef)}) {
    EXPECT_TRUE(Inside(libc, table)) << table;
  }
  EXPECT_GT(d.strsz, 0u);
  ASSERT_NE(d.String(d.soname), nullptr);
  EXPECT_STREQ(d.String(d.soname), "libc.so.6");
  EXPECT_FALSE(d.audit);
  // The same section through the loader's link_map (real.cpp's way in).
  for (const struct link_map* m = _r_debug.r_map; m != nullptr; m = m->l_next) {
    if (m->l_name == nullptr || std::strstr(m->l_name, "/libc.so") == nullptr) continue;
    const ElfDynamic viaMap = ReadElfDynamic(m->l_ld, m->l_addr);
    EXPECT_EQ(viaMap.dyn, d.dyn);
    EXPECT_EQ(viaMap.symtab, d.symtab);
    EXPECT_EQ(viaMap.gnu_hash, d.gnu_hash);
    EXPECT_EQ(viaMap.soname, d.soname);
  }
}

TEST(ElfDynamic, TheVdsoKeepsLinkTimeAddressesAndTheyAreRebased) {
  const Found vdso = FindObject("linux-vdso");
  if (!vdso.found) GTEST_SKIP() << "no vDSO in this process";
  const ElfDynamic& d = vdso.dyn;
  ASSERT_NE(d.strtab, nullptr);
  EXPECT_TRUE(Inside(vdso, d.strtab));
  EXPECT_TRUE(Inside(vdso, d.symtab));
  EXPECT_STREQ(d.String(d.soname), "linux-vdso.so.1");
}

TEST(ElfDynamic, ThisProgramNeedsLibc) {
  const Found self = FindObject("", /*first=*/true);
  ASSERT_TRUE(self.found);
  std::vector<std::string> needed;
  ForEachNeeded(self.dyn, [&](const char* name) { needed.emplace_back(name); });
  EXPECT_NE(std::find(needed.begin(), needed.end(), "libc.so.6"), needed.end()) << ::testing::PrintToString(needed);
}

ElfW(Dyn) Entry(ElfW(Sxword) tag, uintptr_t value) {
  ElfW(Dyn) e{};
  e.d_tag = tag;
  e.d_un.d_ptr = value;
  return e;
}

TEST(ElfDynamic, AddressesBelowTheBiasAreRebasedAndZeroIsNoTable) {
  const uintptr_t base = 0x7f0000000000;
  const std::vector<ElfW(Dyn)> dyn = {
      Entry(DT_STRTAB, 0x400),              // link-time: base + 0x400
      Entry(DT_SYMTAB, base + 0x800),       // relocated: as it is
      Entry(DT_HASH, 0),                    // no table
      Entry(DT_SONAME, 1), Entry(DT_SONAME, 7),  // twice: the last counts, as in glibc
      Entry(DT_VERNEEDNUM, 3), Entry(DT_STRSZ, 99),
      Entry(DT_NULL, 0),
      Entry(DT_AUDIT, 1),                   // after DT_NULL: not read
  };
  const ElfDynamic d = ReadElfDynamic(dyn.data(), base);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d.strtab), base + 0x400);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d.symtab), base + 0x800);
  EXPECT_EQ(d.sysv_hash, nullptr);
  EXPECT_EQ(d.gnu_hash, nullptr);
  EXPECT_EQ(d.soname, 7u);
  EXPECT_EQ(d.verneednum, 3u);
  EXPECT_EQ(d.strsz, 99u);
  EXPECT_FALSE(d.audit);
  EXPECT_EQ(ReadElfDynamic(nullptr, base).dyn, nullptr);
  EXPECT_EQ(ReadElfDynamic(nullptr, base).soname, UINT64_MAX);
}

TEST(ElfDynamic, AuditEntriesAreSeen) {
  for (ElfW(Sxword) tag : {DT_AUDIT, DT_DEPAUDIT}) {
    const std::vector<ElfW(Dyn)> dyn = {Entry(DT_NEEDED, 1), Entry(tag, 1), Entry(DT_NULL, 0)};
    EXPECT_TRUE(ReadElfDynamic(dyn.data(), 0).audit) << tag;
  }
}

TEST(ElfDynamic, StringsEndWithinTheTable) {
  static const char table[] = "\0libx.so\0liby.so";  // 16 bytes, the last string unterminated at 16
  const std::vector<ElfW(Dyn)> dyn = {Entry(DT_STRTAB, reinterpret_cast<uintptr_t>(table)),
                                      Entry(DT_STRSZ, 16), Entry(DT_NEEDED, 1), Entry(DT_NEEDED, 9),
                                      Entry(DT_NEEDED, 16), Entry(DT_NULL, 0)};
  const ElfDynamic d = ReadElfDynamic(dyn.data(), 0);
  EXPECT_STREQ(d.String(1), "libx.so");
  EXPECT_EQ(d.String(9), nullptr);   // "liby.so" ends at byte 16, outside DT_STRSZ
  EXPECT_EQ(d.String(16), nullptr);
  EXPECT_EQ(d.String(UINT64_MAX), nullptr);
  std::vector<std::string> needed;
  ForEachNeeded(d, [&](const char* name) { needed.emplace_back(name); });
  EXPECT_EQ(needed, std::vector<std::string>{"libx.so"});
  ElfDynamic no_table = d;
  no_table.strtab = nullptr;
  EXPECT_EQ(no_table.String(1), nullptr);
}

TEST(ElfDynamic, AWalkWithoutDtNullStopsAtTheBound) {
  std::vector<ElfW(Dyn)> dyn(kMaxDynamicEntries + 100, Entry(DT_NEEDED, 0));
  int seen = 0;
  ForEachDynamicEntry(dyn.data(), [&](const ElfW(Dyn)&) { ++seen; });
  EXPECT_EQ(seen, kMaxDynamicEntries);
}

}  // namespace
}  // namespace colabtrace::shim
