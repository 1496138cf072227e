// A stand-in for libcudart.so.12 (soname libcudart.so.12, version node libcudart.so.12)
// so that a test can load CUDA 12 and CUDA 13 runtimes into one process without CUDA 12.
int cudaRuntimeGetVersion(int* v) {
  *v = 12040;
  return 0;
}
int cudaGetDeviceCount(int* n) {
  *n = 0;
  return 100;
}
