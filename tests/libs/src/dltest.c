// dltest: exercises the dynamic-loading API in ways whose results depend on the caller
// (RUNPATH, $ORIGIN, RTLD_NEXT, RTLD_DEFAULT's local scope, namespaces) and on dlerror's
// per-thread state. tests/libs/test_dl_semantics.py runs each subcommand with and
// without the shim and requires identical output.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char* ct_chain(void);  // libct_interp_a -> libct_interp_b -> libct_base

static const char* show(const char* s) { return s ? s : "(null)"; }

// Exported (-rdynamic): the unwind test looks for it in a backtrace taken inside dlopen.
__attribute__((noinline)) void* ct_unwind_marker(const char* path) {
  void* h = dlopen(path, RTLD_NOW);
  __asm__ volatile("" ::: "memory");  // keep the call from becoming a tail call
  return h;
}

int ct_main_marker(void) { return 42; }

static int cmd_origin(const char* plugin, const char* entry) {
  void* h = dlopen(plugin, RTLD_NOW);
  if (!h) { printf("plugin: %s\n", dlerror()); return 1; }
  const char* (*fn)(void) = (const char* (*)(void))dlsym(h, entry);
  if (!fn) { printf("entry: %s\n", dlerror()); return 1; }
  printf("%s: %s\n", entry, fn());
  return 0;
}

static int cmd_next(void) {
  printf("chain: %s\n", ct_chain());
  void* next = dlsym(RTLD_NEXT, "ct_chain");
  Dl_info info;
  if (next && dladdr(next, &info) && info.dli_fname) {
    const char* slash = strrchr(info.dli_fname, '/');
    printf("next from main: %s\n", slash ? slash + 1 : info.dli_fname);
  } else {
    printf("next from main: %s\n", show(dlerror()));
  }
  void* def = dlsym(RTLD_DEFAULT, "ct_chain");
  printf("default == direct: %d\n", def == (void*)&ct_chain);
  return 0;
}

static int cmd_noload(const char* path) {
  void* a = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  printf("noload before: %s\n", a ? "handle" : "NULL");
  printf("dlerror: %s\n", a ? "-" : (dlerror() ? "set" : "(null)"));
  void* h = dlopen(path, RTLD_NOW);
  void* b = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  printf("loaded: %s, noload after: %s, same: %d\n", h ? "handle" : "NULL", b ? "handle" : "NULL", h == b);
  if (b) dlclose(b);
  if (h) dlclose(h);
  void* c = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  printf("noload after close: %s\n", c ? "handle" : "NULL");
  return 0;
}

static int cmd_dlmopen(const char* path, const char* entry) {
  void* h = dlmopen(LM_ID_NEWLM, path, RTLD_NOW);
  if (!h) { printf("dlmopen: %s\n", dlerror()); return 1; }
  Lmid_t lmid = -5;
  if (dlinfo(h, RTLD_DI_LMID, &lmid) != 0) { printf("dlinfo: %s\n", dlerror()); return 1; }
  printf("namespace is new: %d\n", lmid > 0);
  const char* (*fn)(void) = (const char* (*)(void))dlsym(h, entry);
  printf("%s: %s\n", entry, fn ? fn() : show(dlerror()));
  void* h2 = dlmopen(lmid, path, RTLD_NOW | RTLD_NOLOAD);
  printf("same namespace noload: %d\n", h2 == h);
  void* base = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  printf("in base namespace: %s\n", base ? "handle" : "NULL");
  return 0;
}

static int cmd_bare(const char* name, const char* entry) {
  void* h = dlopen(name, RTLD_NOW);
  if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
  const char* (*fn)(void) = (const char* (*)(void))dlsym(h, entry);
  printf("%s: %s\n", entry, fn ? fn() : show(dlerror()));
  return 0;
}

static int cmd_null(void) {
  void* h = dlopen(NULL, RTLD_NOW);
  printf("handle: %s\n", h ? "handle" : "NULL");
  void* s = dlsym(h, "ct_main_marker");
  printf("main marker: %d\n", s == (void*)&ct_main_marker);
  void* g = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
  printf("same: %d\n", g == h);
  return 0;
}

static int cmd_dlerror(void) {
  printf("initial: %s\n", show(dlerror()));
  void* h = dlopen("libct_missing.so.8", RTLD_NOW);
  printf("missing: %s\n", h ? "handle" : "NULL");
  printf("first: %s\n", show(dlerror()));
  printf("second: %s\n", show(dlerror()));
  // A later successful dl* call clears the pending error.
  h = dlopen("libct_missing.so.8", RTLD_NOW);
  void* s = dlsym(RTLD_DEFAULT, "printf");
  printf("after success: %s (%d)\n", show(dlerror()), s != NULL);
  // dladdr does not touch it.
  h = dlopen("libct_missing.so.8", RTLD_LAZY);
  Dl_info info;
  dladdr((void*)&cmd_dlerror, &info);
  printf("after dladdr: %s\n", show(dlerror()));
  // A failed lookup names the caller object.
  s = dlsym(RTLD_DEFAULT, "ct_no_such_symbol");
  const char* e = dlerror();
  const char* colon = e ? strstr(e, ": ") : NULL;
  const char* slash = NULL;
  if (e) for (const char* p = e; p < (colon ? colon : e + strlen(e)); ++p) if (*p == '/') slash = p;
  printf("lookup: %s\n", show(slash ? slash + 1 : e));
  // dlinfo clears it too.
  h = dlopen("libct_missing.so.8", RTLD_LAZY);
  void* self = dlopen(NULL, RTLD_NOW);
  struct link_map* lm = NULL;
  dlinfo(self, RTLD_DI_LINKMAP, &lm);
  printf("after dlinfo: %s\n", show(dlerror()));
  // dlclose of a handle twice fails? (not portable) -- a failed dlsym on a handle:
  s = dlsym(self, "ct_no_such_symbol_2");
  e = dlerror();
  printf("handle lookup failed: %d\n", s == NULL && e != NULL);
  return 0;
}

static int cmd_unwind(const char* plugin) {
  void* h = ct_unwind_marker(plugin);
  if (!h) { printf("plugin: %s\n", dlerror()); return 1; }
  int (*found)(void) = (int (*)(void))dlsym(h, "ct_unwind_found_marker");
  int (*depth)(void) = (int (*)(void))dlsym(h, "ct_unwind_depth");
  printf("marker in constructor backtrace: %d\n", found ? found() : -1);
  printf("frames reach main: %d\n", depth ? depth() : -1);
  return 0;
}

// Names the shim itself defines (its CUDA hooks) but nothing else in this process does:
// the lookups must fail, with glibc's message, as without the shim.
static int cmd_cudasym(void) {
  const char* names[] = {"cudaMalloc", "cuMemAlloc_v2"};
  for (int i = 0; i < 2; ++i) {
    void* s = dlsym(RTLD_DEFAULT, names[i]);
    const char* e = dlerror();
    const char* tail = e ? strrchr(e, '/') : NULL;
    printf("dlsym %s: %s, %s\n", names[i], s ? "found" : "NULL", show(tail ? tail + 1 : e));
    printf("again: %s\n", show(dlerror()));
  }
  void* v = dlvsym(RTLD_DEFAULT, "cudaMalloc", "libcudart.so.12");
  const char* e = dlerror();
  const char* tail = e ? strrchr(e, '/') : NULL;
  printf("dlvsym cudaMalloc: %s, %s\n", v ? "found" : "NULL", show(tail ? tail + 1 : e));
  return 0;
}

struct ThreadArg { const char* path; int iters; int fails; };

static void* thread_main(void* p) {
  struct ThreadArg* a = p;
  for (int i = 0; i < a->iters; ++i) {
    void* h = dlopen(a->path, RTLD_NOW);
    if (!h || !dlsym(h, "ct_dep_name")) ++a->fails;
    if (dlopen("libct_missing.so.8", RTLD_NOW) != NULL) ++a->fails;
    if (dlerror() == NULL) ++a->fails;
    if (dlerror() != NULL) ++a->fails;
    if (h) dlclose(h);
  }
  return NULL;
}

static int cmd_threads(const char* path) {
  enum { kThreads = 8 };
  pthread_t t[kThreads];
  struct ThreadArg a[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    a[i] = (struct ThreadArg){path, 200, 0};
    pthread_create(&t[i], NULL, thread_main, &a[i]);
  }
  int fails = 0;
  for (int i = 0; i < kThreads; ++i) {
    pthread_join(t[i], NULL);
    fails += a[i].fails;
  }
  printf("thread failures: %d\n", fails);
  return fails != 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (argc < 2) return 2;
  const char* c = argv[1];
  if (!strcmp(c, "origin") && argc == 4) return cmd_origin(argv[2], argv[3]);
  if (!strcmp(c, "next")) return cmd_next();
  if (!strcmp(c, "noload") && argc == 3) return cmd_noload(argv[2]);
  if (!strcmp(c, "dlmopen") && argc == 4) return cmd_dlmopen(argv[2], argv[3]);
  if (!strcmp(c, "bare") && argc == 4) return cmd_bare(argv[2], argv[3]);
  if (!strcmp(c, "null")) return cmd_null();
  if (!strcmp(c, "dlerror")) return cmd_dlerror();
  if (!strcmp(c, "unwind") && argc == 3) return cmd_unwind(argv[2]);
  if (!strcmp(c, "threads") && argc == 3) return cmd_threads(argv[2]);
  if (!strcmp(c, "cudasym")) return cmd_cudasym();
  fprintf(stderr, "usage: dltest origin|next|noload|dlmopen|bare|null|dlerror|unwind|threads ...\n");
  return 2;
}
