// A CUDA runtime program for the driver/device tests (links the simulated libcudart.so.13;
// SIMCUDA_DRIVER_VERSION and SIMCUDA_CC set the driver version and the device). Each
// argument is a library to dlopen first.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    void* h = dlopen(argv[i], RTLD_LAZY);  // the sim runtime lacks __cudaGetKernel
    printf("open %s: %s\n", argv[i], h ? "ok" : dlerror());
  }
  void* p = NULL;
  const cudaError_t rc = cudaMalloc(&p, 1 << 20);
  printf("cudaMalloc: %d\n", (int)rc);
  if (rc == cudaSuccess) cudaFree(p);
  return 0;
}
