/* A crash reporter that tries an optional plugin (tests/parity/runtimes.py): its SIGSEGV
 * handler dlopen()s a library that is not installed (as the JVM tries its disassembler,
 * hsdis, while it writes hs_err), says so, and raises the signal again. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig) {
  void* plugin = dlopen("libcolabtrace-test-absent-plugin.so", RTLD_NOW);
  const char* msg = plugin ? "crash report: plugin loaded\n" : "crash report: no plugin\n";
  write(2, msg, strlen(msg));
  signal(sig, SIG_DFL);
  raise(sig);
}

int main(void) {
  signal(SIGSEGV, on_segv);
  puts("about to crash");
  fflush(stdout);
  *(volatile int*)16 = 1;
  return 0;
}
