// CUDA fat binaries: listing the device code a library carries, without a GPU or the
// CUDA toolkit.
//
// nvcc embeds device code in the host ELF in the section .nv_fatbin (linked code) or
// __nv_relfatbin (relocatable code, -rdc). A section is a sequence of containers, one
// per translation unit or device-link step, each holding entries (one cubin or PTX per
// architecture). Layout (little-endian), as observed on CUDA 13 nvcc output and
// libcublasLt.so.13 (details in docs/elf-inspection.md):
//
//   container header (16 bytes)      entry header (header_size bytes, >= 64)
//     u32 magic 0xBA55ED50             0x00 u16 kind (1 PTX, 2 cubin)
//     u16 version (1)                  0x02 u16 header format (0x0101)
//     u16 header size (16)             0x04 u32 header size (64, 72, 80, 96, 112)
//     u64 size of the entries          0x08 u64 payload size (padded to 8)
//                                      0x10 u32 compressed size (0 if not compressed)
//                                      0x14 u32 offset of extra options (0 if none)
//                                      0x18 u16 minor, u16 major version (PTX ISA for PTX,
//                                           cubin ABI for cubins)
//                                      0x1c u32 SM arch (e.g. 90)
//                                      0x20 u32 offset, 0x24 u32 size of the identifier
//                                           (source file name, -G builds)
//                                      0x28 u64 flags (see kFatbinFlag*)
//                                      0x38 u64 uncompressed size (0 if not compressed)
//   followed by the payload; the next entry starts header_size + payload size later.
//
// Listing reads headers only (it never decompresses), so it runs at memory speed.
// ReadEntryPayload() decompresses one entry when its contents are wanted, and
// InspectCubin()/InspectPtx() confirm the architecture from the code itself.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "elf/bytes.h"
#include "elf/cuda_arch.h"
#include "elf/elf_image.h"

namespace colabtrace::elf {

inline constexpr uint32_t kFatbinMagic = 0xBA55ED50;

// Entry flag bits (the flags field at 0x28 of an entry header).
inline constexpr uint64_t kFatbinFlag64Bit = 0x1;
inline constexpr uint64_t kFatbinFlagDebug = 0x2;         // nvcc -G
inline constexpr uint64_t kFatbinFlagLinux = 0x10;
inline constexpr uint64_t kFatbinFlagLz4 = 0x2000;        // compressed, LZ4 (CUDA <= 12.x)
inline constexpr uint64_t kFatbinFlagZstd = 0x8000;       // compressed, zstd (CUDA 12.8+)
inline constexpr uint64_t kFatbinFlagArchSpecific = 0x100000;  // sm_90a / compute_90a
inline constexpr uint64_t kFatbinFlagFamily = 0x200000;        // sm_100f / compute_100f
inline constexpr uint64_t kFatbinFlagExtended = 0x1000000;     // SM >= 100 cubin metadata

enum class FatbinKind { kCubin, kPtx, kOther };
enum class Compression { kNone, kLz4, kZstd };

struct FatbinEntry {
  FatbinKind kind = FatbinKind::kOther;
  uint16_t raw_kind = 0;  // the kind field as stored
  GpuArch arch;           // SM and 'a'/'f' variant, from the entry header
  // PTX ISA version for PTX entries (e.g. 9.0), cubin ABI version for cubins (1.8).
  int version_major = 0;
  int version_minor = 0;
  Compression compression = Compression::kNone;
  bool debug = false;                 // built with -G
  uint64_t flags = 0;                 // raw entry flags
  uint64_t stored_size = 0;           // bytes of (possibly compressed) code
  uint64_t uncompressed_size = 0;     // equals stored_size when not compressed
  std::string identifier;             // source name when present, else ""
  size_t container = 0;               // index of its container, counted across the listing
  std::string_view section;           // ".nv_fatbin", "__nv_relfatbin", or "" for a raw blob
  uint64_t offset = 0;                // of the entry header, within its section or blob
  // The stored code: a view into the parsed buffer, valid while that buffer lives
  // (for ListFatbinEntries: while the listing or the ElfImage lives). Empty for
  // entries built by hand.
  Bytes payload;

  bool compressed() const { return compression != Compression::kNone; }
};

struct FatbinListing {
  std::vector<FatbinEntry> entries;
  size_t containers = 0;
  size_t bytes = 0;  // size of the fatbin data scanned
  // Problems met; the entries before each problem are kept. Empty when all was read.
  std::vector<std::string> errors;
  // Set by ListFatbinEntries(): keeps the image's bytes (and so every payload) alive.
  std::shared_ptr<const void> storage;

  bool ok() const { return errors.empty(); }
};

// Lists the entries of a raw fatbin blob (a concatenation of containers, as found in
// .nv_fatbin or written by `nvcc -fatbin`). Zero padding between containers is
// skipped. Never reads outside `blob`. On a damaged entry the rest of its container
// is skipped (the container header says where the next starts); on a damaged
// container header listing stops; each problem is reported in `errors`. At most 2^20
// entries are listed. Entries keep views of `blob` and of `section` (pass a literal).
FatbinListing ParseFatbin(Bytes blob, std::string_view section = "");

// Appends the entries of `blob` to `listing` (container indices continue).
void AppendFatbin(Bytes blob, std::string_view section, FatbinListing& listing);

// Lists the entries of .nv_fatbin and __nv_relfatbin in `image`. A library without
// device code gives an empty, ok listing. The listing shares ownership of the image's
// bytes, so its payload views outlive `image`.
FatbinListing ListFatbinEntries(const ElfImage& image);

// Device code a library carries outside its registered fatbins: fatbin containers stored
// in other sections, which the library loads itself at run time instead of having them
// registered at load. cuFFT 12 registers one sm_75 cubin in .nv_fatbin and keeps its
// kernels in 23,983 containers in .ldata; cuBLASLt 13 keeps its sm_100/sm_120 kernels in
// .cask_resource. Found by their headers (magic, version 1, header size 16, a size that
// fits the section), then listed like registered ones; a match is skipped over by its
// size, so code inside a container is not counted again.
struct UnregisteredFatbins {
  size_t containers = 0;
  std::vector<std::pair<std::string, size_t>> sections;  // holding them, in file order
  // Their entries (FatbinEntry::section names the section), with the problems met.
  FatbinListing listing;
};

// Scans every section of `image` but .nv_fatbin, __nv_relfatbin and SHT_NOBITS ones (at
// memory speed: one memmem pass, then the headers of what it found). A file without
// section headers gives none (its registered fatbins cannot be found either).
UnregisteredFatbins FindUnregisteredFatbins(const ElfImage& image);

// "23983 fatbin containers (23983 in .ldata)", or "" when none.
std::string DescribeUnregisteredFatbins(const UnregisteredFatbins& u);

// Returns the entry's code, decompressed when needed. Fails when the payload is
// damaged, when it would exceed `max_size` bytes, or for LZ4 (not supported: listing
// does not need it). PTX keeps its trailing NUL padding.
absl::StatusOr<std::string> ReadEntryPayload(const FatbinEntry& entry,
                                             size_t max_size = size_t{1} << 30);

// What the code of a cubin says about itself.
struct CubinInfo {
  int sm = 0;               // from e_flags
  int abi_version = 0;      // e_ident[EI_ABIVERSION]
  uint32_t e_flags = 0;
  std::string ptxas_arch;   // "-arch sm_90a" as recorded by ptxas in .note.nv.tkinfo
  std::string toolkit;      // "13.0" from "Cuda compilation tools, release 13.0", or ""
};

// Reads an EM_CUDA ELF header (decompressed cubin). Fails when it is not one.
absl::StatusOr<CubinInfo> InspectCubin(std::string_view cubin);

// What a PTX text says about itself.
struct PtxInfo {
  int isa_major = 0, isa_minor = 0;  // ".version 9.0"
  std::optional<GpuArch> target;     // ".target sm_90a"
  std::string toolkit;               // "13.0" from the "release 13.0" comment, or ""
};

// Reads the .version and .target directives of a PTX text. Fails without .target.
absl::StatusOr<PtxInfo> InspectPtx(std::string_view ptx);

// "cubin" / "ptx" / "other".
std::string_view KindName(FatbinKind kind);
// "none" / "lz4" / "zstd".
std::string_view CompressionName(Compression c);
// "sm_90a" for a cubin, "compute_90a" for PTX.
std::string DescribeArch(const FatbinEntry& e);

}  // namespace colabtrace::elf
