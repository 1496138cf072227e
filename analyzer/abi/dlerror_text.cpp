#include "abi/dlerror_text.h"

namespace colabtrace::analyzer::abi {
namespace {

// The text between `open` and `close` after position `from`, or "".
std::string Between(std::string_view s, std::string_view open, std::string_view close,
                    size_t from = 0) {
  const size_t a = s.find(open, from);
  if (a == std::string_view::npos) return "";
  const size_t b = s.find(close, a + open.size());
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(a + open.size(), b - a - open.size()));
}

}  // namespace

DlerrorFacts ParseDlerror(std::string_view text) {
  DlerrorFacts f;
  if (text.starts_with("symbol ")) {
    // symbol S version V not defined in file P with link time reference
    const size_t v = text.find(" version ");
    const size_t nd = text.find(" not defined in file ");
    const size_t wl = text.find(" with link time reference");
    if (v != std::string_view::npos && nd != std::string_view::npos && v < nd) {
      f.kind = DlerrorFacts::kSymbolVersion;
      f.symbol = std::string(text.substr(7, v - 7));
      f.version = std::string(text.substr(v + 9, nd - v - 9));
      const size_t file = nd + 21;
      f.object = std::string(text.substr(file, (wl == std::string_view::npos ? text.size() : wl) - file));
      return f;
    }
  }
  const size_t colon = text.find(": ");
  if (colon == std::string_view::npos) return f;
  f.object = std::string(text.substr(0, colon));
  const std::string_view rest = text.substr(colon + 2);
  if (rest.starts_with("cannot open shared object file")) {
    f.kind = DlerrorFacts::kNotFound;
  } else if (rest.starts_with("version `")) {
    f.kind = DlerrorFacts::kVersionNotFound;
    f.version = Between(rest, "version `", "'");
    f.required_by = Between(rest, "(required by ", ")");
  } else if (rest.starts_with("undefined symbol: ")) {
    f.kind = DlerrorFacts::kUndefinedSymbol;
    std::string_view sym = rest.substr(18);
    const size_t comma = sym.find(", version ");
    if (comma != std::string_view::npos) {
      f.version = std::string(sym.substr(comma + 10));
      sym = sym.substr(0, comma);
    }
    f.symbol = std::string(sym);
  }
  return f;
}

}  // namespace colabtrace::analyzer::abi
