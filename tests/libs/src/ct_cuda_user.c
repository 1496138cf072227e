// A library that uses the CUDA runtime (DT_NEEDED libcudart.so.12), for RTLD_DEEPBIND.
int cudaRuntimeGetVersion(int* v);
const char* ct_cuda_user(void) {
  int v = 0;
  cudaRuntimeGetVersion(&v);
  return v == 12040 ? "runtime 12.4" : "other";
}
