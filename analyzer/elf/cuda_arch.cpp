#include "elf/cuda_arch.h"

#include "absl/status/status.h"
#include "elf/text.h"
#include "fmt/format.h"

namespace colabtrace::elf {

absl::StatusOr<ArchSpec> ParseArch(std::string_view text) {
  ArchSpec spec;
  std::string_view rest = text;
  if (ConsumePrefix(&rest, "sm_")) {
  } else if (ConsumePrefix(&rest, "compute_") || ConsumePrefix(&rest, "lto_")) {
    spec.is_virtual = true;
  }
  if (ConsumeSuffix(&rest, "a")) {
    spec.arch.variant = ArchVariant::kArchSpecific;
  } else if (ConsumeSuffix(&rest, "f")) {
    spec.arch.variant = ArchVariant::kFamily;
  }
  const std::optional<int> sm = ParseInt(rest);
  if (!sm || *sm < 10 || *sm > 999) {
    return absl::InvalidArgumentError(fmt::format("not a CUDA architecture: '{}'", text));
  }
  spec.arch.sm = *sm;
  return spec;
}

std::string FormatArch(GpuArch arch, bool is_virtual) {
  std::string out = fmt::format("{}{}", is_virtual ? "compute_" : "sm_", arch.sm);
  if (arch.variant == ArchVariant::kArchSpecific) out += 'a';
  if (arch.variant == ArchVariant::kFamily) out += 'f';
  return out;
}

bool CubinRunsOn(GpuArch cubin, int target_sm) {
  const GpuArch target{target_sm};
  if (cubin.variant == ArchVariant::kArchSpecific) return cubin.sm == target_sm;
  // Plain and family cubins: same major, equal or newer minor.
  return cubin.major() == target.major() && cubin.minor() <= target.minor();
}

bool PtxJitsTo(GpuArch ptx, int target_sm) {
  switch (ptx.variant) {
    case ArchVariant::kArchSpecific: return ptx.sm == target_sm;
    case ArchVariant::kFamily: return CubinRunsOn(ptx, target_sm);
    case ArchVariant::kNone: return ptx.sm <= target_sm;
  }
  return false;
}

}  // namespace colabtrace::elf
