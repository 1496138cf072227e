// The per-call-site cache of real functions (shim/gpu/call_site_cache.h).
#include "gpu/call_site_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace colabtrace::shim::gpu {
namespace {

void* Fn(uintptr_t v) { return reinterpret_cast<void*>(v); }
const void* Site(uintptr_t v) { return reinterpret_cast<const void*>(v); }

TEST(CallSiteCache, MissThenHit) {
  static CallSiteCache<64> cache;
  const uint64_t k = CallSiteCache<64>::Key(Site(0x401234), 1);
  EXPECT_EQ(cache.Lookup(k), nullptr);
  EXPECT_TRUE(cache.Insert(k, Fn(0x7000)));
  EXPECT_EQ(cache.Lookup(k), Fn(0x7000));
  EXPECT_TRUE(cache.Insert(k, Fn(0x7000)));  // same answer again: still one entry
  EXPECT_EQ(cache.Lookup(k), Fn(0x7000));
}

TEST(CallSiteCache, SameSiteDifferentApisAreDifferentEntries) {
  static CallSiteCache<64> cache;
  const uint64_t a = CallSiteCache<64>::Key(Site(0x401234), 1);
  const uint64_t b = CallSiteCache<64>::Key(Site(0x401234), 2);
  ASSERT_NE(a, b);
  cache.Insert(a, Fn(0x1000));
  cache.Insert(b, Fn(0x2000));
  EXPECT_EQ(cache.Lookup(a), Fn(0x1000));
  EXPECT_EQ(cache.Lookup(b), Fn(0x2000));
}

TEST(CallSiteCache, FullTableMissesButNeverLies) {
  static CallSiteCache<16> cache;
  int stored = 0;
  for (uintptr_t i = 1; i <= 64; ++i) {
    if (cache.Insert(CallSiteCache<16>::Key(Site(i * 0x40), 3), Fn(i))) ++stored;
  }
  EXPECT_EQ(stored, 16);
  for (uintptr_t i = 1; i <= 64; ++i) {
    void* f = cache.Lookup(CallSiteCache<16>::Key(Site(i * 0x40), 3));
    if (f != nullptr) EXPECT_EQ(f, Fn(i));
  }
  EXPECT_FALSE(cache.Insert(0, Fn(1)));
  EXPECT_FALSE(cache.Insert(5, nullptr));
}

TEST(CallSiteCache, ConcurrentInsertAndLookup) {
  static CallSiteCache<4096> cache;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (uintptr_t round = 0; round < 200; ++round) {
        for (uintptr_t i = 1; i <= 256; ++i) {
          const uint64_t k = CallSiteCache<4096>::Key(Site(0x500000 + i * 16), 7);
          void* f = cache.Lookup(k);
          if (f == nullptr) {
            cache.Insert(k, Fn(i * 3));
          } else if (f != Fn(i * 3)) {
            wrong.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  for (uintptr_t i = 1; i <= 256; ++i) {
    EXPECT_EQ(cache.Lookup(CallSiteCache<4096>::Key(Site(0x500000 + i * 16), 7)), Fn(i * 3));
  }
}

}  // namespace
}  // namespace colabtrace::shim::gpu
