#include "elf/portability.h"

#include <charconv>
#include <optional>
#include <utility>

namespace colabtrace::elf {
namespace {

// "GLIBC_2.34" -> {2, 34}; nullopt for any other name (GLIBC_PRIVATE, GCC_3.0).
std::optional<std::pair<int, int>> GlibcVersion(std::string_view v) {
  if (!v.starts_with("GLIBC_")) return std::nullopt;
  v.remove_prefix(6);
  int major = 0, minor = 0;
  const char* end = v.data() + v.size();
  auto [p, ec] = std::from_chars(v.data(), end, major);
  if (ec != std::errc() || p == end || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, minor);
  // A third part (GLIBC_2.2.5) does not change the order of the first two.
  if (ec2 != std::errc() || (q != end && *q != '.')) return std::nullopt;
  return std::pair(major, minor);
}

}  // namespace

bool IsFloorLibrary(std::string_view soname) {
  for (std::string_view ok : {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
                              "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "libgcc_s.so.1"}) {
    if (soname == ok) return true;
  }
  return false;
}

Portability PortabilityOf(const ElfImage& image) {
  Portability p;
  p.needed = image.needed();
  for (const std::string& n : p.needed) {
    if (!IsFloorLibrary(n)) p.problems.push_back(n + " (not one of glibc's libraries)");
  }
  std::pair<int, int> newest{0, 0};
  for (const VersionRequirement& r : image.verneed()) {
    for (const std::string& v : r.versions) {
      if (const auto g = GlibcVersion(v)) {
        if (*g > newest) newest = *g, p.newest_glibc = v;
        if (*g > std::pair(kGlibcFloorMajor, kGlibcFloorMinor)) {
          p.problems.push_back(v + " from " + r.file + " (above " + std::string(kGlibcFloorVersion) + ")");
        }
      } else if (v == "GLIBC_PRIVATE") {
        p.problems.push_back(v + " from " + r.file + " (glibc's internal interface changes between builds)");
      }
    }
  }
  return p;
}

}  // namespace colabtrace::elf
