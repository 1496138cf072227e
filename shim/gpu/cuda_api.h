// The CUDA declarations the GPU module is typed from (headers only; the shim never links
// or loads a CUDA library). Only compiled when CMake found the toolkit's headers
// (COLABTRACE_HAVE_CUDA_HEADERS).
//
// cuda.h maps base names to their newest variant (#define cuGetProcAddress
// cuGetProcAddress_v2, cuMemAlloc -> cuMemAlloc_v2, ...). The shim defines every variant
// under its real exported name, so it drops the mappings it would collide with and
// declares the variants the public headers leave out (per-thread-stream _ptsz entry
// points, cuGetProcAddress v1).
#pragma once

#if defined(COLABTRACE_HAVE_CUDA_HEADERS)

#include <cuda.h>
#include <cuda_runtime_api.h>

#undef cuGetProcAddress

extern "C" {
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion,
                                  cuuint64_t flags);
CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                              CUmemoryPool pool, CUstream hStream);
cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size,
                                                   cudaMemPool_t memPool, cudaStream_t stream);
}

#endif  // COLABTRACE_HAVE_CUDA_HEADERS
