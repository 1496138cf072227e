// ElfImage: offline inspection of one 64-bit little-endian ELF file (x86-64, aarch64).
//
// The analyzer uses it to explain library problems found in a trace: which libraries a
// library needs and where it looks for them (DT_NEEDED, RUNPATH, RPATH), which symbol
// versions it provides (verdef) and requires (verneed), its build id, and its raw
// sections (for example .nv_fatbin, see fatbin.h).
//
// The file is untrusted. ElfImage::Open() fails only when the file is not a supported
// ELF at all (bad magic, 32-bit, big-endian, other machine, unreadable headers).
// Damage further in (a bad dynamic table, a verneed chain running off the end, a
// string without a terminator) does not fail the open: what could be read is kept and
// each problem is described in warnings().
//
// Dynamic information is read through the section headers (.dynamic, .dynsym,
// .gnu.version_d, .gnu.version_r) and, when the section headers are stripped or
// unusable, through the PT_DYNAMIC program header and the DT_* addresses it holds.
//
// Example:
//   absl::StatusOr<ElfImage> image = ElfImage::Open("/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
//   if (image.ok() && image->DefinesVersion("GLIBCXX_3.4.30")) { ... }
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "elf/bytes.h"

namespace colabtrace::elf {

enum class ElfMachine { kX86_64, kAarch64 };

// Where the dynamic information was read from.
enum class DynamicSource { kNone, kSectionHeaders, kProgramHeaders };

// One section header, resolved.
struct Section {
  std::string_view name;  // empty when the name cannot be read
  uint32_t type = 0;      // SHT_*
  uint64_t flags = 0;     // SHF_*
  uint64_t addr = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint32_t link = 0;
  uint32_t info = 0;
  uint64_t entsize = 0;
  // The section's bytes in the file; empty for SHT_NOBITS and for a section whose
  // [offset, offset + size) lies outside the file.
  Bytes data;
};

// One program header.
struct Segment {
  uint32_t type = 0;  // PT_*
  uint32_t flags = 0;
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
};

// One entry of the version definition table (.gnu.version_d): a version this object
// provides. The entry flagged VER_FLG_BASE names the object itself.
struct VersionDefinition {
  std::string name;  // e.g. "GLIBCXX_3.4.30", "libcudart.so.13"
  uint16_t index = 0;
  bool is_base = false;
};

// One file of the version requirement table (.gnu.version_r): the versions this
// object needs from that file.
struct VersionRequirement {
  std::string file;                   // e.g. "libstdc++.so.6"
  std::vector<std::string> versions;  // e.g. {"GLIBCXX_3.4.30", "CXXABI_1.3"}
};

class ElfImage {
 public:
  // Maps `path` read-only and parses it. Fails on a file that is not a readable
  // 64-bit little-endian x86-64 or aarch64 ELF; the message says what is wrong.
  // The mapping lives as long as the returned image (and its copies).
  static absl::StatusOr<ElfImage> Open(const std::string& path);

  // Parses a copy of `bytes` (for tests and for ELF images found inside other data).
  // Same guarantees as Open().
  static absl::StatusOr<ElfImage> FromBytes(Bytes bytes);

  ElfMachine machine() const { return machine_; }
  uint16_t elf_type() const { return elf_type_; }  // ET_DYN, ET_EXEC, ET_REL, ...

  // The whole file.
  Bytes bytes() const { return bytes_; }
  // Shared ownership of the storage behind bytes(): holding it keeps every view into
  // this image (sections, fatbin payloads) valid after the image is gone.
  std::shared_ptr<const void> storage() const { return owner_; }

  // All section headers in file order (empty when the file has none).
  const std::vector<Section>& sections() const { return sections_; }
  // The first section named `name`, or nullptr.
  const Section* FindSection(std::string_view name) const;
  // All program headers (empty for relocatable objects).
  const std::vector<Segment>& segments() const { return segments_; }

  // DT_SONAME, or "" when absent.
  const std::string& soname() const { return soname_; }
  // DT_NEEDED entries in order.
  const std::vector<std::string>& needed() const { return needed_; }
  // DT_RUNPATH and DT_RPATH as written (colon-separated, $ORIGIN unexpanded), or "".
  const std::string& runpath() const { return runpath_; }
  const std::string& rpath() const { return rpath_; }
  // The NT_GNU_BUILD_ID note as lowercase hex, or "" when absent.
  const std::string& build_id() const { return build_id_; }

  // Number of .dynsym entries with a definition (st_shndx != SHN_UNDEF) and a name.
  // A name defined in several versions (memcpy@GLIBC_2.2.5, memcpy@@GLIBC_2.14)
  // counts once per entry, as in `readelf --dyn-syms`.
  size_t defined_dynamic_symbol_count() const { return defined_symbol_count_; }
  // Number of undefined (imported) .dynsym entries with a name.
  size_t undefined_dynamic_symbol_count() const { return undefined_symbol_count_; }
  // True when the dynamic symbol table defines `name` (any version).
  bool DefinesDynamicSymbol(std::string_view name) const {
    return defined_symbols_.contains(name);
  }

  // The version definition table in file order, base entry included.
  const std::vector<VersionDefinition>& verdef() const { return verdef_; }
  // True when a non-base version definition is named `version`.
  bool DefinesVersion(std::string_view version) const;
  // The version requirement table in file order.
  const std::vector<VersionRequirement>& verneed() const { return verneed_; }
  // The versions required from `file` (e.g. "libc.so.6"); empty when none.
  std::vector<std::string> RequiredVersions(std::string_view file) const;

  DynamicSource dynamic_source() const { return dynamic_source_; }
  // Problems met while parsing; the corresponding data is missing or partial.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  friend class ElfParser;
  ElfImage() = default;

  std::shared_ptr<const void> owner_;  // keeps bytes_ alive: a MappedFile or a copy
  Bytes bytes_;
  ElfMachine machine_ = ElfMachine::kX86_64;
  uint16_t elf_type_ = 0;
  std::vector<Section> sections_;
  std::vector<Segment> segments_;
  std::string soname_, runpath_, rpath_, build_id_;
  std::vector<std::string> needed_;
  absl::flat_hash_set<std::string_view> defined_symbols_;  // views into bytes_
  size_t defined_symbol_count_ = 0;
  size_t undefined_symbol_count_ = 0;
  std::vector<VersionDefinition> verdef_;
  std::vector<VersionRequirement> verneed_;
  DynamicSource dynamic_source_ = DynamicSource::kNone;
  std::vector<std::string> warnings_;
};

}  // namespace colabtrace::elf
