/* Pure-C helpers for scenario programs that run against the simulated CUDA libraries.
 *
 *   int main(int argc, char **argv) {
 *     static const simcuda_scenario list[] = {{"fragmentation", fragmentation}, ...};
 *     return simcuda_run(argc, argv, list, sizeof list / sizeof *list);
 *   }
 *   static void fragmentation(void) {
 *     simcuda_env("SIMCUDA_MEM_BYTES", "4608M", "SIMCUDA_CONTEXT_BYTES", "0", (const char *)NULL);
 *     SIM_CHECK_EQ(cuInit(0), CUDA_SUCCESS);
 *     ...
 *   }
 *
 * `prog NAME` runs one scenario (exit 0 = pass, 1 = a check failed, 77 = skipped), `prog --list`
 * prints the names. The simulated driver reads SIMCUDA_* once, at its first cuInit or
 * cuGetProcAddress, so simcuda_env() must run before any CUDA call. LD_LIBRARY_PATH is read by the
 * loader at process start: set it (to SIMCUDA_DIR) in the parent that spawns the program.
 */
#ifndef SIMCUDA_TEST_H
#define SIMCUDA_TEST_H

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIMCUDA_EXIT_SKIP 77

/* What nvcc's host code declares to register a module's kernels with the runtime (the
 * fatbin wrapper and the private registration entry points), for test programs that
 * register kernels as nvcc-built code does. */
struct simcuda_fatbin_wrapper {
  int magic, version;
  const void *data;
  void *filename_or_fatbins;
};
extern void **__cudaRegisterFatBinary(void *wrapper);
extern void __cudaRegisterFatBinaryEnd(void **handle);
extern void __cudaRegisterFunction(void **handle, const char *hostFun, char *deviceFun,
                                   const char *deviceName, int thread_limit, void *tid, void *bid,
                                   void *bDim, void *gDim, int *wSize);

/* A host stub as nvcc writes one: `cudaError_t name(float *x, cudaStream_t s)` launches the
 * kernel of its own name with the including file's kGrid and kBlock on stream s. */
#define SIMCUDA_STREAM_STUB(name)                                            \
  __attribute__((noinline)) cudaError_t name(float *x, cudaStream_t s) {    \
    void *args[] = {&x};                                                      \
    return cudaLaunchKernel((const void *)name, kGrid, kBlock, args, 0, s);   \
  }

#define SIM_CHECK(cond)                                                               \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);        \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

/* Compares as unsigned 64-bit integers (codes, sizes, addresses) and prints both values. */
#define SIM_CHECK_EQ(actual, expected)                                                        \
  do {                                                                                        \
    unsigned long long a_ = (unsigned long long)(actual), e_ = (unsigned long long)(expected); \
    if (a_ != e_) {                                                                           \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s == %s\n  actual:   %llu (0x%llx)\n"        \
              "  expected: %llu (0x%llx)\n", __FILE__, __LINE__, #actual, #expected, a_, a_, e_, e_); \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

#define SIM_SKIP(why)                           \
  do {                                          \
    fprintf(stderr, "SKIP: %s\n", why);         \
    exit(SIMCUDA_EXIT_SKIP);                    \
  } while (0)

/* Clears every SIMCUDA_* variable, then sets the given NAME, VALUE pairs (NULL-terminated). */
static inline void simcuda_env(const char *name, ...) {
  extern char **environ;
  for (int again = 1; again;) {
    again = 0;
    for (char **e = environ; e && *e; e++)
      if (strncmp(*e, "SIMCUDA_", 8) == 0) {
        char key[256];
        size_t n = strcspn(*e, "=");
        snprintf(key, sizeof key, "%.*s", (int)(n < 255 ? n : 255), *e);
        unsetenv(key);
        again = 1;
        break;
      }
  }
  va_list ap;
  va_start(ap, name);
  for (const char *k = name; k; k = va_arg(ap, const char *)) {
    const char *v = va_arg(ap, const char *);
    setenv(k, v, 1);
  }
  va_end(ap);
}

/* A sim-only export of the simulated libcuda.so.1 (simcuda_debug_*), wherever it was loaded from
 * (linked, or dlopen()ed RTLD_LOCAL by a runtime). NULL if no simulated driver is loaded. */
static inline void *simcuda_debug_sym(const char *name) {
  void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  void *p = h ? dlsym(h, name) : NULL;
  if (h) dlclose(h);
  return p;
}
static inline unsigned long long simcuda_proc_lookups(void) {
  unsigned long long (*f)(void) = (unsigned long long (*)(void))simcuda_debug_sym("simcuda_debug_proc_lookups");
  return f ? f() : 0;
}
static inline unsigned long long simcuda_largest_free(int dev) {
  unsigned long long (*f)(int) = (unsigned long long (*)(int))simcuda_debug_sym("simcuda_debug_largest_free");
  return f ? f(dev) : 0;
}

typedef struct { const char *name; void (*fn)(void); } simcuda_scenario;

static inline int simcuda_run(int argc, char **argv, const simcuda_scenario *list, size_t n) {
  if (argc == 2 && strcmp(argv[1], "--list") == 0) {
    for (size_t i = 0; i < n; i++) printf("%s\n", list[i].name);
    return 0;
  }
  for (size_t i = 0; argc == 2 && i < n; i++)
    if (strcmp(argv[1], list[i].name) == 0) {
      list[i].fn();
      return 0;
    }
  fprintf(stderr, "usage: %s --list | SCENARIO\n", argv[0]);
  return 2;
}

#ifndef SIM_GiB
#define SIM_GiB (1024ull * 1024ull * 1024ull)
#define SIM_MiB (1024ull * 1024ull)
#endif

#endif
