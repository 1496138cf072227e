// A tiny versioned library for elf_test (see provider.map). It calls strlen so that it
// needs libc.so.6, version GLIBC_2.2.5 (x86-64's baseline).
#include <string.h>

int elftest_one(void) { return 1; }
int elftest_two(void) { return 2; }
int elftest_three(const char* s) { return (int)strlen(s); }
int elftest_hidden(void) { return 4; }  // made local by the version script
