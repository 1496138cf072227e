/* Runs the REAL libcudart.so.13 (path in argv[1]) against whatever libcuda.so.1 the loader finds
 * (the simulated one when SIMCUDA_DIR leads LD_LIBRARY_PATH) and prints what each call returns as
 * "key=value" lines. With SIMCUDA_LOG_FILE set, the simulated driver logs every
 * cuGetProcAddress/cuGetExportTable request the real runtime makes. */
#include <dlfcn.h>
#include <stdio.h>
#include <stddef.h>

typedef int (*fn_int_p)(int *);
typedef int (*fn_malloc)(void **, size_t);
typedef int (*fn_free)(void *);
typedef int (*fn_meminfo)(size_t *, size_t *);
typedef int (*fn_void)(void);
typedef const char *(*fn_name)(int);

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s /path/to/libcudart.so.13\n", argv[0]);
    return 2;
  }
  void *rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!rt) {
    printf("dlopen_error=%s\n", dlerror());
    return 77;
  }
#define SYM(type, name) type name = (type)dlsym(rt, #name)
  SYM(fn_int_p, cudaRuntimeGetVersion);
  SYM(fn_int_p, cudaDriverGetVersion);
  SYM(fn_int_p, cudaGetDeviceCount);
  SYM(fn_malloc, cudaMalloc);
  SYM(fn_free, cudaFree);
  SYM(fn_meminfo, cudaMemGetInfo);
  SYM(fn_void, cudaGetLastError);
  SYM(fn_name, cudaGetErrorName);
  int v = -1, n = -1, e;
  e = cudaRuntimeGetVersion(&v);
  printf("cudaRuntimeGetVersion=%d value=%d\n", e, v);
  v = -1;
  e = cudaDriverGetVersion(&v);
  printf("cudaDriverGetVersion=%d value=%d\n", e, v);
  e = cudaGetDeviceCount(&n);
  printf("cudaGetDeviceCount=%d (%s) count=%d\n", e, cudaGetErrorName(e), n);
  void *p = NULL;
  e = cudaMalloc(&p, 1 << 20);
  printf("cudaMalloc=%d (%s) ptr=%p\n", e, cudaGetErrorName(e), p);
  size_t f = 0, t = 0;
  e = cudaMemGetInfo(&f, &t);
  printf("cudaMemGetInfo=%d (%s) free=%zu total=%zu\n", e, cudaGetErrorName(e), f, t);
  e = cudaFree(p);
  printf("cudaFree=%d (%s)\n", e, cudaGetErrorName(e));
  e = cudaGetLastError();
  printf("cudaGetLastError=%d (%s)\n", e, cudaGetErrorName(e));
  printf("libcuda_loaded=%d\n", dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD) != NULL);
  return 0;
}
