// Allocation-free text helpers for the shim's own reading of /proc and /sys files and
// for building paths: safe in fork children and signal handlers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace colabtrace::shim {

// A fixed-size path builder; silently stops at its capacity, always NUL-terminated.
struct PathBuf {
  char s[1200];
  size_t n = 0;
  PathBuf() { s[0] = '\0'; }
  PathBuf& Add(const char* t) {
    while (*t && n + 1 < sizeof(s)) s[n++] = *t++;
    s[n] = '\0';
    return *this;
  }
  PathBuf& AddNum(uint64_t v) {
    char d[24];
    int k = 0;
    do d[k++] = static_cast<char>('0' + v % 10); while ((v /= 10) != 0);
    while (k > 0 && n + 1 < sizeof(s)) s[n++] = d[--k];
    s[n] = '\0';
    return *this;
  }
};

// The decimal number at s (leading blanks skipped); 0 when there is none.
inline uint64_t ParseU64(const char* s) {
  uint64_t v = 0;
  while (*s == ' ' || *s == '\t') ++s;
  while (*s >= '0' && *s <= '9') v = v * 10 + static_cast<uint64_t>(*s++ - '0');
  return v;
}

// Returns the value after "key" on the line that starts with it, or nullptr.
inline const char* FindLine(const char* text, const char* key) {
  const size_t k = std::strlen(key);
  for (const char* p = text; p && *p;) {
    if (std::strncmp(p, key, k) == 0) return p + k;
    p = std::strchr(p, '\n');
    if (p) ++p;
  }
  return nullptr;
}

}  // namespace colabtrace::shim
