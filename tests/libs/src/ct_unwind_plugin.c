// Its constructor runs inside dlopen and takes a backtrace (libgcc's unwinder): with the
// shim, the frames pass through the caller-preserving trampoline and must still reach
// the program's ct_unwind_marker and main.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <string.h>

static int g_found_marker = 0;
static int g_found_main = 0;

__attribute__((constructor)) static void take_backtrace(void) {
  void* frames[128];
  const int n = backtrace(frames, 128);
  for (int i = 0; i < n; ++i) {
    Dl_info info;
    if (dladdr(frames[i], &info) && info.dli_sname) {
      if (strcmp(info.dli_sname, "ct_unwind_marker") == 0) g_found_marker = 1;
      if (strcmp(info.dli_sname, "main") == 0) g_found_main = 1;
    }
  }
}

int ct_unwind_found_marker(void) { return g_found_marker; }
int ct_unwind_depth(void) { return g_found_main; }
