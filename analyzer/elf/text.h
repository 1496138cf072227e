// Small std::string_view helpers for the parsers. (Debian's abseil is built with its
// own absl::string_view, so absl's string utilities do not take std::string_view.)
#pragma once

#include <charconv>
#include <optional>
#include <string_view>

namespace colabtrace::elf {

// Removes `prefix` from the front of *s and returns true, or returns false.
inline bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (!s->starts_with(prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

// Removes `suffix` from the back of *s and returns true, or returns false.
inline bool ConsumeSuffix(std::string_view* s, std::string_view suffix) {
  if (!s->ends_with(suffix)) return false;
  s->remove_suffix(suffix.size());
  return true;
}

// `s` without leading and trailing spaces, tabs, CR and LF.
inline std::string_view Trim(std::string_view s) {
  constexpr std::string_view kSpace = " \t\r\n";
  const size_t b = s.find_first_not_of(kSpace);
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(kSpace) - b + 1);
}

// The whole of `s` as a non-negative decimal int, or nullopt.
inline std::optional<int> ParseInt(std::string_view s) {
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace colabtrace::elf
