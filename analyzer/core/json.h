// Json: a small ordered JSON value for building and printing reports.
//
// Objects keep insertion order, so reports print fields in the order the analyses add
// them and golden tests stay stable. Parse() reads JSON back (for `check` baselines and
// for tests).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace colabtrace::analyzer {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool v) : v_(v) {}
  Json(int v) : v_(static_cast<int64_t>(v)) {}
  Json(long v) : v_(static_cast<int64_t>(v)) {}
  Json(long long v) : v_(static_cast<int64_t>(v)) {}
  Json(unsigned v) : v_(static_cast<uint64_t>(v)) {}
  Json(unsigned long v) : v_(static_cast<uint64_t>(v)) {}
  Json(unsigned long long v) : v_(static_cast<uint64_t>(v)) {}
  Json(double v) : v_(v) {}
  Json(const char* v) : v_(std::string(v)) {}
  Json(std::string v) : v_(std::move(v)) {}
  Json(std::string_view v) : v_(std::string(v)) {}
  Json(Array v) : v_(std::move(v)) {}
  Json(Object v) : v_(std::move(v)) {}
  // Copies share no key index (it is rebuilt on demand).
  Json(const Json& o) : v_(o.v_) {}
  Json(Json&&) noexcept = default;
  Json& operator=(const Json& o) {
    if (this != &o) {
      v_ = o.v_;
      index_.reset();
    }
    return *this;
  }
  Json& operator=(Json&&) noexcept = default;
  ~Json() = default;

  static Json MakeObject() { return Json(Object{}); }
  static Json MakeArray() { return Json(Array{}); }

  bool is_null() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_object() const { return std::holds_alternative<Object>(v_); }
  bool is_array() const { return std::holds_alternative<Array>(v_); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_number() const;

  // Object access: operator[] inserts a null member when missing (turning a null value
  // into an object first). Find returns nullptr when missing. Both are O(1) on large
  // objects (a key index is built past kIndexedSize members), so objects keyed by
  // trace-controlled strings stay linear to build.
  Json& operator[](std::string_view key);
  const Json* Find(std::string_view key) const;
  // Const access: a shared null for a missing member.
  const Json& operator[](std::string_view key) const;
  // Array append (turning a null value into an array first); returns the new element.
  // An object appended is taken as finished: its spare capacity is given back (a report
  // holds tens of thousands of such rows).
  Json& Append(Json v);

  const Object& object() const { return std::get<Object>(v_); }
  const Array& array() const { return std::get<Array>(v_); }
  Array& array() { return std::get<Array>(v_); }
  const std::string& str() const { return std::get<std::string>(v_); }
  double number() const;      // any numeric kind as double (0 if not a number)
  int64_t as_int() const;     // numeric value as int64 (0 if not a number)
  bool boolean() const { return std::holds_alternative<bool>(v_) && std::get<bool>(v_); }

  // Serializes; indent < 0 prints on one line.
  std::string Dump(int indent = 2) const;
  // The same text, handed to `sink` in pieces of about 64 KiB as it is written, so a large
  // document (the report of 2,000 processes: 15 MB) is never held whole as text. Stops
  // writing at the first piece `sink` refuses; returns whether it took every piece.
  using Sink = std::function<bool(std::string_view)>;
  bool DumpStreaming(int indent, const Sink& sink) const;

  // Parses JSON text; nullopt (and *error set) on malformed input.
  static std::optional<Json> Parse(std::string_view text, std::string* error = nullptr);

 private:
  // Objects of fewer members are searched linearly: the report's rows (about 25 fixed
  // keys, 10,000 library rows in a run of 2,000 processes) then carry no index at all.
  static constexpr size_t kIndexedSize = 32;
  // An open-addressing table of member positions, hashed by key: 4 bytes a slot, the
  // keys themselves stay in the Object (no second copy of each).
  struct KeyIndex {
    std::vector<uint32_t> slots;  // position + 1 of a member; 0: empty; size a power of 2
    size_t covered = 0;           // members indexed so far
  };
  // The position of `key` in this object, or npos.
  size_t IndexOf(std::string_view key) const;
  struct Stream;  // DumpStreaming's sink and state
  void DumpTo(std::string& out, int indent, int depth, Stream* stream = nullptr) const;
  std::variant<std::monostate, bool, int64_t, uint64_t, double, std::string, Array, Object> v_;
  mutable std::unique_ptr<KeyIndex> index_;  // for objects of kIndexedSize members or more
};

// Appends s to out as a JSON string literal: quotes, escapes, \u00XX for control
// characters, and U+FFFD for each byte that is not part of valid UTF-8 (overlong forms,
// surrogates and code points past U+10FFFF included), so the output is always valid.
void AppendJsonString(std::string& out, std::string_view s);

// The length of the valid UTF-8 sequence that starts s (its first byte >= 0x80), or 0
// when it is not one (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF).
size_t Utf8SequenceLength(std::string_view s);

}  // namespace colabtrace::analyzer
