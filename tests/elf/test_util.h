// Helpers for elf_test: fixture paths, running tools (readelf, cuobjdump) for expected
// values, and a builder for synthetic fatbin containers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace colabtrace::elf::testing {

// Fixture path macros are "" when the fixture could not be built.
#ifndef ELFTEST_FATBIN_MIX
#define ELFTEST_FATBIN_MIX ""
#endif
#ifndef ELFTEST_FATBIN_COMPRESSED
#define ELFTEST_FATBIN_COMPRESSED ""
#endif
#ifndef ELFTEST_FATBIN_UNCOMPRESSED
#define ELFTEST_FATBIN_UNCOMPRESSED ""
#endif
#ifndef ELFTEST_FATBIN_RDC
#define ELFTEST_FATBIN_RDC ""
#endif
#ifndef ELFTEST_FATBIN_DEBUG
#define ELFTEST_FATBIN_DEBUG ""
#endif
#ifndef ELFTEST_FATBIN_VARIANTS
#define ELFTEST_FATBIN_VARIANTS ""
#endif

inline constexpr char kLibStdcxx[] = "/usr/lib/x86_64-linux-gnu/libstdc++.so.6";
inline constexpr char kLibC[] = "/usr/lib/x86_64-linux-gnu/libc.so.6";
inline constexpr char kCudaLib[] = "/usr/local/cuda/lib64";

bool FileExists(const std::string& path);
uint64_t FileSize(const std::string& path);  // 0 when missing
std::vector<uint8_t> ReadFile(const std::string& path);

// Runs `command` through /bin/sh; returns its stdout, or nullopt if it exits non-zero.
std::optional<std::string> Run(const std::string& command);
// The path of an executable found on PATH or in /usr/local/cuda/bin, or nullopt.
std::optional<std::string> FindTool(const std::string& name);

// What `readelf -dVnW --dyn-syms` says about a file.
struct ReadelfFacts {
  std::string soname, runpath, rpath, build_id;
  std::vector<std::string> needed;
  std::vector<std::string> verdef;                          // in order, base included
  std::map<std::string, std::vector<std::string>> verneed;  // file -> versions, in order
  size_t defined_dynamic_symbols = 0;
};
// nullopt when readelf is missing or fails.
std::optional<ReadelfFacts> Readelf(const std::string& path);

// One entry of a synthetic fatbin container.
struct FakeEntry {
  uint16_t kind = 2;  // 1 PTX, 2 cubin
  uint32_t sm = 80;
  uint64_t flags = 0x11;  // 64-bit | Linux
  uint16_t version_major = 1, version_minor = 8;
  std::string payload;  // stored as is, or zstd-compressed when compress is set
  bool compress = false;
  std::string identifier;
  uint32_t header_size = 64;  // 64, or larger (identifier and padding follow)
};
// Builds one container (16-byte header, then each entry header + payload padded to 8).
std::vector<uint8_t> MakeContainer(const std::vector<FakeEntry>& entries);

// A minimal EM_CUDA ELF header (64 bytes) with the given ABI version and e_flags,
// followed by `tail` (e.g. a fake ptxas note).
std::string MakeCubin(uint8_t abi_version, uint32_t e_flags, const std::string& tail = "");

}  // namespace colabtrace::elf::testing
