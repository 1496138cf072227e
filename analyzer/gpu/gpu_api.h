// What each GPU API id (format::GpuApi) means for memory accounting.
//
// Device memory and pinned host memory are kept apart. Device memory comes in four
// kinds: plain segments (cudaMalloc, cudaMallocPitch, cuMemAlloc_v2, cuMemAllocPitch_v2),
// managed memory (cudaMallocManaged, cuMemAllocManaged), stream-ordered allocations
// from a memory pool (cudaMallocAsync, cudaMallocFromPoolAsync and their driver forms)
// and VMM physical memory (cuMemCreate, what PyTorch's expandable segments map into one
// reserved address range). The frees name no kind: a free takes the kind of the
// allocation at its address.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace colabtrace::analyzer::gpu {

enum class MemKind : uint8_t { kDevice, kManaged, kStreamOrdered, kVmm, kHostPinned, kNone };
enum class ApiRole : uint8_t { kAlloc, kFree, kOther };

struct ApiClass {
  MemKind kind = MemKind::kNone;
  ApiRole role = ApiRole::kOther;
};

ApiClass ClassifyGpuApi(uint64_t api);

// "cudaMalloc", or "api#N" for a code this analyzer does not know.
std::string GpuApiLabel(uint64_t api);

// JSON names: "device", "managed", "stream_ordered", "vmm", "host_pinned".
std::string_view MemKindName(MemKind k);

inline bool IsDeviceMemory(MemKind k) { return k != MemKind::kHostPinned && k != MemKind::kNone; }

// Kinds whose allocations are segments in the device's address space, from the driver's
// point of view (stream-ordered allocations live inside pool chunks the shim does not
// see; VMM memory is placed by cuMemMap).
inline bool IsSegmentKind(MemKind k) { return k == MemKind::kDevice || k == MemKind::kManaged; }

// "Out of memory" at either layer (cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY).
inline bool IsOutOfMemory(int64_t rc) { return rc == 2; }

// The name of a CUDA runtime or driver error code ("cudaErrorMemoryAllocation",
// "CUDA_ERROR_ASSERT"): every code of CUDA 13 (gpu/cuda_errors.h), the other layer's name
// when only that one defines the number; "" for a number CUDA does not define.
std::string_view GpuErrorName(int64_t rc, bool runtime);

}  // namespace colabtrace::analyzer::gpu
