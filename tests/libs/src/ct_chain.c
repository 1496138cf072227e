// One link of an interposition chain: each library's ct_chain() calls the next definition
// with dlsym(RTLD_NEXT), as interposers (HAMi-core, nvshare) do.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>

#ifndef CT_CHAIN_LAST
static char g_buf[256];
#endif

const char* ct_chain(void) {
#ifdef CT_CHAIN_LAST
  return CT_CHAIN_NAME;
#else
  const char* (*next)(void) = (const char* (*)(void))dlsym(RTLD_NEXT, "ct_chain");
  snprintf(g_buf, sizeof g_buf, "%s>%s", CT_CHAIN_NAME, next ? next() : dlerror());
  return g_buf;
#endif
}
