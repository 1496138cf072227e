#include "core/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

namespace colabtrace::analyzer {

bool Json::is_number() const {
  return std::holds_alternative<int64_t>(v_) || std::holds_alternative<uint64_t>(v_) ||
         std::holds_alternative<double>(v_);
}

double Json::number() const {
  if (auto* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
  if (auto* u = std::get_if<uint64_t>(&v_)) return static_cast<double>(*u);
  if (auto* d = std::get_if<double>(&v_)) return *d;
  return 0;
}

int64_t Json::as_int() const {
  if (auto* i = std::get_if<int64_t>(&v_)) return *i;
  if (auto* u = std::get_if<uint64_t>(&v_)) return static_cast<int64_t>(*u);
  if (auto* d = std::get_if<double>(&v_)) return static_cast<int64_t>(*d);
  return 0;
}

size_t Json::IndexOf(std::string_view key) const {
  const auto& obj = std::get<Object>(v_);
  if (obj.size() < kIndexedSize) {
    for (size_t i = 0; i < obj.size(); ++i) {
      if (obj[i].first == key) return i;
    }
    return std::string_view::npos;
  }
  // Linear probing over position + 1; a key that is already present keeps its first
  // position (Find and operator[] see the first of duplicate keys, as below the threshold).
  const auto probe = [&obj](const std::vector<uint32_t>& slots, std::string_view k) {
    const size_t mask = slots.size() - 1;
    size_t at = std::hash<std::string_view>{}(k) & mask;
    while (slots[at] != 0 && obj[slots[at] - 1].first != k) at = (at + 1) & mask;
    return at;
  };
  if (!index_) index_ = std::make_unique<KeyIndex>();
  KeyIndex& ix = *index_;
  if (ix.slots.size() < 2 * obj.size()) {  // at most half full
    size_t size = 64;
    while (size < 4 * obj.size()) size *= 2;
    ix.slots.assign(size, 0);
    ix.covered = 0;
  }
  for (; ix.covered < obj.size(); ++ix.covered) {
    const size_t at = probe(ix.slots, obj[ix.covered].first);
    if (ix.slots[at] == 0) ix.slots[at] = static_cast<uint32_t>(ix.covered + 1);
  }
  const size_t at = probe(ix.slots, key);
  return ix.slots[at] == 0 ? std::string_view::npos : ix.slots[at] - 1;
}

Json& Json::operator[](std::string_view key) {
  if (is_null()) v_ = Object{};
  auto& obj = std::get<Object>(v_);
  if (const size_t i = IndexOf(key); i != std::string_view::npos) return obj[i].second;
  obj.emplace_back(std::string(key), Json());
  return obj.back().second;
}

const Json& Json::operator[](std::string_view key) const {
  static const Json kNull;
  const Json* v = Find(key);
  return v ? *v : kNull;
}

const Json* Json::Find(std::string_view key) const {
  if (!is_object()) return nullptr;
  const size_t i = IndexOf(key);
  return i == std::string_view::npos ? nullptr : &std::get<Object>(v_)[i].second;
}

Json& Json::Append(Json v) {
  if (is_null()) v_ = Array{};
  auto& arr = std::get<Array>(v_);
  if (auto* o = std::get_if<Object>(&v.v_)) o->shrink_to_fit();
  arr.push_back(std::move(v));
  return arr.back();
}

size_t Utf8SequenceLength(std::string_view s) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(0);
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;  // overlong
    if (c == 0xed) hi = 0x9f;  // surrogates
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;  // overlong
    if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
  } else {
    return 0;
  }
  if (s.size() < len || b(1) < lo || b(1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
  }
  return len;
}

namespace {

void AppendUtf8(std::string& s, unsigned cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xc0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xe0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

}  // namespace

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    // A run of printable ASCII that needs no escape goes in one append.
    size_t plain = i;
    while (plain < s.size()) {
      const unsigned char p = static_cast<unsigned char>(s[plain]);
      if (p < 0x20 || p >= 0x7f || p == '"' || p == '\\') break;
      ++plain;
    }
    if (plain > i) {
      out.append(s.data() + i, plain - i);
      i = plain - 1;
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
      continue;
    }
    // A valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, at most
    // U+10FFFF) is copied; any other byte becomes U+FFFD.
    const size_t len = Utf8SequenceLength(s.substr(i));
    if (len != 0) {
      out.append(s.substr(i, len));
      i += len - 1;
    } else {
      out += "\\ufffd";
    }
  }
  out += '"';
}

struct Json::Stream {
  static constexpr size_t kPiece = 64 * 1024;
  const Sink& sink;
  bool ok = true;
  // Hands what is written so far to the sink once it is a piece's worth.
  void MaybeFlush(std::string& out) {
    if (out.size() < kPiece) return;
    if (ok) ok = sink(out);
    out.clear();
  }
};

void Json::DumpTo(std::string& out, int indent, int depth, Stream* stream) const {
  auto newline = [&](int d) {
    if (indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  if (std::holds_alternative<std::monostate>(v_)) {
    out += "null";
  } else if (auto* b = std::get_if<bool>(&v_)) {
    out += *b ? "true" : "false";
  } else if (auto* i = std::get_if<int64_t>(&v_)) {
    char buf[24];
    out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof(buf), *i).ptr - buf));
  } else if (auto* u = std::get_if<uint64_t>(&v_)) {
    char buf[24];
    out.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof(buf), *u).ptr - buf));
  } else if (auto* d = std::get_if<double>(&v_)) {
    if (!std::isfinite(*d)) {
      out += "null";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.6g", *d);
      out += buf;
    }
  } else if (auto* s = std::get_if<std::string>(&v_)) {
    AppendJsonString(out, *s);
  } else if (auto* a = std::get_if<Array>(&v_)) {
    if (a->empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t k = 0; k < a->size(); ++k) {
      if (k) out += ',';
      newline(depth + 1);
      (*a)[k].DumpTo(out, indent, depth + 1, stream);
      if (stream) stream->MaybeFlush(out);
    }
    newline(depth);
    out += ']';
  } else if (auto* o = std::get_if<Object>(&v_)) {
    if (o->empty()) {
      out += "{}";
      return;
    }
    out += '{';
    for (size_t k = 0; k < o->size(); ++k) {
      if (k) out += ',';
      newline(depth + 1);
      AppendJsonString(out, (*o)[k].first);
      out += indent < 0 ? ":" : ": ";
      (*o)[k].second.DumpTo(out, indent, depth + 1, stream);
      if (stream) stream->MaybeFlush(out);
    }
    newline(depth);
    out += '}';
  }
}

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(out, indent, 0);
  return out;
}

bool Json::DumpStreaming(int indent, const Sink& sink) const {
  std::string out;
  out.reserve(2 * Stream::kPiece);
  Stream stream{sink};
  DumpTo(out, indent, 0, &stream);
  if (stream.ok && !out.empty()) stream.ok = sink(out);
  return stream.ok;
}

namespace {

class Parser {
 public:
  explicit Parser(std::string_view t) : t_(t) {}
  std::optional<Json> Run(std::string* error) {
    auto v = Value(0);
    Skip();
    if (v && pos_ != t_.size()) v.reset(), err_ = "trailing characters";
    if (!v && error) *error = err_ + " at offset " + std::to_string(pos_);
    return v;
  }

 private:
  void Skip() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\t' || t_[pos_] == '\r')) ++pos_;
  }
  bool Eat(char c) {
    Skip();
    if (pos_ < t_.size() && t_[pos_] == c) return ++pos_, true;
    return false;
  }
  std::optional<Json> Fail(const char* why) {
    err_ = why;
    return std::nullopt;
  }
  std::optional<std::string> String() {
    if (!Eat('"')) return std::nullopt;
    std::string s;
    while (pos_ < t_.size() && t_[pos_] != '"') {
      char c = t_[pos_++];
      if (c != '\\') {
        s += c;
        continue;
      }
      if (pos_ >= t_.size()) return std::nullopt;
      c = t_[pos_++];
      switch (c) {
        case 'n': s += '\n'; break;
        case 't': s += '\t'; break;
        case 'r': s += '\r'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'u': {
          std::optional<unsigned> cp = Hex4();
          if (!cp) return std::nullopt;
          if (*cp >= 0xd800 && *cp <= 0xdbff && t_.substr(pos_, 2) == "\\u") {
            const size_t save = pos_;
            pos_ += 2;
            const std::optional<unsigned> lo = Hex4();
            if (lo && *lo >= 0xdc00 && *lo <= 0xdfff) {
              cp = 0x10000 + ((*cp - 0xd800) << 10) + (*lo - 0xdc00);
            } else {
              pos_ = save;
            }
          }
          if (*cp >= 0xd800 && *cp <= 0xdfff) cp = 0xfffd;  // a lone surrogate
          AppendUtf8(s, *cp);
          break;
        }
        default: s += c;
      }
    }
    if (pos_ >= t_.size()) return std::nullopt;
    ++pos_;
    return s;
  }
  // Four hex digits at pos_ (consumed), or nullopt.
  std::optional<unsigned> Hex4() {
    if (pos_ + 4 > t_.size()) return std::nullopt;
    unsigned v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char h = t_[pos_ + k];
      const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                  : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(d);
    }
    pos_ += 4;
    return v;
  }
  std::optional<Json> Value(int depth) {
    if (depth > 200) return Fail("nesting too deep");
    Skip();
    if (pos_ >= t_.size()) return Fail("unexpected end");
    const char c = t_[pos_];
    if (c == '{') {
      ++pos_;
      Json obj = Json::MakeObject();
      if (Eat('}')) return obj;
      do {
        auto k = String();
        if (!k || !Eat(':')) return Fail("bad object");
        auto v = Value(depth + 1);
        if (!v) return v;
        obj[*k] = std::move(*v);
      } while (Eat(','));
      if (!Eat('}')) return Fail("expected }");
      return obj;
    }
    if (c == '[') {
      ++pos_;
      Json arr = Json::MakeArray();
      if (Eat(']')) return arr;
      do {
        auto v = Value(depth + 1);
        if (!v) return v;
        arr.Append(std::move(*v));
      } while (Eat(','));
      if (!Eat(']')) return Fail("expected ]");
      return arr;
    }
    if (c == '"') {
      auto s = String();
      if (!s) return Fail("bad string");
      return Json(std::move(*s));
    }
    for (auto [word, value] : {std::pair<std::string_view, Json>{"true", Json(true)},
                               {"false", Json(false)}, {"null", Json()}}) {
      if (t_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    const size_t start = pos_;
    bool is_float = false;
    while (pos_ < t_.size() && std::string_view("+-0123456789.eE").find(t_[pos_]) != std::string_view::npos) {
      if (t_[pos_] == '.' || t_[pos_] == 'e' || t_[pos_] == 'E') is_float = true;
      ++pos_;
    }
    if (pos_ == start) return Fail("unexpected character");
    const std::string num(t_.substr(start, pos_ - start));
    if (is_float) return Json(std::strtod(num.c_str(), nullptr));
    if (num[0] == '-') return Json(static_cast<long long>(std::strtoll(num.c_str(), nullptr, 10)));
    return Json(static_cast<unsigned long long>(std::strtoull(num.c_str(), nullptr, 10)));
  }

  std::string_view t_;
  size_t pos_ = 0;
  std::string err_;
};

}  // namespace

std::optional<Json> Json::Parse(std::string_view text, std::string* error) {
  return Parser(text).Run(error);
}

}  // namespace colabtrace::analyzer
