#include "gpu/gpu_api.h"

#include "colabtrace/format/gpu_live.h"
#include "colabtrace/format/records.h"
#include "gpu/cuda_errors.h"

namespace colabtrace::analyzer::gpu {

using format::GpuApi;

ApiClass ClassifyGpuApi(uint64_t code) {
  // The shim's own lists (format/gpu_live.h): it counts by them in the GPU live set.
  if (format::IsStreamOrderedAlloc(code)) return {MemKind::kStreamOrdered, ApiRole::kAlloc};
  if (format::IsHostPinnedAlloc(code)) return {MemKind::kHostPinned, ApiRole::kAlloc};
  switch (static_cast<GpuApi>(code)) {
    case GpuApi::kCudaMalloc:
    case GpuApi::kCudaMallocPitch:
    case GpuApi::kCuMemAlloc_v2:
    case GpuApi::kCuMemAllocPitch_v2:
      return {MemKind::kDevice, ApiRole::kAlloc};
    case GpuApi::kCudaMallocManaged:
    case GpuApi::kCuMemAllocManaged:
      return {MemKind::kManaged, ApiRole::kAlloc};
    case GpuApi::kCuMemCreate:
      return {MemKind::kVmm, ApiRole::kAlloc};
    case GpuApi::kCudaFree:
    case GpuApi::kCudaFreeAsync:
    case GpuApi::kCudaFreeAsync_ptsz:
    case GpuApi::kCuMemFree_v2:
    case GpuApi::kCuMemFreeAsync:
    case GpuApi::kCuMemFreeAsync_ptsz:
    case GpuApi::kCuMemRelease:
      return {MemKind::kNone, ApiRole::kFree};
    case GpuApi::kCudaFreeHost:
    case GpuApi::kCuMemFreeHost:
      return {MemKind::kHostPinned, ApiRole::kFree};
    default:
      return {};
  }
}

std::string GpuApiLabel(uint64_t api) {
  const char* name = format::GpuApiName(api);
  return name != nullptr ? std::string(name) : "api#" + std::to_string(api);
}

std::string_view MemKindName(MemKind k) {
  switch (k) {
    case MemKind::kDevice: return "device";
    case MemKind::kManaged: return "managed";
    case MemKind::kStreamOrdered: return "stream_ordered";
    case MemKind::kVmm: return "vmm";
    case MemKind::kHostPinned: return "host_pinned";
    case MemKind::kNone: return "none";
  }
  return "none";
}

namespace {

#define CT_NAME_CASE(code, name, description) \
  case code:                                  \
    return name;
std::string_view DriverErrorName(int64_t rc) {
  switch (rc) {
    CT_CU_ERRORS(CT_NAME_CASE)
    default:
      return "";
  }
}
std::string_view RuntimeErrorName(int64_t rc) {
  switch (rc) {
    CT_CUDART_ERRORS(CT_NAME_CASE)
    default:
      return "";
  }
}
#undef CT_NAME_CASE

}  // namespace

std::string_view GpuErrorName(int64_t rc, bool runtime) {
  // The layer's own name; a code only the other layer defines (the runtime's
  // cudaErrorInvalidConfiguration 9, the driver's CUDA_ERROR_CONTAINED-style codes the
  // runtime maps) takes that one: both enums share their numbers.
  const std::string_view own = runtime ? RuntimeErrorName(rc) : DriverErrorName(rc);
  if (!own.empty()) return own;
  return runtime ? DriverErrorName(rc) : RuntimeErrorName(rc);
}

}  // namespace colabtrace::analyzer::gpu
