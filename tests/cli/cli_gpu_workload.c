// A deterministic GPU-memory workload for the CLI's end-to-end tests, run against the
// simulated CUDA runtime (tests/simcuda; put ${SIMCUDA_DIR} first in LD_LIBRARY_PATH):
//   --allocs N --size BYTES   N cudaMalloc calls of BYTES each (use multiples of 2 MiB)
//   --leak L                  free all but the last L of them
//   --fail F                  F cudaMalloc calls larger than the device (they fail)
// All N allocations are live at once before the frees, so the peak is N * BYTES.
// Exits 0 when every call did what was asked, 3 otherwise.
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int Fail(const char* what, int rc) {
  fprintf(stderr, "cli_gpu_workload: %s (rc %d)\n", what, rc);
  return 3;
}

int main(int argc, char** argv) {
  long allocs = 0, leak = 0, fails = 0;
  size_t size = 2u << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--allocs") == 0) allocs = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--size") == 0) size = (size_t)atoll(argv[i + 1]);
    else if (strcmp(argv[i], "--leak") == 0) leak = atol(argv[i + 1]);
    else if (strcmp(argv[i], "--fail") == 0) fails = atol(argv[i + 1]);
    else return Fail("unknown option", 0);
  }
  if (allocs < 0 || leak < 0 || leak > allocs || fails < 0) return Fail("bad counts", 0);
  void** ptrs = calloc((size_t)allocs + 1, sizeof(void*));
  if (ptrs == NULL) return Fail("out of memory", 0);
  for (long i = 0; i < allocs; ++i) {
    const cudaError_t rc = cudaMalloc(&ptrs[i], size);
    if (rc != cudaSuccess) return Fail("cudaMalloc failed", (int)rc);
  }
  for (long i = 0; i < fails; ++i) {
    void* p = NULL;
    const cudaError_t rc = cudaMalloc(&p, (size_t)1 << 40);  // 1 TiB: more than the device
    if (rc != cudaErrorMemoryAllocation) return Fail("the oversized cudaMalloc did not fail", (int)rc);
  }
  for (long i = 0; i < allocs - leak; ++i) {
    const cudaError_t rc = cudaFree(ptrs[i]);
    if (rc != cudaSuccess) return Fail("cudaFree failed", (int)rc);
  }
  free(ptrs);
  return 0;
}
