// A device fault (issue 23), for a real GPU: three kernels on two streams; the second,
// on stream s1, writes far out of bounds (cudaErrorIllegalAddress, 700, on real
// hardware). Every launch returns success; the fault surfaces at cudaStreamSynchronize
// of s1, and every later call fails with it (the context is corrupted).
// Expect: gpu.device-fault, error 700, surfaced at cudaStreamSynchronize, kernels on s1
// newest first: poke(float*, long), then fill(float*).
#include <cstdio>
__global__ void fill(float *x) { x[threadIdx.x] = 1.0f; }
__global__ void poke(float *x, long off) { x[off + threadIdx.x] = 2.0f; }
__global__ void other(float *x) { x[threadIdx.x] += 1.0f; }
int main(int argc, char **argv) {
  const bool clean = argc > 1;  // "clean": the same launches, in bounds
  float *x;
  cudaStream_t s0, s1;
  cudaMalloc(&x, 4096);
  cudaStreamCreate(&s0);
  cudaStreamCreate(&s1);
  fill<<<1, 32, 0, s1>>>(x);
  printf("fill %s\n", cudaGetErrorName(cudaGetLastError()));
  poke<<<1, 32, 0, s1>>>(x, clean ? 0L : (1L << 38));
  printf("poke %s\n", cudaGetErrorName(cudaGetLastError()));
  other<<<1, 32, 0, s0>>>(x);
  printf("other %s\n", cudaGetErrorName(cudaGetLastError()));
  printf("sync s1 %s\n", cudaGetErrorName(cudaStreamSynchronize(s1)));
  void *y = nullptr;
  printf("malloc after %s\n", cudaGetErrorName(cudaMalloc(&y, 4096)));
  return 0;
}
