// `colabtrace --version [--verbose]`.
#include <filesystem>
#include <iostream>
#include <string>

#include "cli/command.h"
#include "colabtrace/format/wire.h"
#include "elf/elf_image.h"
#include "elf/portability.h"

#ifndef COLABTRACE_VERSION
#error "COLABTRACE_VERSION comes from the VERSION file (analyzer/CMakeLists.txt)"
#endif

namespace colabtrace::cli {
namespace {

// One line for one binary; false when it breaks the floor (or cannot be read).
bool DescribeBinary(std::string_view what, const std::string& path) {
  std::cout << "  " << what << ": " << path << "\n";
  absl::StatusOr<elf::ElfImage> image = elf::ElfImage::Open(path);
  if (!image.ok()) {
    std::cout << "    cannot be read: " << image.status().message() << "\n";
    return false;
  }
  const elf::Portability p = elf::PortabilityOf(*image);
  std::cout << "    needs:";
  for (const std::string& n : p.needed) std::cout << " " << n;
  std::cout << (p.needed.empty() ? " no shared library\n" : "\n");
  std::cout << "    newest glibc symbol version: " << (p.newest_glibc.empty() ? "none" : p.newest_glibc) << "\n";
  for (const std::string& problem : p.problems) std::cout << "    above the floor: " << problem << "\n";
  return p.problems.empty();
}

}  // namespace

int PrintVersion(bool verbose) {
  std::cout << "colabtrace " << COLABTRACE_VERSION << " (trace format " << format::kVersionMajor << "."
            << format::kVersionMinor << ")\n";
  if (!verbose) return kExitOk;
  std::cout << "built for Linux " << COLABTRACE_ARCH << " with glibc " << elf::kGlibcFloorMajor << "."
            << elf::kGlibcFloorMinor << " or later (" << elf::kManylinuxTag
            << "), and nothing but glibc's own libraries:\n";
  std::error_code ec;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  bool ok = DescribeBinary("the CLI", ec ? "(unknown: no /proc)" : self);
  const std::string shim = FindShim();
  if (shim.empty()) {
    std::cout << "  the shim: not found next to this program\n";
  } else {
    ok = DescribeBinary("the shim", shim) && ok;
  }
  if (!ok) {
    std::cout << "These binaries do not meet the floor: they were built on a machine whose toolchain "
                 "or libraries raise it.\n";
  }
  return ok ? kExitOk : kExitFindings;
}

}  // namespace colabtrace::cli
