// Device code for the nvcc-built fatbin fixtures of elf_test.
__global__ void elftest_add(float* a, const float* b, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] += b[i];
}
extern "C" void elftest_launch(float* a, const float* b, int n) {
  elftest_add<<<(n + 255) / 256, 256>>>(a, b, n);
}
