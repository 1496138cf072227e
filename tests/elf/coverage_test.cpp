#include "elf/coverage.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "elf/cuda_arch.h"
#include "test_util.h"

namespace colabtrace::elf {
namespace {

using ::testing::HasSubstr;

GpuArch Arch(std::string_view text) {
  absl::StatusOr<ArchSpec> spec = ParseArch(text);
  EXPECT_TRUE(spec.ok()) << text;
  return spec.ok() ? spec->arch : GpuArch{};
}

// Entries from nvcc-style names: "sm_90a" is a cubin, "compute_80" is PTX.
std::vector<FatbinEntry> Entries(std::initializer_list<std::string_view> names,
                                 size_t container = 0) {
  std::vector<FatbinEntry> out;
  for (std::string_view name : names) {
    const ArchSpec spec = ParseArch(name).value();
    FatbinEntry e;
    e.kind = spec.is_virtual ? FatbinKind::kPtx : FatbinKind::kCubin;
    e.arch = spec.arch;
    e.container = container;
    out.push_back(e);
  }
  return out;
}

TEST(CudaArchTest, ParseArch) {
  struct Case {
    std::string_view text;
    int sm;
    ArchVariant variant;
    bool is_virtual;
  };
  const Case cases[] = {
      {"sm_75", 75, ArchVariant::kNone, false},
      {"sm_90a", 90, ArchVariant::kArchSpecific, false},
      {"sm_100f", 100, ArchVariant::kFamily, false},
      {"sm_121", 121, ArchVariant::kNone, false},
      {"compute_80", 80, ArchVariant::kNone, true},
      {"compute_120f", 120, ArchVariant::kFamily, true},
      {"compute_90a", 90, ArchVariant::kArchSpecific, true},
      {"lto_90", 90, ArchVariant::kNone, true},
      {"86", 86, ArchVariant::kNone, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    absl::StatusOr<ArchSpec> spec = ParseArch(c.text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->arch.sm, c.sm);
    EXPECT_EQ(spec->arch.variant, c.variant);
    EXPECT_EQ(spec->is_virtual, c.is_virtual);
  }
  for (std::string_view bad : {"", "sm_", "sm_9", "sm_abc", "compute_90x", "sm_1000", "gfx90a",
                               "sm_90af", "sm_-80", "sm_ 80"}) {
    EXPECT_FALSE(ParseArch(bad).ok()) << bad;
  }
  EXPECT_EQ(FormatArch(GpuArch{90, ArchVariant::kArchSpecific}), "sm_90a");
  EXPECT_EQ(FormatArch(GpuArch{100, ArchVariant::kFamily}, true), "compute_100f");
  EXPECT_EQ(FormatArch(GpuArch{75}), "sm_75");
  EXPECT_EQ(Arch("sm_121").major(), 12);
  EXPECT_EQ(Arch("sm_121").minor(), 1);
}

TEST(CudaArchTest, CubinRules) {
  struct Case {
    std::string_view cubin;
    int target;
    bool runs;
  };
  const Case cases[] = {
      {"sm_80", 80, true},   {"sm_80", 86, true},    {"sm_80", 89, true},
      {"sm_86", 89, true},   {"sm_86", 80, false},   {"sm_80", 90, false},
      {"sm_90", 100, false}, {"sm_75", 70, false},   {"sm_120", 121, true},
      {"sm_121", 120, false}, {"sm_90a", 90, true},  {"sm_90a", 100, false},
      {"sm_100a", 103, false}, {"sm_100a", 100, true}, {"sm_100f", 100, true},
      {"sm_100f", 103, true}, {"sm_100f", 110, false}, {"sm_100f", 120, false},
      {"sm_103f", 100, false}, {"sm_120f", 121, true},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(CubinRunsOn(Arch(c.cubin), c.target), c.runs) << c.cubin << " on sm_" << c.target;
  }
}

TEST(CudaArchTest, PtxRules) {
  struct Case {
    std::string_view ptx;
    int target;
    bool jits;
  };
  const Case cases[] = {
      {"compute_80", 80, true},    {"compute_80", 90, true},     {"compute_80", 75, false},
      {"compute_90", 120, true},   {"compute_120", 100, false},  {"compute_75", 121, true},
      {"compute_90a", 90, true},   {"compute_90a", 100, false},  {"compute_100f", 103, true},
      {"compute_100f", 120, false}, {"compute_100f", 90, false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(PtxJitsTo(Arch(c.ptx), c.target), c.jits) << c.ptx << " on sm_" << c.target;
  }
}

TEST(CoverageTest, TableOfLibraries) {
  struct Case {
    std::vector<FatbinEntry> entries;
    std::string_view target;
    CoverageKind kind;
    std::string_view via;  // "sm_86" or "compute_80"; "" when not covered
  };
  const Case cases[] = {
      // Only sm_80+ cubins and PTX > 70: nothing for Volta.
      {Entries({"sm_80", "sm_86", "sm_90", "compute_80"}), "sm_70", CoverageKind::kNotCovered, ""},
      {Entries({"compute_80"}), "sm_90", CoverageKind::kPtxJit, "compute_80"},
      {Entries({"sm_90a"}), "sm_90", CoverageKind::kExactCubin, "sm_90a"},
      {Entries({"sm_90a"}), "sm_100", CoverageKind::kNotCovered, ""},
      {Entries({"sm_90a"}), "sm_89", CoverageKind::kNotCovered, ""},
      {Entries({"sm_100f"}), "sm_103", CoverageKind::kCompatibleCubin, "sm_100f"},
      {Entries({"sm_100f"}), "sm_100", CoverageKind::kExactCubin, "sm_100f"},
      {Entries({"sm_100f"}), "sm_120", CoverageKind::kNotCovered, ""},
      // The newest compatible minor wins; PTX only when no cubin fits.
      {Entries({"sm_80", "sm_86", "compute_90"}), "sm_89", CoverageKind::kCompatibleCubin, "sm_86"},
      {Entries({"sm_80", "sm_86", "compute_90"}), "sm_80", CoverageKind::kExactCubin, "sm_80"},
      {Entries({"sm_80", "sm_86", "compute_90"}), "sm_90", CoverageKind::kPtxJit, "compute_90"},
      {Entries({"sm_80", "sm_86", "compute_90"}), "sm_120", CoverageKind::kPtxJit, "compute_90"},
      {Entries({"sm_80", "compute_86"}), "sm_86", CoverageKind::kCompatibleCubin, "sm_80"},
      {Entries({"compute_75", "compute_90"}), "sm_100", CoverageKind::kPtxJit, "compute_90"},
      {Entries({"compute_90a"}), "sm_100", CoverageKind::kNotCovered, ""},
      {Entries({"sm_90a", "sm_90"}), "sm_90", CoverageKind::kExactCubin, "sm_90"},
      {Entries({}), "sm_90", CoverageKind::kNotCovered, ""},
  };
  for (const Case& c : cases) {
    const Coverage cov = CanRunOn(c.entries, Arch(c.target));
    SCOPED_TRACE(std::string(c.target) + ": " + cov.explanation);
    EXPECT_EQ(cov.kind, c.kind) << CoverageKindName(cov.kind);
    EXPECT_EQ(cov.covered(), c.kind != CoverageKind::kNotCovered);
    if (!c.via.empty()) {
      const ArchSpec via = ParseArch(c.via).value();
      EXPECT_EQ(cov.via, via.arch);
      EXPECT_EQ(via.is_virtual, c.kind == CoverageKind::kPtxJit);
    }
  }
}

TEST(CoverageTest, ExplanationsNameWhatIsThere) {
  const Coverage no = CanRunOn(Entries({"sm_80", "sm_90a", "compute_80"}), Arch("sm_70"));
  EXPECT_EQ(no.explanation,
            "nothing runs on sm_70: no cubin for sm_70 or an older minor of the same major "
            "(cubins: sm_80, sm_90a), no PTX <= compute_70 (PTX: compute_80)");
  EXPECT_EQ(CanRunOn(Entries({"compute_80"}), Arch("sm_90")).explanation,
            "compute_80 PTX is JIT-compiled for sm_90");
  EXPECT_EQ(CanRunOn(Entries({"sm_80"}), Arch("sm_86")).explanation,
            "sm_80 cubin is binary compatible with sm_86");
  // A GPU has no variant: "sm_90a" as a target means an sm_90 GPU.
  EXPECT_EQ(CanRunOn(Entries({"sm_90"}), Arch("sm_90a")).kind, CoverageKind::kExactCubin);
}

TEST(CoverageTest, OtherKindsAreIgnored) {
  std::vector<FatbinEntry> entries = Entries({"sm_80"});
  entries[0].kind = FatbinKind::kOther;
  EXPECT_FALSE(CanRunOn(entries, Arch("sm_80")).covered());
}

TEST(CoverageTest, SummaryPerContainer) {
  std::vector<FatbinEntry> entries;
  for (auto part : {Entries({"sm_80", "compute_80"}, 0), Entries({"sm_90a"}, 1),
                    Entries({"sm_75"}, 2), Entries({"sm_86"}, 3), Entries({"sm_89"}, 4)}) {
    entries.insert(entries.end(), part.begin(), part.end());
  }
  entries.back().kind = FatbinKind::kOther;  // container 4 holds no code
  const CoverageSummary s = SummarizeCoverage(entries, Arch("sm_90"));
  EXPECT_EQ(s.containers, 4u);
  EXPECT_EQ(s.ptx_jit, 1u);
  EXPECT_EQ(s.exact_cubin, 1u);
  EXPECT_EQ(s.compatible_cubin, 0u);
  EXPECT_EQ(s.not_covered, 2u);
  const CoverageSummary s86 = SummarizeCoverage(entries, Arch("sm_86"));
  EXPECT_EQ(s86.compatible_cubin, 1u);  // sm_80 in container 0
  EXPECT_EQ(s86.exact_cubin, 1u);       // container 3
  EXPECT_EQ(s86.not_covered, 2u);       // sm_90a, sm_75
}

TEST(CoverageTest, CublasLt13OnRealGpus) {
  const std::string path = "/usr/local/cuda/lib64/libcublasLt.so.13";
  if (!testing::FileExists(path)) GTEST_SKIP() << path << " not present";
  absl::StatusOr<ElfImage> image = ElfImage::Open(path);
  ASSERT_TRUE(image.ok());
  const FatbinListing listing = ListFatbinEntries(*image);
  // CUDA 13 dropped Volta: nothing in cuBLASLt 13 runs on sm_70.
  const Coverage v100 = CanRunOn(listing.entries, Arch("sm_70"));
  EXPECT_FALSE(v100.covered());
  EXPECT_THAT(v100.explanation, HasSubstr("PTX: compute_75, compute_120"));
  EXPECT_EQ(SummarizeCoverage(listing.entries, Arch("sm_70")).not_covered,
            SummarizeCoverage(listing.entries, Arch("sm_70")).containers);
  EXPECT_EQ(CanRunOn(listing.entries, Arch("sm_90")).kind, CoverageKind::kExactCubin);
  EXPECT_EQ(CanRunOn(listing.entries, Arch("sm_87")).kind, CoverageKind::kCompatibleCubin);
  EXPECT_EQ(CanRunOn(listing.entries, Arch("sm_87")).via, Arch("sm_86"));
  EXPECT_EQ(CanRunOn(listing.entries, Arch("sm_110")).kind, CoverageKind::kPtxJit);
  EXPECT_EQ(CanRunOn(listing.entries, Arch("sm_110")).via, Arch("sm_75"));  // compute_75
}

}  // namespace
}  // namespace colabtrace::elf
