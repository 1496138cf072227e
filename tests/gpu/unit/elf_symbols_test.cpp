// The shim's own dynamic-symbol lookups (shim/gpu/elf_symbols.h), checked against the
// dynamic linker's answers in this test process.
#include "gpu/elf_symbols.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>

namespace colabtrace::shim::gpu {
namespace {

__attribute__((noinline)) const void* Here() { return __builtin_return_address(0); }

// Under AddressSanitizer (COLABTRACE_SANITIZE, build-asan/) the ASan runtime, loaded
// first, interposes fopen: &fopen and the default fopen are its, not libc.so.6's.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsanInterposesFopen = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsanInterposesFopen = true;
#else
constexpr bool kAsanInterposesFopen = false;
#endif
#else
constexpr bool kAsanInterposesFopen = false;
#endif

TEST(ElfSymbols, FindSymbolInMatchesDlsym) {
  void* libc_strlen = dlsym(RTLD_DEFAULT, "strlen");
  ASSERT_NE(libc_strlen, nullptr);
  // Any address inside libc names libc; the default version of the symbol comes back.
  void* mine = FindSymbolIn(reinterpret_cast<const void*>(&fopen), "fopen");
  EXPECT_EQ(mine, dlsym(RTLD_DEFAULT, "fopen"));
  EXPECT_EQ(FindSymbolIn(reinterpret_cast<const void*>(&fopen), "no_such_symbol_here"), nullptr);
}

TEST(ElfSymbols, FindObjectOf) {
  if (kAsanInterposesFopen) GTEST_SKIP() << "ASan's runtime defines fopen, not libc.so.6";
  ObjectRange r;
  ASSERT_TRUE(FindObjectOf(reinterpret_cast<const void*>(&fopen), &r));
  EXPECT_NE(std::strstr(r.name, "libc.so"), nullptr) << r.name;
  EXPECT_LE(r.lo, reinterpret_cast<uintptr_t>(&fopen));
  EXPECT_GT(r.hi, reinterpret_cast<uintptr_t>(&fopen));
  EXPECT_FALSE(FindObjectOf(reinterpret_cast<const void*>(16), &r));
}

TEST(ElfSymbols, FindLikeCallerFollowsTheCallersVersionedReference) {
  if (kAsanInterposesFopen) GTEST_SKIP() << "ASan's runtime defines fopen, not libc.so.6";
  // This test program references fopen@GLIBC_*: the definition is libc.so.6's.
  EXPECT_EQ(FindLikeCaller("fopen", Here(), nullptr), dlsym(RTLD_DEFAULT, "fopen"));
  // Skipping the object that defines it leaves nothing.
  EXPECT_EQ(FindLikeCaller("fopen", Here(), reinterpret_cast<const void*>(&fopen)), nullptr);
  EXPECT_EQ(FindLikeCaller("no_such_symbol_here", Here(), nullptr), nullptr);
  // No caller: the first definition in load order.
  EXPECT_EQ(FindLikeCaller("fopen", nullptr, nullptr), dlsym(RTLD_DEFAULT, "fopen"));
}

}  // namespace
}  // namespace colabtrace::shim::gpu
