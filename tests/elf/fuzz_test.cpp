// Robustness: truncated and randomly corrupted ELF files and fatbin blobs must give
// errors or partial results, never a crash or an out-of-bounds read. Run elf_test
// under -DCOLABTRACE_SANITIZE=ON (ASan + UBSan) to check the "never" part.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "elf/coverage.h"
#include "elf/elf_image.h"
#include "elf/fatbin.h"
#include "elf/library_family.h"
#include "test_util.h"

namespace colabtrace::elf {
namespace {

using namespace colabtrace::elf::testing;

bool Within(Bytes inner, Bytes outer) {
  return inner.empty() ||
         (inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size());
}

// Uses everything the image offers; checks every view stays inside the file.
void Exercise(const ElfImage& image) {
  for (const Section& s : image.sections()) ASSERT_TRUE(Within(s.data, image.bytes()));
  for (const VersionRequirement& r : image.verneed()) (void)image.RequiredVersions(r.file);
  (void)image.DefinesVersion("GLIBC_2.2.5");
  (void)image.DefinesDynamicSymbol("elftest_one");
  const FatbinListing listing = ListFatbinEntries(image);
  for (const FatbinEntry& e : listing.entries) {
    ASSERT_TRUE(Within(e.payload, image.bytes()));
    absl::StatusOr<std::string> code = ReadEntryPayload(e, 1 << 20);
    if (code.ok()) {
      (void)InspectCubin(*code);
      (void)InspectPtx(*code);
    }
  }
  (void)CanRunOn(listing.entries, GpuArch{90});
  (void)DetectCudaMajor(image);
  (void)DeviceCodeCudaRelease(listing);
  (void)FindUnregisteredFatbins(image);
}

// Flips 1-8 bytes; half of the time inside the first 4 KiB (headers, dynamic tables).
void Corrupt(std::vector<uint8_t>& bytes, std::mt19937& rng) {
  const int flips = 1 + static_cast<int>(rng() % 8);
  for (int i = 0; i < flips; ++i) {
    const size_t range = (rng() % 2 == 0) ? std::min<size_t>(bytes.size(), 4096) : bytes.size();
    const size_t at = rng() % range;
    switch (rng() % 3) {
      case 0: bytes[at] = static_cast<uint8_t>(rng()); break;
      case 1: bytes[at] = 0xff; break;
      default: bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
    }
  }
}

// Scales the random iterations: ELFTEST_FUZZ_SCALE=20 for a longer run under ASan.
int Scale() {
  const char* env = std::getenv("ELFTEST_FUZZ_SCALE");
  return env != nullptr && std::atoi(env) > 0 ? std::atoi(env) : 1;
}

// Small ELF files: the test libraries, the same with section headers removed (so the
// PT_DYNAMIC path is fuzzed too), and the aarch64 and nvcc fixtures when built.
std::vector<std::vector<uint8_t>> ElfCorpus() {
  std::vector<std::vector<uint8_t>> corpus;
  for (const std::string path : {std::string(ELFTEST_PROVIDER), std::string(ELFTEST_CONSUMER),
                                 std::string(ELFTEST_AARCH64_SO), std::string(ELFTEST_FATBIN_MIX),
                                 std::string(ELFTEST_FATBIN_RDC)}) {
    if (FileExists(path)) corpus.push_back(ReadFile(path));
  }
  for (size_t i = 0; i < 2; ++i) {
    std::vector<uint8_t> stripped = corpus[i];
    std::fill(stripped.begin() + 40, stripped.begin() + 48, 0);  // e_shoff
    corpus.push_back(std::move(stripped));
  }
  return corpus;
}

TEST(FuzzTest, TruncatedElfFiles) {
  for (const std::vector<uint8_t>& full : ElfCorpus()) {
    ASSERT_TRUE(ElfImage::FromBytes(full).ok());
    const size_t step = full.size() > 64 * 1024 ? 97 : 13;
    for (size_t len = 0; len < full.size(); len += (len < 512 ? 1 : step)) {
      absl::StatusOr<ElfImage> image = ElfImage::FromBytes(Bytes(full.data(), len));
      if (len < 64) ASSERT_FALSE(image.ok());
      if (image.ok()) Exercise(*image);
    }
  }
}

TEST(FuzzTest, CorruptedElfFiles) {
  std::mt19937 rng(20240611);
  std::vector<std::vector<uint8_t>> corpus = ElfCorpus();
  const std::string cudart = std::string(kCudaLib) + "/libcudart.so.13";  // 700 KB, real
  if (FileExists(cudart)) corpus.push_back(ReadFile(cudart));
  for (const std::vector<uint8_t>& full : corpus) {
    const int iterations = (full.size() > 256 * 1024 ? 200 : 1500) * Scale();
    for (int iter = 0; iter < iterations; ++iter) {
      std::vector<uint8_t> bytes = full;
      Corrupt(bytes, rng);
      absl::StatusOr<ElfImage> image = ElfImage::FromBytes(bytes);
      if (image.ok()) Exercise(*image);
    }
  }
}

// Overwrites every 4-byte-aligned header field in turn with hostile values.
TEST(FuzzTest, HostileHeaderFields) {
  const std::vector<uint8_t> full = ReadFile(ELFTEST_PROVIDER);
  const uint64_t shoff = LoadLE<uint64_t>(Bytes(full.data(), full.size()), 40);
  std::vector<size_t> offsets;
  for (size_t off = 16; off < 64; off += 2) offsets.push_back(off);
  for (size_t off = shoff; off + 8 <= full.size(); off += 4) offsets.push_back(off);
  for (const uint64_t value : {0xffffffffffffffffull, 0x7fffffffull, 0x80000000ull, 0ull}) {
    for (size_t off : offsets) {
      std::vector<uint8_t> bytes = full;
      for (size_t i = 0; i < 8 && off + i < bytes.size(); ++i) {
        bytes[off + i] = static_cast<uint8_t>(value >> (8 * i));
      }
      absl::StatusOr<ElfImage> image = ElfImage::FromBytes(bytes);
      if (image.ok()) Exercise(*image);
    }
  }
}

// A fatbin with every kind of entry: plain and zstd cubins, PTX, an identifier, a
// long header, two containers. Plus nvcc's .nv_fatbin when the fixture exists.
std::vector<std::vector<uint8_t>> FatbinCorpus() {
  const std::string ptx = ".version 9.0\n.target sm_90a\n.address_size 64\n";
  std::vector<uint8_t> blob = MakeContainer(
      {FakeEntry{.sm = 80, .payload = MakeCubin(8, 0x5005004, "-arch sm_80 ")},
       FakeEntry{.sm = 90, .flags = 0x100011, .payload = MakeCubin(8, 0x5005a04), .compress = true},
       FakeEntry{.kind = 1, .sm = 90, .flags = 0x100011, .version_major = 9, .version_minor = 0,
                 .payload = ptx, .compress = true, .header_size = 80}});
  const std::vector<uint8_t> second = MakeContainer(
      {FakeEntry{.sm = 75, .flags = 0x13, .payload = MakeCubin(7, 0x4b004b), .identifier = "a.cu"}});
  blob.insert(blob.end(), second.begin(), second.end());
  std::vector<std::vector<uint8_t>> corpus = {blob};
  if (FileExists(ELFTEST_FATBIN_MIX)) {
    absl::StatusOr<ElfImage> image = ElfImage::Open(ELFTEST_FATBIN_MIX);
    if (image.ok() && image->FindSection(".nv_fatbin") != nullptr) {
      const Bytes s = image->FindSection(".nv_fatbin")->data;
      corpus.emplace_back(s.begin(), s.end());
    }
  }
  return corpus;
}

void ExerciseFatbin(Bytes blob) {
  const FatbinListing listing = ParseFatbin(blob, "fuzz");
  for (const FatbinEntry& e : listing.entries) {
    ASSERT_TRUE(Within(e.payload, blob));
    absl::StatusOr<std::string> code = ReadEntryPayload(e, 1 << 20);
    if (code.ok()) {
      (void)InspectCubin(*code);
      (void)InspectPtx(*code);
    }
  }
  (void)SummarizeCoverage(listing.entries, GpuArch{86});
}

TEST(FuzzTest, TruncatedFatbinsGiveAPrefixOfTheEntries) {
  for (const std::vector<uint8_t>& full : FatbinCorpus()) {
    const FatbinListing all = ParseFatbin(Bytes(full.data(), full.size()));
    ASSERT_TRUE(all.ok());
    ASSERT_GT(all.entries.size(), 0u);
    for (size_t len = 0; len < full.size(); ++len) {
      const Bytes cut(full.data(), len);
      const FatbinListing part = ParseFatbin(cut);
      ASSERT_LE(part.entries.size(), all.entries.size());
      for (size_t i = 0; i < part.entries.size(); ++i) {
        ASSERT_EQ(part.entries[i].offset, all.entries[i].offset);
        ASSERT_EQ(part.entries[i].arch, all.entries[i].arch);
      }
      // Cut inside a container: reported. (Cuts at a container boundary are valid.)
      if (part.containers > 0 && part.entries.size() < all.entries.size() &&
          part.entries.size() > 0 &&
          part.entries.back().container == all.entries[part.entries.size()].container) {
        ASSERT_FALSE(part.ok()) << len;
      }
      ExerciseFatbin(cut);
    }
  }
}

TEST(FuzzTest, CorruptedFatbins) {
  std::mt19937 rng(7);
  for (const std::vector<uint8_t>& full : FatbinCorpus()) {
    for (int iter = 0; iter < 5000 * Scale(); ++iter) {
      std::vector<uint8_t> bytes = full;
      Corrupt(bytes, rng);
      ExerciseFatbin(Bytes(bytes.data(), bytes.size()));
    }
  }
}

}  // namespace
}  // namespace colabtrace::elf
