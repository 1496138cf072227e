// Parsing /proc/self/mountinfo without allocating: the shim's view of the mount table.
//
// One line per mount (proc(5)):
//
//   36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3 /dev/root rw,errors=continue
//   (1)(2) (3)  (4)     (5)         (6)       (7...) (8) (9)   (10)      (11)
//
// mount id, parent id, major:minor, root, mount point, options, optional fields ending
// with "-", filesystem type, source, super options. Spaces, tabs, newlines and
// backslashes inside paths are escaped as \ooo octal. Header-only and free of libc
// state, so the GoogleTest suite runs it on fixtures (tests/io/mountinfo_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace colabtrace::shim::io {

struct MountInfoLine {
  uint32_t id = 0;
  uint32_t parent = 0;
  uint32_t major = 0;
  uint32_t minor = 0;
  std::string_view root;
  std::string_view mountpoint;  // unescaped
  std::string_view fstype;      // e.g. "ext4", "fuse.drive", "nfs4"
  std::string_view source;      // unescaped; e.g. "/dev/vda", "server:/export", "drive"
};

// st_dev as glibc's makedev() encodes it, so it compares with stat's st_dev.
constexpr uint64_t MakeDev(uint32_t major, uint32_t minor) {
  return ((static_cast<uint64_t>(major) & 0x00000fffu) << 8) |
         ((static_cast<uint64_t>(major) & 0xfffff000u) << 32) |
         (static_cast<uint64_t>(minor) & 0x000000ffu) |
         ((static_cast<uint64_t>(minor) & 0xffffff00u) << 12);
}

namespace detail {

inline bool ParseU32(std::string_view s, uint32_t* out) {
  if (s.empty() || s.size() > 10) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > 0xffffffffu) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// Unescapes \ooo in place; returns the new view (same start, shorter or equal length).
inline std::string_view Unescape(char* p, size_t n) {
  size_t w = 0;
  for (size_t r = 0; r < n;) {
    if (p[r] == '\\' && r + 3 < n) {
      const char a = p[r + 1], b = p[r + 2], c = p[r + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        p[w++] = static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0'));
        r += 4;
        continue;
      }
    }
    p[w++] = p[r++];
  }
  return std::string_view(p, w);
}

// Splits off the next space-separated field of [*p, end).
inline bool NextField(char** p, char* end, char** start, size_t* len) {
  char* q = *p;
  while (q < end && *q == ' ') ++q;
  if (q >= end) return false;
  char* s = q;
  while (q < end && *q != ' ') ++q;
  *start = s;
  *len = static_cast<size_t>(q - s);
  *p = q;
  return true;
}

}  // namespace detail

// Parses one line (no trailing newline) in place; the views point into line. Returns
// false for a malformed line.
inline bool ParseMountInfoLine(char* line, size_t len, MountInfoLine* out) {
  char* p = line;
  char* const end = line + len;
  char* f;
  size_t n;
  if (!detail::NextField(&p, end, &f, &n) || !detail::ParseU32({f, n}, &out->id)) return false;
  if (!detail::NextField(&p, end, &f, &n) || !detail::ParseU32({f, n}, &out->parent)) return false;
  if (!detail::NextField(&p, end, &f, &n)) return false;
  // "major:minor". No substr(): its out_of_range throw would link libstdc++'s exception
  // runtime into the shim, with a static initializer that mallocs at every load.
  const std::string_view dev(f, n);
  const size_t colon = dev.find(':');
  if (colon == std::string_view::npos || !detail::ParseU32({f, colon}, &out->major) ||
      !detail::ParseU32({f + colon + 1, n - colon - 1}, &out->minor)) {
    return false;
  }
  if (!detail::NextField(&p, end, &f, &n)) return false;
  out->root = detail::Unescape(f, n);
  if (!detail::NextField(&p, end, &f, &n)) return false;
  out->mountpoint = detail::Unescape(f, n);
  if (!detail::NextField(&p, end, &f, &n)) return false;  // per-mount options
  // Optional fields, up to the lone "-".
  for (;;) {
    if (!detail::NextField(&p, end, &f, &n)) return false;
    if (n == 1 && f[0] == '-') break;
  }
  if (!detail::NextField(&p, end, &f, &n)) return false;
  out->fstype = std::string_view(f, n);
  if (!detail::NextField(&p, end, &f, &n)) {
    out->source = {};
    return true;  // an empty source is legal
  }
  out->source = detail::Unescape(f, n);
  return true;
}

// Calls fn(const MountInfoLine&) for each well-formed line of buf (modified in place).
// Returns the number of well-formed lines.
template <class F> size_t ForEachMountInfoLine(char* buf, size_t len, F&& fn) {
  size_t count = 0;
  char* p = buf;
  char* const end = buf + len;
  while (p < end) {
    char* nl = p;
    while (nl < end && *nl != '\n') ++nl;
    MountInfoLine m;
    if (ParseMountInfoLine(p, static_cast<size_t>(nl - p), &m)) {
      fn(static_cast<const MountInfoLine&>(m));
      ++count;
    }
    p = nl + 1;
  }
  return count;
}

}  // namespace colabtrace::shim::io
