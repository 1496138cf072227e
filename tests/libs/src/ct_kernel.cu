// Device code for the fatbin tests: built for sm_80 only (a cubin, no PTX).
__global__ void ct_scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
extern "C" int ct_kernel_launch(float* x, int n) {
  ct_scale<<<(n + 255) / 256, 256>>>(x, 2.0f, n);
  return 0;
}
