// Kernels and launches as nvcc really compiles them (its host stubs call __cudaGetKernel and
// __cudaLaunchKernel), for tests/gpu/test_gpu_nvcc.py. Built only where nvcc exists, for
// sm_80 code only (-gencode arch=compute_80,code=sm_80), twice: against the shared runtime
// (-cudart shared) and linked statically (nvcc's default, with the simulated runtime's
// archive standing in for libcudart_static.a). Run against the simulated CUDA libraries.
//
//   no_image     5 launches of scale(float*) and 3 of axpy<float>, each failing with
//                cudaErrorNoKernelImageForDevice under SIMCUDA_CC=9.0 (sm_80 code does not
//                run on sm_90), as the H200 corpus run kern_wrong did
//   ok           the same launches succeed (SIMCUDA_CC=8.0)
//   fault        fine and oob_write on stream s1, fine on s2, then s1 is synchronised:
//                cudaErrorIllegalAddress under SIMCUDA_FAULT_KERNEL=_Z9oob_writePfl (an
//                out-of-bounds write on a real GPU), and the next cudaMalloc fails with it
//   fault_abort  the same, then abort()
#include <cstdio>
#include <cstdlib>
#include <cstring>

__global__ void scale(float *x) { x[threadIdx.x] *= 2; }

template <typename T>
__global__ void axpy(T a, const T *x, T *y) {
  y[threadIdx.x] += a * x[threadIdx.x];
}

__global__ void fine(float *x) { x[threadIdx.x] += 1.0f; }

// Writes far past the end of x.
__global__ void oob_write(float *x, long offset) { x[offset + threadIdx.x] = 1.0f; }

#define CHECK(call, want)                                                                \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    if (e_ != (want)) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s = %s, expected %s\n", __FILE__, __LINE__, #call,    \
                   cudaGetErrorName(e_), cudaGetErrorName(want));                        \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

static void launches(cudaError_t want) {
  float *x = nullptr, *y = nullptr;
  CHECK(cudaMalloc(&x, 4096), cudaSuccess);
  CHECK(cudaMalloc(&y, 4096), cudaSuccess);
  for (int i = 0; i < 5; i++) {
    scale<<<1, 32>>>(x);
    CHECK(cudaGetLastError(), want);
  }
  for (int i = 0; i < 3; i++) {
    axpy<float><<<2, 64>>>(2.0f, x, y);
    CHECK(cudaGetLastError(), want);
  }
  CHECK(cudaDeviceSynchronize(), cudaSuccess);
}

static void fault(bool then_abort) {
  float *x = nullptr;
  CHECK(cudaMalloc(&x, 4096), cudaSuccess);
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreate(&s1), cudaSuccess);
  CHECK(cudaStreamCreate(&s2), cudaSuccess);
  fine<<<1, 32, 0, s1>>>(x);
  CHECK(cudaGetLastError(), cudaSuccess);
  oob_write<<<1, 32, 0, s1>>>(x, 1L << 36);
  CHECK(cudaGetLastError(), cudaSuccess);  // the launch itself succeeds, as on a real GPU
  fine<<<4, 32, 0, s2>>>(x);
  CHECK(cudaGetLastError(), cudaSuccess);
  CHECK(cudaStreamSynchronize(s1), cudaErrorIllegalAddress);
  if (then_abort) std::abort();
  float *more = nullptr;
  CHECK(cudaMalloc(&more, 4096), cudaErrorIllegalAddress);
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "";
  if (std::strcmp(what, "no_image") == 0) {
    launches(cudaErrorNoKernelImageForDevice);
  } else if (std::strcmp(what, "ok") == 0) {
    launches(cudaSuccess);
  } else if (std::strcmp(what, "fault") == 0) {
    fault(false);
  } else if (std::strcmp(what, "fault_abort") == 0) {
    fault(true);
  } else {
    std::fprintf(stderr, "usage: %s no_image|ok|fault|fault_abort\n", argv[0]);
    return 2;
  }
  return 0;
}
