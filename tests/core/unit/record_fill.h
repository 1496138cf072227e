// Test helpers over any record struct of records.h: fill every field with distinct
// values through Visit(), and compare two records field by field.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "colabtrace/format/records.h"

namespace colabtrace::format {

// One field's value, flattened for comparison: integers as uint64 bits, Bytes as text.
struct FlatField {
  std::string name;
  FieldKind kind;
  uint64_t bits = 0;
  std::string bytes;
  bool operator==(const FlatField&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const FlatField& f) {
  os << f.name << "(kind " << static_cast<int>(f.kind) << ")=";
  if (f.kind == FieldKind::kBytes) return os << "bytes[" << f.bytes.size() << "]";
  return os << f.bits;
}

template <class R> std::vector<FlatField> Flatten(const R& r) {
  std::vector<FlatField> out;
  r.Visit([&](const char* name, auto tag, const auto& value) {
    constexpr FieldKind kKind = decltype(tag)::kind;
    FlatField f{name, kKind};
    if constexpr (kKind == FieldKind::kBytes) {
      f.bytes.assign(reinterpret_cast<const char*>(value.data), value.size);
    } else {
      f.bits = static_cast<uint64_t>(value);
    }
    out.push_back(std::move(f));
  });
  return out;
}

template <class R> size_t CountFields(const R& r) { return Flatten(r).size(); }

template <class R> void ExpectSameFields(const R& want, const R& got) {
  const auto a = Flatten(want), b = Flatten(got);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i], b[i]) << R::kName;
}

// The first `keep` fields equal want's, the rest zero (empty for Bytes).
template <class R> void ExpectPrefixThenZero(const R& want, const R& got, size_t keep) {
  const auto a = Flatten(want), b = Flatten(got);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (i < keep) {
      EXPECT_EQ(a[i], b[i]) << R::kName << " keep=" << keep;
    } else {
      EXPECT_EQ(b[i].bits, 0u) << R::kName << " field " << b[i].name << " keep=" << keep;
      EXPECT_TRUE(b[i].bytes.empty()) << R::kName << " field " << b[i].name;
    }
  }
}

// A visitor that gives every field a value distinct from every other field of every
// record type (seeded by the type code). With extreme set, integers take their largest
// magnitudes and Bytes are long enough to need a multi-byte length.
class FieldFiller {
 public:
  explicit FieldFiller(uint64_t seed, bool extreme = false) : seed_(seed), extreme_(extreme) {}

  template <class Tag, class V> void operator()(const char*, Tag, V& value) {
    constexpr FieldKind kKind = Tag::kind;
    const uint64_t i = index_++;
    if constexpr (kKind == FieldKind::kBytes) {
      const size_t n = extreme_ ? 300 + i : 1 + (seed_ + i) % 7 + i;
      std::vector<uint8_t>& buf = Storage().emplace_back(n);
      for (size_t k = 0; k < n; ++k) buf[k] = static_cast<uint8_t>(seed_ * 31 + i * 7 + k);
      value = Bytes{buf.data(), static_cast<uint32_t>(n)};
    } else if constexpr (kKind == FieldKind::kI) {
      value = extreme_ ? INT64_MIN + static_cast<int64_t>(i)
                       : -static_cast<int64_t>(seed_ * 1000 + i * 37 + 1);
    } else {
      value = extreme_ ? UINT64_MAX - i : (seed_ << 24) + (i + 1) * 0x10001 + 0x80;
    }
  }

 private:
  // Bytes values point here; kept for the life of the test program.
  static std::deque<std::vector<uint8_t>>& Storage() {
    static std::deque<std::vector<uint8_t>> s;
    return s;
  }
  uint64_t seed_;
  bool extreme_;
  uint64_t index_ = 0;
};

}  // namespace colabtrace::format
