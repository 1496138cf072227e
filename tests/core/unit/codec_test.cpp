// Unit tests of the trace format (include/colabtrace/format): varints, zigzag, and a
// round trip of every record type, generated from COLABTRACE_RECORD_TYPES, through
// EncodeRecordUncommitted and DecodePayload, plus forward/backward compatibility.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "colabtrace/format/codec.h"
#include "record_fill.h"

namespace colabtrace::format {
namespace {

std::vector<uint8_t> Varint(uint64_t v) {
  uint8_t buf[kMaxVarintBytes];
  return std::vector<uint8_t>(buf, PutVarint(buf, v));
}

TEST(Varint, EncodedLengthsAtEveryBoundary) {
  EXPECT_EQ(Varint(0), (std::vector<uint8_t>{0x00}));
  EXPECT_EQ(Varint(1), (std::vector<uint8_t>{0x01}));
  EXPECT_EQ(Varint(127), (std::vector<uint8_t>{0x7f}));
  EXPECT_EQ(Varint(128), (std::vector<uint8_t>{0x80, 0x01}));
  EXPECT_EQ(Varint(300), (std::vector<uint8_t>{0xac, 0x02}));
  for (int bits = 7; bits < 64; bits += 7) {
    const uint64_t below = (uint64_t{1} << bits) - 1;
    EXPECT_EQ(Varint(below).size(), static_cast<size_t>(bits / 7)) << bits;
    EXPECT_EQ(Varint(below + 1).size(), static_cast<size_t>(bits / 7 + 1)) << bits;
  }
  EXPECT_EQ(Varint(UINT64_MAX).size(), kMaxVarintBytes);
  EXPECT_EQ(Varint(UINT64_MAX).back(), 0x01);
}

TEST(Varint, RoundTripsEdgeValues) {
  std::vector<uint64_t> values = {0, 1, 2, 127, 128, 255, 256, 16383, 16384, UINT32_MAX,
                                  uint64_t{UINT32_MAX} + 1, (uint64_t{1} << 56) - 1,
                                  uint64_t{1} << 56, (uint64_t{1} << 63) - 1, uint64_t{1} << 63,
                                  UINT64_MAX - 1, UINT64_MAX};
  for (int shift = 0; shift < 64; ++shift) values.push_back(uint64_t{1} << shift);
  for (uint64_t v : values) {
    const std::vector<uint8_t> enc = Varint(v);
    const uint8_t* p = enc.data();
    uint64_t out = ~v;
    ASSERT_TRUE(GetVarint(&p, enc.data() + enc.size(), &out)) << v;
    EXPECT_EQ(out, v);
    EXPECT_EQ(p, enc.data() + enc.size()) << "consumed exactly the encoding of " << v;
  }
}

TEST(Varint, RejectsTruncatedInputWithoutReadingPastTheEnd) {
  for (uint64_t v : {uint64_t{128}, uint64_t{1} << 35, UINT64_MAX}) {
    const std::vector<uint8_t> enc = Varint(v);
    for (size_t cut = 0; cut < enc.size(); ++cut) {
      // An exact-size heap copy, so ASan sees any read past `cut`.
      std::vector<uint8_t> part(enc.begin(), enc.begin() + static_cast<long>(cut));
      const uint8_t* p = part.data();
      uint64_t out = 0;
      EXPECT_FALSE(GetVarint(&p, part.data() + part.size(), &out)) << v << " cut at " << cut;
    }
  }
}

TEST(Varint, RejectsOverlongAndOverflowingEncodings) {
  // Eleven bytes: more than any uint64_t needs.
  std::vector<uint8_t> eleven(10, 0x80);
  eleven.push_back(0x00);
  const uint8_t* p = eleven.data();
  uint64_t out = 0;
  EXPECT_FALSE(GetVarint(&p, eleven.data() + eleven.size(), &out));
  // Ten bytes whose last carries more than bit 63.
  std::vector<uint8_t> overflow(9, 0xff);
  overflow.push_back(0x02);
  p = overflow.data();
  EXPECT_FALSE(GetVarint(&p, overflow.data() + overflow.size(), &out));
  // Ten continuation bytes and nothing after them.
  std::vector<uint8_t> endless(10, 0xff);
  p = endless.data();
  EXPECT_FALSE(GetVarint(&p, endless.data() + endless.size(), &out));
}

TEST(ZigZag, MapsSmallMagnitudesToSmallCodes) {
  EXPECT_EQ(ZigZag(0), 0u);
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  EXPECT_EQ(ZigZag(-2), 3u);
  EXPECT_EQ(ZigZag(2), 4u);
  EXPECT_EQ(ZigZag(std::numeric_limits<int64_t>::max()), UINT64_MAX - 1);
  EXPECT_EQ(ZigZag(std::numeric_limits<int64_t>::min()), UINT64_MAX);
}

TEST(ZigZag, RoundTrips) {
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{63}, int64_t{-64},
                    int64_t{64}, int64_t{-65}, int64_t{-4096}, int64_t{INT32_MIN},
                    int64_t{INT32_MAX}, kMin, kMin + 1, kMax, kMax - 1}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v) << v;
  }
  static_assert(UnZigZag(ZigZag(-12345)) == -12345);
}

// ---- every record type ------------------------------------------------------------------

// Encodes r after a known prefix and checks the framing, then decodes the payload.
template <class R> void RoundTrip(const R& r, uint64_t prev_ts) {
  SCOPED_TRACE(R::kName);
  const size_t max = MaxEncodedSize(r);
  std::vector<uint8_t> buf(max + 16, 0xee);
  const size_t n = EncodeRecordUncommitted(r, prev_ts, buf.data());
  ASSERT_LE(n, max) << "MaxEncodedSize must bound the framed size";
  EXPECT_EQ(buf[0], 0xee) << "the type byte is left for the caller to commit";
  EXPECT_EQ(buf[n], 0xee) << "nothing written past the framed size";
  const uint8_t* p = buf.data() + 1;
  uint64_t len = 0;
  ASSERT_TRUE(GetVarint(&p, buf.data() + n, &len));
  ASSERT_EQ(static_cast<size_t>(p - buf.data()) + len, n) << "length prefix matches";
  R out;
  ASSERT_TRUE(DecodePayload(p, p + len, prev_ts, &out));
  EXPECT_EQ(out.ts, r.ts);
  ExpectSameFields(r, out);
}

TEST(RecordCodec, EveryRecordTypeRoundTrips) {
  int types = 0;
#define CT_ROUND_TRIP(code, Name, dumpname)                              \
  {                                                                      \
    ++types;                                                             \
    FieldFiller fill(code);                                              \
    Name r;                                                              \
    r.ts = 1000000 + code;                                               \
    r.Visit(fill);                                                       \
    RoundTrip(r, 1000);                                                  \
    /* Again with every field at its largest value and a long Bytes. */  \
    FieldFiller big(code, /*extreme=*/true);                             \
    Name e;                                                              \
    e.ts = UINT64_MAX;                                                   \
    e.Visit(big);                                                        \
    RoundTrip(e, 0);                                                     \
    /* And all zero (the default record). */                             \
    RoundTrip(Name{}, 0);                                                \
  }
  COLABTRACE_RECORD_TYPES(CT_ROUND_TRIP)
#undef CT_ROUND_TRIP
  EXPECT_GE(types, 40);
}

TEST(RecordCodec, TimestampBeforePreviousGoesBackThroughTheTypeByte) {
  Exit e;
  e.ts = 50;
  e.code = -3;
  uint8_t buf[64];
  const size_t n = EncodeRecordUncommitted(e, 100, buf);
  // The sign travels in the committed type byte; the payload holds |50 - 100|.
  EXPECT_EQ(CommittedType(e, 100), static_cast<uint8_t>(Exit::kType) | kTypeTsBack);
  EXPECT_EQ(CommittedType(e, 50), static_cast<uint8_t>(Exit::kType));
  const uint8_t* p = buf + 1;
  uint64_t len = 0;
  ASSERT_TRUE(GetVarint(&p, buf + n, &len));
  Exit out;
  ASSERT_TRUE(DecodePayload(p, p + len, 100, &out, /*ts_back=*/true));
  EXPECT_EQ(out.ts, 50u);
  EXPECT_EQ(out.code, -3);
  // A delta larger than the base saturates at 0 instead of wrapping.
  ASSERT_TRUE(DecodePayload(p, p + len, 10, &out, /*ts_back=*/true));
  EXPECT_EQ(out.ts, 0u);
}

TEST(RecordCodec, NamesAndDispatchComeFromTheTable) {
#define CT_CHECK_NAME(code, Name, dumpname)                                  \
  EXPECT_STREQ(RecordName(code), dumpname);                                  \
  EXPECT_STREQ(Name::kName, dumpname);                                       \
  EXPECT_EQ(static_cast<uint8_t>(Name::kType), code);                        \
  {                                                                          \
    bool matched = false;                                                    \
    EXPECT_TRUE(DispatchRecordType(code, [&](auto tag) {                     \
      matched = std::is_same_v<decltype(tag), Name>;                         \
    }));                                                                     \
    EXPECT_TRUE(matched) << dumpname;                                        \
  }
  COLABTRACE_RECORD_TYPES(CT_CHECK_NAME)
#undef CT_CHECK_NAME
  EXPECT_EQ(RecordName(0), nullptr);
  EXPECT_EQ(RecordName(255), nullptr);
  EXPECT_FALSE(DispatchRecordType(0, [](auto) {}));
  EXPECT_FALSE(DispatchRecordType(255, [](auto) {}));
}

// ---- compatibility -------------------------------------------------------------------------

// Writes the ts delta and the first `keep` fields of r (an older writer's payload).
template <class R> std::vector<uint8_t> PayloadPrefix(const R& r, size_t keep) {
  std::vector<uint8_t> out(MaxEncodedSize(r));
  uint8_t* p = PutVarint(out.data(), r.ts);
  size_t i = 0;
  r.Visit([&](const char*, auto tag, const auto& value) {
    if (i++ >= keep) return;
    constexpr FieldKind kKind = decltype(tag)::kind;
    if constexpr (kKind == FieldKind::kBytes) {
      p = PutVarint(p, value.size);
      std::memcpy(p, value.data, value.size);
      p += value.size;
    } else if constexpr (kKind == FieldKind::kI) {
      p = PutVarint(p, ZigZag(value));
    } else {
      p = PutVarint(p, value);
    }
  });
  out.resize(static_cast<size_t>(p - out.data()));
  return out;
}

TEST(RecordCodec, ShorterPayloadsZeroFillTheMissingFields) {
#define CT_SHORTER(code, Name, dumpname)                                            \
  {                                                                                 \
    SCOPED_TRACE(dumpname);                                                         \
    FieldFiller fill(code);                                                         \
    Name r;                                                                         \
    r.ts = 77;                                                                      \
    r.Visit(fill);                                                                  \
    const size_t fields = CountFields(r);                                           \
    for (size_t keep = 0; keep <= fields; ++keep) {                                 \
      const std::vector<uint8_t> payload = PayloadPrefix(r, keep);                  \
      Name out;                                                                     \
      ASSERT_TRUE(DecodePayload(payload.data(), payload.data() + payload.size(), 0, \
                                &out)) << keep;                                     \
      EXPECT_EQ(out.ts, 77u);                                                       \
      ExpectPrefixThenZero(r, out, keep);                                           \
    }                                                                               \
  }
  COLABTRACE_RECORD_TYPES(CT_SHORTER)
#undef CT_SHORTER
}

TEST(RecordCodec, LongerPayloadsFromANewerWriterDecode) {
#define CT_LONGER(code, Name, dumpname)                                                \
  {                                                                                    \
    SCOPED_TRACE(dumpname);                                                            \
    FieldFiller fill(code);                                                            \
    Name r;                                                                            \
    r.ts = 99;                                                                         \
    r.Visit(fill);                                                                     \
    std::vector<uint8_t> payload = PayloadPrefix(r, CountFields(r));                   \
    /* Fields a newer writer appended: a varint, a length-prefixed blob, a varint. */  \
    for (uint64_t extra : {uint64_t{5}, uint64_t{1} << 40}) {                          \
      const std::vector<uint8_t> v = Varint(extra);                                    \
      payload.insert(payload.end(), v.begin(), v.end());                               \
    }                                                                                  \
    payload.push_back(3);                                                              \
    payload.insert(payload.end(), {'a', 'b', 'c'});                                    \
    Name out;                                                                          \
    ASSERT_TRUE(DecodePayload(payload.data(), payload.data() + payload.size(), 0, &out)); \
    EXPECT_EQ(out.ts, 99u);                                                            \
    ExpectSameFields(r, out);                                                          \
  }
  COLABTRACE_RECORD_TYPES(CT_LONGER)
#undef CT_LONGER
}

TEST(RecordCodec, MalformedPayloadsAreRejected) {
  // A Bytes field whose length runs past the payload.
  String s;
  s.id = 3;
  const uint8_t text[] = {'h', 'i'};
  s.text = Bytes{text, 2};
  std::vector<uint8_t> payload = PayloadPrefix(s, 2);
  payload.pop_back();  // lose the last byte of the text
  String out;
  EXPECT_FALSE(DecodePayload(payload.data(), payload.data() + payload.size(), 0, &out));
  // A varint cut in the middle of a field.
  Exit e;
  e.code = -100000;
  payload = PayloadPrefix(e, 1);
  payload.back() |= 0x80;
  Exit eo;
  EXPECT_FALSE(DecodePayload(payload.data(), payload.data() + payload.size(), 0, &eo));
  // An empty payload has no ts delta.
  EXPECT_FALSE(DecodePayload(payload.data(), payload.data(), 0, &eo));
}

}  // namespace
}  // namespace colabtrace::format
