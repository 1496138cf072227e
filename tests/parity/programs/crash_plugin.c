/* A crash reporter that tries an optional plugin (tests/parity/runtimes.py): its SIGSEGV
 * handler dlopen()s a library that is not installed (as the JVM tries its disassembler,
 * hsdis, while it writes hs_err), prints its own backtrace (which must show the same
 * frames bare and traced: the shim enters a wrapped handler by a tail call), and raises
 * the signal again. */
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig) {
  void* plugin = dlopen("libcolabtrace-test-absent-plugin.so", RTLD_NOW);
  const char* msg = plugin ? "crash report: plugin loaded\n" : "crash report: no plugin\n";
  write(2, msg, strlen(msg));
  /* The handler, the signal trampoline, main: the frames below main differ under the
   * shim (its __libc_start_main wrapper calls main), which is not what this checks. */
  void* frames[3];
  backtrace_symbols_fd(frames, backtrace(frames, 3), 2);
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
