// core/json: object members are found by key below and above the size where the key
// index starts, the first of duplicate keys wins, copies and moves keep lookups right,
// and text round-trips.
#include "core/json.h"

#include <gtest/gtest.h>

#include <string>

namespace colabtrace::analyzer {
namespace {

// An object of n members "k0".."k{n-1}" with values 0..n-1, built through operator[].
Json Numbered(size_t n) {
  Json o = Json::MakeObject();
  for (size_t i = 0; i < n; ++i) o["k" + std::to_string(i)] = static_cast<uint64_t>(i);
  return o;
}

void ExpectEveryKeyFound(const Json& o, size_t n) {
  ASSERT_EQ(o.object().size(), n);
  for (size_t i = 0; i < n; ++i) {
    const Json* v = o.Find("k" + std::to_string(i));
    ASSERT_NE(v, nullptr) << "k" << i << " of " << n;
    EXPECT_EQ(v->as_int(), static_cast<int64_t>(i));
  }
  EXPECT_EQ(o.Find("k" + std::to_string(n)), nullptr);
  EXPECT_EQ(o.Find(""), nullptr);
  EXPECT_TRUE(o["missing"].is_null());
}

TEST(JsonObject, EveryKeyIsFoundBelowAtAndAboveTheIndexSize) {
  for (size_t n : {0, 1, 31, 32, 33, 63, 64, 65, 1000, 20000}) {
    SCOPED_TRACE(n);
    ExpectEveryKeyFound(Numbered(n), n);
  }
}

TEST(JsonObject, OperatorBracketUpdatesInPlaceAtEverySize) {
  for (size_t n : {10, 40, 5000}) {
    Json o = Numbered(n);
    for (size_t i = 0; i < n; i += 3) o["k" + std::to_string(i)] = "x";
    ASSERT_EQ(o.object().size(), n);  // no member added
    for (size_t i = 0; i < n; ++i) {
      const Json& v = o["k" + std::to_string(i)];
      if (i % 3 == 0) {
        EXPECT_EQ(v.str(), "x");
      } else {
        EXPECT_EQ(v.as_int(), static_cast<int64_t>(i));
      }
    }
  }
}

TEST(JsonObject, KeysWithTheSameHashBucketAndEmbeddedNulsStayApart) {
  // Keys that differ only in their last byte, one with a NUL in it, many of them: the
  // probe sequence must compare whole keys.
  Json o = Json::MakeObject();
  std::string base(40, 'a');
  for (int i = 0; i < 256; ++i) o[base + static_cast<char>(i)] = i;
  o[std::string("a\0b", 3)] = "nul";
  for (int i = 0; i < 256; ++i) EXPECT_EQ(o[base + static_cast<char>(i)].as_int(), i);
  EXPECT_EQ(o[std::string("a\0b", 3)].str(), "nul");
  EXPECT_EQ(o.Find("a"), nullptr);
}

TEST(JsonObject, CopiesAndMovesFindTheirOwnMembers) {
  Json a = Numbered(100);
  ASSERT_NE(a.Find("k99"), nullptr);  // builds a's index
  Json b = a;                          // a copy, then grown past a's size
  for (size_t i = 100; i < 300; ++i) b["k" + std::to_string(i)] = static_cast<uint64_t>(i);
  ExpectEveryKeyFound(b, 300);
  ExpectEveryKeyFound(a, 100);
  Json c = std::move(b);
  ExpectEveryKeyFound(c, 300);
  Json d = Numbered(5);
  d = c;  // assigned over a small object
  ExpectEveryKeyFound(d, 300);
  d = Numbered(40);  // assigned back down
  ExpectEveryKeyFound(d, 40);
}

TEST(JsonObject, ParsedDuplicateKeysKeepOneMemberWithTheLastValue) {
  // Parse assigns through operator[]: a repeated key updates its one member.
  std::string text = "{";
  for (int i = 0; i < 50; ++i) text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  text += "\"k7\":700,\"k45\":4500}";
  std::string error;
  const auto o = Json::Parse(text, &error);
  ASSERT_TRUE(o.has_value()) << error;
  ASSERT_EQ(o->object().size(), 50u);
  EXPECT_EQ((*o)["k7"].as_int(), 700);
  EXPECT_EQ((*o)["k45"].as_int(), 4500);
  EXPECT_EQ((*o)["k46"].as_int(), 46);
  EXPECT_EQ(Json::Parse(o->Dump(-1))->Dump(-1), o->Dump(-1));
}

}  // namespace
}  // namespace colabtrace::analyzer
