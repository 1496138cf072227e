#include "gpu/gpu_api.h"

#include "colabtrace/format/records.h"

namespace colabtrace::analyzer::gpu {

using format::GpuApi;

ApiClass ClassifyGpuApi(uint64_t code) {
  switch (static_cast<GpuApi>(code)) {
    case GpuApi::kCudaMalloc:
    case GpuApi::kCudaMallocPitch:
    case GpuApi::kCuMemAlloc_v2:
    case GpuApi::kCuMemAllocPitch_v2:
      return {MemKind::kDevice, ApiRole::kAlloc};
    case GpuApi::kCudaMallocManaged:
    case GpuApi::kCuMemAllocManaged:
      return {MemKind::kManaged, ApiRole::kAlloc};
    case GpuApi::kCudaMallocAsync:
    case GpuApi::kCudaMallocAsync_ptsz:
    case GpuApi::kCudaMallocFromPoolAsync:
    case GpuApi::kCudaMallocFromPoolAsync_ptsz:
    case GpuApi::kCuMemAllocAsync:
    case GpuApi::kCuMemAllocAsync_ptsz:
    case GpuApi::kCuMemAllocFromPoolAsync:
    case GpuApi::kCuMemAllocFromPoolAsync_ptsz:
      return {MemKind::kStreamOrdered, ApiRole::kAlloc};
    case GpuApi::kCuMemCreate:
      return {MemKind::kVmm, ApiRole::kAlloc};
    case GpuApi::kCudaMallocHost:
    case GpuApi::kCudaHostAlloc:
    case GpuApi::kCuMemAllocHost_v2:
    case GpuApi::kCuMemHostAlloc:
      return {MemKind::kHostPinned, ApiRole::kAlloc};
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

std::string_view GpuErrorName(int64_t rc, bool runtime) {
  // The codes a memory or launch report meets; both layers share the numbers for these.
  switch (rc) {
    case 0: return runtime ? "cudaSuccess" : "CUDA_SUCCESS";
    case 1: return runtime ? "cudaErrorInvalidValue" : "CUDA_ERROR_INVALID_VALUE";
    case 2: return runtime ? "cudaErrorMemoryAllocation" : "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return runtime ? "cudaErrorInitializationError" : "CUDA_ERROR_NOT_INITIALIZED";
    case 4: return runtime ? "cudaErrorCudartUnloading" : "CUDA_ERROR_DEINITIALIZED";
    case 34: return runtime ? "cudaErrorStubLibrary" : "CUDA_ERROR_STUB_LIBRARY";
    case 35: return runtime ? "cudaErrorInsufficientDriver" : "";
    case 100: return runtime ? "cudaErrorNoDevice" : "CUDA_ERROR_NO_DEVICE";
    case 101: return runtime ? "cudaErrorInvalidDevice" : "CUDA_ERROR_INVALID_DEVICE";
    case 9: return runtime ? "cudaErrorInvalidConfiguration" : "";
    case 98: return runtime ? "cudaErrorInvalidDeviceFunction" : "";
    case 200: return runtime ? "cudaErrorInvalidKernelImage" : "CUDA_ERROR_INVALID_IMAGE";
    case 201: return runtime ? "cudaErrorDeviceUninitialized" : "CUDA_ERROR_INVALID_CONTEXT";
    case 209: return runtime ? "cudaErrorNoKernelImageForDevice" : "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 218: return runtime ? "cudaErrorInvalidPtx" : "CUDA_ERROR_INVALID_PTX";
    case 222: return runtime ? "cudaErrorUnsupportedPtxVersion" : "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 400: return runtime ? "cudaErrorInvalidResourceHandle" : "CUDA_ERROR_INVALID_HANDLE";
    case 500: return runtime ? "cudaErrorSymbolNotFound" : "CUDA_ERROR_NOT_FOUND";
    case 700: return runtime ? "cudaErrorIllegalAddress" : "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 701: return runtime ? "cudaErrorLaunchOutOfResources" : "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
    case 702: return runtime ? "cudaErrorLaunchTimeout" : "CUDA_ERROR_LAUNCH_TIMEOUT";
    case 719: return runtime ? "cudaErrorLaunchFailure" : "CUDA_ERROR_LAUNCH_FAILED";
    case 720: return runtime ? "cudaErrorCooperativeLaunchTooLarge" : "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE";
    case 801: return runtime ? "cudaErrorNotSupported" : "CUDA_ERROR_NOT_SUPPORTED";
    case 999: return runtime ? "cudaErrorUnknown" : "CUDA_ERROR_UNKNOWN";
    default: return "";
  }
}

}  // namespace colabtrace::analyzer::gpu
