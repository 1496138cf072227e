/* A stand-in for PyTorch's libc10_cuda.so: a caching allocator's raw segment calls. The
 * GPU analysis recognises PyTorch by this library's name and checks its allocator
 * settings (PYTORCH_CUDA_ALLOC_CONF) against the calls it actually made. */
#include <cuda_runtime_api.h>
#include <stddef.h>

__attribute__((visibility("default"))) int c10_cuda_raw_alloc(void **p, size_t n) {
  return (int)cudaMalloc(p, n);
}

__attribute__((visibility("default"))) int c10_cuda_raw_free(void *p) { return (int)cudaFree(p); }
