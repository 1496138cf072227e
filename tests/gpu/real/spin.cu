// A kernel that never ends, as nvcc builds it (issue 28), for `colabtrace run --hang-timeout`.
// On stream s: fill (synchronised: done), then fill again and spin, a kernel that spins for
// about a minute (bounded, so that nothing outlives the check); cudaStreamSynchronize(s)
// waits for it. Expect proc.hang naming cudaStreamSynchronize on s and, newest first, the
// kernels still in flight there: spin(long long), fill(float*).
#include <cstdio>
#include <unistd.h>

__global__ void fill(float* x) { x[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f; }

__global__ void spin(long long cycles) {
  const long long t0 = clock64();
  while (clock64() - t0 < cycles) {
  }
}

int main() {
  float* x = nullptr;
  cudaStream_t s;
  cudaMalloc(&x, 4096 * sizeof(float));
  cudaStreamCreate(&s);
  fill<<<16, 256, 0, s>>>(x);
  cudaStreamSynchronize(s);
  fill<<<16, 256, 0, s>>>(x);
  spin<<<1, 1, 0, s>>>(120000000000LL);  // about 60 s at 1.98 GHz
  std::printf("blocked pid=%d stream=%p\n", static_cast<int>(getpid()), static_cast<void*>(s));
  std::fflush(stdout);
  const cudaError_t e = cudaStreamSynchronize(s);
  std::printf("synchronized %s\n", cudaGetErrorName(e));
  return 0;
}
