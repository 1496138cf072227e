// Whether a library's device code can run on a given GPU, by the rules in cuda_arch.h.
//
// CanRunOn() answers for a set of fatbin entries taken together ("does anything in
// this library run on sm_70?"), preferring, like the CUDA driver, a cubin built for
// exactly that GPU, then a compatible cubin (newest minor first), then PTX to JIT
// (newest first). Kernels live in containers (one per translation unit), and a kernel
// can only use images from its own container, so SummarizeCoverage() also counts the
// containers that have nothing for the GPU.
#pragma once

#include <span>
#include <string>

#include "elf/cuda_arch.h"
#include "elf/fatbin.h"

namespace colabtrace::elf {

enum class CoverageKind { kNotCovered, kExactCubin, kCompatibleCubin, kPtxJit };

struct Coverage {
  CoverageKind kind = CoverageKind::kNotCovered;
  // The image that would be used: a cubin arch or a PTX arch (see kind); unset when
  // not covered.
  GpuArch via;
  // One line for a report: how it is covered, or why not, listing what is there.
  std::string explanation;

  bool covered() const { return kind != CoverageKind::kNotCovered; }
};

// How (or whether) any of `entries` runs on a GPU of architecture `target` (its
// variant is ignored: a GPU has none). Entries of kind kOther are ignored.
Coverage CanRunOn(std::span<const FatbinEntry> entries, GpuArch target);

struct CoverageSummary {
  size_t containers = 0;        // containers with at least one cubin or PTX entry
  size_t exact_cubin = 0;       // containers whose best choice is each kind
  size_t compatible_cubin = 0;
  size_t ptx_jit = 0;
  size_t not_covered = 0;
};

// Applies CanRunOn() to each container of `entries` (runs of equal
// FatbinEntry::container, as a listing produces them).
CoverageSummary SummarizeCoverage(std::span<const FatbinEntry> entries, GpuArch target);

// "exact cubin" / "compatible cubin" / "PTX JIT" / "not covered".
std::string_view CoverageKindName(CoverageKind kind);

}  // namespace colabtrace::elf
