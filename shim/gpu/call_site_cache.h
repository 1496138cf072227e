// A lock-free map from (call site, API) to the real function that call site binds to.
//
// A runtime hook such as cudaMalloc must call the definition its caller would have bound
// to without the shim (libcudart.so.12's for a caller linked against it, even while
// libcudart.so.13 is loaded too). Finding it walks the loaded objects' symbol tables
// (elf_symbols.h), so the answer is cached per return address: a fixed open-addressing table, insert-only, no allocation,
// safe to read from any thread at any time (signal handlers included). A full table
// only costs speed: Lookup misses and the caller resolves again.
#pragma once

#include <cstddef>
#include <cstdint>

namespace colabtrace::shim::gpu {

template <size_t kSlots> class CallSiteCache {
  static_assert((kSlots & (kSlots - 1)) == 0, "kSlots must be a power of two");

 public:
  static constexpr size_t kMaxProbes = 16;

  // The key of (site, api). User-space return addresses are below 2^56 on every supported target.
  static uint64_t Key(const void* site, uint32_t api) {
    return (reinterpret_cast<uint64_t>(site) << 8) ^ api;
  }

  // The cached function for key, or nullptr.
  void* Lookup(uint64_t key) const {
    for (size_t i = 0, h = Hash(key); i < kMaxProbes; ++i, h = (h + 1) & (kSlots - 1)) {
      const uint64_t k = __atomic_load_n(&entries_[h].key, __ATOMIC_ACQUIRE);
      if (k == key) return __atomic_load_n(&entries_[h].fn, __ATOMIC_ACQUIRE);
      if (k == 0) return nullptr;
    }
    return nullptr;
  }

  // Remembers fn for key. Returns false when the probe window is full (nothing stored).
  bool Insert(uint64_t key, void* fn) {
    if (key == 0 || fn == nullptr) return false;
    for (size_t i = 0, h = Hash(key); i < kMaxProbes; ++i, h = (h + 1) & (kSlots - 1)) {
      uint64_t k = __atomic_load_n(&entries_[h].key, __ATOMIC_ACQUIRE);
      if (k == 0) {
        uint64_t expected = 0;
        if (__atomic_compare_exchange_n(&entries_[h].key, &expected, key, false,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
          k = key;
        } else {
          k = expected;
        }
      }
      if (k == key) {
        // Readers that see the key before fn treat the entry as a miss and resolve
        // themselves; every writer stores the same answer.
        __atomic_store_n(&entries_[h].fn, fn, __ATOMIC_RELEASE);
        return true;
      }
    }
    return false;
  }

 private:
  static size_t Hash(uint64_t key) {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & (kSlots - 1);
  }

  struct Entry {
    uint64_t key;
    void* fn;
  };
  Entry entries_[kSlots] = {};
};

}  // namespace colabtrace::shim::gpu
