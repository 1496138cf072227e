/* Simulated CUDA driver, part 3: modules, libraries and kernel launches. Nothing executes; loads
 * are checked against the device's compute capability. Accepted images (see README.md):
 *
 *   "SIMCUBIN [sm_XY ...] [compute_XY ...] [fn=NAME ...] [error=N] [launch_error=N]"
 *       NUL-terminated text. Without arch tokens the image fits every device. error=N makes the
 *       load return N (e.g. 209, 218, 222); launch_error=N makes every launch of its functions
 *       return N. Without fn= tokens every function name resolves.
 *   a CUDA ELF cubin (e_machine EM_CUDA): fits if same major and arch minor <= device minor.
 *   a fatbin (magic 0xBA55ED50): fits if an ELF entry fits as above or a PTX entry's arch <= cc.
 *   PTX text (".version" ... ".target sm_XY"): ISA > 9.0 -> CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
 *       target above the device (or missing) -> CUDA_ERROR_INVALID_PTX.
 *   anything else -> CUDA_ERROR_INVALID_IMAGE; no fitting code -> CUDA_ERROR_NO_BINARY_FOR_GPU.
 */
#include "sim_driver_internal.h" /* first: defines _GNU_SOURCE */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


struct CUmod_st {
  struct CUctx_st *ctx; /* NULL for libraries (context-independent) */
  int launch_error, any_name, ctx_independent;
  CUresult code_error; /* libraries: why the image has no code for the device (cuLibraryGetKernel's) */
  uint32_t id; /* the module id CUPTI's RESOURCE callbacks carry */
  unsigned char *img; /* copy of the image, searched for function names */
  size_t len;
  struct CUfunc_st *funcs;
  struct CUmod_st *next;
};
struct CUlib_st { struct CUmod_st m; };
struct CUfunc_st { struct CUmod_st *mod; struct CUfunc_st *next; char name[]; };

static struct CUmod_st *g_mods;

static uint16_t rd16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* SASS for arch (e.g. 86) runs on same-major devices of >= minor; PTX JITs on any cc >= arch. */
static int sass_fits(int arch, int cc) { return arch / 10 == cc / 10 && arch % 10 <= cc % 10; }

static int elf_arch(const unsigned char *e) { /* ABI v8+ (CUDA 13) moved the SM to bits 8..15 */
  uint32_t flags = rd32(e + 0x30);
  return (int)(e[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff);
}
static size_t elf_len(const unsigned char *e) {
  uint64_t sh = rd64(e + 0x28) + (uint64_t)rd16(e + 0x3a) * rd16(e + 0x3c);
  uint64_t ph = rd64(e + 0x20) + (uint64_t)rd16(e + 0x36) * rd16(e + 0x38);
  return (size_t)(sh > ph ? sh : ph);
}

static CUresult check_simcubin(const char *s, int cc, struct CUmod_st *m) {
  int arch_tokens = 0, fits = 0, forced = 0;
  m->any_name = strstr(s, "fn=") == NULL;
  for (const char *p = s + 8; *p;) {
    while (*p == ' ' || *p == '\n' || *p == '\t' || *p == ',') p++;
    int v;
    if (sscanf(p, "sm_%d", &v) == 1) arch_tokens = 1, fits |= sass_fits(v, cc);
    else if (sscanf(p, "compute_%d", &v) == 1) arch_tokens = 1, fits |= v <= cc;
    else if (sscanf(p, "launch_error=%d", &v) == 1) m->launch_error = v;
    else if (sscanf(p, "error=%d", &v) == 1) forced = v;
    p += strcspn(p, " \n\t,");
  }
  if (forced) return (CUresult)forced;
  return !arch_tokens || fits ? CUDA_SUCCESS : CUDA_ERROR_NO_BINARY_FOR_GPU;
}

static CUresult check_ptx(const char *s, int cc) {
  const char *v = strstr(s, ".version"), *t = strstr(s, ".target");
  int major = 0, minor = 0, arch = 0;
  if (!v || sscanf(v, ".version %d.%d", &major, &minor) != 2) return CUDA_ERROR_INVALID_PTX;
  if (major * 10 + minor > 90) return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  if (!t || sscanf(t, ".target sm_%d", &arch) != 1 || arch > cc) return CUDA_ERROR_INVALID_PTX;
  return CUDA_SUCCESS;
}

/* Classifies and checks an image; on success m->img/len hold a copy. `len` may be 0 (unknown). */
static CUresult check_image(const void *image, size_t len, int cc, struct CUmod_st *m) {
  const unsigned char *p = image;
  CUresult r;
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  if (!p[0]) return CUDA_ERROR_INVALID_IMAGE;
  /* byte-wise, short-circuiting checks: never read past a short NUL-terminated buffer */
  if (strncmp(image, "SIMCUBIN", 8) == 0) {
    len = strlen(image) + 1;
    r = check_simcubin(image, cc, m);
  } else if (strncmp(image, "\177ELF", 4) == 0) {
    if (p[4] != 2 || rd16(p + 0x12) != 190) return CUDA_ERROR_INVALID_IMAGE;
    len = elf_len(p) < 64 ? 64 : elf_len(p);
    r = sass_fits(elf_arch(p), cc) ? CUDA_SUCCESS : CUDA_ERROR_NO_BINARY_FOR_GPU;
  } else if (p[0] == 0x50 && p[1] == 0xED && p[2] == 0x55 && p[3] == 0xBA) {
    uint64_t hs = rd16(p + 6), total = rd64(p + 8), off = hs;
    int fits = 0;
    while (off + 0x20 <= hs + total) {
      const unsigned char *e = p + off;
      int kind = rd16(e), arch = (int)rd32(e + 0x1c);
      fits |= kind == 2 ? sass_fits(arch, cc) : kind == 1 && arch <= cc;
      if (rd32(e + 4) == 0) break;
      off += rd32(e + 4) + rd64(e + 8);
    }
    len = hs + total;
    r = fits ? CUDA_SUCCESS : CUDA_ERROR_NO_BINARY_FOR_GPU;
  } else if (strstr(image, ".version")) {
    len = strlen(image) + 1;
    r = check_ptx(image, cc);
  } else {
    return CUDA_ERROR_INVALID_IMAGE;
  }
  if (r != CUDA_SUCCESS && (!m->ctx_independent || r == CUDA_ERROR_OUT_OF_MEMORY)) return r;
  /* A library is loaded lazily, as by the real CUDA 13 driver (measured on an H200: cuLibraryLoadData
   * of an image without code for the GPU succeeds, cuLibraryGetKernel answers 209): the fit is
   * checked, and its error kept for the kernel lookups. */
  m->code_error = r;
  if (!(m->img = malloc(len))) return CUDA_ERROR_OUT_OF_MEMORY;
  memcpy(m->img, p, len);
  m->len = len;
  return CUDA_SUCCESS;
}

static void mod_free(struct CUmod_st *m) {
  for (struct CUmod_st **p = &g_mods; *p; p = &(*p)->next)
    if (*p == m) {
      *p = m->next;
      break;
    }
  while (m->funcs) {
    struct CUfunc_st *f = m->funcs;
    m->funcs = f->next;
    free(f);
  }
  free(m->img);
  free(m);
}

static struct CUmod_st *find_mod(const void *h) {
  for (struct CUmod_st *m = g_mods; m; m = m->next)
    if ((const void *)m == h) return m;
  return NULL;
}

void sim_ctx_unload_modules(struct CUctx_st *c) {
  for (struct CUmod_st *m = g_mods, *next; m; m = next) {
    next = m->next;
    if (m->ctx == c) mod_free(m);
  }
}

/* Loads into the current context (modules) or context-independently (libraries: checked against
 * the current context's device, else device 0). */
static CUresult load(void **out, const void *image, size_t len, int library) {
  SIM_LOCKED;
  struct CUctx_st *c = NULL;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS && !(library && r == CUDA_ERROR_INVALID_CONTEXT)) return r;
  if (r != CUDA_SUCCESS) c = NULL;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const sim_device *d = &G.dev[c ? c->dev : 0];
  struct CUmod_st *m = calloc(1, library ? sizeof(struct CUlib_st) : sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  m->ctx = library ? NULL : c;
  m->ctx_independent = library;
  r = check_image(image, len, d->cc_major * 10 + d->cc_minor, m);
  if (r != CUDA_SUCCESS) {
    free(m);
    return r;
  }
  m->next = g_mods, g_mods = m;
  *out = m;
  static uint32_t next_id;
  m->id = ++next_id;
  sim_tool_data t = {.event = SIM_TOOL_MODULE_LOADED, .ctx = c, .device = c ? c->dev : 0, .module_id = m->id,
                     .image = m->img, .image_size = m->len};
  sim_tool(&t);
  sim_tool_data statics = {.event = SIM_TOOL_MEMORY, .op = 1, .device = c ? c->dev : 0,
                           .addr = SIM_MODULE_STATIC_BASE + 4096ull * m->id, .bytes = SIM_MODULE_STATIC_BYTES,
                           .memory_kind = SIM_TOOL_KIND_DEVICE_STATIC};
  sim_tool(&statics);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image) {
  return load((void **)module, image, 0, 0);
}
CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int n, CUjit_option *o,
                                    void **v) {
  (void)n, (void)o, (void)v;
  return load((void **)module, image, 0, 0);
}
CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jo, void **jv,
                                   unsigned int nj, CUlibraryOption *lo, void **lv, unsigned int nl) {
  (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;
  return load((void **)library, code, 0, 1);
}

CUresult CUDAAPI cuModuleLoad(CUmodule *module, const char *fname) {
  if (!fname) return CUDA_ERROR_INVALID_VALUE;
  FILE *f = fopen(fname, "rb");
  if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
  size_t cap = 1 << 16, n = 0, k;
  char *buf = malloc(cap + 1);
  while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      char *nb = realloc(buf, (cap *= 2) + 1);
      if (!nb) free(buf);
      buf = nb;
    }
  }
  fclose(f);
  if (!buf) return CUDA_ERROR_OUT_OF_MEMORY;
  buf[n] = 0;
  CUresult r = n >= 8 ? load((void **)module, buf, n, 0) : CUDA_ERROR_INVALID_IMAGE;
  free(buf);
  return r;
}

static CUresult unload(const void *h, int library) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  struct CUmod_st *m = find_mod(h);
  if (!m || (m->ctx == NULL) != library) return CUDA_ERROR_INVALID_HANDLE;
  sim_tool_data t = {.event = SIM_TOOL_MODULE_UNLOADING, .ctx = m->ctx, .device = -1, .module_id = m->id,
                     .image = m->img, .image_size = m->len};
  sim_tool(&t);
  mod_free(m);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuModuleUnload(CUmodule hmod) { return unload(hmod, 0); }
CUresult CUDAAPI cuLibraryUnload(CUlibrary library) { return unload(library, 1); }

/* A name resolves if the image lists it (fn= tokens) or contains it as a NUL-terminated string. */
static int has_name(const struct CUmod_st *m, const char *name) {
  size_t n = strlen(name);
  if (memcmp(m->img, "SIMCUBIN", 8) == 0) {
    if (m->any_name) return 1;
    for (const char *p = strstr((const char *)m->img, "fn="); p; p = strstr(p + 3, "fn="))
      if (strncmp(p + 3, name, n) == 0 && strchr(" \n\t,", p[3 + n])) return 1;
    return 0;
  }
  for (size_t i = 1; i + n < m->len; i++)
    if (m->img[i - 1] == 0 && m->img[i + n] == 0 && memcmp(m->img + i, name, n) == 0) return 1;
  return 0;
}

/* The function `name` of a module (library: 1 for a CUlibrary handle), created on first use. */
static CUresult get_func(const void *handle, int library, const char *name, struct CUfunc_st **out) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  CUresult sticky = sim_current_sticky();
  if (sticky != CUDA_SUCCESS) return sticky;
  struct CUmod_st *m = find_mod(handle);
  if (!m || (m->ctx == NULL) != library) return CUDA_ERROR_INVALID_HANDLE;
  if (!out || !name) return CUDA_ERROR_INVALID_VALUE;
  if (m->code_error != CUDA_SUCCESS) return m->code_error;
  for (struct CUfunc_st *f = m->funcs; f; f = f->next)
    if (strcmp(f->name, name) == 0) {
      *out = f;
      return CUDA_SUCCESS;
    }
  if (!*name || !has_name(m, name)) return CUDA_ERROR_NOT_FOUND;
  struct CUfunc_st *f = malloc(sizeof *f + strlen(name) + 1);
  if (!f) return CUDA_ERROR_OUT_OF_MEMORY;
  f->mod = m, f->next = m->funcs, m->funcs = f;
  strcpy(f->name, name);
  *out = f;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name) {
  return get_func(hmod, 0, name, hfunc);
}

static int known_func(const struct CUfunc_st *f) {
  for (struct CUmod_st *m = g_mods; m; m = m->next)
    for (struct CUfunc_st *g = m->funcs; g; g = g->next)
      if (g == f) return 1;
  return 0;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                                unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void **params,
                                void **extra) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_stream_ctx(s, &c);
  if (r != CUDA_SUCCESS) return r;
  if (!f || !known_func(f)) return CUDA_ERROR_INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 ||
      (uint64_t)bx * by * bz > 1024 || gy > 65535 || gz > 65535 || shmem > 166912 || (params && extra))
    return CUDA_ERROR_INVALID_VALUE;
  if (f->mod->launch_error) return (CUresult)f->mod->launch_error;
  sim_launched(c, s, f->name);
  return CUDA_SUCCESS;
}
/* cuLaunchKernelEx: the config's grid, block, shared memory and stream; attributes are ignored. */
CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params, void **extra) {
  if (!config) return CUDA_ERROR_INVALID_VALUE;
  return cuLaunchKernel(f, config->gridDimX, config->gridDimY, config->gridDimZ, config->blockDimX,
                        config->blockDimY, config->blockDimZ, config->sharedMemBytes, config->hStream, params,
                        extra);
}
CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
                                       void **extra) {
  return cuLaunchKernelEx(config, f, params, extra);
}
CUresult CUDAAPI cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                           unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                           CUstream s, void **params) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL);
}
CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                                unsigned int bx, unsigned int by, unsigned int bz,
                                                unsigned int shmem, CUstream s, void **params) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, NULL);
}

/* Library kernels are the library's functions: a CUkernel is a CUfunction of the library's module
 * (the real driver also accepts a CUkernel wherever a CUfunction goes). A library without code for
 * the device answers its lookups with that error (209...). */
CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name) {
  return get_func(library, 1, name, (struct CUfunc_st **)pKernel);
}
/* The kernel's function in the current context: the same object here (a context-independent
 * library's function launches in any context). An unknown kernel is CUDA_ERROR_INVALID_HANDLE (400),
 * as the real driver answers. */
CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel) {
  SIM_LOCKED;
  struct CUctx_st *c;
  CUresult r = sim_current_ctx(&c);
  if (r != CUDA_SUCCESS) return r;
  if (!pFunc) return CUDA_ERROR_INVALID_VALUE;
  struct CUfunc_st *f = (struct CUfunc_st *)kernel;
  if (!f || !known_func(f) || f->mod->ctx != NULL) return CUDA_ERROR_INVALID_HANDLE;
  *pFunc = f;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char **name, CUfunction hfunc) {
  SIM_LOCKED;
  SIM_NEED_INIT();
  CUresult sticky = sim_current_sticky(); /* the real driver answers the device fault here too */
  if (sticky != CUDA_SUCCESS) return sticky;
  if (!name || !hfunc) return CUDA_ERROR_INVALID_VALUE;
  if (!known_func(hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *name = hfunc->name;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
                                     unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem,
                                     CUstream s, void **params, void **extra) {
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}
