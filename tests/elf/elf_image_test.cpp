#include "elf/elf_image.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "test_util.h"

namespace colabtrace::elf {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;
using namespace colabtrace::elf::testing;

ElfImage OpenOrDie(const std::string& path) {
  absl::StatusOr<ElfImage> image = ElfImage::Open(path);
  EXPECT_TRUE(image.ok()) << image.status();
  return *std::move(image);
}

std::vector<std::string> VerdefNames(const ElfImage& image) {
  std::vector<std::string> names;
  for (const VersionDefinition& d : image.verdef()) names.push_back(d.name);
  return names;
}

// A copy of the file with its section headers removed (e_shoff, e_shnum, e_shstrndx
// zeroed), so only program headers remain: what `strip`-style tools can leave.
ElfImage WithoutSectionHeaders(const ElfImage& image) {
  std::vector<uint8_t> copy(image.bytes().begin(), image.bytes().end());
  std::fill(copy.begin() + 40, copy.begin() + 48, 0);
  std::fill(copy.begin() + 60, copy.begin() + 64, 0);
  absl::StatusOr<ElfImage> stripped = ElfImage::FromBytes(copy);
  EXPECT_TRUE(stripped.ok()) << stripped.status();
  return *std::move(stripped);
}

// Everything ElfImage reports must equal what readelf reports.
void ExpectMatchesReadelf(const std::string& path) {
  SCOPED_TRACE(path);
  const std::optional<ReadelfFacts> want = Readelf(path);
  if (!want) GTEST_SKIP() << "readelf unavailable";
  const ElfImage image = OpenOrDie(path);
  EXPECT_THAT(image.warnings(), IsEmpty());
  EXPECT_EQ(image.soname(), want->soname);
  EXPECT_EQ(image.needed(), want->needed);
  EXPECT_EQ(image.runpath(), want->runpath);
  EXPECT_EQ(image.rpath(), want->rpath);
  EXPECT_EQ(image.build_id(), want->build_id);
  EXPECT_EQ(VerdefNames(image), want->verdef);
  std::map<std::string, std::vector<std::string>> verneed;
  for (const VersionRequirement& r : image.verneed()) verneed[r.file] = r.versions;
  EXPECT_EQ(verneed, want->verneed);
  EXPECT_EQ(image.defined_dynamic_symbol_count(), want->defined_dynamic_symbols);
}

TEST(ElfImageTest, ProviderLibraryExactValues) {
  const ElfImage image = OpenOrDie(ELFTEST_PROVIDER);
  EXPECT_EQ(image.machine(), ElfMachine::kX86_64);
  EXPECT_EQ(image.elf_type(), 3);  // ET_DYN
  EXPECT_EQ(image.dynamic_source(), DynamicSource::kSectionHeaders);
  EXPECT_EQ(image.soname(), "libelftest_provider.so.1");
  EXPECT_THAT(image.needed(), ElementsAre("libc.so.6"));
  EXPECT_EQ(image.build_id(), "0123456789abcdef0011223344556677");  // -Wl,--build-id=0x...
  ASSERT_EQ(image.verneed().size(), 1u);
  EXPECT_EQ(image.verneed()[0].file, "libc.so.6");
  EXPECT_THAT(image.verneed()[0].versions, ElementsAre("GLIBC_2.2.5"));  // strlen
  EXPECT_EQ(image.runpath(), "");
  EXPECT_EQ(image.rpath(), "");
  ASSERT_EQ(image.verdef().size(), 3u);
  EXPECT_EQ(image.verdef()[0].name, "libelftest_provider.so.1");
  EXPECT_TRUE(image.verdef()[0].is_base);
  EXPECT_EQ(image.verdef()[0].index, 1);
  EXPECT_EQ(image.verdef()[1].name, "ELFTEST_1.0");
  EXPECT_EQ(image.verdef()[1].index, 2);
  EXPECT_EQ(image.verdef()[2].name, "ELFTEST_2.0");
  EXPECT_EQ(image.verdef()[2].index, 3);
  EXPECT_TRUE(image.DefinesVersion("ELFTEST_1.0"));
  EXPECT_TRUE(image.DefinesVersion("ELFTEST_2.0"));
  EXPECT_FALSE(image.DefinesVersion("libelftest_provider.so.1"));  // the base entry
  EXPECT_FALSE(image.DefinesVersion("ELFTEST_3.0"));
  EXPECT_TRUE(image.DefinesDynamicSymbol("elftest_one"));
  EXPECT_TRUE(image.DefinesDynamicSymbol("elftest_two"));
  EXPECT_TRUE(image.DefinesDynamicSymbol("elftest_three"));
  EXPECT_FALSE(image.DefinesDynamicSymbol("elftest_hidden"));  // local: * in the script
  EXPECT_FALSE(image.DefinesDynamicSymbol("elftest"));
  // The three functions plus the ABS symbols GNU ld emits for ELFTEST_1.0 and ELFTEST_2.0.
  EXPECT_EQ(image.defined_dynamic_symbol_count(), 5u);
  EXPECT_THAT(image.warnings(), IsEmpty());
  ExpectMatchesReadelf(ELFTEST_PROVIDER);
}

TEST(ElfImageTest, ConsumerVerneedAndRunpath) {
  const ElfImage image = OpenOrDie(ELFTEST_CONSUMER);
  EXPECT_EQ(image.soname(), "libelftest_consumer.so");
  EXPECT_THAT(image.needed(), ElementsAre("libelftest_provider.so.1"));  // no libc call
  EXPECT_EQ(image.runpath(), "/opt/elftest/lib:/opt/elftest/lib2");
  EXPECT_EQ(image.rpath(), "");
  EXPECT_EQ(image.build_id(), "");  // --build-id=none
  EXPECT_THAT(image.RequiredVersions("libelftest_provider.so.1"),
              UnorderedElementsAre("ELFTEST_1.0", "ELFTEST_2.0"));
  EXPECT_THAT(image.RequiredVersions("libfoo.so"), IsEmpty());
  EXPECT_TRUE(image.DefinesDynamicSymbol("elftest_consume"));
  EXPECT_FALSE(image.DefinesDynamicSymbol("elftest_one"));  // imported, not defined
  EXPECT_GE(image.undefined_dynamic_symbol_count(), 2u);
  EXPECT_THAT(image.verdef(), IsEmpty());
  ExpectMatchesReadelf(ELFTEST_CONSUMER);
}

TEST(ElfImageTest, ConsumerWithOldStyleRpath) {
  const ElfImage image = OpenOrDie(ELFTEST_CONSUMER_RPATH);
  EXPECT_EQ(image.rpath(), "/opt/elftest/old");
  EXPECT_EQ(image.runpath(), "");
  ExpectMatchesReadelf(ELFTEST_CONSUMER_RPATH);
}

TEST(ElfImageTest, ProgramHeaderFallbackGivesTheSameAnswers) {
  // provider: DT_GNU_HASH; consumer: DT_HASH only; libstdc++: a large real library.
  for (const std::string path : {ELFTEST_PROVIDER, ELFTEST_CONSUMER, kLibStdcxx}) {
    SCOPED_TRACE(path);
    if (!FileExists(path)) continue;
    const ElfImage full = OpenOrDie(path);
    const ElfImage stripped = WithoutSectionHeaders(full);
    EXPECT_THAT(stripped.sections(), IsEmpty());
    EXPECT_EQ(stripped.dynamic_source(), DynamicSource::kProgramHeaders);
    EXPECT_THAT(stripped.warnings(), IsEmpty());
    EXPECT_EQ(stripped.soname(), full.soname());
    EXPECT_EQ(stripped.needed(), full.needed());
    EXPECT_EQ(stripped.runpath(), full.runpath());
    EXPECT_EQ(stripped.build_id(), full.build_id());  // from PT_NOTE
    EXPECT_EQ(VerdefNames(stripped), VerdefNames(full));
    ASSERT_EQ(stripped.verneed().size(), full.verneed().size());
    for (size_t i = 0; i < full.verneed().size(); ++i) {
      EXPECT_EQ(stripped.verneed()[i].file, full.verneed()[i].file);
      EXPECT_EQ(stripped.verneed()[i].versions, full.verneed()[i].versions);
    }
    EXPECT_EQ(stripped.defined_dynamic_symbol_count(), full.defined_dynamic_symbol_count());
    EXPECT_EQ(stripped.undefined_dynamic_symbol_count(), full.undefined_dynamic_symbol_count());
  }
}

TEST(ElfImageTest, LibStdcxxOnDebian12) {
  if (!FileExists(kLibStdcxx)) GTEST_SKIP() << kLibStdcxx << " not present";
  const ElfImage image = OpenOrDie(kLibStdcxx);
  EXPECT_EQ(image.soname(), "libstdc++.so.6");
  EXPECT_THAT(image.needed(),
              ElementsAre("libm.so.6", "libc.so.6", "ld-linux-x86-64.so.2", "libgcc_s.so.1"));
  // GCC 12's libstdc++ (Debian 12) provides GLIBCXX_3.4.30 and CXXABI_1.3.13.
  EXPECT_TRUE(image.DefinesVersion("GLIBCXX_3.4.30"));
  EXPECT_TRUE(image.DefinesVersion("CXXABI_1.3.13"));
  EXPECT_TRUE(image.DefinesVersion("GLIBCXX_3.4"));
  EXPECT_FALSE(image.DefinesVersion("GLIBCXX_3.4.99"));
  EXPECT_EQ(image.verdef().front().name, "libstdc++.so.6");
  EXPECT_TRUE(image.verdef().front().is_base);
  EXPECT_THAT(image.RequiredVersions("libgcc_s.so.1"), ::testing::Contains("GCC_3.0"));
  EXPECT_THAT(image.RequiredVersions("libc.so.6"), ::testing::Contains("GLIBC_2.34"));
  EXPECT_TRUE(image.DefinesDynamicSymbol("_ZSt4cout"));
  EXPECT_EQ(image.build_id().size(), 40u);  // SHA-1
  ExpectMatchesReadelf(kLibStdcxx);
}

TEST(ElfImageTest, RealLibrariesMatchReadelf) {
  const std::string cuda = kCudaLib;
  for (const std::string path :
       {std::string(kLibC), cuda + "/libcudart.so.13", cuda + "/libcusparse.so.12",
        cuda + "/libcudnn_ops.so.9", cuda + "/libnccl.so.2", cuda + "/libcublasLt.so.13"}) {
    if (FileExists(path)) ExpectMatchesReadelf(path);
  }
}

TEST(ElfImageTest, CudartProvidesItsSonameAsAVersion) {
  const std::string path = std::string(kCudaLib) + "/libcudart.so.13";
  if (!FileExists(path)) GTEST_SKIP() << path << " not present";
  const ElfImage image = OpenOrDie(path);
  EXPECT_EQ(image.soname(), "libcudart.so.13");
  EXPECT_TRUE(image.DefinesVersion("libcudart.so.13"));
  EXPECT_TRUE(image.DefinesDynamicSymbol("cudaMalloc"));
  EXPECT_TRUE(image.DefinesDynamicSymbol("cudaLaunchKernel"));
}

TEST(ElfImageTest, Aarch64Library) {
  if (!FileExists(ELFTEST_AARCH64_SO)) GTEST_SKIP() << "clang/ld.lld not found at build time";
  const ElfImage image = OpenOrDie(ELFTEST_AARCH64_SO);
  EXPECT_EQ(image.machine(), ElfMachine::kAarch64);
  EXPECT_EQ(image.soname(), "libelftest_a64.so.3");
  EXPECT_EQ(image.build_id(), "feedface");
  EXPECT_THAT(VerdefNames(image), ElementsAre("libelftest_a64.so.3", "A64_1.0"));
  EXPECT_TRUE(image.DefinesDynamicSymbol("elftest_a64_answer"));
  EXPECT_EQ(image.defined_dynamic_symbol_count(), 1u);
}

TEST(ElfImageTest, SectionLookup) {
  const ElfImage image = OpenOrDie(ELFTEST_PROVIDER);
  const Section* dynsym = image.FindSection(".dynsym");
  ASSERT_NE(dynsym, nullptr);
  EXPECT_EQ(dynsym->type, 11u);  // SHT_DYNSYM
  EXPECT_EQ(dynsym->entsize, 24u);
  EXPECT_EQ(dynsym->data.size(), dynsym->size);
  const Section* bss = image.FindSection(".bss");
  if (bss != nullptr) EXPECT_TRUE(bss->data.empty());  // SHT_NOBITS has no file bytes
  EXPECT_EQ(image.FindSection(".nv_fatbin"), nullptr);
  EXPECT_EQ(image.FindSection(""), &image.sections()[0]);  // the null section
  EXPECT_FALSE(image.segments().empty());
}

absl::Status OpenPatched(size_t offset, std::vector<uint8_t> patch) {
  std::vector<uint8_t> bytes = ReadFile(ELFTEST_PROVIDER);
  std::copy(patch.begin(), patch.end(), bytes.begin() + offset);
  return ElfImage::FromBytes(bytes).status();
}

TEST(ElfImageTest, RejectsUnsupportedFiles) {
  EXPECT_THAT(std::string(OpenPatched(4, {1}).message()), HasSubstr("only 64-bit"));
  EXPECT_THAT(std::string(OpenPatched(5, {2}).message()), HasSubstr("only little-endian"));
  EXPECT_THAT(std::string(OpenPatched(18, {243, 0}).message()),
              HasSubstr("unsupported ELF machine 243 (RISC-V)"));
  EXPECT_THAT(std::string(OpenPatched(18, {190, 0}).message()), HasSubstr("NVIDIA CUDA"));
  EXPECT_THAT(std::string(OpenPatched(0, {'M', 'Z'}).message()), HasSubstr("bad magic"));
  EXPECT_THAT(std::string(ElfImage::FromBytes({}).status().message()), HasSubstr("too small"));
  const absl::Status missing = ElfImage::Open("/nonexistent/libnothing.so").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(ElfImage::Open("/tmp").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ElfImageTest, DamageBeyondTheHeaderIsAWarningNotAnError) {
  std::vector<uint8_t> bytes = ReadFile(ELFTEST_PROVIDER);
  // Point the section header table past the end of the file.
  for (int i = 0; i < 8; ++i) bytes[40 + i] = 0xff;
  absl::StatusOr<ElfImage> image = ElfImage::FromBytes(bytes);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_THAT(image->warnings(), ElementsAre(HasSubstr("section header table lies outside")));
  // The program headers still give the dynamic information.
  EXPECT_EQ(image->dynamic_source(), DynamicSource::kProgramHeaders);
  EXPECT_EQ(image->soname(), "libelftest_provider.so.1");
  EXPECT_TRUE(image->DefinesVersion("ELFTEST_2.0"));
}

}  // namespace
}  // namespace colabtrace::elf
