// CUDA GPU architectures and the rules that decide which device code runs on which GPU.
//
// An architecture is an SM number (75, 80, 86, 90, 100, 103, 120, ...: major * 10 +
// minor) plus a variant: none, 'a' (arch-specific, sm_90a: uses features only that
// exact GPU has) or 'f' (family-specific, sm_100f: features shared by a family).
//
// The rules (CUDA programming guide, "binary compatibility"), as pure functions:
//   - a cubin for sm_XY runs on a GPU with the same major X and a minor >= Y
//     (sm_80 runs on sm_86 and sm_89; sm_86 does not run on sm_80; sm_90 not on sm_100);
//   - an 'a' cubin runs only on its exact GPU (sm_90a: sm_90 only);
//   - an 'f' cubin runs within its family: same major, minor >= Y (sm_100f: sm_100 and
//     sm_103, not sm_110 or sm_120);
//   - PTX for compute_XY is JIT-compiled by the driver for any GPU with SM >= XY; 'a' and
//     'f' PTX obey the same restriction as their cubins.
// A GPU itself has no variant: a target written "sm_90a" means an sm_90 GPU.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace colabtrace::elf {

enum class ArchVariant { kNone, kArchSpecific /* 'a' */, kFamily /* 'f' */ };

struct GpuArch {
  int sm = 0;  // major * 10 + minor, e.g. 75, 90, 100, 121
  ArchVariant variant = ArchVariant::kNone;

  int major() const { return sm / 10; }
  int minor() const { return sm % 10; }
  friend bool operator==(const GpuArch&, const GpuArch&) = default;
};

// An architecture as written on an nvcc command line: "sm_90a" (real) or "compute_80"
// (virtual, i.e. PTX).
struct ArchSpec {
  GpuArch arch;
  bool is_virtual = false;  // compute_XX
};

// Parses "sm_75", "sm_90a", "sm_100f", "compute_80", "compute_120f", "lto_90" (as
// virtual), or a bare "86". Fails on anything else, including SM numbers outside 10..999.
absl::StatusOr<ArchSpec> ParseArch(std::string_view text);

// Formats as "sm_90a" or, when is_virtual, "compute_90a".
std::string FormatArch(GpuArch arch, bool is_virtual = false);

// True when a cubin compiled for `cubin` runs on a GPU of SM `target_sm`.
bool CubinRunsOn(GpuArch cubin, int target_sm);

// True when PTX compiled for `ptx` can be JIT-compiled for a GPU of SM `target_sm`.
bool PtxJitsTo(GpuArch ptx, int target_sm);

}  // namespace colabtrace::elf
