// Bounds-checked little-endian reads over untrusted bytes.
//
// Every parser in analyzer/elf/ reads its input only through these helpers, so no
// offset or size taken from a file can lead to a read outside the buffer. Offsets and
// sizes are uint64_t because that is what ELF and fatbin headers carry; the checks are
// written so that `offset + size` never overflows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>

namespace colabtrace::elf {

using Bytes = std::span<const uint8_t>;

// Returns bytes[offset, offset + size), or nullopt when that range is not wholly
// inside `bytes`.
inline std::optional<Bytes> Slice(Bytes bytes, uint64_t offset, uint64_t size) {
  if (offset > bytes.size() || size > bytes.size() - offset) return std::nullopt;
  return bytes.subspan(static_cast<size_t>(offset), static_cast<size_t>(size));
}

// Returns bytes[offset, end), or an empty span when offset is past the end.
inline Bytes Tail(Bytes bytes, uint64_t offset) {
  if (offset >= bytes.size()) return {};
  return bytes.subspan(static_cast<size_t>(offset));
}

// Returns the little-endian unsigned T at `offset`, or nullopt when it does not fit.
template <class T> std::optional<T> ReadLE(Bytes bytes, uint64_t offset) {
  static_assert(std::is_unsigned_v<T>);
  if (offset > bytes.size() || sizeof(T) > bytes.size() - offset) return std::nullopt;
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    v |= static_cast<T>(static_cast<T>(bytes[static_cast<size_t>(offset) + i]) << (8 * i));
  }
  return v;
}

// Like ReadLE but returns 0 when out of range. Use it for fields of a record whose
// full size was already checked with Slice(), and for optional trailing fields.
template <class T> T LoadLE(Bytes bytes, uint64_t offset) {
  return ReadLE<T>(bytes, offset).value_or(0);
}

// Returns the NUL-terminated string starting at `offset` (without the NUL), or nullopt
// when offset is out of range or no NUL follows before the end of `bytes`.
inline std::optional<std::string_view> CString(Bytes bytes, uint64_t offset) {
  if (offset >= bytes.size()) return std::nullopt;
  const auto* begin = reinterpret_cast<const char*>(bytes.data()) + offset;
  const size_t avail = bytes.size() - static_cast<size_t>(offset);
  const size_t len = std::string_view(begin, avail).find('\0');
  if (len == std::string_view::npos) return std::nullopt;
  return std::string_view(begin, len);
}

// Views `bytes` as characters.
inline std::string_view AsChars(Bytes bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

}  // namespace colabtrace::elf
