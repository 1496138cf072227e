#include "elf/fatbin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>

#include "elf/coverage.h"
#include "fmt/format.h"
#include "test_util.h"

namespace colabtrace::elf {
namespace {

using ::testing::ElementsAre;
using namespace std::string_literals;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace colabtrace::elf::testing;

std::string Describe(const FatbinEntry& e) {
  return fmt::format("{} {}", KindName(e.kind), DescribeArch(e));
}

std::set<std::string> Descriptions(const FatbinListing& listing) {
  std::set<std::string> out;
  for (const FatbinEntry& e : listing.entries) out.insert(Describe(e));
  return out;
}

Bytes AsBytes(const std::vector<uint8_t>& v) { return Bytes(v.data(), v.size()); }

// Decompresses every entry and checks that the code agrees with its entry header:
// cubin e_flags give the SM, ptxas's "-arch" note gives SM and 'a'/'f' variant, and
// PTX gives .target and .version.
void ExpectCodeMatchesHeaders(const FatbinListing& listing) {
  for (const FatbinEntry& e : listing.entries) {
    SCOPED_TRACE(Describe(e));
    absl::StatusOr<std::string> code = ReadEntryPayload(e);
    ASSERT_TRUE(code.ok()) << code.status();
    if (e.compressed()) EXPECT_EQ(code->size(), e.uncompressed_size);
    if (e.kind == FatbinKind::kCubin) {
      absl::StatusOr<CubinInfo> cubin = InspectCubin(*code);
      ASSERT_TRUE(cubin.ok()) << cubin.status();
      EXPECT_EQ(cubin->sm, e.arch.sm);
      EXPECT_EQ(cubin->ptxas_arch, FormatArch(e.arch));
      EXPECT_EQ(cubin->abi_version, 8);  // CUDA 12.8+ cubins
    } else if (e.kind == FatbinKind::kPtx) {
      absl::StatusOr<PtxInfo> ptx = InspectPtx(*code);
      ASSERT_TRUE(ptx.ok()) << ptx.status();
      ASSERT_TRUE(ptx->target.has_value());
      EXPECT_EQ(*ptx->target, e.arch);
      EXPECT_EQ(ptx->isa_major, e.version_major);
      EXPECT_EQ(ptx->isa_minor, e.version_minor);
    }
  }
}

FatbinListing ListFile(const std::string& path) {
  absl::StatusOr<ElfImage> image = ElfImage::Open(path);
  EXPECT_TRUE(image.ok()) << image.status();
  if (!image.ok()) return {};
  return ListFatbinEntries(*image);
}

// --- synthetic containers: exact field decoding ------------------------------------

TEST(FatbinTest, DecodesEveryHeaderField) {
  FakeEntry cubin{.kind = 2, .sm = 90, .flags = 0x100011, .payload = std::string(100, 'c')};
  FakeEntry ptx{.kind = 1, .sm = 100, .flags = 0x200011, .version_major = 9, .version_minor = 0,
                .payload = ".version 9.0\n.target sm_100f\n", .compress = true,
                .header_size = 80};
  FakeEntry named{.kind = 2, .sm = 75, .flags = 0x13, .payload = "x", .identifier = "k.cu"};
  std::vector<uint8_t> blob = MakeContainer({cubin, ptx});
  blob.resize(blob.size() + 8, 0);  // zero padding between containers is skipped
  const std::vector<uint8_t> second = MakeContainer({named});
  blob.insert(blob.end(), second.begin(), second.end());

  const FatbinListing listing = ParseFatbin(AsBytes(blob), "test");
  EXPECT_THAT(listing.errors, IsEmpty());
  EXPECT_EQ(listing.containers, 2u);
  EXPECT_EQ(listing.bytes, blob.size());
  ASSERT_EQ(listing.entries.size(), 3u);

  const FatbinEntry& e0 = listing.entries[0];
  EXPECT_EQ(e0.kind, FatbinKind::kCubin);
  EXPECT_EQ(e0.raw_kind, 2);
  EXPECT_EQ(e0.arch, (GpuArch{90, ArchVariant::kArchSpecific}));
  EXPECT_EQ(e0.version_major, 1);
  EXPECT_EQ(e0.version_minor, 8);
  EXPECT_EQ(e0.compression, Compression::kNone);
  EXPECT_EQ(e0.stored_size, 104u);  // 100 padded to 8
  EXPECT_EQ(e0.uncompressed_size, 104u);
  EXPECT_EQ(e0.offset, 16u);
  EXPECT_EQ(e0.container, 0u);
  EXPECT_EQ(e0.section, "test");
  EXPECT_EQ(e0.payload.data(), blob.data() + 16 + 64);
  EXPECT_FALSE(e0.debug);
  EXPECT_EQ(Describe(e0), "cubin sm_90a");

  const FatbinEntry& e1 = listing.entries[1];
  EXPECT_EQ(e1.kind, FatbinKind::kPtx);
  EXPECT_EQ(e1.arch, (GpuArch{100, ArchVariant::kFamily}));
  EXPECT_EQ(e1.version_major, 9);
  EXPECT_EQ(e1.compression, Compression::kZstd);
  EXPECT_EQ(e1.uncompressed_size, ptx.payload.size());
  EXPECT_EQ(e1.offset, 16u + 64 + 104);
  EXPECT_EQ(Describe(e1), "ptx compute_100f");
  absl::StatusOr<std::string> text = ReadEntryPayload(e1);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, ptx.payload);

  const FatbinEntry& e2 = listing.entries[2];
  EXPECT_EQ(e2.container, 1u);
  EXPECT_TRUE(e2.debug);
  EXPECT_EQ(e2.identifier, "k.cu");
  EXPECT_EQ(e2.arch, (GpuArch{75, ArchVariant::kNone}));
}

TEST(FatbinTest, CompressionKindsAndLimits) {
  FakeEntry lz4{.flags = 0x2011, .payload = "not really lz4"};
  FakeEntry big{.payload = std::string(5000, 'z'), .compress = true};
  const std::vector<uint8_t> blob = MakeContainer({lz4, big});
  FatbinListing listing = ParseFatbin(AsBytes(blob));
  ASSERT_EQ(listing.entries.size(), 2u);
  // LZ4 (CUDA <= 12.x) is recognised from the flags; it is listed but not decompressed.
  EXPECT_EQ(listing.entries[0].compression, Compression::kLz4);
  EXPECT_EQ(ReadEntryPayload(listing.entries[0]).status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(CompressionName(listing.entries[1].compression), "zstd");
  EXPECT_EQ(ReadEntryPayload(listing.entries[1]).value(), big.payload);
  EXPECT_EQ(ReadEntryPayload(listing.entries[1], 4999).status().code(),
            absl::StatusCode::kResourceExhausted);
  // Header says a different size than the frame holds: refused.
  FatbinEntry lying = listing.entries[1];
  lying.uncompressed_size = 4000;
  EXPECT_EQ(ReadEntryPayload(lying).status().code(), absl::StatusCode::kDataLoss);
  // Unknown size: streamed, still bounded.
  lying.uncompressed_size = 0;
  EXPECT_EQ(ReadEntryPayload(lying).value(), big.payload);
  EXPECT_EQ(ReadEntryPayload(lying, 1000).status().code(), absl::StatusCode::kResourceExhausted);
  // A cut frame.
  lying.payload = lying.payload.first(lying.payload.size() / 2);
  EXPECT_EQ(ReadEntryPayload(lying).status().code(), absl::StatusCode::kDataLoss);
}

TEST(FatbinTest, ReportsDamageAndKeepsWhatCameBefore) {
  std::vector<uint8_t> blob = MakeContainer({FakeEntry{.sm = 80, .payload = "a"},
                                             FakeEntry{.sm = 86, .payload = "b"}});
  const std::vector<uint8_t> good = blob;
  // The second entry's payload size runs past the container.
  blob[16 + 64 + 8 + 8] = 0xff;
  FatbinListing listing = ParseFatbin(AsBytes(blob), "s");
  ASSERT_EQ(listing.entries.size(), 1u);
  EXPECT_EQ(listing.entries[0].arch.sm, 80);
  EXPECT_THAT(listing.errors, ElementsAre(HasSubstr("overruns its container")));
  // A container claiming more bytes than the section has.
  std::vector<uint8_t> cut(good.begin(), good.end() - 8);
  listing = ParseFatbin(AsBytes(cut), "s");
  EXPECT_EQ(listing.entries.size(), 1u);
  EXPECT_THAT(listing.errors, ElementsAre(HasSubstr("claims")));
  // Garbage where a container should start.
  std::vector<uint8_t> junk = good;
  junk.insert(junk.end(), {1, 2, 3, 4});
  listing = ParseFatbin(AsBytes(junk), "s");
  EXPECT_EQ(listing.entries.size(), 2u);
  EXPECT_THAT(listing.errors, ElementsAre(HasSubstr("no fatbin magic")));
}

TEST(FatbinTest, InspectCubinReadsBothEflagsLayouts) {
  // ABI 8 (CUDA 12.8+): SM in bits 8-15. Values seen in nvcc 13.0 output.
  absl::StatusOr<CubinInfo> v8 = InspectCubin(MakeCubin(
      8, 0x5005a04, "\0ptxas\0Cuda compilation tools, release 13.0, V13.0.88\0-arch sm_90a -m 64 \0"s));
  ASSERT_TRUE(v8.ok()) << v8.status();
  EXPECT_EQ(v8->sm, 90);
  EXPECT_EQ(v8->abi_version, 8);
  EXPECT_EQ(v8->ptxas_arch, "sm_90a");
  EXPECT_EQ(v8->toolkit, "13.0");
  // ABI 7: SM in bits 0-7 (EF_CUDA_SM70 | EF_CUDA_PTX_SM(EF_CUDA_SM70) = 0x460546).
  absl::StatusOr<CubinInfo> v7 = InspectCubin(MakeCubin(7, 0x460546));
  ASSERT_TRUE(v7.ok());
  EXPECT_EQ(v7->sm, 70);
  EXPECT_EQ(v7->ptxas_arch, "");
  EXPECT_FALSE(InspectCubin("\x7f" "ELF").ok());
  std::string x86 = MakeCubin(8, 0);
  x86[18] = 62;
  EXPECT_FALSE(InspectCubin(x86).ok());
}

TEST(FatbinTest, InspectPtx) {
  absl::StatusOr<PtxInfo> ptx = InspectPtx(
      "//\n// Cuda compilation tools, release 13.0, V13.0.88\n//\n\n.version 9.0\n"
      ".target sm_100f\n.address_size 64\n");
  ASSERT_TRUE(ptx.ok()) << ptx.status();
  EXPECT_EQ(ptx->isa_major, 9);
  EXPECT_EQ(ptx->isa_minor, 0);
  EXPECT_EQ(ptx->target, (GpuArch{100, ArchVariant::kFamily}));
  EXPECT_EQ(ptx->toolkit, "13.0");
  absl::StatusOr<PtxInfo> debug = InspectPtx(".version 8.5\n.target sm_80, debug\n");
  ASSERT_TRUE(debug.ok());
  EXPECT_EQ(debug->target, (GpuArch{80}));
  EXPECT_FALSE(InspectPtx(".version 9.0\n").ok());
  EXPECT_FALSE(InspectPtx(".version x\n.target sm_80\n").ok());
}

TEST(FatbinTest, LibraryWithoutDeviceCode) {
  const FatbinListing listing = ListFile(ELFTEST_PROVIDER);
  EXPECT_TRUE(listing.ok());
  EXPECT_THAT(listing.entries, IsEmpty());
  EXPECT_EQ(listing.containers, 0u);
}

TEST(FatbinTest, UnregisteredFatbinsOfALibraryWithoutAny) {
  absl::StatusOr<ElfImage> image = ElfImage::Open(ELFTEST_PROVIDER);
  ASSERT_TRUE(image.ok());
  const UnregisteredFatbins u = FindUnregisteredFatbins(*image);
  EXPECT_EQ(u.containers, 0u);
  EXPECT_THAT(u.sections, IsEmpty());
  EXPECT_EQ(DescribeUnregisteredFatbins(u), "");
}

// cuFFT 12 registers one sm_75 cubin in .nv_fatbin and keeps the kernels it loads itself
// in .ldata (cuobjdump lists only the registered one). Exact for the build measured (the
// CUDA 13.0 toolkit's, also the PyTorch 2.11 cu130 wheel's).
TEST(FatbinTest, CufftKeepsItsKernelsOutsideItsRegisteredFatbin) {
  const std::string cufft = std::string(kCudaLib) + "/libcufft.so.12";
  if (!FileExists(cufft)) GTEST_SKIP() << cufft << " not installed";
  absl::StatusOr<ElfImage> image = ElfImage::Open(cufft);
  ASSERT_TRUE(image.ok()) << image.status();
  if (image->build_id() != "d65143a76809bd95e14025ea0705eaa1e571836f") GTEST_SKIP() << "another cuFFT build";
  const FatbinListing registered = ListFatbinEntries(*image);
  ASSERT_EQ(registered.entries.size(), 1u);
  EXPECT_EQ(DescribeArch(registered.entries[0]), "sm_75");
  const UnregisteredFatbins u = FindUnregisteredFatbins(*image);
  EXPECT_EQ(u.containers, 23983u);
  ASSERT_EQ(u.sections.size(), 1u);
  EXPECT_EQ(u.sections[0], std::make_pair(std::string(".ldata"), size_t{23983}));
  EXPECT_EQ(DescribeUnregisteredFatbins(u), "23983 fatbin containers (23983 in .ldata)");
  // Listed like registered ones: every container read, and sm_90 cubins among them (cuFFT
  // runs on an H200).
  EXPECT_TRUE(u.listing.ok()) << u.listing.errors[0];
  EXPECT_EQ(u.listing.containers, 23983u);
  EXPECT_EQ(u.listing.entries.front().section, ".ldata");
  const Coverage c = CanRunOn(u.listing.entries, GpuArch{90});
  EXPECT_EQ(c.kind, CoverageKind::kExactCubin);
}

// --- nvcc-built fixtures -------------------------------------------------------------

#define SKIP_WITHOUT(fixture) \
  if (std::string(fixture).empty()) GTEST_SKIP() << "nvcc not found at configure time"

TEST(FatbinNvccTest, MixedArchitectures) {
  SKIP_WITHOUT(ELFTEST_FATBIN_MIX);
  const FatbinListing listing = ListFile(ELFTEST_FATBIN_MIX);
  EXPECT_THAT(listing.errors, IsEmpty());
  EXPECT_EQ(Descriptions(listing),
            (std::set<std::string>{"cubin sm_75", "cubin sm_86", "cubin sm_90", "cubin sm_120",
                                   "ptx compute_90", "ptx compute_120"}));
  for (const FatbinEntry& e : listing.entries) {
    EXPECT_EQ(e.section, ".nv_fatbin");
    // nvcc's default: PTX compressed (zstd since CUDA 12.8), cubins stored plain.
    EXPECT_EQ(e.compression, e.kind == FatbinKind::kPtx ? Compression::kZstd : Compression::kNone)
        << Describe(e);
    EXPECT_EQ(e.flags & 0x11, 0x11u);  // 64-bit, Linux
    EXPECT_EQ(e.arch.variant, ArchVariant::kNone);
    // SM >= 100 cubins carry the extended header (flag 0x1000000, 112-byte header).
    if (e.kind == FatbinKind::kCubin) {
      EXPECT_EQ((e.flags & kFatbinFlagExtended) != 0, e.arch.sm >= 100) << Describe(e);
    }
  }
  ExpectCodeMatchesHeaders(listing);
}

TEST(FatbinNvccTest, ArchAndFamilyVariants) {
  SKIP_WITHOUT(ELFTEST_FATBIN_VARIANTS);
  const FatbinListing listing = ListFile(ELFTEST_FATBIN_VARIANTS);
  EXPECT_THAT(listing.errors, IsEmpty());
  EXPECT_EQ(Descriptions(listing),
            (std::set<std::string>{"cubin sm_90a", "ptx compute_90a", "cubin sm_100f",
                                   "ptx compute_100f", "cubin sm_100a", "cubin sm_120f"}));
  // The variant is an entry flag; cubin e_flags are the same as for the plain SM.
  for (const FatbinEntry& e : listing.entries) {
    EXPECT_EQ((e.flags & kFatbinFlagArchSpecific) != 0, e.arch.variant == ArchVariant::kArchSpecific);
    EXPECT_EQ((e.flags & kFatbinFlagFamily) != 0, e.arch.variant == ArchVariant::kFamily);
  }
  ExpectCodeMatchesHeaders(listing);
}

TEST(FatbinNvccTest, CompressAll) {
  SKIP_WITHOUT(ELFTEST_FATBIN_COMPRESSED);
  const FatbinListing listing = ListFile(ELFTEST_FATBIN_COMPRESSED);
  EXPECT_THAT(listing.errors, IsEmpty());
  EXPECT_EQ(Descriptions(listing), (std::set<std::string>{"cubin sm_80", "ptx compute_80"}));
  for (const FatbinEntry& e : listing.entries) {
    EXPECT_EQ(e.compression, Compression::kZstd) << Describe(e);
    EXPECT_LT(e.stored_size, e.uncompressed_size);
  }
  ExpectCodeMatchesHeaders(listing);
}

TEST(FatbinNvccTest, CompressModeNone) {
  SKIP_WITHOUT(ELFTEST_FATBIN_UNCOMPRESSED);
  const FatbinListing listing = ListFile(ELFTEST_FATBIN_UNCOMPRESSED);
  EXPECT_THAT(listing.errors, IsEmpty());
  EXPECT_EQ(Descriptions(listing), (std::set<std::string>{"cubin sm_80", "ptx compute_80"}));
  for (const FatbinEntry& e : listing.entries) {
    EXPECT_EQ(e.compression, Compression::kNone) << Describe(e);
  }
  ExpectCodeMatchesHeaders(listing);
}

TEST(FatbinNvccTest, RelocatableDeviceCodeObject) {
  SKIP_WITHOUT(ELFTEST_FATBIN_RDC);
  absl::StatusOr<ElfImage> image = ElfImage::Open(ELFTEST_FATBIN_RDC);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->elf_type(), 1);  // ET_REL
  EXPECT_EQ(image->FindSection(".nv_fatbin"), nullptr);
  ASSERT_NE(image->FindSection("__nv_relfatbin"), nullptr);
  const FatbinListing listing = ListFatbinEntries(*image);
  EXPECT_THAT(listing.errors, IsEmpty());
  EXPECT_EQ(Descriptions(listing), (std::set<std::string>{"cubin sm_86", "ptx compute_86"}));
  for (const FatbinEntry& e : listing.entries) EXPECT_EQ(e.section, "__nv_relfatbin");
  ExpectCodeMatchesHeaders(listing);
}

TEST(FatbinNvccTest, DebugBuildRecordsTheSourceName) {
  SKIP_WITHOUT(ELFTEST_FATBIN_DEBUG);
  const FatbinListing listing = ListFile(ELFTEST_FATBIN_DEBUG);
  EXPECT_THAT(listing.errors, IsEmpty());
  ASSERT_EQ(listing.entries.size(), 1u);
  const FatbinEntry& e = listing.entries[0];
  EXPECT_EQ(Describe(e), "cubin sm_75");
  EXPECT_TRUE(e.debug);
  EXPECT_EQ(e.identifier, "fatbin_kernel.cu");
  EXPECT_EQ(e.compression, Compression::kZstd);  // debug images are compressed by default
  ExpectCodeMatchesHeaders(listing);
}

// --- libcublasLt.so.13 ----------------------------------------------------------------

constexpr char kCublasLt[] = "/usr/local/cuda/lib64/libcublasLt.so.13";
// The libcublasLt.so.13 of nvidia-cublas 13.1.0.3 (the CUDA 13 image this project
// builds on). Counts below were obtained with an independent Python reader of the
// entry headers and confirmed by decompressing every entry (elf_fatbin_bench
// --decompress: cubin e_flags + ptxas -arch note, PTX .target; 0 mismatches).
constexpr uint64_t kCublasLtSize = 541595600;

TEST(FatbinCublasLtTest, ListsEveryEntry) {
  if (!FileExists(kCublasLt)) GTEST_SKIP() << kCublasLt << " not present";
  const FatbinListing listing = ListFile(kCublasLt);
  EXPECT_THAT(listing.errors, IsEmpty());
  std::map<std::string, int> counts;
  for (const FatbinEntry& e : listing.entries) {
    ++counts[Describe(e)];
    EXPECT_EQ(e.section, ".nv_fatbin");
    EXPECT_EQ(e.compression, Compression::kZstd);
  }
  if (FileSize(kCublasLt) != kCublasLtSize) {
    GTEST_SKIP() << "a different libcublasLt build; exact counts not checked";
  }
  EXPECT_EQ(listing.containers, 2782u);
  EXPECT_EQ(listing.entries.size(), 5737u);
  EXPECT_EQ(listing.bytes, 0x8546080u);  // .nv_fatbin size per readelf -S
  const std::map<std::string, int> want = {
      {"cubin sm_75", 166},  {"cubin sm_80", 482},    {"cubin sm_86", 105},
      {"cubin sm_89", 247},  {"cubin sm_90", 221},    {"cubin sm_90a", 1376},
      {"cubin sm_100", 1187}, {"cubin sm_100a", 1},   {"cubin sm_103", 64},
      {"cubin sm_120", 463}, {"cubin sm_120f", 1133}, {"cubin sm_121", 4},
      {"ptx compute_75", 1}, {"ptx compute_120", 287}};
  EXPECT_EQ(counts, want);
}

TEST(FatbinCublasLtTest, AgreesWithCuobjdump) {
  const std::optional<std::string> cuobjdump = FindTool("cuobjdump");
  if (!cuobjdump) GTEST_SKIP() << "cuobjdump not installed";
  if (!FileExists(kCublasLt)) GTEST_SKIP() << kCublasLt << " not present";
  const std::optional<std::string> out =
      testing::Run(*cuobjdump + " --list-elf --list-ptx " + kCublasLt);
  ASSERT_TRUE(out.has_value());
  // Lines look like "ELF file    1: libcublasLt.1.sm_90a.cubin" / "PTX file ...sm_120.ptx".
  std::set<std::string> want;
  const std::regex line(R"((ELF|PTX) file\s+\d+:.*\.(sm_\d+[af]?)\.(cubin|ptx))");
  for (std::sregex_iterator it(out->begin(), out->end(), line), end; it != end; ++it) {
    const std::string arch = (*it)[2];
    want.insert((*it)[1] == "ELF" ? "cubin " + arch : "ptx compute_" + arch.substr(3));
  }
  EXPECT_EQ(Descriptions(ListFile(kCublasLt)), want);
}

TEST(FatbinCublasLtTest, SampledEntriesDecompressAndMatch) {
  if (!FileExists(kCublasLt)) GTEST_SKIP() << kCublasLt << " not present";
  FatbinListing listing = ListFile(kCublasLt);
  // One entry of each kind/arch (the full check is elf_fatbin_bench --decompress).
  std::set<std::string> seen;
  FatbinListing sample;
  for (FatbinEntry& e : listing.entries) {
    if (seen.insert(Describe(e)).second) sample.entries.push_back(e);
  }
  EXPECT_EQ(sample.entries.size(), 14u);
  ExpectCodeMatchesHeaders(sample);  // `listing` keeps the payload views valid
}

}  // namespace
}  // namespace colabtrace::elf
