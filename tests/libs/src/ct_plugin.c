// A plugin in origin/ whose RUNPATH is $ORIGIN/deps (or DT_RPATH, see CMakeLists.txt):
// everything it loads by bare name must be found there, relative to the plugin itself.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

const char* ct_localdep_name(void);  // DT_NEEDED, found through the RUNPATH

static char g_buf[1024];

static const char* call(void* h, const char* what) {
  if (!h) {
    snprintf(g_buf, sizeof g_buf, "FAILED %s: %s", what, dlerror());
    return g_buf;
  }
  const char* (*fn)(void) = (const char* (*)(void))dlsym(h, "ct_dep_name");
  if (!fn) {
    snprintf(g_buf, sizeof g_buf, "FAILED dlsym: %s", dlerror());
    return g_buf;
  }
  return fn();
}

// dlopen by bare name: searched along this plugin's RUNPATH/RPATH.
const char* ct_plugin_bare(void) { return call(dlopen("libct_dep.so", RTLD_NOW), "bare"); }

// dlopen("$ORIGIN/..."): $ORIGIN is this plugin's directory.
const char* ct_plugin_dst(void) {
  return call(dlopen("$ORIGIN/deps/libct_dep.so", RTLD_NOW), "dst");
}

// RTLD_DEFAULT from a library loaded RTLD_LOCAL searches its own local scope too.
const char* ct_plugin_default_local(void) {
  void* s = dlsym(RTLD_DEFAULT, "ct_localdep_name");
  if (!s) {
    snprintf(g_buf, sizeof g_buf, "FAILED: %s", dlerror());
    return g_buf;
  }
  return ((const char* (*)(void))s)();
}

// RTLD_NEXT from the plugin: the next definition after the plugin in its scope.
const char* ct_plugin_next(void) {
  void* s = dlsym(RTLD_NEXT, "ct_localdep_name");
  if (!s) {
    snprintf(g_buf, sizeof g_buf, "FAILED: %s", dlerror());
    return g_buf;
  }
  return ((const char* (*)(void))s)();
}

// dlvsym with RTLD_DEFAULT from the plugin: a versioned libc symbol.
const char* ct_plugin_dlvsym(void) {
  void* s = dlvsym(RTLD_DEFAULT, "ct_localdep_name", "CT_LOCALDEP_1");
  void* t = dlvsym(RTLD_DEFAULT, "ct_localdep_name", "CT_NO_SUCH_VERSION");
  snprintf(g_buf, sizeof g_buf, "versioned %s, wrong version %s", s ? "found" : "missing",
           t ? "found" : "missing");
  return g_buf;
}

const char* ct_plugin_local_needed(void) { return ct_localdep_name(); }
