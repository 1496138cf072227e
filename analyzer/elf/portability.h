// Whether a binary travels: the libraries and glibc symbol versions it needs, against the
// floor the wheel promises (manylinux_2_28: glibc 2.28 or later, nothing but glibc's own
// libraries). `colabtrace --version --verbose` reports it for the CLI and the shim, and
// setup.py refuses to package binaries that break it; in the spirit of auditwheel's
// policy check, with the project's own ELF reader.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "elf/elf_image.h"

namespace colabtrace::elf {

// The floor: the oldest glibc the binaries run on, and its manylinux tag.
inline constexpr int kGlibcFloorMajor = 2;
inline constexpr int kGlibcFloorMinor = 28;
inline constexpr std::string_view kGlibcFloorVersion = "GLIBC_2.28";
inline constexpr std::string_view kManylinuxTag = "manylinux_2_28";

struct Portability {
  std::vector<std::string> needed;  // DT_NEEDED, in order
  std::string newest_glibc;         // the newest GLIBC_x.y version it requires ("" for none)
  // Each thing above the floor, named: "libzstd.so.1 (not one of glibc's libraries)",
  // "GLIBC_2.34 from libc.so.6 (above GLIBC_2.28)".
  std::vector<std::string> problems;
};

// True for the libraries of glibc itself (libc, libm, libdl, libpthread, librt, the
// dynamic loader) and libgcc_s, which every system has.
bool IsFloorLibrary(std::string_view soname);

Portability PortabilityOf(const ElfImage& image);

}  // namespace colabtrace::elf
