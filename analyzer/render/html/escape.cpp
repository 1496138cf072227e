#include "render/html/escape.h"

#include "core/json.h"
#include "report/report.h"

namespace colabtrace::analyzer::html {
namespace {

std::string Entities(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// The longest prefix of s of at most n bytes that ends on a UTF-8 boundary.
std::string_view Utf8Prefix(std::string_view s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80) --n;
  return s.substr(0, n);
}

// The longest suffix of s of at most n bytes that starts on a UTF-8 boundary.
std::string_view Utf8Suffix(std::string_view s, size_t n) {
  if (s.size() <= n) return s;
  size_t from = s.size() - n;
  while (from < s.size() && (static_cast<unsigned char>(s[from]) & 0xc0) == 0x80) ++from;
  return s.substr(from);
}

}  // namespace

std::string Text(std::string_view s) { return Entities(EscapeForTerminal(s)); }

std::string Block(std::string_view s) {
  std::string out;
  size_t from = 0;
  while (from <= s.size()) {
    const size_t nl = s.find('\n', from);
    const std::string_view line = s.substr(from, nl == std::string_view::npos ? std::string_view::npos : nl - from);
    out += Text(line);
    if (nl == std::string_view::npos) break;
    out += '\n';
    from = nl + 1;
  }
  return out;
}

std::string Shorten(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes || max_bytes < 8) return std::string(s);
  const size_t keep = max_bytes - 3;
  return std::string(Utf8Prefix(s, keep / 3)) + "\u2026" + std::string(Utf8Suffix(s, keep - keep / 3));
}

}  // namespace colabtrace::analyzer::html
